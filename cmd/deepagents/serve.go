package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/config"
	"github.com/deepagents-go/deepagents/internal/demoagent"
	"github.com/deepagents-go/deepagents/providers"
	"github.com/deepagents-go/deepagents/server"
)

const serveHelp = `usage: deepagents serve [flags]

Serves the agent over HTTP with the LangGraph Platform API that LangGraph's
SDK clients and deep-agents-ui use (see docs/SERVER.md): one assistant per
agent, threads kept in the thread database (--db), runs streamed as
server-sent events that a client can rejoin by Last-Event-ID, also after a
restart. The agent is built as for 'deepagents run' (flags, then the
config files); --demo serves a scripted agent instead, for trying the
server and its clients without an API key.

The server listens on --addr (default 127.0.0.1:2024). Every request but
GET /ok must carry the token of the environment variable named by
--token-env as "Authorization: Bearer TOKEN"; without a token the server
refuses to listen on anything but a loopback address, and answers only
requests addressed to localhost, 127.0.0.1 or [::1]. Web pages of other
origins than the server's own are refused unless listed with --cors, and
request bodies must be JSON (Content-Type: application/json), so a page
you visit cannot drive the agent. Ctrl-C or SIGTERM ends open streams and
stops.

With --temporal HOST:PORT, runs are workflows on a Temporal worker fleet
instead of running in this process: serve hands over to the
deepagents-temporal program (beside deepagents or on PATH) with these
arguments (--addr becomes its --listen); it takes --db (required), the
agent flags the workers were given and --token-env, and refuses the others
(see 'deepagents-temporal serve -h' and docs/TEMPORAL.md).

Exit status: 0 after a clean stop, 1 when serving failed, 2 bad usage.
`

type serveFlags struct {
	runFlags
	addr       string
	tokenEnv   string
	cors       string
	demo       bool
	name       string
	maxStreams int
}

func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if temporalServeArg(args) {
		return serveOnTemporal(ctx, args, stdout, stderr)
	}
	var f serveFlags
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.StringVar(&f.addr, "addr", "127.0.0.1:2024", "the address to listen on, HOST:PORT")
	fs.StringVar(&f.tokenEnv, "token-env", "", "the environment variable holding the bearer token clients must send (required for a non-loopback --addr)")
	fs.StringVar(&f.cors, "cors", "", "ORIGIN[,ORIGIN]: browser origins, besides the server's own, allowed to call the API (* for any, only with a token)")
	fs.BoolVar(&f.demo, "demo", false, "serve the built-in scripted agent (two parallel subagents, then a write that waits for approval) instead of a real model")
	fs.StringVar(&f.name, "name", "agent", "the assistant's name and graph_id, which clients name in their runs")
	fs.IntVar(&f.maxStreams, "max-streams", server.DefaultMaxStreams, "the event streams kept open at once; one more is refused with 429")
	// The agent flags of run, but for those about run's own output.
	all := flag.NewFlagSet("agent", flag.ContinueOnError)
	agentFlags(all, &f.runFlags)
	modeFlag(all, &f.runFlags)
	all.VisitAll(func(fl *flag.Flag) {
		switch fl.Name {
		case "output", "quiet", "thread-dir":
		default:
			fs.Var(fl.Value, fl.Name, fl.Usage)
		}
	})
	operands, code, ok := parseFlags(fs, args, serveHelp, stdout, stderr)
	if !ok {
		return code
	}
	if len(operands) > 0 {
		return usageError(stderr, "serve", fmt.Sprintf("takes no arguments, got %q", operands[0]))
	}
	if err := f.check(fs); err != nil {
		fmt.Fprintf(stderr, "deepagents serve: %v\n", err)
		return exitUsage
	}
	token := ""
	if f.tokenEnv != "" {
		token = os.Getenv(f.tokenEnv)
		if token == "" {
			fmt.Fprintf(stderr, "deepagents serve: --token-env %s: the variable is empty or not set\n", f.tokenEnv)
			return exitUsage
		}
	}
	if err := checkListen(f.addr, token != ""); err != nil {
		fmt.Fprintf(stderr, "deepagents serve: %v\n", err)
		return exitUsage
	}
	var cors server.CORS
	if f.cors != "" {
		cors.AllowOrigins = strings.Split(f.cors, ",")
	}
	if err := cors.Check(token != ""); err != nil {
		fmt.Fprintf(stderr, "deepagents serve: --cors: %v (--token-env NAME)\n", err)
		return exitUsage
	}
	if f.maxStreams < 1 {
		fmt.Fprintf(stderr, "deepagents serve: --max-streams %d: give at least 1\n", f.maxStreams)
		return exitUsage
	}

	var a *agent.Agent
	var modes *server.ApprovalModes // each thread's approval mode (modes.go)
	var runWith func(context.Context, string, *agent.Agent, agent.Input, ...agent.RunOption) iter.Seq2[agent.Event, error]
	var saver checkpoint.Saver
	var db config.Database
	var closers []func() error
	defer func() {
		for i := len(closers) - 1; i >= 0; i-- {
			_ = closers[i]()
		}
	}()
	if f.demo {
		cwd, _ := os.Getwd()
		home, _ := os.UserHomeDir()
		var err error
		if db, err = chooseDatabase(f.db, f.set["db"], nil, cwd, home); err != nil {
			fmt.Fprintf(stderr, "deepagents serve: %v\n", err)
			return exitUsage
		}
		if saver, err = openDatabase(ctx, db); err != nil {
			fmt.Fprintf(stderr, "deepagents serve: %v\n", err)
			return exitFailed
		}
		closers = append(closers, saver.Close)
		if a, err = demoagent.New(f.name, 20); err != nil {
			fmt.Fprintf(stderr, "deepagents serve: %v\n", err)
			return exitFailed
		}
		if modes, err = demoModes(f.approvalMode, stderr); err != nil {
			fmt.Fprintf(stderr, "deepagents serve: --approval-mode: %v\n", err)
			return exitUsage
		}
	} else {
		s, err := assemble(ctx, f.runFlags, stderr)
		if err != nil {
			fmt.Fprintf(stderr, "deepagents serve: %v\n", err)
			var missing *providers.MissingKeyError
			if errors.Is(err, providers.ErrNoModel) || errors.As(err, &missing) {
				fmt.Fprintln(stderr, "deepagents serve: to try the server and its web UI without a key, run `deepagents serve --demo` (a scripted agent)")
			}
			return exitUsage
		}
		closers = append(closers, func() error { s.close(); return nil })
		a, saver, db = s.agent, s.saver, s.db
		modes = &server.ApprovalModes{New: s.mode.Fresh, Default: s.mode.Mode()}
		if s.tracing != nil { // OTEL_* variables asked for traces
			runWith = func(ctx context.Context, thread string, _ *agent.Agent, in agent.Input, opts ...agent.RunOption) iter.Seq2[agent.Event, error] {
				return s.run(ctx, thread, in, opts...)
			}
		}
	}
	dsn := db.Path
	if db.Kind == config.Postgres {
		dsn = db.DSN
	}
	store, err := server.OpenSQLStore(ctx, db.Kind, dsn)
	if err != nil {
		fmt.Fprintf(stderr, "deepagents serve: %v\n", err)
		return exitFailed
	}
	closers = append(closers, store.Close)
	cfg := server.Config{
		Agents: []server.AgentSpec{{Name: f.name, Agent: a}},
		Saver:  saver, Store: store, Token: token, CORS: cors, MaxStreams: f.maxStreams,
		Logger: slog.New(slog.NewTextHandler(stderr, nil)), Run: runWith,
		UI: serveUI, ApprovalModes: modes,
	}
	srv, err := server.New(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "deepagents serve: %v\n", err)
		return exitFailed
	}
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		_ = srv.Close()
		fmt.Fprintf(stderr, "deepagents serve: %v\n", listenError(f.addr, err))
		return exitFailed
	}
	fmt.Fprintf(stderr, "deepagents serve: listening on http://%s (assistant %q, threads in %s)\n", ln.Addr(), f.name, db)
	return serve(ctx, ln, srv, stderr, defaultServeTimeouts)
}

