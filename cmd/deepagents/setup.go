package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/approve"
	"github.com/deepagents-go/deepagents/budget"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/config"
	"github.com/deepagents-go/deepagents/fstools"
	"github.com/deepagents-go/deepagents/internal/safefile"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/providers"
	"github.com/deepagents-go/deepagents/subagent"
	"github.com/deepagents-go/deepagents/tool"
	"github.com/deepagents-go/deepagents/vfs"
	"github.com/deepagents-go/deepagents/vfs/osfs"
	"github.com/deepagents-go/deepagents/vfs/perm"
)

// setup is an assembled agent for `run`, with what must be closed after.
type setup struct {
	agent     *agent.Agent
	modelName string
	// config is what the agent was assembled from.
	config deepagents.Config
	// saver is the thread database, and db where it is.
	saver   checkpoint.Saver
	db      config.Database
	closers []func() error
	// contextWindow is the model's context window from its profile and
	// the config's [models] tables (0: unknown), and subagentWindows each
	// agent file's, by subagent name. The lead wires them into the
	// library's configuration (deepagents.Config, subagent.Spec).
	contextWindow   int
	subagentWindows map[string]int
	// tracing is set when OTEL_* variables ask for traces (otel.go).
	tracing *cliTracing
	// projectFiles are the untrusted project's memory files and skills,
	// listed when the agent was assembled (nil: trusted, or none).
	projectFiles *projectFiles
	// mode is the session's approval mode (modes.go).
	mode *approve.Session
	// cost is the running cost of the turn (cost.go), and maxCost each
	// run's budget in dollars (0: none).
	cost    *costMeter
	maxCost float64
	pricer  budget.Pricer
}

func (s *setup) close() {
	for _, c := range s.closers {
		_ = c()
	}
}

