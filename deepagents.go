// Package deepagents assembles the default deep agent: the seven file tools,
// the task tool with its subagents (a general-purpose one always among them),
// and your own tools, over the agent loop of package agent.
//
//	a, err := deepagents.New(deepagents.Config{Model: model})
//	res, err := a.Invoke(ctx, agent.Prompt("Summarise /notes.md"))
//	fmt.Println(res.FinalText())
//
// New returns an *agent.Agent: run it with Run (an event stream) or Invoke.
package deepagents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/approve"
	"github.com/deepagents-go/deepagents/budget"
	"github.com/deepagents-go/deepagents/compact"
	"github.com/deepagents-go/deepagents/fstools"
	"github.com/deepagents-go/deepagents/ledger"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/memory"
	"github.com/deepagents-go/deepagents/offload"
	"github.com/deepagents-go/deepagents/skills"
	"github.com/deepagents-go/deepagents/subagent"
	"github.com/deepagents-go/deepagents/todos"
	"github.com/deepagents-go/deepagents/tool"
	"github.com/deepagents-go/deepagents/vfs"
	"github.com/deepagents-go/deepagents/vfs/perm"
)

// Config describes a deep agent. Only Model is required.
type Config struct {
	// Name of the top-level agent in events (agent.DefaultName when empty).
	Name string
	// Model answers the agent and every subagent that names no model.
	Model llm.Model
	// SystemPrompt is the agent's own prompt. Empty by default: the tools'
	// descriptions carry what the model needs.
	SystemPrompt string
	// Tools are your tools, bound after the built-in ones. Isolated
	// subagents get them too unless their spec lists its own.
	Tools []tool.Tool
	// Subagents are the agents the task tool can start. The general-purpose
	// subagent is always present: a spec of that name replaces it.
	Subagents []subagent.Spec
	// Middleware wrap the agent's model and tool calls; their tools are bound
	// after Tools.
	Middleware []agent.Middleware
	// Backend is the filesystem; nil keeps files in the run's state. A
	// backend that can run commands (a vfs.Executor, such as osfs.Shell)
	// also gets the execute tool, for the agent and every subagent. A
	// vfs.Composite made with a nil fallback mounts its routes (a store at
	// /memories/, say) over the run's state.
	Backend vfs.Backend
	// Execute tunes the execute tool bound for such a backend: its
	// description tells the model whether commands run sandboxed and with
	// network.
	Execute fstools.ExecuteOptions
	// Permissions are allow/deny rules on the file tools' access by path
	// glob (package vfs/perm): first match wins, no match allows. Subagents
	// inherit them unless their spec sets its own.
	Permissions perm.Rules
	// MaxSteps bounds model calls per run (agent.DefaultMaxSteps, 500, when
	// 0), for the agent and each subagent whose spec sets none; every
	// subagent instance has a budget of its own.
	MaxSteps int
	// MaxParallel bounds concurrent tool calls of one step (task calls
	// included), for the agent and each subagent.
	MaxParallel int
	// Background caps the subagents' background runs (task with
	// run_in_background) and how many run at once; zero fields take the
	// defaults: 50 model calls, 200,000 tokens and 30 minutes each, 4 at
	// once. A spec's BackgroundLimits override them for its runs.
	Background subagent.BackgroundLimits
	// ResponseFormat makes the agent end with a structured response; the same
	// kinds as subagent.Spec.ResponseFormat.
	ResponseFormat any
	// Stream makes every model call stream (model.delta events).
	Stream bool
	// ResponseLimits cap each model response, for the agent and every
	// subagent: 16 MiB of text, reasoning and tool-call arguments and 1,000
	// tool calls by default (see agent.Config.ResponseLimits).
	ResponseLimits llm.ResponseLimits
	// Offload sets when a large tool result or a huge user message is saved
	// to a file and the model gets a notice with a preview instead, for the
	// agent and every subagent. Nil means offload.Defaults(); a zero
	// offload.Config turns offloading off.
	Offload *offload.Config
	// Reasoning asks the model to think before it answers (an effort or a
	// token budget), for the agent and every subagent whose spec sets none.
	// Nil leaves the model's default.
	Reasoning *llm.ReasoningConfig
	// InterruptOn names the tools whose calls wait for a person's decision
	// before they run, for the agent and every subagent whose spec sets
	// none (see package approve; resuming needs a checkpointer).
	InterruptOn map[string]approve.Policy
	// Todos binds the write_todos tool (package todos) for the agent and
	// every subagent: each agent instance keeps its own plan, shown to its
	// model after the cached part of the prompt, and a run that ends with
	// items not completed says so in a notice. Off by default.
	Todos bool
	// ContextWindow is the model's context window in tokens (0: unknown);
	// tokens.ProfileFor knows the providers' models. Subagents on the same
	// model inherit it; a spec on another model sets its own. Context
	// reports and compaction use it.
	ContextWindow int
	// Compaction sets how a long conversation is summarised to stay within
	// the context window (package compact): nil means the defaults — on,
	// at 0.85 of each agent's window (170,000 tokens when unknown), each
	// subagent against its own window. NoCompaction turns it off.
	Compaction   *compact.Config
	NoCompaction bool
	// Skills lists skills (package skills) in the prompt of the agent and
	// its forks, and makes their folders readable under the prefix (by
	// default /skills/); an isolated subagent gets the skills its spec
	// names (Spec.Skills), from the same sources. Window 0 takes
	// ContextWindow. Nil: no skills.
	Skills *skills.Config
	// Memory shows AGENTS.md files (package memory) to the agent and its
	// forks after the cached part of the prompt, and mounts them where the
	// agent can edit them. Isolated subagents get none. Nil: no memory.
	Memory *memory.Config
	// Budget counts what every model call of the agent and its subagents
	// costs, in tokens and dollars, and stops a run once its budget is used
	// up (package budget). Nil: nothing is counted.
	Budget *budget.Middleware
}

