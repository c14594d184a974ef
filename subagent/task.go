package subagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/approve"
	"github.com/deepagents-go/deepagents/budget"
	"github.com/deepagents-go/deepagents/ledger"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/tool"
)

// TaskToolName is the name of the delegation tool.
const TaskToolName = "task"

// Fixed texts. RefusalText and the unknown-type wording are the ones the
// system we reproduce uses, word for word; the rest are ours.
const (
	// RefusalText answers a fork subagent's own call of task: a fork may
	// not delegate further.
	RefusalText = "You are a subagent and cannot delegate to another subagent. Complete this task yourself instead of calling this tool again."

	// GeneralPurposePrompt is the default subagent's system prompt: it
	// tells the child that only its final message reaches the parent.
	GeneralPurposePrompt = "You are a subagent doing one task that was delegated to you. " +
		"The agent that delegated it will see only your final message: none of your tool calls, tool results or files read. " +
		"So end with a complete, self-contained report of what you found or did."

	// GeneralPurposeDescription is the default subagent's listing line.
	GeneralPurposeDescription = "A general agent with the same file tools as you. Use it for research, searching many files, " +
		"and multi-step work whose details would crowd your own context."

	// ForkNote ends a fork subagent's listing line, so the model knows a
	// fork's brief can be short.
	ForkNote = " (fork: inherits your full conversation and system prompt, so the brief can be short)"

	// ForkPreamble precedes the description in a fork's user message.
	ForkPreamble = "You are now a forked copy of the agent above, running as a subagent. " +
		"Do only the task below; your final message goes back to the agent that forked you as your report, and the user does not see it.\n\nTask: "

	// NoReportText is the receipt of a child that ended without any text.
	NoReportText = "The subagent finished without writing a final report."

	taskTemplateHead = "Start a subagent: a separate agent that does one task on its own and returns a single report.\n\nSubagents:\n"
	taskTemplateTail = "\n\nUsage:\n" +
		"- For independent tasks, put several task calls in one message; they run at the same time.\n" +
		"- A subagent sees only your description, not this conversation, unless its line says it inherits it. " +
		"Make the brief complete: the goal, the facts and paths it needs, and what its report must contain.\n" +
		"- Only its final report comes back, as this tool's result. The user never sees it; pass on what matters.\n" +
		"- Delegate multi-step or context-heavy work where only the outcome matters, and independent parts in parallel. " +
		"Do one-step work yourself. To see how the work was done, ask for notes in a file."
)

// GeneralPurpose returns the default subagent's spec.
func GeneralPurpose() Spec {
	return Spec{Name: GeneralPurposeName, Description: GeneralPurposeDescription, SystemPrompt: GeneralPurposePrompt}
}

// Description returns the task tool's description for specs, in order: the
// fixed template with one "- NAME: DESCRIPTION" line per subagent.
func Description(specs []Spec) string {
	var b strings.Builder
	b.WriteString(taskTemplateHead)
	for i, s := range specs {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString("- ")
		b.WriteString(s.Name)
		b.WriteString(": ")
		b.WriteString(s.Description)
		if s.Mode == Fork {
			b.WriteString(ForkNote)
		}
	}
	b.WriteString(taskTemplateTail)
	return b.String()
}

const taskParams = `{"type":"object","properties":{` +
	`"description":{"type":"string","description":"The complete brief for the subagent: what to do, the context it needs and what to report."},` +
	`"subagent_type":{"type":"string","description":"Name of a subagent from the list."},` +
	`"run_in_background":{"type":"boolean","description":"Return at once with a task id; the report comes later as a message."}},` +
	`"required":["description","subagent_type"],"additionalProperties":false}`

