package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/worker"

	"github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/approve"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/checkpoint/postgres"
	"github.com/deepagents-go/deepagents/checkpoint/sqlite"
	"github.com/deepagents-go/deepagents/config"
	"github.com/deepagents-go/deepagents/fstools"
	"github.com/deepagents-go/deepagents/internal/demoagent"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/mcp"
	"github.com/deepagents-go/deepagents/providers"
	"github.com/deepagents-go/deepagents/subagent"
	"github.com/deepagents-go/deepagents/temporal"
	"github.com/deepagents-go/deepagents/tool"
	"github.com/deepagents-go/deepagents/vfs"
)

const workerSynopsis = `
worker [--address HOST:PORT] [--namespace NS] [--task-queue Q] [--db sqlite:PATH|PATH|postgres://...]
       [--demo | --project DIR [--model PROVIDER:MODEL] [--root DIR [--no-sandbox] [--allow-execute]]]

Starts a worker that runs RunAgent workflows (one per agent run) on the task queue, and
prints one line when it is ready. SIGINT or SIGTERM stops it: it finishes the workflow
and activity tasks it holds (up to --stop-timeout) and exits; a run it was part of goes on
on any other worker of the task queue.

--db is the thread database the deepagents CLI and server use (the same SQLite file or
PostgreSQL database): a run on a thread continues the thread saved there and records
into it. Every worker of a task queue must use the same one (or none).

Agents:
  --demo      registers "demo": a scripted parent that delegates two research tasks to
              subagents in parallel, asks to write /report.md (a call that waits for an
              approval), then answers. No API key.
  otherwise   registers "main", built from the project's configuration (deepagents.toml,
              ~/.deepagents/config.toml): its model and providers, system prompt, limits,
              approvals (interrupt_on), permissions, and the subagents of its agent files
              (.deepagents/agents/*.md) with the file tools and skills they name. The agent's
              files are the run's own, kept in the thread; it has the file tools, write_todos
              and task. With --root DIR its files are that directory instead, and it has
              execute (in a sandbox unless --no-sandbox; each command waits for an approval
              unless --allow-execute): every file operation and command is an activity that
              runs on a worker started with the same --root. The user's MCP servers are
              started (the project's too with --trust-project-mcp; none with --no-mcp): each
              call of their tools is an activity, and a stdio server's calls in one run go to
              one worker (a Temporal session); the subagents of agent files get the servers
              their mcpServers name, and tools too many for the window are found through
              mcp_search, as in "deepagents run". Left out, with a notice: execute without
              --root.

Skills and memory: the agent lists the skills of "deepagents run" (~/.deepagents/skills,
the project's .deepagents/skills; the .claude/skills ones too with --claude-skills) and
sees its AGENTS.md memory files, with the same imports and limits. They are read once,
when the worker starts, into a read-only copy in memory (workflow code does no I/O and
must see the same files on every replay): restart the worker to pick up an edit, and give
every worker of a task queue the same files: a run replayed on another worker would see
other ones than its history's, and nothing checks that. The notice at start prints a hash
of the copy to compare workers by.
The agent cannot edit memory files outside --root on a worker. --no-skills, --no-memory:
leave them out.
`

// workerFlags are the worker command's flags.
type workerFlags struct {
	conn
	knowledge
	db, project, model string
	demo               bool
	// root is the real directory the agent's files are on; the others
	// say how its commands run.
	root                             string
	noSandbox, network, allowExecute bool
	// noMCP: start no MCP server; trustMCP: start the project's too.
	noMCP, trustMCP bool
	stopTimeout     time.Duration
	approvalTimeout time.Duration
	verbose         bool
}

func workerCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var f workerFlags
	fs := newFlags("worker", workerSynopsis, stderr)
	f.conn.flags(fs)
	fs.StringVar(&f.db, "db", "", "thread `database`: sqlite:PATH, a file path, or postgres://USER@HOST/DB (none: threads live in each workflow's memory)")
	fs.BoolVar(&f.demo, "demo", false, "register the scripted demo agent \"demo\" (no API key) instead of the project's agent")
	fs.StringVar(&f.project, "project", "", "project `directory` whose configuration builds the agent \"main\" (default: the current directory)")
	fs.StringVar(&f.model, "model", "", "the agent's model as `provider:model` (default: the configuration's, else the first provider whose API key is set)")
	fs.StringVar(&f.root, "root", "", "a real `directory` the agent's files are on, as with \"deepagents run --root\": its file operations and commands run on workers started with the same --root (an absolute path)")
	fs.BoolVar(&f.noSandbox, "no-sandbox", false, "with --root, let execute run commands WITHOUT a sandbox (full access to the worker's files and network)")
	fs.BoolVar(&f.network, "sandbox-network", false, "with --root, let execute's sandboxed commands use the network")
	fs.BoolVar(&f.allowExecute, "allow-execute", false, "with --root, run commands without asking (by default each execute call waits for an approval)")
	f.knowledge.flags(fs)
	fs.BoolVar(&f.noMCP, "no-mcp", false, "start no MCP server")
	fs.BoolVar(&f.trustMCP, "trust-project-mcp", false, "start the project's MCP servers too (its .mcp.json and deepagents.toml), not only the user's")
	fs.DurationVar(&f.stopTimeout, "stop-timeout", 30*time.Second, "how long a stopping worker waits for the tasks it holds")
	fs.DurationVar(&f.approvalTimeout, "approval-timeout", temporal.DefaultApprovalTimeout, "how long a run waiting for decisions keeps its workflow open; then it ends interrupted, to be resumed with resume")
	fs.BoolVar(&f.verbose, "v", false, "print the Temporal SDK's informational log lines too")
	if st, ok := parse(fs, args); !ok {
		return st
	}
	if fs.NArg() > 0 {
		return fail(stderr, "worker", exitUsage, fmt.Errorf("unexpected arguments %q", fs.Args()))
	}
	if f.verbose {
		f.logLevel = slog.LevelInfo
	}
	if f.demo && (f.project != "" || f.model != "") {
		return fail(stderr, "worker", exitUsage, errors.New("--demo runs the scripted demo agent: it takes neither --project nor --model"))
	}

	if f.approvalTimeout <= 0 {
		return fail(stderr, "worker", exitUsage, errors.New("--approval-timeout must be positive"))
	}
	reg := temporal.NewRegistry()
	reg.ApprovalTimeout = f.approvalTimeout
	if f.db != "" {
		d, err := databaseOf(f.db)
		if err != nil {
			return fail(stderr, "worker", exitUsage, err)
		}
		store, closeStore, err := openDatabase(ctx, d)
		if err != nil {
			return fail(stderr, "worker", exitFailed, err)
		}
		defer closeStore()
		reg.Store = store
		// The runs a "deepagents-temporal serve" starts publish their
		// events into its store, in the same database.
		events, closeEvents, err := serverEvents(ctx, d)
		if err != nil {
			return fail(stderr, "worker", exitFailed, err)
		}
		defer closeEvents()
		reg.Events = events
	} else {
		fmt.Fprintln(stderr, "deepagents-temporal worker: no --db: each run's thread lives in its workflow's memory, and a thread cannot be continued by a new workflow (give the CLI's database with --db)")
	}

	names := []string{"main"}
	var err error
	dir := &agentSetup{knowledge: f.knowledge}
	defer dir.close()
	if !f.noMCP {
		dir.mcp = workerMCP(f.trustMCP, &dir.closers)
	}
	if f.root != "" {
		if f.demo {
			return fail(stderr, "worker", exitUsage, errors.New("--demo keeps its files in each run's thread: it takes no --root"))
		}
		if err = openWorkDir(ctx, reg, f, dir, stderr); err != nil {
			return fail(stderr, "worker", exitUsage, err)
		}
	} else if f.noSandbox || f.network || f.allowExecute {
		fmt.Fprintln(stderr, "deepagents-temporal worker: note: there is no execute tool without --root, so --no-sandbox, --sandbox-network and --allow-execute do nothing")
	}
	if f.demo {
		names[0] = "demo"
		err = demoAgent(reg, "demo")
	} else {
		err = configAgent(ctx, reg, "main", f.project, f.model, dir, stderr)
	}
	if err == nil {
		err = testAgents(reg, &names)
	}
	if err == nil {
		err = benchAgents(reg, &names)
	}
	if err != nil {
		return fail(stderr, "worker", exitUsage, err)
	}

	c, err := f.dial(ctx)
	if err != nil {
		return fail(stderr, "worker", exitFailed, err)
	}
	defer c.Close()
	// A worker the SDK stops for good (its namespace gone, its
	// credentials refused) ends the process with a failure, so that a
	// supervisor starts it again.
	fatal := make(chan error, 1)
	// Sessions pin a run's calls of a stateful tool (a stdio MCP
	// server's) to one worker.
	w := worker.New(c, f.taskQueue, worker.Options{WorkerStopTimeout: f.stopTimeout, EnableSessionWorker: true, OnFatalError: func(err error) {
		select {
		case fatal <- err:
		default:
		}
	}})
	reg.Register(w)
	if err := w.Start(); err != nil {
		return fail(stderr, "worker", exitFailed, fmt.Errorf("starting the worker on task queue %s: %w", f.taskQueue, err))
	}
	fmt.Fprintf(stdout, "deepagents-temporal worker: ready on %s, namespace %s, task queue %s, agents %s\n",
		f.address, f.namespace, f.taskQueue, strings.Join(names, ", "))
	select {
	case <-ctx.Done():
	case err := <-fatal:
		w.Stop()
		return fail(stderr, "worker", exitFailed, fmt.Errorf("the worker stopped: %w", err))
	}
	fmt.Fprintln(stderr, "deepagents-temporal worker: stopping")
	w.Stop()
	return 0
}