// ConfigError is an assembly-time rejection: New returns no other kind of
// error. It is agent.ConfigError (and subagent.ConfigError), so one errors.As
// matches the errors of every constructor; its Subagent field names the
// subagent spec at fault, empty when the fault is in Config itself.
type ConfigError = agent.ConfigError

// BuiltinToolNames are the names of the default stack's tools, in the order
// they are bound: the file tools, then task.
var BuiltinToolNames = append(slices.Clone(fstools.Names), subagent.TaskToolName)

// New assembles the deep agent. Every rejection is a *ConfigError.
func New(cfg Config) (*agent.Agent, error) {
	if cfg.Model == nil {
		return nil, &ConfigError{Msg: "deepagents: Config.Model is required"}
	}
	// Checked here, before the subagents inherit them, so that a bad limit
	// is blamed on Config and not on a subagent.
	if cfg.MaxSteps < 0 {
		return nil, &ConfigError{Msg: fmt.Sprintf("deepagents: MaxSteps is %d; it must be 0 (the default, %d) or more", cfg.MaxSteps, agent.DefaultMaxSteps)}
	}
	if cfg.MaxParallel < 0 {
		return nil, &ConfigError{Msg: fmt.Sprintf("deepagents: MaxParallel is %d; it must be 0 (the default, %d) or more", cfg.MaxParallel, agent.DefaultMaxParallel)}
	}
	// The settings too: a model that refuses them is the fault of Config, not
	// of the general-purpose subagent that inherits both.
	if _, err := agent.New(agent.Config{Name: cfg.Name, Model: cfg.Model, Reasoning: cfg.Reasoning}); err != nil {
		return nil, err
	}
	fs := fstools.Tools()
	// execute comes after the task tool, so the built-in tools keep their
	// places; isolated subagents get it with the file tools.
	var shell []tool.Tool
	if _, ok := vfs.AsExecutor(cfg.Backend); ok {
		shell = []tool.Tool{fstools.Execute(cfg.Execute)}
	}
	var hooks []agent.Middleware
	var mwTools []tool.Tool
	for _, m := range cfg.Middleware {
		mwTools = append(mwTools, m.Tools...)
		m.Tools = nil
		hooks = append(hooks, m)
	}
	if len(cfg.Permissions) > 0 {
		// It checks at the tool itself, so its place in the list does not
		// matter; forks run these hooks and so share the rules.
		hooks = append([]agent.Middleware{PermissionsMiddleware(cfg.Permissions)}, hooks...)
	}
	// Skills and memory come after your middleware and before compaction,
	// which measures the request they complete.
	var skillsFor func(names []string, window int) (agent.Middleware, error)
	if cfg.Skills != nil {
		sc := *cfg.Skills
		if sc.Loader == nil {
			l, err := skills.NewLoader(sc.Prefix, sc.Sources...)
			if err != nil {
				return nil, &ConfigError{Msg: "deepagents: " + err.Error(), Err: err}
			}
			sc.Loader = l
		}
		if sc.Window == 0 {
			sc.Window = cfg.ContextWindow
		}
		m, err := skills.Middleware(sc)
		if err != nil {
			return nil, &ConfigError{Msg: "deepagents: " + err.Error(), Err: err}
		}
		hooks = append(hooks, m)
		skillsFor = func(names []string, window int) (agent.Middleware, error) {
			c := sc
			c.Window, c.Only = window, names
			return skills.Middleware(c)
		}
	}
	if cfg.Memory != nil {
		m, err := memory.Middleware(*cfg.Memory)
		if err != nil {
			return nil, &ConfigError{Msg: "deepagents: " + err.Error(), Err: err}
		}
		hooks = append(hooks, m)
	}
	after := append(append(shell, cfg.Tools...), mwTools...)
	var clash []string
	for _, t := range after[len(shell):] {
		if t == nil {
			return nil, &ConfigError{Msg: "deepagents: nil tool in Config.Tools or a middleware"}
		}
		name := t.Spec().Name
		if (slices.Contains(BuiltinToolNames, name) || len(shell) > 0 && name == fstools.ExecuteName) && !slices.Contains(clash, name) {
			clash = append(clash, name)
		}
	}
	if len(clash) > 0 {
		return nil, &ConfigError{Msg: fmt.Sprintf("Tool name(s) %s collide with built-in tools; rename your tools.", strings.Join(clash, ", "))}
	}
	oc := offload.Defaults()
	if cfg.Offload != nil {
		oc = *cfg.Offload
	}
	off, err := offload.New(oc)
	if err != nil {
		return nil, &ConfigError{Msg: err.Error()}
	}
	// Every child gets the shared middleware after its own; the todos
	// middleware comes last so that a fork's tools are its parent's, in the
	// same order, and its requests share the parent's cached prefix.
	shared := []agent.Middleware{off}
	if cfg.Todos {
		shared = append(shared, todos.Middleware())
	}
	if cfg.Budget != nil {
		// Every agent of the tree counts its calls, so that a run's
		// spending is its subagents' too.
		shared = append(shared, cfg.Budget.Middleware())
	}
	// Compaction is per agent: each measures against its own model's
	// window. The top-level agent's also serves its forks (same model,
	// same history).
	specs := WithGeneralPurpose(cfg.Subagents)
	if !cfg.NoCompaction {
		cc := compact.Config{}
		if cfg.Compaction != nil {
			cc = *cfg.Compaction
		}
		cc.TodosInTail = cc.TodosInTail || cfg.Todos
		mk := func(window int) (agent.Middleware, error) {
			c := cc
			if c.Window == 0 {
				c.Window = window
			}
			m, err := compact.New(c)
			if err != nil {
				return m, &ConfigError{Msg: "deepagents: " + err.Error(), Err: err}
			}
			return m, nil
		}
		top, err := mk(cfg.ContextWindow)
		if err != nil {
			return nil, err
		}
		after = append(after, top.Tools...) // compact_conversation, when asked for
		top.Tools = nil
		hooks = append(hooks, top)
		specs = slices.Clone(specs)
		for i := range specs {
			if specs[i].Mode == subagent.Fork {
				continue // forks run the parent's hooks, compaction included
			}
			w := specs[i].ContextWindow
			if w == 0 && specs[i].Model == nil {
				w = cfg.ContextWindow
			}
			m, err := mk(w)
			if err != nil {
				return nil, err
			}
			specs[i].Middleware = append(slices.Clone(specs[i].Middleware), m)
		}
	}
	if specs, err = narrowMCP(specs, cfg.Tools); err != nil {
		return nil, err
	}
	if specs, err = withPermissions(specs, cfg.Permissions); err != nil {
		return nil, err
	}
	task, err := subagent.NewTask(subagent.Config{
		Subagents:      specs,
		Model:          cfg.Model,
		BaseTools:      append(slices.Clone(fs), shell...),
		DefaultTools:   cfg.Tools,
		ForkBefore:     fs,
		ForkAfter:      after,
		ForkMiddleware: hooks,
		Middleware:     shared,
		MaxSteps:       cfg.MaxSteps,
		MaxParallel:    cfg.MaxParallel,
		Background:     cfg.Background,
		Stream:         cfg.Stream,
		Reasoning:      cfg.Reasoning,
		InterruptOn:    cfg.InterruptOn,
		ContextWindow:  cfg.ContextWindow,
		ResponseLimits: cfg.ResponseLimits,
		Skills:         skillsFor,
	})
	if err != nil {
		return nil, err
	}
	rf, err := subagent.ResolveFormat(cfg.ResponseFormat)
	if err != nil {
		var ce *ConfigError
		if !errors.As(err, &ce) {
			err = &ConfigError{Msg: fmt.Sprintf("deepagents: ResponseFormat: %v", err), Err: err}
		}
		return nil, err
	}
	tools := append(append(fs, task), after...)
	mw := append(slices.Clone(hooks), shared...)
	if len(cfg.InterruptOn) > 0 {
		if err := approve.Validate(cfg.InterruptOn); err != nil {
			return nil, &ConfigError{Msg: "deepagents: " + err.Error(), Err: err}
		}
		mw = append([]agent.Middleware{approve.Gate(cfg.InterruptOn)}, mw...)
	}
	ac := agent.Config{
		Name: cfg.Name, Model: cfg.Model, System: cfg.SystemPrompt, Tools: tools, Middleware: mw,
		MaxSteps: cfg.MaxSteps, MaxParallel: cfg.MaxParallel, Backend: cfg.Backend, Response: rf, Stream: cfg.Stream,
		Reasoning: cfg.Reasoning, ContextWindow: cfg.ContextWindow, ResponseLimits: cfg.ResponseLimits,
	}
	// The context ledger, last: it measures the requests as sent.
	ac.Middleware = append(ac.Middleware, ledger.New(ac).Middleware())
	return agent.New(ac)
}