// assemble reads the configuration (flags > project deepagents.toml > user
// ~/.deepagents/config.toml), builds the model, the filesystem and the
// subagents declared in agent files (each with its own reasoning setting,
// or the agent's), and the deep agent.
//
// A project file that decides where requests and keys go is refused unless
// the project is trusted (see checkTrust), and every endpoint that is not a
// provider's default is announced on stderr before any call is made.
func assemble(ctx context.Context, f runFlags, stderr io.Writer) (*setup, error) {
	cwd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	home, _ := os.UserHomeDir()
	cfg, err := config.Load(cwd, home)
	if err != nil {
		return nil, err
	}
	if err := checkTrust(cfg, home, f, stderr); err != nil {
		return nil, err
	}
	s := &setup{}
	ok := false
	defer func() {
		if !ok {
			s.close()
		}
	}()
	notices := &endpointNotices{w: stderr, cfg: cfg, log: f.notices}

	modelStr := cfg.Model
	if f.model != "" {
		if modelStr, err = cfg.ExpandModel(f.model); err != nil {
			return nil, fmt.Errorf("--model: %w", modelError(err, f.model))
		}
	}
	var spec providers.Spec
	if modelStr == "" {
		if spec, err = providers.Detect(); err != nil {
			return nil, err
		}
	} else if spec, err = providers.Parse(modelStr); err != nil {
		return nil, err
	}
	model, err := buildModel(ctx, cfg, spec, notices)
	if err != nil {
		return nil, err
	}
	s.modelName = spec.String()

	system := cfg.SystemPrompt
	if f.set["system"] {
		system = f.system
		if path, ok := strings.CutPrefix(f.system, "@"); ok {
			data, err := safefile.Read(path, maxSystemFile)
			if err != nil {
				return nil, fmt.Errorf("--system: %w", err)
			}
			if !utf8.Valid(data) {
				return nil, fmt.Errorf("--system: %s is not UTF-8 text", path)
			}
			system = string(data)
		}
	}
	maxSteps, maxParallel := cfg.MaxSteps, cfg.MaxParallel
	if f.set["max-steps"] {
		maxSteps = f.maxSteps
	}
	if f.set["max-parallel"] {
		maxParallel = f.maxParallel
	}
	if maxSteps < 0 || maxParallel < 0 {
		return nil, fmt.Errorf("--max-steps and --max-parallel must not be negative")
	}
	s.maxCost = cfg.MaxCost
	if f.set["max-cost"] {
		s.maxCost = f.maxCost
	}
	limits := llm.ResponseLimits{MaxBytes: cfg.MaxResponseBytes, MaxToolCalls: cfg.MaxToolCalls}
	if f.set["max-response-bytes"] {
		limits.MaxBytes = f.maxResponseBytes
	}
	if f.set["max-tool-calls"] {
		limits.MaxToolCalls = f.maxToolCalls
	}
	if limits.MaxBytes < 0 || limits.MaxToolCalls < 0 {
		return nil, fmt.Errorf("--max-response-bytes and --max-tool-calls must not be negative")
	}
	reasoning := cfg.Reasoning
	if f.reasoningCfg != nil {
		reasoning = f.reasoningCfg
	}
	flagRules, err := perm.ParseRules(f.backends.rules)
	if err != nil {
		return nil, fmt.Errorf("--permission: %w", err)
	}
	// --interrupt-on adds to the config's interrupt_on.
	var gates map[string]approve.Policy
	if cfg.InterruptOn != nil || f.gates != nil {
		gates = map[string]approve.Policy{}
		maps.Copy(gates, cfg.InterruptOn)
		maps.Copy(gates, f.gates)
	}

	var backend vfs.Backend
	var rootFS *osfs.FS
	if f.root != "" {
		root, err := osfs.New(f.root)
		if err != nil {
			return nil, fmt.Errorf("--root: %w", err)
		}
		s.closers = append(s.closers, root.Close)
		backend, rootFS = root, root
	}

	dirs := config.AgentDirs(cwd, home)
	if f.subagents != "" {
		st, err := os.Stat(f.subagents)
		if err != nil || !st.IsDir() {
			return nil, fmt.Errorf("--subagents %s: not a directory", f.subagents)
		}
		dirs = append(dirs, f.subagents)
	}
	files, err := config.LoadAgents(dirs...)
	if err != nil {
		return nil, err
	}
	var specs []subagent.Spec
	var errs []error
	// agentModels is the model each subagent on its own model asked for:
	// the budget prices a response that names no model as it.
	agentModels := map[string]string{}
	for _, af := range files {
		sp, err := agentSpec(ctx, cfg, af, notices)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		specs = append(specs, sp)
		if af.Model != "" {
			if full, err := cfg.ExpandModel(af.Model); err == nil {
				agentModels[af.Name] = full
			}
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	holdToFloor(specs, files, home, floor{rules: flagRules, gates: f.gates}, floor{rules: cfg.UserPermissions, gates: cfg.UserInterruptOn})
	holdBackground(specs, files, home, cfg.Background)
	s.contextWindow, s.subagentWindows = contextWindows(cfg, spec, files)
	for i := range specs {
		if w, ok := s.subagentWindows[specs[i].Name]; ok {
			specs[i].ContextWindow = w
		}
	}

	mcps, err := startMCP(ctx, f.mcp, cwd, home, f.confirm, stderr)
	if err != nil {
		return nil, err
	}
	if mcps != nil {
		s.closers = append(s.closers, mcps.Close)
	}
	if s.db, err = chooseDatabase(f.db, f.set["db"], cfg, cwd, home); err != nil {
		return nil, err
	}
	sc, mc, err := skillsAndMemory(f, cwd, home, f.root, s.contextWindow)
	if err != nil {
		return nil, err
	}
	// The control plane (protect.go): what the agent may not change, or
	// only with approval.
	in := protectInputs{root: f.root, cwd: cwd, home: home, db: s.db, skills: sc, memory: mc,
		subagents: f.subagents, store: !f.backends.noStore, allow: cfg.ProtectAllow, mcpConfigs: f.mcp.configs}
	if path, ok := strings.CutPrefix(f.system, "@"); ok && f.set["system"] {
		in.systemFile = path
	}
	cp, err := newControlPlane(in)
	if err != nil {
		return nil, err
	}
	// With --root, execute (shell.go): sandboxed, or absent, or unsandboxed.
	backend, gates, execOpts, err := wireShell(ctx, f.shell, f.quiet, rootFS, gates, specs, cp.forExecute, stderr)
	if err != nil {
		return nil, err
	}
	if cp.root != nil && backend != nil {
		backend = cp.root.Wrap(backend)
	}
	if backend, err = cp.withLinkRules(backend, append(slices.Clip(flagRules), cfg.Permissions...)); err != nil {
		return nil, err
	}
	gates = cp.withPathGates(gates, nil)
	cp.gateSpecs(specs)
	if s.mode, gates, err = modeSession(s, f, cfg, model, isConfined(f.root, backend, execOpts, mcps != nil), gates, specs, stderr); err != nil {
		return nil, err
	}

	saver, err := openDatabase(ctx, s.db)
	if err != nil {
		return nil, err
	}
	s.saver = saver
	s.closers = append(s.closers, saver.Close)
	backend, rules, err := wireBackends(ctx, s, f.backends, flagRules, cfg, backend)
	if err != nil {
		return nil, err
	}

	s.config = deepagents.Config{
		Model: model, SystemPrompt: system, Subagents: specs, Backend: backend, Execute: execOpts,
		MaxSteps: maxSteps, MaxParallel: maxParallel, Stream: true, Reasoning: reasoning, InterruptOn: gates, ResponseLimits: limits,
		// The CLI plans with write_todos and compacts long conversations
		// against each model's window.
		Todos: true, ContextWindow: s.contextWindow, Permissions: rules, Skills: sc, Memory: mc,
		Background: cfg.Background,
	}
	s.config.Middleware = append(s.config.Middleware, s.mode.Middleware())
	// Every model call is priced, and a run stops at its budget (cost.go).
	s.cost, s.pricer = &costMeter{}, cfg.Pricing()
	s.config.Budget = budget.New(budget.Options{Limits: budget.Limits{Cost: s.maxCost}, Pricer: s.pricer, OnCharge: s.cost.charge,
		Model: s.modelName, AgentModels: agentModels})
	if cp.mounts != nil {
		// The memory files mounted from outside --root (the user's, say):
		// guarded on the files every call of the agent and its forks gets.
		s.config.Middleware = append(s.config.Middleware, deepagents.GuardMiddleware(cp.mounts))
	}
	applyMCP(&s.config, mcps, f.mcp)
	s.projectFiles = listProjectFiles(stderr, f.trustProject, cwd, home, sc, mc)
	if err := s.startTracing(ctx, stderr); err != nil {
		return nil, err
	}
	a, err := deepagents.New(s.config)
	if err != nil {
		return nil, err
	}
	if err := checkGates(a, gates, specs, mcpToolNames(mcps)); err != nil {
		return nil, err
	}
	s.agent = a
	ok = true
	return s, nil
}

// checkGates refuses an interrupt_on (or --interrupt-on) that names no
// tool any agent has: a misspelt name would let the calls it meant to stop
// run without asking. MCP tools found through mcp_search (extra) count:
// they are bound, under their own names, once found.
func checkGates(a *agent.Agent, gates map[string]approve.Policy, specs []subagent.Spec, extra []string) error {
	known := slices.Clone(fstools.Names)
	for _, ts := range a.ToolSpecs() {
		extra = append(extra, ts.Name)
	}
	for _, name := range extra {
		if !slices.Contains(known, name) {
			known = append(known, name)
		}
	}
	check := func(m map[string]approve.Policy, where string) error {
		for _, name := range slices.Sorted(maps.Keys(m)) {
			if !slices.Contains(known, name) {
				return fmt.Errorf("%s names %q, which is not a tool, so its calls would never wait; the tools are %s", where, name, strings.Join(known, ", "))
			}
		}
		return nil
	}
	if err := check(gates, "interrupt_on (or --interrupt-on)"); err != nil {
		return err
	}
	for _, sp := range specs {
		if err := check(sp.InterruptOn, "subagent "+sp.Name+"'s interrupt_on"); err != nil {
			return err
		}
	}
	return nil
}

// floor is rules and gates that hold under an agent file's own.
type floor struct {
	rules perm.Rules
	gates map[string]approve.Policy
}

// holdToFloor keeps the user's rules and gates under every subagent whose
// agent file sets its own (files[i] made specs[i]): the command line's
// --permission and --interrupt-on hold for every agent file, and the
// user's config's [permissions] and interrupt_on for every agent file but
// the user's own (~/.deepagents/agents), which may replace them. An agent
// file's permissions then only add rules (an access must pass the floor's
// rules and its own) and its interrupt_on only adds gates ({} lifts
// nothing). A subagent that sets neither inherits the agent's, which hold
// all of them already.
func holdToFloor(specs []subagent.Spec, files []config.AgentFile, home string, flags, user floor) {
	userDir := ""
	if home != "" {
		userDir = filepath.Join(home, ".deepagents", "agents")
	}
	for i, af := range files {
		fl := floor{rules: flags.rules, gates: maps.Clone(flags.gates)}
		if filepath.Dir(af.Path) != userDir {
			fl.rules = append(slices.Clip(fl.rules), user.rules...)
			if fl.gates == nil {
				fl.gates = map[string]approve.Policy{}
			}
			for name, a := range user.gates {
				if _, ok := fl.gates[name]; !ok {
					fl.gates[name] = a
				}
			}
		}
		sp := &specs[i]
		if af.Permissions != nil && len(fl.rules) > 0 {
			sp.Middleware = append([]agent.Middleware{deepagents.PermissionsMiddleware(fl.rules)}, sp.Middleware...)
		}
		if af.InterruptOn != nil {
			for name, a := range fl.gates {
				if sp.ExactTools && !hasTool(sp.Tools, name) {
					continue // a gate on a tool it does not have would gate nothing
				}
				sp.InterruptOn[name] = a
			}
		}
	}
}

// holdBackground keeps every agent file but the user's own
// (~/.deepagents/agents) from raising the background caps in force (caps,
// the configuration's, or the defaults): a project's agent file may lower
// them, as a project's config file may, never raise them (files[i] made
// specs[i]).
func holdBackground(specs []subagent.Spec, files []config.AgentFile, home string, caps subagent.BackgroundLimits) {
	userDir := ""
	if home != "" {
		userDir = filepath.Join(home, ".deepagents", "agents")
	}
	for i, af := range files {
		if filepath.Dir(af.Path) != userDir {
			specs[i].BackgroundLimits = config.LowerBackground(caps, specs[i].BackgroundLimits)
		}
	}
}

// buildModel builds spec's model with the provider's configured options,
// announcing its endpoint through notices when that is not the default.
func buildModel(ctx context.Context, cfg *config.Config, spec providers.Spec, notices *endpointNotices) (llm.Model, error) {
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
	m, err := providers.New(ctx, spec, opts)
	if err == nil {
		notices.show(spec.Provider, pc)
	}
	return m, err
}

// agentSpec turns an agent file into a subagent spec: its tools are looked
// up by name among the built-in file tools, and its model is built. Its
// problems are *config.FileErrors on the lines of the tool names and the
// model, all of them at once.
func agentSpec(ctx context.Context, cfg *config.Config, af config.AgentFile, notices *endpointNotices) (subagent.Spec, error) {
	sp := af.Spec()
	var errs []error
	fail := func(line int, format string, args ...any) {
		errs = append(errs, &config.FileError{Path: af.Path, Line: max(line, af.Line), Msg: fmt.Sprintf(format, args...)})
	}
	if af.Tools != nil {
		builtin := fstools.Tools()
		sp.Tools = []tool.Tool{}
		sp.ExactTools = true
		for i, name := range af.Tools {
			j := slices.IndexFunc(builtin, func(t tool.Tool) bool { return t.Spec().Name == name })
			if j < 0 {
				line := 0
				if i < len(af.ToolLines) {
					line = af.ToolLines[i]
				}
				fail(line, "unknown tool %q; the tools available to subagents are %s", name, strings.Join(fstools.Names, ", "))
				continue
			}
			sp.Tools = append(sp.Tools, builtin[j])
		}
	}
	if af.Model != "" {
		if m, err := agentModel(ctx, cfg, af.Model, notices); err != nil {
			fail(af.ModelLine, "model %s: %v", af.Model, err)
		} else {
			sp.Model = m
		}
	}
	return sp, errors.Join(errs...)
}

func agentModel(ctx context.Context, cfg *config.Config, ref string, notices *endpointNotices) (llm.Model, error) {
	full, err := cfg.ExpandModel(ref)
	if err != nil {
		return nil, modelError(err, ref)
	}
	spec, err := providers.Parse(full)
	if err != nil {
		return nil, err
	}
	return buildModel(ctx, cfg, spec, notices)
}