// Config assembles the task tool. Subagents must not be empty (a task tool
// with nothing to delegate to is refused, as in the system we reproduce);
// the rest describes what children inherit from the agent the tool is
// bound to.
type Config struct {
	Subagents []Spec
	// Model is the parent's model, used by specs that set none.
	Model llm.Model
	// BaseTools come first for every isolated child (the file tools).
	BaseTools []tool.Tool
	// DefaultTools are an isolated child's own tools when its spec names
	// none: the parent's custom tools.
	DefaultTools []tool.Tool
	// ForkBefore and ForkAfter are the parent's tools before and after task,
	// in order; a fork child gets ForkBefore, a refusing task, ForkAfter.
	ForkBefore, ForkAfter []tool.Tool
	// ForkMiddleware are the parent's middleware hooks (without tools),
	// which fork children run with too.
	ForkMiddleware []agent.Middleware
	// Middleware are added to every child, isolated or fork, after its own
	// (the agent's result offloading, for one).
	Middleware []agent.Middleware
	// MaxSteps is a child's step limit when its spec sets none.
	MaxSteps int
	// MaxParallel bounds each child's concurrent tool calls.
	MaxParallel int
	// Stream makes children stream their model calls.
	Stream bool
	// Reasoning is the parent's reasoning setting, used by every child whose
	// spec sets none (forks included).
	Reasoning *llm.ReasoningConfig
	// InterruptOn is the parent's approval policy, used by every child whose
	// spec sets none.
	InterruptOn map[string]approve.Policy
	// ContextWindow is the parent's model's context window, used by every
	// child on the parent's model whose spec sets none.
	ContextWindow int
	// ResponseLimits cap each model response of every child (see
	// agent.Config.ResponseLimits).
	ResponseLimits llm.ResponseLimits
	// Background caps every background run of a subagent whose spec sets
	// none (zero fields: the defaults, see BackgroundLimits), and bounds
	// how many run at once.
	Background BackgroundLimits
	// Skills builds the skills middleware of an isolated child whose spec
	// names skills (Spec.Skills), given the names and the child's context
	// window. Nil: the parent has no skills, and a spec that names some is
	// refused.
	Skills func(names []string, window int) (agent.Middleware, error)
}

// Task is the task tool. It implements agent.Nested, so a child's events
// reach its parent's stream, and agent.Delegator, so an edit of a call
// waiting in a child is checked against the child's tool before it runs.
type Task struct {
	spec     llm.ToolSpec
	schema   *tool.Schema
	children map[string]*child
	names    []string
	// maxRunning bounds the background runs going at once per parent;
	// tokenCap stops a background run at its token cap.
	maxRunning int
	tokenCap   *budget.Middleware
}

var (
	_ agent.Nested    = (*Task)(nil)
	_ agent.Delegator = (*Task)(nil)
)

type child struct {
	name    string
	mode    Mode
	agent   *agent.Agent
	timeout time.Duration
	// background: the subagent runs in the background unless a call says
	// otherwise; bgAgent is the subagent with its background token cap
	// (nil: agent), background its caps.
	background   BackgroundLimits
	inBackground bool
	bgAgent      *agent.Agent
}

// forkPrompt puts a fork spec's own prompt at the start of every request's
// SystemTail. The static System stays the parent's prompt as sent, so the
// fork's requests begin with the parent's bytes (system prompt and tools)
// and reuse its cached prefix; the fork's prompt comes after the cache
// breakpoint, ahead of anything else the tail holds.
func forkPrompt(text string) agent.Middleware {
	return agent.Middleware{Name: "fork-prompt", BeforeModel: func(_ context.Context, _ agent.StepInfo, req *llm.Request) error {
		if req.SystemTail == "" {
			req.SystemTail = text
		} else {
			req.SystemTail = text + "\n\n" + req.SystemTail
		}
		return nil
	}}
}