// narrowMCP gives each subagent whose spec names MCP servers only those
// servers' tools among its own (or the parent's): a tool that says which
// servers it serves is kept when the spec names all of them.
// specs is New's own copy and is changed in place.
func narrowMCP(specs []subagent.Spec, parent []tool.Tool) ([]subagent.Spec, error) {
	for i, s := range specs {
		if s.MCPServers == nil {
			continue
		}
		if s.Mode == subagent.Fork {
			return nil, &ConfigError{Subagent: s.Name, Msg: fmt.Sprintf("SubAgent '%s': MCPServers cannot be set on a fork, which runs with its parent's exact tools", s.Name)}
		}
		own := s.Tools
		if own == nil {
			own = parent
		}
		kept := []tool.Tool{}
		for _, t := range own {
			if m, ok := t.(interface{ MCPServers() []string }); ok && slices.ContainsFunc(m.MCPServers(), func(n string) bool { return !slices.Contains(s.MCPServers, n) }) {
				continue
			}
			kept = append(kept, t)
		}
		specs[i].Tools = kept
	}
	return specs, nil
}

// WithGeneralPurpose returns specs with the default general-purpose subagent
// first, unless a spec already has that name (it then stands in for the
// default); an empty list gets the default alone.
func WithGeneralPurpose(specs []subagent.Spec) []subagent.Spec {
	for _, s := range specs {
		if s.Name == subagent.GeneralPurposeName {
			return slices.Clone(specs)
		}
	}
	return append([]subagent.Spec{subagent.GeneralPurpose()}, specs...)
}