// openStore opens the thread database spec names, as the deepagents CLI
// does: sqlite:PATH or a plain path (made with its directory when
// missing), or a PostgreSQL URL. Its calls are bounded by timeouts.
func openStore(ctx context.Context, spec string) (checkpoint.RunStore, func(), error) {
	d, err := databaseOf(spec)
	if err != nil {
		return nil, nil, err
	}
	return openDatabase(ctx, d)
}

// databaseOf reads a --db value: sqlite:PATH or a plain path, or a
// PostgreSQL URL.
func databaseOf(spec string) (config.Database, error) {
	low := strings.ToLower(spec)
	if !strings.HasPrefix(low, "sqlite:") && !strings.HasPrefix(low, "postgres:") && !strings.HasPrefix(low, "postgresql:") {
		if strings.Contains(spec, "://") {
			return config.Database{}, fmt.Errorf(`--db: %q is not a database deepagents uses: give sqlite:PATH, a file path, or postgres://USER@HOST/DB`, spec)
		}
		spec = "sqlite:" + spec
	}
	cwd, _ := os.Getwd()
	d, err := config.ParseDatabase(spec, cwd)
	if err != nil {
		return d, fmt.Errorf("--db: %w", err)
	}
	return d, nil
}

// openDatabase opens the thread store of d.
func openDatabase(ctx context.Context, d config.Database) (checkpoint.RunStore, func(), error) {
	switch d.Kind {
	case config.SQLite:
		if err := os.MkdirAll(filepath.Dir(d.Path), 0o700); err != nil {
			return nil, nil, fmt.Errorf("thread database %s: %w", d, err)
		}
		if f, err := os.OpenFile(d.Path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600); err == nil {
			_ = f.Close() // SQLite takes an empty file as a new database
		} else if !errors.Is(err, fs.ErrExist) {
			return nil, nil, fmt.Errorf("thread database %s: cannot make the file: %w", d, err)
		}
		s, err := sqlite.Open(d.Path, sqlite.Options{BusyTimeout: 10 * time.Second, Synchronous: d.Synchronous})
		if err != nil {
			return nil, nil, fmt.Errorf("thread database %s: %w", d, err)
		}
		return s, func() { _ = s.Close() }, nil
	case config.Postgres:
		s, err := postgres.Open(ctx, d.DSN, postgres.Options{ConnectTimeout: 10 * time.Second, CallTimeout: 30 * time.Second, ServerClock: true})
		if err != nil {
			return nil, nil, fmt.Errorf("thread database %s: %w", d, err)
		}
		return s, func() { _ = s.Close() }, nil
	}
	return nil, nil, fmt.Errorf("--db: unknown database kind %q", d.Kind)
}