// NewTask validates the subagent specs and assembles every child agent.
// Every rejection is a *ConfigError (an agent.ConfigError); the texts for an
// empty list, an invalid mode, skills on a fork and an unsupported response
// format are the ones the reference implementation uses.
func NewTask(cfg Config) (*Task, error) {
	if len(cfg.Subagents) == 0 {
		return nil, &ConfigError{Msg: "At least one subagent must be specified"}
	}
	if cfg.MaxSteps < 0 {
		return nil, &ConfigError{Msg: fmt.Sprintf("the subagents' default step limit is %d; it must be 0 (the default, %d) or more", cfg.MaxSteps, agent.DefaultMaxSteps)}
	}
	if cfg.MaxParallel < 0 {
		return nil, &ConfigError{Msg: fmt.Sprintf("the subagents' parallelism bound is %d; it must be 0 (the default, %d) or more", cfg.MaxParallel, agent.DefaultMaxParallel)}
	}
	if err := cfg.Background.check("subagents"); err != nil {
		return nil, &ConfigError{Msg: err.Error()}
	}
	bgDefaults := cfg.Background.or(DefaultBackgroundLimits())
	specs := make([]Spec, len(cfg.Subagents))
	formats := make([]*agent.ResponseFormat, len(specs))
	seen := map[string]bool{}
	for i, s := range cfg.Subagents {
		if strings.TrimSpace(s.Name) == "" {
			return nil, &ConfigError{Msg: "a subagent needs a name"}
		}
		if seen[s.Name] {
			return nil, configErr(s.Name, "SubAgent '%s' is defined twice; subagent names must be unique", s.Name)
		}
		seen[s.Name] = true
		if strings.TrimSpace(s.Description) == "" {
			return nil, configErr(s.Name, "SubAgent '%s' needs a description: the model chooses subagents by it", s.Name)
		}
		mode, err := normMode(s)
		if err != nil {
			return nil, err
		}
		if mode == Fork && len(s.Skills) > 0 {
			return nil, configErr(s.Name, "SubAgent '%s' cannot set skills under mode='fork'; the parent's skills are inherited instead.", s.Name)
		}
		if len(s.Skills) > 0 && cfg.Skills == nil {
			return nil, configErr(s.Name, "SubAgent '%s' sets skills (%s), but the agent has no skill sources, so they would be ignored; configure skills or remove them from its spec.",
				s.Name, strings.Join(s.Skills, ", "))
		}
		if s.MaxSteps < 0 {
			return nil, configErr(s.Name, "SubAgent '%s' has a step limit of %d; it must be 0 (the parent's limit) or more", s.Name, s.MaxSteps)
		}
		if s.Timeout < 0 {
			return nil, configErr(s.Name, "SubAgent '%s' has a negative timeout (%s); use 0 for none", s.Name, s.Timeout)
		}
		if err := s.BackgroundLimits.check("SubAgent '" + s.Name + "'"); err != nil {
			return nil, configErr(s.Name, "%s", err.Error())
		}
		rf, err := ResolveFormat(s.ResponseFormat)
		if err != nil {
			var ce *ConfigError
			if errors.As(err, &ce) {
				ce.Subagent = s.Name
			}
			return nil, err
		}
		if s.Model == nil && cfg.Model == nil {
			return nil, configErr(s.Name, "SubAgent '%s' has no model, and there is no parent model to inherit", s.Name)
		}
		s.Mode = mode
		specs[i], formats[i] = s, rf
	}
	schema, err := tool.CompileSchema([]byte(taskParams))
	if err != nil {
		return nil, &ConfigError{Msg: fmt.Sprintf("the task tool's schema does not compile: %v", err), Err: err}
	}
	t := &Task{
		spec:     llm.ToolSpec{Name: TaskToolName, Description: Description(specs), Parameters: schema.Raw()},
		schema:   schema,
		children: map[string]*child{},

		maxRunning: bgDefaults.MaxRunning,
		tokenCap:   budget.New(budget.Options{}),
	}
	twin := &refusal{spec: t.spec}
	for i, s := range specs {
		model := s.Model
		if model == nil {
			model = cfg.Model
		}
		ac := agent.Config{
			Name: s.Name, Model: model, MaxSteps: s.MaxSteps, MaxParallel: cfg.MaxParallel,
			Response: formats[i], Stream: cfg.Stream, Reasoning: s.Reasoning, ResponseLimits: cfg.ResponseLimits,
		}
		if ac.Reasoning == nil {
			ac.Reasoning = cfg.Reasoning
		}
		gates := s.InterruptOn
		if gates == nil {
			gates = cfg.InterruptOn
		}
		if ac.MaxSteps == 0 {
			ac.MaxSteps = cfg.MaxSteps
		}
		ac.ContextWindow = s.ContextWindow
		if ac.ContextWindow == 0 && s.Model == nil {
			ac.ContextWindow = cfg.ContextWindow
		}
		c := &child{name: s.Name, mode: s.Mode, timeout: s.Timeout, inBackground: s.Background,
			background: s.BackgroundLimits.or(bgDefaults)}
		if s.Mode == Fork {
			ac.Tools = append(append(append([]tool.Tool{}, cfg.ForkBefore...), twin), cfg.ForkAfter...)
			ac.Middleware = append(append(append([]agent.Middleware{}, cfg.ForkMiddleware...), s.Middleware...), cfg.Middleware...)
			if s.SystemPrompt != "" {
				// Last, so that it opens the tail whatever the others add.
				ac.Middleware = append(ac.Middleware, forkPrompt(s.SystemPrompt))
			}
		} else {
			own := s.Tools
			if own == nil {
				own = cfg.DefaultTools
			}
			if s.ExactTools {
				ac.Tools = append([]tool.Tool{}, own...)
			} else {
				ac.Tools = append(append([]tool.Tool{}, cfg.BaseTools...), own...)
			}
			shared := cfg.Middleware
			if s.ExactTools {
				// The spec names every tool it has: the shared middleware
				// keep their hooks but bind no tools of their own.
				shared = make([]agent.Middleware, len(cfg.Middleware))
				for j, m := range cfg.Middleware {
					m.Tools = nil
					shared[j] = m
				}
			}
			ac.Middleware = append([]agent.Middleware{}, s.Middleware...)
			if len(s.Skills) > 0 {
				// The skills its spec names, listed against its own window.
				m, err := cfg.Skills(s.Skills, ac.ContextWindow)
				if err != nil {
					return nil, &ConfigError{Subagent: s.Name, Msg: fmt.Sprintf("SubAgent '%s': skills: %v", s.Name, err), Err: err}
				}
				ac.Middleware = append(ac.Middleware, m)
			}
			ac.Middleware = append(ac.Middleware, shared...)
			ac.System = s.SystemPrompt
		}
		if s.InterruptOn == nil {
			gates = ownGates(ac, gates)
		}
		if len(gates) > 0 {
			if err := approve.Validate(gates); err != nil {
				return nil, &ConfigError{Subagent: s.Name, Msg: fmt.Sprintf("SubAgent '%s': %v", s.Name, err), Err: err}
			}
			ac.Middleware = append([]agent.Middleware{approve.Gate(gates)}, ac.Middleware...)
		}
		// Its background runs have a token cap of their own: the same
		// agent with a budget middleware (see startBackground).
		bg := ac
		bg.Middleware = append(slices.Clone(ac.Middleware), t.tokenCap.Middleware())
		bg.Middleware = append(bg.Middleware, ledger.New(bg).Middleware())
		// The context ledger, last: it measures the requests as sent.
		ac.Middleware = append(ac.Middleware, ledger.New(ac).Middleware())
		a, err := agent.New(ac)
		if err != nil {
			return nil, &ConfigError{Subagent: s.Name, Msg: fmt.Sprintf("SubAgent '%s': %v", s.Name, err), Err: err}
		}
		c.agent = a
		if c.bgAgent, err = agent.New(bg); err != nil {
			return nil, &ConfigError{Subagent: s.Name, Msg: fmt.Sprintf("SubAgent '%s': %v", s.Name, err), Err: err}
		}
		// A background run keeps the tighter of its spec's bounds and the
		// background caps.
		if ac.MaxSteps > 0 && ac.MaxSteps < c.background.MaxSteps {
			c.background.MaxSteps = ac.MaxSteps
		}
		if s.Timeout > 0 && s.Timeout < c.background.Timeout {
			c.background.Timeout = s.Timeout
		}
		t.children[s.Name] = c
		t.names = append(t.names, s.Name)
	}
	return t, nil
}

