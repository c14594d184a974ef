package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/config"
	"github.com/deepagents-go/deepagents/server"
	"github.com/deepagents-go/deepagents/temporal"
	"github.com/deepagents-go/deepagents/vfs"
)

const serveSynopsis = `
serve --temporal HOST:PORT --db sqlite:PATH|PATH|postgres://... [--listen ADDR] [--namespace NS]
      [--task-queue Q] [--demo | --project DIR [--model PROVIDER:MODEL]] [--token-env NAME]

Serves the HTTP API of "deepagents serve" (LangGraph's shapes: assistants, threads, runs,
streams), but runs each run as a RunAgent workflow on the workers of the task queue instead
of in this process. Several serve replicas and several workers share one database and one
namespace: a stream, a join or a cancel of a run another replica started goes through the
database and Temporal, and a replica that stops leaves its runs going on, for another one
to follow. Use PostgreSQL when the replicas or workers are on more than one machine.

Start the workers with the same --db (they publish the runs' events there) and the same
agent flags (--demo, or the same --project, --model, --root, --no-sandbox, --sandbox-network,
--allow-execute, --no-skills, --no-memory, --claude-skills, --no-mcp and --trust-project-mcp):
the assistant served describes the agent the workers run, with the skills and AGENTS.md memory
it reads from the project at start as the workers do (give it the same files), and the tools
of its MCP servers, which it starts only to list them.
`

type serveFlags struct {
	conn
	knowledge
	db, project, model, listen, tokenEnv, root string
	demo                                       bool
	// As the workers' flags: they shape the agent the server describes.
	network, noSandbox, allowExecute bool
	noMCP, trustMCP                  bool
}

func serveCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var f serveFlags
	fs := newFlags("serve", serveSynopsis, stderr)
	f.conn.flags(fs)
	fs.StringVar(&f.conn.address, "temporal", f.conn.address, "Temporal frontend `HOST:PORT` (the same as --address)")
	fs.StringVar(&f.db, "db", "", "thread `database` the workers use: sqlite:PATH, a file path, or postgres://USER@HOST/DB (required)")
	fs.StringVar(&f.listen, "listen", "127.0.0.1:2024", "`address` to serve the API on")
	fs.BoolVar(&f.demo, "demo", false, "serve the scripted demo agent \"demo\", as workers started with --demo run it")
	fs.StringVar(&f.project, "project", "", "project `directory` whose configuration describes the agent \"main\" (default: the current directory)")
	fs.StringVar(&f.model, "model", "", "the agent's model as `provider:model`, as the workers were given")
	fs.StringVar(&f.root, "root", "", "the `directory` the workers' agent works on (their --root): this process only describes that agent, with its execute tool, and reads no file there but the project's AGENTS.md memory, as the workers do")
	fs.BoolVar(&f.noSandbox, "no-sandbox", false, "as the workers were given: their commands run unsandboxed")
	fs.BoolVar(&f.network, "sandbox-network", false, "as the workers were given: their sandboxed commands use the network")
	fs.BoolVar(&f.allowExecute, "allow-execute", false, "as the workers were given: their commands run without asking")
	fs.BoolVar(&f.noMCP, "no-mcp", false, "as the workers were given: the agent has no MCP tools")
	fs.BoolVar(&f.trustMCP, "trust-project-mcp", false, "as the workers were given: the project's MCP servers' tools are the agent's too")
	f.knowledge.flags(fs)
	fs.StringVar(&f.tokenEnv, "token-env", "", "name of the environment `variable` holding the bearer token every request must carry (none: no token, loopback only)")
	if st, ok := parse(fs, args); !ok {
		return st
	}
	if fs.NArg() > 0 {
		return fail(stderr, "serve", exitUsage, fmt.Errorf("unexpected arguments %q", fs.Args()))
	}
	if f.db == "" {
		return fail(stderr, "serve", exitUsage, errors.New("--db is required: the database the workers record threads and publish events in"))
	}
	if f.demo && (f.project != "" || f.model != "") {
		return fail(stderr, "serve", exitUsage, errors.New("--demo serves the scripted demo agent: it takes neither --project nor --model"))
	}
	if f.demo && f.root != "" {
		return fail(stderr, "serve", exitUsage, errors.New("--demo serves the scripted demo agent: it takes no --root"))
	}
	var token string
	if f.tokenEnv != "" {
		if token = os.Getenv(f.tokenEnv); token == "" {
			return fail(stderr, "serve", exitUsage, fmt.Errorf("--token-env %s: the variable is empty or unset", f.tokenEnv))
		}
	}
	d, err := databaseOf(f.db)
	if err != nil {
		return fail(stderr, "serve", exitUsage, err)
	}

	// The agent is the workers': this process only describes it (its
	// assistant, graph and checks of decisions), never runs it.
	reg := temporal.NewRegistry()
	name, err := serveAgent(ctx, reg, f)
	if err != nil {
		return fail(stderr, "serve", exitUsage, err)
	}
	a, _ := reg.Lookup(name)

	saver, closeSaver, err := openDatabase(ctx, d)
	if err != nil {
		return fail(stderr, "serve", exitFailed, err)
	}
	defer closeSaver()
	cs, ok := saver.(checkpoint.Saver)
	if !ok {
		return fail(stderr, "serve", exitFailed, fmt.Errorf("thread database %s: its store does not list threads", d))
	}
	store, err := openServerStore(ctx, d)
	if err != nil {
		return fail(stderr, "serve", exitFailed, err)
	}
	defer store.Close()

	c, err := f.dial(ctx)
	if err != nil {
		return fail(stderr, "serve", exitFailed, err)
	}
	defer c.Close()
	x, err := temporal.NewExecutor(temporal.ExecutorOptions{Client: c, TaskQueue: f.taskQueue, Store: store})
	if err != nil {
		return fail(stderr, "serve", exitFailed, err)
	}
	cfg := server.Config{
		Agents: []server.AgentSpec{{Name: name, Agent: a}},
		Saver:  cs, Store: store, Token: token,
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	fmt.Fprintf(stderr, "deepagents-temporal serve: listening on http://%s (assistant %q, runs on task queue %s of %s, namespace %s; threads in %s)\n",
		f.listen, name, f.taskQueue, f.address, f.namespace, d)
	if err := temporal.Serve(ctx, f.listen, cfg, x); err != nil && !errors.Is(err, context.Canceled) {
		return fail(stderr, "serve", exitFailed, err)
	}
	return 0
}

