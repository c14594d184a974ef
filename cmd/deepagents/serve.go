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
	"strings"
	"time"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/config"
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
refuses to listen on anything but a loopback address. Ctrl-C or SIGTERM
ends open streams and stops.

Exit status: 0 after a clean stop, 1 when serving failed, 2 bad usage.
`

type serveFlags struct {
	runFlags
	addr     string
	tokenEnv string
	cors     string
	demo     bool
	name     string
}

func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var f serveFlags
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.StringVar(&f.addr, "addr", "127.0.0.1:2024", "the address to listen on, HOST:PORT")
	fs.StringVar(&f.tokenEnv, "token-env", "", "the environment variable holding the bearer token clients must send (required for a non-loopback --addr)")
	fs.StringVar(&f.cors, "cors", "", "ORIGIN[,ORIGIN]: browser origins allowed to call the API (* for any)")
	fs.BoolVar(&f.demo, "demo", false, "serve the built-in scripted agent (two parallel subagents, then a write that waits for approval) instead of a real model")
	fs.StringVar(&f.name, "name", "agent", "the assistant's name and graph_id, which clients name in their runs")
	// The agent flags of run, but for those about run's own output.
	all := flag.NewFlagSet("agent", flag.ContinueOnError)
	agentFlags(all, &f.runFlags)
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

	var a *agent.Agent
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
		if a, err = server.DemoAgent(f.name, 20); err != nil {
			fmt.Fprintf(stderr, "deepagents serve: %v\n", err)
			return exitFailed
		}
	} else {
		s, err := assemble(ctx, f.runFlags, stderr)
		if err != nil {
			fmt.Fprintf(stderr, "deepagents serve: %v\n", err)
			return exitUsage
		}
		closers = append(closers, func() error { s.close(); return nil })
		a, saver, db = s.agent, s.saver, s.db
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
		Saver:  saver, Store: store, Token: token,
		Logger: slog.New(slog.NewTextHandler(stderr, nil)), Run: runWith,
		UI: serveUI,
	}
	if f.cors != "" {
		cfg.CORS.AllowOrigins = strings.Split(f.cors, ",")
	}
	srv, err := server.New(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "deepagents serve: %v\n", err)
		return exitFailed
	}
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		fmt.Fprintf(stderr, "deepagents serve: %v\n", err)
		return exitFailed
	}
	fmt.Fprintf(stderr, "deepagents serve: listening on http://%s (assistant %q, threads in %s)\n", ln.Addr(), f.name, db)
	return serve(ctx, ln, srv, stderr)
}

// serveUI is the web UI's handler, mounted at "/" when set (by the UI's
// own file in this package).
var serveUI http.Handler

// serve answers on ln until ctx ends, then ends open streams and stops.
func serve(ctx context.Context, ln net.Listener, srv *server.Server, stderr io.Writer) int {
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second}
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