// ownGates is the parent's approval policy gates cut to the tools the
// child config ac binds, so that a child is not warned about gates it
// inherits for tools it never had. With a middleware that binds tools per
// step, every gate is kept.
func ownGates(ac agent.Config, gates map[string]approve.Policy) map[string]approve.Policy {
	if len(gates) == 0 {
		return gates
	}
	has := map[string]bool{}
	for _, t := range ac.Tools {
		if t != nil {
			has[t.Spec().Name] = true
		}
	}
	for _, m := range ac.Middleware {
		if m.StepTools != nil {
			return gates
		}
		for _, t := range m.Tools {
			if t != nil {
				has[t.Spec().Name] = true
			}
		}
	}
	out := make(map[string]approve.Policy, len(gates))
	for name, p := range gates {
		if has[name] {
			out[name] = p
		}
	}
	return out
}

// Spec implements tool.Tool.
func (t *Task) Spec() llm.ToolSpec { return t.spec }

// Inline implements tool.Inline: a subagent's run stops as soon as its
// context ends, so a lone task call may run on the calling loop's goroutine.
func (t *Task) Inline() bool { return true }

// Names lists the subagents in listing order.
func (t *Task) Names() []string { return append([]string(nil), t.names...) }

// Agent returns the assembled agent of the named subagent; it implements
// agent.Delegator.
func (t *Task) Agent(name string) (*agent.Agent, bool) {
	c, ok := t.children[name]
	if !ok {
		return nil, false
	}
	return c.agent, true
}