// withPermissions gives each isolated subagent the rules of its spec, or
// else cfg's; a fork runs its parent's hooks, rules included, and may not
// set its own. specs is New's own copy and is changed in place.
func withPermissions(specs []subagent.Spec, rules perm.Rules) ([]subagent.Spec, error) {
	for i, s := range specs {
		own := s.Permissions
		if s.Mode == subagent.Fork {
			if own != nil {
				return nil, &ConfigError{Subagent: s.Name, Msg: fmt.Sprintf("SubAgent '%s': a fork shares its parent's permissions; it cannot set its own", s.Name)}
			}
			continue
		}
		if own == nil {
			own = rules
		}
		if len(own) > 0 {
			specs[i].Middleware = append([]agent.Middleware{PermissionsMiddleware(own)}, s.Middleware...)
		}
	}
	return specs, nil
}

// PermissionsMiddleware enforces rules on every tool call of an agent. It
// wraps the called tool, not the call's files, so the rules see the files
// the tool finally gets, whatever other middleware mounted into them on
// the way (skills, memory files), wherever it sits in the list. Tools that
// run a subagent (agent.Nested, such as the task tool) are left alone: the
// subagent gets its parent's files unwrapped and applies rules of its own,
// its spec's or the same ones inherited. Hooks' own file access (saving an
// offloaded result) is not checked. With no rules it does nothing.
func PermissionsMiddleware(rules perm.Rules) agent.Middleware {
	if len(rules) == 0 {
		return agent.Middleware{Name: "permissions"}
	}
	return filesMiddleware("permissions", func(b vfs.Backend) vfs.Backend { return perm.Wrap(b, rules) })
}

