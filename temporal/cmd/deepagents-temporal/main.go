// Command deepagents-temporal runs deepagents' agent loop on Temporal: a
// worker that runs agents' runs as workflows on a store shared with the
// deepagents CLI and server, and the client commands that start, resume,
// follow and approve those runs.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/deepagents-go/deepagents/temporal"
)

// command is one subcommand: it parses its own flags from args and returns
// the process's exit status.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

// commands are the subcommands, in the order the usage lists them; one
// more is one more entry.
var commands = []command{
	{"worker", "start a worker that runs agents' runs as workflows", workerCmd},
	{"run", "start a run on a thread and follow it to its end", runCmd},
	{"resume", "resume a thread's unfinished run and follow it", resumeCmd},
	{"approve", "list a run's waiting calls and send decisions on them", approveCmd},
	{"serve", "serve the HTTP API, running its runs as workflows on the workers", serveCmd},
	{"bench", "measure concurrent runs on worker processes, or in process", benchCmd},
}

// Exit statuses besides 0 (ok): 1 a run or a call that failed, 2 a usage
// error, 3 a run that waits for decisions.
const (
	exitFailed  = 1
	exitUsage   = 2
	exitWaiting = 3
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := dispatch(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// dispatch runs the subcommand args[0] with the rest of args.
func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return exitUsage
		}
		return 0
	}
	i := slices.IndexFunc(commands, func(c command) bool { return c.name == args[0] })
	if i < 0 {
		fmt.Fprintf(stderr, "deepagents-temporal: unknown command %q\n\n", args[0])
		usage(stderr)
		return exitUsage
	}
	return commands[i].run(ctx, args[1:], stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: deepagents-temporal COMMAND [flags]")
	fmt.Fprintln(w, "\ncommands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\n\"deepagents-temporal COMMAND -h\" lists a command's flags.")
}

// conn is the flags every command has: where the Temporal service is and
// which task queue the workers serve.
type conn struct {
	address, namespace, taskQueue string
	dialTimeout                   time.Duration
	// TLS: useTLS with the system's roots, or a CA file; a client
	// certificate and key for mutual TLS; the server name to check.
	useTLS                            bool
	tlsCert, tlsKey, tlsCA, tlsServer string
	// logLevel is the lowest level of the SDK's log lines printed on
	// stderr: warnings unless a command asks for more.
	logLevel slog.Level
}

func (c *conn) flags(fs *flag.FlagSet) {
	addr := os.Getenv("TEMPORAL_ADDRESS")
	if addr == "" {
		addr = client.DefaultHostPort
	}
	ns := os.Getenv("TEMPORAL_NAMESPACE")
	if ns == "" {
		ns = client.DefaultNamespace
	}
	fs.StringVar(&c.address, "address", addr, "Temporal frontend `HOST:PORT` ($TEMPORAL_ADDRESS when set)")
	fs.StringVar(&c.namespace, "namespace", ns, "Temporal `namespace` ($TEMPORAL_NAMESPACE when set)")
	fs.StringVar(&c.taskQueue, "task-queue", "deepagents", "task `queue` the workers serve")
	fs.DurationVar(&c.dialTimeout, "dial-timeout", 10*time.Second, "how long connecting to Temporal may take")
	fs.BoolVar(&c.useTLS, "tls", false, "connect with TLS, checking the server against the system's roots (implied by the other --tls flags and $TEMPORAL_API_KEY)")
	fs.StringVar(&c.tlsCert, "tls-cert", "", "client certificate `file` (PEM) for mutual TLS, with --tls-key")
	fs.StringVar(&c.tlsKey, "tls-key", "", "client key `file` (PEM) for mutual TLS, with --tls-cert")
	fs.StringVar(&c.tlsCA, "tls-ca", "", "CA certificate `file` (PEM) the server's certificate is checked against")
	fs.StringVar(&c.tlsServer, "tls-server-name", "", "the `name` the server's certificate must carry (default: the address's host)")
	c.logLevel = slog.LevelWarn
}

// dial connects to Temporal within the dial timeout, with the data
// converter every client and worker of these workflows must use.
func (c *conn) dial(ctx context.Context) (client.Client, error) {
	opts := client.Options{
		HostPort: c.address, Namespace: c.namespace, DataConverter: temporal.DataConverter(),
		Logger: sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: c.logLevel}))),
	}
	if err := c.security(&opts); err != nil {
		return nil, err
	}
	dctx, cancel := context.WithTimeout(ctx, c.dialTimeout)
	defer cancel()
	cl, err := client.DialContext(dctx, opts)
	if err != nil {
		if errors.Is(dctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("cannot reach Temporal at %s within %s: is the server running (temporal server start-dev, or --address)? %w", c.address, c.dialTimeout, err)
		}
		return nil, fmt.Errorf("cannot connect to Temporal at %s (namespace %s): %w", c.address, c.namespace, err)
	}
	return cl, nil
}

// parse parses args with fs, printing the problem; ok is false on an
// error or -h (status is then the exit status).
func parse(fs *flag.FlagSet, args []string) (status int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, false
		}
		return exitUsage, false
	}
	return 0, true
}

// newFlags is a flag set for the command name that writes to stderr.
func newFlags(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: deepagents-temporal %s\n\n", strings.TrimSpace(synopsis))
		fs.PrintDefaults()
	}
	return fs
}

// workflowID is the id of the workflow of a run on thread: one id per
// thread, so that a second run started while one is open is refused.
func workflowID(thread string) string { return "deepagents-thread-" + thread }

// fail prints err as the command's error and returns status.
func fail(stderr io.Writer, cmd string, status int, err error) int {
	fmt.Fprintf(stderr, "deepagents-temporal %s: %v\n", cmd, err)
	return status
}

// apiKeyEnv names the variable holding an API key for Temporal (Temporal
// Cloud's, for one): taken from the environment, never from a flag, so
// that it stays out of process listings.
const apiKeyEnv = "TEMPORAL_API_KEY"

// security fills in the TLS settings and credentials of opts from the
// flags and the API key.
func (c *conn) security(opts *client.Options) error {
	if (c.tlsCert == "") != (c.tlsKey == "") {
		return errors.New("--tls-cert and --tls-key go together: give both for mutual TLS")
	}
	key := os.Getenv(apiKeyEnv)
	if !c.useTLS && c.tlsCert == "" && c.tlsCA == "" && c.tlsServer == "" && key == "" {
		return nil
	}
	cfg := &tls.Config{ServerName: c.tlsServer, MinVersion: tls.VersionTLS12}
	if c.tlsCA != "" {
		pem, err := os.ReadFile(c.tlsCA)
		if err != nil {
			return fmt.Errorf("--tls-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("--tls-ca: %s holds no PEM certificate", c.tlsCA)
		}
		cfg.RootCAs = pool
	}
	if c.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(c.tlsCert, c.tlsKey)
		if err != nil {
			return fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	opts.ConnectionOptions.TLS = cfg
	if key != "" {
		opts.Credentials = client.NewAPIKeyStaticCredentials(key)
	}
	return nil
}