// Middleware returns a middleware that binds this tool.
func (t *Task) Middleware() agent.Middleware {
	return agent.Middleware{Name: "subagents", Tools: []tool.Tool{t}}
}

// Run implements tool.Tool for callers outside an agent loop; the child's
// events are dropped.
func (t *Task) Run(ctx context.Context, env *tool.Env, args json.RawMessage) (tool.Result, error) {
	res, _, err := t.RunNested(ctx, env, args, agent.Host{})
	return res, err
}

type taskArgs struct {
	Description     string `json:"description"`
	SubagentType    string `json:"subagent_type"`
	RunInBackground *bool  `json:"run_in_background"`
}

// RunNested implements agent.Nested: it runs one child to the end and
// returns its receipt and its run (nil when no child started: bad arguments
// or an unknown subagent). The subagent.end event it emits carries the same
// run for observers; the parent loop takes it from the return value. Arguments other than description and subagent_type
// are dropped, never passed to the child, and named in a tool.progress event
// (ToolInfo.Ignored), so a model that adds, say, "mode": "fork" still gets
// the subagent it asked for.
func (t *Task) RunNested(ctx context.Context, env *tool.Env, raw json.RawMessage, host agent.Host) (tool.Result, *agent.Result, error) {
	if env == nil {
		env = &tool.Env{}
	}
	emit := host.Emit
	if emit == nil {
		emit = func(agent.Event) {}
	}
	now := time.Now
	if host.Runtime != nil {
		now = host.Runtime.Now
	}
	parent := parentPath(host, env)
	callID := env.CallID

	raw, ignored := KnownArgs(raw)
	if len(ignored) > 0 {
		text := ignoredText(ignored)
		if host.Emit != nil {
			emit(agent.Event{Type: agent.ToolProgress, Agent: parent, Time: now(),
				Tool: &agent.ToolInfo{CallID: callID, Name: TaskToolName, Text: text, Ignored: clipNames(ignored)}})
		} else if env.Progress != nil {
			env.Progress(text)
		}
	}
	var args taskArgs
	if err := tool.DecodeArgs(t.schema, raw, &args); err != nil {
		return tool.ArgumentError(TaskToolName, err), nil, nil
	}
	c, ok := t.children[args.SubagentType]
	if !ok {
		return tool.Errorf("We cannot invoke subagent %s because it does not exist, the only allowed types are %s",
			args.SubagentType, strings.Join(t.names, ", ")), nil, nil
	}
	path := parent.Child(c.name, callID)
	background := c.inBackground
	if args.RunInBackground != nil {
		background = *args.RunInBackground
	}

	in := agent.Input{Backend: env.Files}
	if background {
		// The loop gives it a layer of its own, which outlives the call.
		in.Backend = nil
	}
	child := agent.Child{Path: path, Task: args.Description}
	opts := []agent.RunOption{agent.WithTimeout(c.timeout)}
	if len(host.Options) > 0 {
		opts = append(opts, host.Options...)
	} else if host.Runtime != nil {
		opts = append(opts, agent.WithRuntime(host.Runtime))
	}
	if c.mode == Fork {
		var history []llm.Message
		system := ""
		if env.Request != nil {
			history = env.Request.Messages
			system = env.Request.System
		}
		in.Messages = append(append(make([]llm.Message, 0, len(history)+1), history...), llm.User(ForkPreamble+args.Description))
		child.System, child.SystemParts = &system, env.SystemParts
	} else {
		in.Messages = []llm.Message{llm.User(args.Description)}
	}
	if background {
		return t.startBackground(ctx, env, raw, host, c, in, child, args.Description), nil, nil
	}
	opts = append(opts, agent.AsChild(child))

	emit(agent.Event{Type: agent.SubagentStart, Agent: parent, Time: now(), Subagent: &agent.SubagentInfo{
		Name: c.name, Mode: string(c.mode), CallID: callID, Path: path, Task: args.Description}})

	var res *agent.Result
	ran := false
	if cr, ok := host.Runtime.(agent.ChildRunner); ok {
		// The runtime may run the child elsewhere (a child workflow).
		res, ran = cr.RunChild(ctx, agent.ChildRun{Agent: c.agent, Name: c.name, Input: in, Child: child, Timeout: c.timeout, Host: host})
	}
	switch {
	case !ran:
		res = t.runChild(ctx, c, in, opts, emit, path)
	case res == nil:
		res = &agent.Result{Agent: path, Status: agent.StatusError, Error: "the runtime ran the subagent but gave back no result"}
	}
	status, reason := res.Status, res.Error
	emit(agent.Event{Type: agent.SubagentEnd, Agent: parent, Time: now(), Subagent: &agent.SubagentInfo{
		Name: c.name, Mode: string(c.mode), CallID: callID, Path: path, Status: status, Error: reason,
		Rounds: res.Rounds, Usage: res.Usage, Run: res}})

	receipt, err := receiptOf(c.name, path, res)
	return receipt, res, err
}