// GuardMiddleware puts g on the files every tool call of an agent gets,
// whatever other middleware mounted into them (memory files, say), as
// PermissionsMiddleware does with rules. Tools that run a subagent are left
// alone: the subagent's own calls are guarded by its own middleware or
// backend. A guard without an Approved function gets agent.Approved, so
// that the changes a person approved go through.
func GuardMiddleware(g *perm.Guard) agent.Middleware {
	if g.Approved == nil {
		g.Approved = agent.Approved
	}
	return filesMiddleware("protect", g.Wrap)
}

// filesMiddleware runs every tool call but those of tools that run a
// subagent on its files under wrap.
func filesMiddleware(name string, wrap func(vfs.Backend) vfs.Backend) agent.Middleware {
	return agent.Middleware{Name: name, WrapTool: func(ctx context.Context, call *agent.ToolCall, next agent.ToolFunc) (tool.Result, error) {
		if _, nested := call.Tool.(agent.Nested); nested || call.Tool == nil {
			return next(ctx, call)
		}
		c := *call
		c.Tool = &wrappedFiles{Tool: call.Tool, wrap: wrap}
		return next(ctx, &c)
	}}
}

// wrappedFiles runs a tool on its files under wrap.
type wrappedFiles struct {
	tool.Tool
	wrap func(vfs.Backend) vfs.Backend
}

func (t *wrappedFiles) Run(ctx context.Context, env *tool.Env, args json.RawMessage) (tool.Result, error) {
	if env == nil || env.Files == nil {
		return t.Tool.Run(ctx, env, args)
	}
	e := *env
	e.Files = t.wrap(env.Files)
	return t.Tool.Run(ctx, &e, args)
}