// demoAgent registers the demo agent of "deepagents serve --demo" under
// name, its scripted model made through the registry.
func demoAgent(reg *temporal.Registry, name string) error {
	a, err := deepagents.New(deepagents.Config{
		Name: name, Model: reg.Model("demo", demoagent.Model(0)),
		InterruptOn: map[string]approve.Policy{"write_file": {}},
	})
	if err != nil {
		return err
	}
	return reg.Agent(name, a)
}

// configAgent registers under name the agent the project's configuration
// describes, as far as a worker can run it (see the command's help), and
// says on stderr what it leaves out.
func configAgent(ctx context.Context, reg *temporal.Registry, name, project, modelRef string, dir *agentSetup, stderr io.Writer) error {
	if project == "" {
		project, _ = os.Getwd()
	}
	home, _ := os.UserHomeDir()
	cfg, err := config.Load(project, home)
	if err != nil {
		return err
	}
	notice := func(format string, args ...any) {
		fmt.Fprintf(stderr, "deepagents-temporal worker: "+format+"\n", args...)
	}
	if modelRef == "" {
		modelRef = cfg.Model
	}
	var spec providers.Spec
	if modelRef == "" {
		if spec, err = providers.Detect(); err != nil {
			return fmt.Errorf("the worker's agent needs a model: %w; or give --model provider:model, or --demo for the scripted demo agent", err)
		}
	} else if spec, err = parseModel(cfg, modelRef); err != nil {
		return fmt.Errorf("model %s: %w", modelRef, err)
	}
	models := map[string]llm.Model{}
	modelOf := func(spec providers.Spec) (llm.Model, error) {
		key := spec.String()
		if m, ok := models[key]; ok {
			return m, nil
		}
		m, err := buildModel(ctx, cfg, spec)
		if err != nil {
			return nil, err
		}
		m = reg.Model(key, m)
		models[key] = m
		return m, nil
	}
	model, err := modelOf(spec)
	if err != nil {
		return fmt.Errorf("model %s: %w", spec, err)
	}

	var k knowledge
	root := ""
	if dir != nil {
		k, root = dir.knowledge, dir.root
	}
	if project, err = filepath.Abs(project); err != nil {
		return err
	}
	snap, err := loadSnapshot(k, project, home, root)
	if err != nil {
		return err
	}
	reg.Snapshot = snap.hash
	files, err := config.LoadAgents(config.AgentDirs(project, home)...)
	if err != nil {
		return err
	}
	var specs []subagent.Spec
	for _, af := range files {
		sp := af.Spec()
		if af.Tools != nil {
			builtin := fstools.Tools()
			sp.Tools, sp.ExactTools = []tool.Tool{}, true
			for _, tn := range af.Tools {
				j := slices.IndexFunc(builtin, func(t tool.Tool) bool { return t.Spec().Name == tn })
				if j < 0 {
					notice("agent %s (%s): tool %q is left out: a worker gives subagents only the file tools (%s)", af.Name, af.Path, tn, strings.Join(fstools.Names, ", "))
					continue
				}
				sp.Tools = append(sp.Tools, builtin[j])
			}
		}
		if len(af.Skills) > 0 && k.noSkills {
			notice("agent %s (%s): its skills are left out (--no-skills)", af.Name, af.Path)
			sp.Skills = nil
		}
		if af.Model != "" {
			s, err := parseModel(cfg, af.Model)
			if err == nil {
				sp.Model, err = modelOf(s)
			}
			if err != nil {
				return fmt.Errorf("agent %s (%s): model %s: %w", af.Name, af.Path, af.Model, err)
			}
		}
		specs = append(specs, sp)
	}
	var fitMCP mcpFit
	if dir != nil && dir.mcp != nil {
		if fitMCP, err = dir.mcp(ctx, reg, name, project, home, notice); err != nil {
			return err
		}
	} else if servers, err := mcp.Load(mcp.Sources(home, project)); err == nil && len(servers) > 0 {
		notice("%d MCP server(s) configured are not started here: their tools are the workers'", len(servers))
	}
	if dir == nil || dir.backend == nil {
		notice("execute is left out: a worker keeps each run's files in its thread, not on a directory (give --root for one)")
	}
	if snap.skills != nil {
		// The listing's budget follows the model's context window, as in
		// "deepagents run".
		snap.skills.Window = cfg.Profile(spec.Provider, spec.Model).Window
	}
	var mws []agent.Middleware
	if snap.memory != nil {
		mws = append(mws, *snap.memory)
	}

	gates := cfg.InterruptOn
	var backend vfs.Backend
	if dir != nil && dir.backend != nil {
		backend = dir.backend
		if !dir.allowExecute {
			gates = maps.Clone(gates)
			if gates == nil {
				gates = map[string]approve.Policy{}
			}
			if _, ok := gates[fstools.ExecuteName]; !ok {
				gates[fstools.ExecuteName] = approve.Policy{}
			}
		}
	}
	dc := deepagents.Config{
		Backend: backend, Execute: fstools.ExecuteOptions{Network: dir != nil && dir.network, Unsandboxed: dir != nil && dir.unsandboxed},
		Name: name, Model: model, SystemPrompt: cfg.SystemPrompt, Subagents: specs,
		MaxSteps: cfg.MaxSteps, MaxParallel: cfg.MaxParallel, Reasoning: cfg.Reasoning,
		InterruptOn: gates, Permissions: cfg.Permissions, Todos: true,
		Skills: snap.skills, Middleware: mws,
		ResponseLimits: llm.ResponseLimits{MaxBytes: cfg.MaxResponseBytes, MaxToolCalls: cfg.MaxToolCalls},
	}
	if fitMCP != nil {
		// The MCP tools and whether mcp_search finds them shape workflow
		// code as the files do: a worker with others refuses the run.
		reg.Snapshot = withMCP(snap.hash, fitMCP(&dc, cfg.Profile(spec.Provider, spec.Model).Window))
	}
	if snap.skills != nil || snap.memory != nil || reg.Snapshot != snap.hash {
		notice("skills, AGENTS.md memory and the MCP tool list are read once, now (snapshot %s): restart the worker to pick up edits, and give every worker of the task queue the same files and MCP servers (a worker with another snapshot refuses the runs this one starts)", reg.Snapshot)
	}
	a, err := deepagents.New(dc)
	if err != nil {
		return err
	}
	return reg.Agent(name, a)
}