// receiptOf is the receipt of a child's run: its report, or an error
// receipt. A run its recorder failed stops the parent too (a fatal error).
func receiptOf(name string, path agent.Path, res *agent.Result) (tool.Result, error) {
	if res.Status == agent.StatusOK {
		if res.Output != nil {
			return tool.Result{Content: string(res.Output), Structured: res.Output}, nil
		}
		if text := res.FinalText(); text != "" {
			return tool.Text(text), nil
		}
		return tool.Text(NoReportText), nil
	}
	receipt := tool.Result{Content: failureReceipt(name, res.Status, res.Error, res), IsError: true}
	if err := res.Err(); errors.Is(err, agent.ErrRecorderUnavailable) {
		// The child's recorder (its checkpoint store) failed it, not its
		// work: the whole run stops unfinished, to be resumed once the
		// store is back, rather than the parent's model being told its
		// subagent failed.
		return receipt, tool.Fatal(fmt.Errorf("subagent %s: %w", path, err))
	}
	return receipt, nil
}

// parentPath is the path of the run the task call belongs to: the host's,
// or, when the tool runs outside an agent loop, the path env.Agent spells
// (the default agent's name when empty).
func parentPath(host agent.Host, env *tool.Env) agent.Path {
	if len(host.Path) > 0 {
		return host.Path
	}
	if env.Agent == "" {
		return agent.RootPath(agent.DefaultName)
	}
	if p, err := agent.ParsePath(env.Agent); err == nil {
		return p
	}
	return agent.RootPath(env.Agent)
}

// runChild runs the child to its end; a panic anywhere in it becomes an
// error result rather than taking the parent down.
func (t *Task) runChild(ctx context.Context, c *child, in agent.Input, opts []agent.RunOption, emit func(agent.Event), path agent.Path) (res *agent.Result) {
	defer func() {
		if p := recover(); p != nil {
			res = &agent.Result{Agent: path, Status: agent.StatusError,
				Error: fmt.Sprintf("the subagent crashed: %v\n%s", p, debug.Stack())}
		}
	}()
	r, err := agent.Drain(c.agent.Run(ctx, in, opts...), emit)
	if r == nil {
		r = &agent.Result{Agent: path, Status: agent.StatusError}
		if err != nil {
			r.Error = err.Error()
		}
	}
	return r
}