// serveAgent registers with reg the agent the workers run, as f describes
// it, and returns its name. Its MCP servers are started as the workers
// start them, only to list their tools (their schemas check a decision
// that edits a call's arguments), and stopped at once: this process never
// calls them.
func serveAgent(ctx context.Context, reg *temporal.Registry, f serveFlags) (string, error) {
	if f.demo {
		return "demo", demoAgent(reg, "demo")
	}
	dir := &agentSetup{knowledge: f.knowledge}
	if f.root != "" {
		if !filepath.IsAbs(f.root) {
			return "", fmt.Errorf("--root %s: give the absolute path the workers were given", f.root)
		}
		dir = &agentSetup{backend: reg.Directory(filepath.Clean(f.root), elsewhere{}), root: filepath.Clean(f.root),
			network: f.network, unsandboxed: f.noSandbox, allowExecute: f.allowExecute, knowledge: f.knowledge}
	}
	if !f.noMCP {
		dir.mcp = workerMCP(f.trustMCP, &dir.closers)
	}
	defer dir.close()
	return "main", configAgent(ctx, reg, "main", f.project, f.model, dir, io.Discard)
}

// openServerStore opens the server's own store (threads' metadata, runs,
// their events) in the thread database d.
func openServerStore(ctx context.Context, d config.Database) (*server.SQLStore, error) {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	dsn := d.Path
	if d.Kind == config.Postgres {
		dsn = d.DSN
	}
	st, err := server.OpenSQLStore(cctx, d.Kind, dsn)
	if err != nil {
		return nil, fmt.Errorf("server store in %s: %w", d, err)
	}
	return st, nil
}

// serverEvents is where a worker publishes the events of the runs a serve
// replica started: the server store of the thread database d.
func serverEvents(ctx context.Context, d config.Database) (temporal.Events, func(), error) {
	st, err := openServerStore(ctx, d)
	if err != nil {
		return nil, nil, err
	}
	ev, err := temporal.StoreEvents(st)
	if err != nil {
		_ = st.Close()
		return nil, nil, err
	}
	return ev, func() { _ = st.Close() }, nil
}

// elsewhere stands for the workers' directory in a serve process, which
// describes their agent but never runs it: every operation fails.
type elsewhere struct{}

var errElsewhere = errors.New("the directory is the workers': this process does not run the agent")

func (elsewhere) Stat(context.Context, string) (vfs.Entry, error) { return vfs.Entry{}, errElsewhere }
func (elsewhere) Read(context.Context, string) (string, error)    { return "", errElsewhere }
func (elsewhere) Write(context.Context, string, string) error     { return errElsewhere }
func (elsewhere) Delete(context.Context, string) (int, error)     { return 0, errElsewhere }
func (elsewhere) List(context.Context, string) ([]vfs.Entry, error) {
	return nil, errElsewhere
}
func (elsewhere) Walk(context.Context, string) iter.Seq2[vfs.Entry, error] {
	return func(yield func(vfs.Entry, error) bool) { yield(vfs.Entry{}, errElsewhere) }
}
func (elsewhere) Execute(context.Context, vfs.ExecRequest) (vfs.ExecResult, error) {
	return vfs.ExecResult{}, errElsewhere
}