// listenError says why the address cannot be listened on, and what to do
// when another program has the port.
func listenError(addr string, err error) error {
	if errors.Is(err, syscall.EADDRINUSE) {
		host, port, _ := net.SplitHostPort(addr)
		next := "2025"
		if n, perr := strconv.Atoi(port); perr == nil && n > 0 && n < 65535 {
			next = strconv.Itoa(n + 1)
		}
		return fmt.Errorf("%s is already in use (another deepagents serve, or another program, listens there); "+
			"choose another port with --addr, e.g. --addr %s", addr, net.JoinHostPort(host, next))
	}
	return fmt.Errorf("listening on %s: %w", addr, err)
}

// serveTimeouts bound how long a client may take to send a request; the
// response (a stream can last as long as its run) has no deadline.
type serveTimeouts struct {
	// ReadHeader is the time to send the request line and headers, Read
	// the time to send the whole request, body included; Idle how long
	// a kept-alive connection may wait for its next request.
	ReadHeader, Read, Idle time.Duration
}

var defaultServeTimeouts = serveTimeouts{ReadHeader: 10 * time.Second, Read: time.Minute, Idle: 2 * time.Minute}

// serveUI is the web UI's handler, mounted at "/" when set (by the UI's
// own file in this package).
var serveUI http.Handler

// serve answers on ln until ctx ends, then ends open streams and stops.
// A client that sends its request too slowly (a connection held open by
// dribbling headers or a body) is cut off after the timeouts; net/http
// clears the read deadline once a request's body is read, so a long
// stream is not.
func serve(ctx context.Context, ln net.Listener, srv *server.Server, stderr io.Writer, t serveTimeouts) int {
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: t.ReadHeader, ReadTimeout: t.Read, IdleTimeout: t.Idle}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		fmt.Fprintf(stderr, "deepagents serve: %v\n", err)
		_ = srv.Close()
		return exitFailed
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Streams end first (the server's Shutdown), so that the HTTP server's
	// Shutdown does not wait for them.
	if err := srv.Shutdown(sctx); err != nil {
		fmt.Fprintf(stderr, "deepagents serve: runs still stopping: %v\n", err)
	}
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(stderr, "deepagents serve: %v\n", err)
		return exitFailed
	}
	fmt.Fprintln(stderr, "deepagents serve: stopped")
	return exitOK
}

// checkListen refuses an address beyond loopback unless a token protects it.
func checkListen(addr string, hasToken bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %q: %v (want HOST:PORT, e.g. 127.0.0.1:2024)", addr, err)
	}
	if hasToken {
		return nil
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("--addr %s listens beyond this machine; give a bearer token with --token-env NAME, or listen on 127.0.0.1", addr)
}