func failureReceipt(name string, status agent.Status, reason string, res *agent.Result) string {
	var b strings.Builder
	if status == agent.StatusRefused {
		fmt.Fprintf(&b, "Subagent %s declined the task and gave no report.", name)
		if why := firstLine(res.Refusal); why != "" {
			fmt.Fprintf(&b, "\nIts reason: %s", why)
		}
		b.WriteString("\nDo the task another way, or rephrase the brief.")
		if len(res.Changed) > 0 {
			fmt.Fprintf(&b, "\nFiles it changed were kept: %s.", strings.Join(res.Changed, ", "))
		}
		return b.String()
	}
	fmt.Fprintf(&b, "Subagent %s did not finish (status: %s", name, status)
	if reason != "" {
		if i := strings.IndexByte(reason, '\n'); i >= 0 {
			reason = reason[:i]
		}
		fmt.Fprintf(&b, "; %s", reason)
	}
	b.WriteString(").")
	if text := res.FinalText(); text != "" {
		fmt.Fprintf(&b, "\nIts last message: %s", text)
	}
	if len(res.Changed) > 0 {
		fmt.Fprintf(&b, "\nFiles it changed were kept: %s.", strings.Join(res.Changed, ", "))
	}
	return b.String()
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	return s
}

// refusal is a fork child's task tool: the same definition as the parent's,
// so the request prefix is identical (and the provider's prompt cache
// holds), but it never runs anything: a fork does not delegate further.
type refusal struct{ spec llm.ToolSpec }

func (r *refusal) Spec() llm.ToolSpec { return r.spec }

// Refuses reports whether t is the task tool of a fork subagent, which
// answers every call with RefusalText and runs nothing, so that a runtime
// that replays tool calls may run it again.
func Refuses(t tool.Tool) bool {
	_, ok := t.(*refusal)
	return ok
}

func (r *refusal) Run(context.Context, *tool.Env, json.RawMessage) (tool.Result, error) {
	return tool.Text(RefusalText), nil
}

// Limits on what the event about ignored arguments records: a model could
// send any number of names of any length.
const (
	maxIgnoredNames = 20
	maxIgnoredName  = 100
)

// KnownArgs removes from the task tool's arguments every key other than
// description and subagent_type, and returns the cleaned arguments with the
// removed names, sorted. Arguments that are not a JSON object come back
// unchanged (argument validation then explains what is wrong with them).
func KnownArgs(raw json.RawMessage) (json.RawMessage, []string) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return raw, nil
	}
	var ignored []string
	for k := range obj {
		if k != "description" && k != "subagent_type" && k != "run_in_background" {
			ignored = append(ignored, k)
		}
	}
	if len(ignored) == 0 {
		return raw, nil
	}
	slices.Sort(ignored)
	for _, k := range ignored {
		delete(obj, k)
	}
	clean, err := json.Marshal(obj)
	if err != nil {
		return raw, nil
	}
	return clean, ignored
}

// clipNames bounds the ignored names an event carries.
func clipNames(names []string) []string {
	out := make([]string, 0, min(len(names), maxIgnoredNames))
	for _, n := range names[:min(len(names), maxIgnoredNames)] {
		out = append(out, clipName(n))
	}
	return out
}

func clipName(n string) string {
	if len(n) <= maxIgnoredName {
		return n
	}
	cut := maxIgnoredName
	for cut > 0 && !utf8.RuneStart(n[cut]) {
		cut--
	}
	return n[:cut] + "…"
}

func ignoredText(names []string) string {
	shown := clipNames(names)
	quoted := make([]string, len(shown))
	for i, n := range shown {
		quoted[i] = strconv.Quote(n)
	}
	text := fmt.Sprintf("ignored %d argument(s) that task does not take: %s", len(names), strings.Join(quoted, ", "))
	if more := len(names) - len(shown); more > 0 {
		text += fmt.Sprintf(" and %d more", more)
	}
	return text
}