// parseModel reads a "provider:model" reference, with the configuration's
// shorthands.
func parseModel(cfg *config.Config, ref string) (providers.Spec, error) {
	full, err := cfg.ExpandModel(ref)
	if err != nil {
		return providers.Spec{}, err
	}
	return providers.Parse(full)
}

// buildModel builds spec's model with the provider's configured options,
// as the deepagents CLI does.
func buildModel(ctx context.Context, cfg *config.Config, spec providers.Spec) (llm.Model, error) {
	pc := cfg.ProviderFor(spec.Provider)
	opts := providers.Options{
		Kind: providers.Kind(pc.Type), BaseURL: pc.BaseURL, APIKeyEnv: pc.APIKeyEnv, Headers: pc.Headers,
		NoStreamToolCalls:   pc.StreamToolCalls != nil && !*pc.StreamToolCalls,
		NoParallelToolCalls: pc.ParallelToolCalls != nil && !*pc.ParallelToolCalls,
		NoReasoningBack:     pc.ReasoningBack != nil && !*pc.ReasoningBack,
		RequestTimeout:      pc.RequestTimeout, StreamIdleTimeout: pc.StreamIdleTimeout, API: pc.API,
	}
	if err := providers.Check(spec, opts); err != nil {
		return nil, err
	}
	return providers.New(ctx, spec, opts)
}
