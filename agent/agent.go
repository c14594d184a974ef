// Package agent is the loop every deepagents agent runs: one step is one
// model call plus the tool calls it asked for, repeated until the model
// answers without tools, a limit is hit, or the context ends.
//
// A subagent is not a different kind of thing: it is another run of this same
// loop with its own Config and a branch of its parent's files (see package
// subagent). Every run reports what it does as an event stream,
// iter.Seq2[Event, error]; Invoke drains it for callers who only want the
// result.
//
// A run that does not end with StatusOK always returns an error next to its
// Result: a *RunError wrapping ErrFailed, ErrLimit, ErrCancelled,
// ErrRefused or ErrInterrupted, so checking err alone never mistakes a
// cut-off run for a finished one.
// Assembly problems are *ConfigError values.
//
// Where things are: agent.go assembles an Agent (Config, Middleware, State,
// Result); run.go is a run as a whole (Run, Invoke, Drain, run options, the
// run value, its start and end); step.go is one step (request, model call,
// response); stream.go is the model call as a stream through the
// middleware's WrapModel and WrapStream hooks; tools.go is the batch of a step's tool calls (fan-out, merge of
// file changes, results); emit.go is how events leave a run; history.go
// balances a history with unanswered tool calls; path.go is the typed agent
// path; runtime.go is the seam for time, ids, fan-out and model and tool
// calls (Runtime, the deterministic Sequential); state.go is the run as a
// value (RunState); record.go hands out a run's step records (WithRecorder)
// and resume.go starts a run on its saved thread (WithThread), both driven
// by package runner, which saves the records; ask.go is how a tool call
// waits for a person (Ask, Admit, DecisionOf); approval.go and decide.go
// are the decisions a person takes and their checks (package approve
// makes calls wait by tool name); event.go and errors.go define the events and
// errors callers see.
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/tokens"
	"github.com/deepagents-go/deepagents/tool"
	"github.com/deepagents-go/deepagents/vfs"
)

// Defaults used when a Config leaves a limit at zero, and the version of the
// saved RunState. DefaultMaxSteps lets one run make as many model calls as
// the reference implementation's default recursion limit allows (about 500);
// every subagent instance has a budget of its own.
const (
	DefaultMaxSteps    = 500
	DefaultMaxParallel = 16
	DefaultName        = "parent"

	// RunStateVersion is the version of the RunState encoding; a reader
	// refuses a newer one instead of guessing.
	RunStateVersion = 1
)

// Config assembles an agent. The zero value of every field but Model works.
type Config struct {
	// Name identifies the agent in events and to the scripted model;
	// DefaultName ("parent") when empty.
	Name string
	// Model answers every step. Required.
	Model llm.Model
	// System is the agent's own system prompt; middleware prompt sections
	// are appended to it. Empty means no system message is sent.
	System string
	// Tools are the agent's own tools; middleware may add more.
	Tools []tool.Tool
	// Middleware contribute tools and prompt sections and wrap model and
	// tool calls, outermost first.
	Middleware []Middleware
	// MaxSteps bounds the model calls of one run (DefaultMaxSteps when 0).
	// Hitting it ends the run with StatusLimit and an error wrapping ErrLimit;
	// the Result keeps the work done so far.
	MaxSteps int
	// MaxParallel bounds the tool calls of one step that run at once
	// (DefaultMaxParallel when 0; 1 runs them one by one).
	MaxParallel int
	// Backend is the filesystem. Nil keeps files in the run's state
	// (vfs.Memory), seeded from Input.Files.
	Backend vfs.Backend
	// Response, when set, makes the run end with a structured response: the
	// agent gets one extra tool whose parameters are the schema, and calling
	// it with valid arguments ends the run (Result.Output).
	Response *ResponseFormat
	// Stream makes the loop call Model.Stream and emit model.delta events.
	Stream bool
	// Reasoning asks the model to think before it answers (an effort or a
	// token budget), sent with every request as Settings.Reasoning; nil
	// leaves the model's default. When the model implements
	// llm.SettingsChecker, New asks it about the settings: a combination it
	// refuses is a *ConfigError, and settings it drops are reported by a
	// warning event at the start of every run.
	Reasoning *llm.ReasoningConfig
	// ContextWindow is the model's context window in tokens, 0 when unknown
	// (see tokens.ProfileFor). The context report of every model request
	// (RequestInfo.Context, made by the agent's ledger: package ledger)
	// measures the free space against it.
	ContextWindow int
	// ResponseLimits cap each model response (the zero value: 16 MiB of
	// text, reasoning and tool-call arguments, 1,000 tool calls; see
	// llm.ResponseLimits). A response past them ends the run with
	// StatusError and an error matching llm.ErrResponseTooLarge; the thread
	// keeps what came before it, and the cut-off response is not added.
	ResponseLimits llm.ResponseLimits
}

// Middleware extends an agent. Every field is optional.
type Middleware struct {
	Name string
	// Tools are bound in addition to the agent's own.
	Tools []tool.Tool
	// Prompt is a section appended to the system prompt.
	Prompt string
	// BeforeModel may rewrite the request of each step before it is sent.
	BeforeModel func(ctx context.Context, step StepInfo, req *llm.Request) error
	// SystemPart, when set, tags the text BeforeModel adds to the system
	// prompt, so that each request's context report can count it apart
	// (tokens.MemoryPart and SkillsPart are the tags reports know);
	// untagged text counts as the system prompt.
	SystemPart string
	// Measure, when set, measures each request as it is about to be sent:
	// the report goes with the model.request event (RequestInfo.Context)
	// and into the run's ledger (Result.Context), and StepInfo.Measure
	// returns it. parts are the estimated tokens of the system prompt's
	// tagged parts (SystemPart). The last middleware that has one
	// measures; package ledger's does.
	Measure func(step StepInfo, req *llm.Request, parts map[string]int) tokens.Report
	// WrapModel wraps the model call at the level of its response. The
	// events of each call it makes through next are passed on as they come,
	// and the response it returns is the step's.
	WrapModel func(ctx context.Context, req *llm.Request, next ModelFunc) (*llm.Response, error)
	// WrapStream wraps the model call as a stream of events: it may read,
	// change, hold back or add events, or call next again. What the
	// outermost wrapper yields is what the run reports (model.delta events,
	// when the agent streams) and its EventDone response is the step's. A
	// model is read through Stream when Config.Stream is set, and otherwise
	// through Generate as one delta per part (llm.StreamOf). A middleware's
	// WrapModel is outside its own WrapStream.
	WrapStream func(ctx context.Context, req *llm.Request, next StreamFunc) iter.Seq2[llm.StreamEvent, error]
	// WrapTool wraps every tool call; returning without calling next skips
	// the tool (a cache), and returning Ask(...) makes the call wait for a
	// person.
	WrapTool func(ctx context.Context, call *ToolCall, next ToolFunc) (tool.Result, error)
	// Gates names the tools whose calls Admit may make wait for a person:
	// a name none of the agent's tools has (a misspelling) is reported by
	// a warning event (source Name) at the start of every run.
	Gates []string
	// Admit looks at each tool call before it starts, on the loop's
	// goroutine, so it must return promptly (call.Env is nil). Returning
	// Ask(...) makes the call wait for a person without starting (an
	// approval gate); any other error is the call's error result. Every
	// middleware's hook sees every call: a refusal wins over any ask, and
	// several asks are put to the person as one. When the person approved
	// or edited the call, it is admitted again with the model's arguments
	// and the decision in ctx (DecisionOf); an edited call is then admitted
	// with the person's arguments too, where only a refusal counts. Its
	// context carries the step (StepFrom), for the hook to emit events and
	// record state values about its decisions.
	Admit func(ctx context.Context, call *ToolCall) error
	// StepTools adds tools for one step only: they are sent with that
	// step's request and its calls of them are run. Tools that come and go
	// (servers that connect later, skills that load) use it.
	StepTools func(ctx context.Context, step StepInfo) []tool.Tool
	// AfterRun is called once when a run's steps are over, before its end
	// is saved and run.end is emitted, with the status it ends with: a hook
	// may report unfinished work (StepInfo.Emit) or set a last state value,
	// which reaches the Result and the run's last step record.
	AfterRun func(ctx context.Context, step StepInfo, status Status)
}

// ModelFunc is one model call.
type ModelFunc func(ctx context.Context, req *llm.Request) (*llm.Response, error)

// ToolFunc runs one tool call.
type ToolFunc func(ctx context.Context, call *ToolCall) (tool.Result, error)

// ToolCall is one tool call as middleware sees it. Tool is nil when the model
// named a tool that does not exist.
type ToolCall struct {
	Call llm.ToolCall
	Tool tool.Tool
	Env  *tool.Env

	ran []func(emit func(Event), changed func(path string))
}

// OnRan has f called on the loop's goroutine once the call has run without
// an error, after its tool.end event, for an Admit hook to report what the
// call did: emit adds an event to the run's stream, and changed counts a
// file as changed by the run (Result.Changed), for one the run's own
// tracking does not see, such as one a middleware mounted.
func (c *ToolCall) OnRan(f func(emit func(Event), changed func(path string))) {
	c.ran = append(c.ran, f)
}

// StepInfo tells BeforeModel where the run is.
type StepInfo struct {
	// Path is the run's agent path (Path.String is its text form).
	Path Path
	// Round counts the model calls made at this path in the thread so
	// far; TurnStart is where this run (its turn) began, so that a
	// middleware can tell a resumed run from a new turn.
	Round, TurnStart int
	State            *State // read-only
	// Files is the run's filesystem. BeforeModel may write to it: nothing
	// else runs during BeforeModel.
	Files vfs.Backend
	// Emit adds an event to the run's stream (the agent path is filled in).
	Emit func(Event)
	// SetValue stores a middleware's own value in the run's state
	// (State.Values, as JSON), where it is recorded with the step and
	// restored on resume; nil removes it. Read values back with GetValue.
	SetValue func(name string, v any) error
	// AddUsage counts model calls a middleware made for this agent besides
	// its steps, such as a summariser's, and what they used: in the run's
	// usage and in its ledger (tokens.Ledger.SummarizerCalls and
	// Summarizer), so that the run's usage holds every token paid for it.
	// Called on the loop's goroutine, like Emit.
	AddUsage func(calls int, u llm.Usage)
	// Keep saves a middleware's value under a reserved name (see
	// ReservedValue) with the run's next checkpoint but out of State.Values;
	// Kept returns it, or what a resumed run was saved with (nil when
	// none). The context ledger keeps its calibration this way.
	Keep func(name string, v any) error
	Kept func(name string) json.RawMessage
	// Now is the run's clock (its Runtime's Now). Middleware that record
	// when something happened, such as tracing, read it so that their
	// times agree with the run's events.
	Now func() time.Time
	// Streaming reports whether the model is read as a stream
	// (Config.Stream); otherwise its whole answer comes as one chunk.
	Streaming bool
	// Replaying, when not nil, reports whether the run's runtime is
	// replaying the run's code (see Replayer); nil for a runtime that
	// never does.
	Replaying func() bool
	// RejectedCall, when not nil, reports whether a person rejected a call
	// of tool name with these arguments at this path of the thread, in
	// this run or an earlier one (LoopState.RejectedCall): a hook that
	// would let calls pass without asking keeps such a call asking, and
	// the loop answers it with the rejection.
	RejectedCall func(name string, args json.RawMessage) bool
	// Request is what the person (or, for a subagent, its task) asked for
	// in this turn: the text of the last user message of the turn's input
	// (LoopState.Request); "" for a thread saved before it was kept.
	Request string

	measure func(*llm.Request) tokens.Report
}

// Measure returns the context report req would have if it were sent now by
// this step's agent, as the middleware that measures its requests makes it
// (Middleware.Measure: with the agent's calibration and the previous
// call's reported usage, see tokens.Report.Load), else the plain estimate
// against the agent's window. Middleware that rewrite the request, such as
// compaction, use it to decide and to check the result. A StepInfo not
// made by the loop measures without a window or calibration.
func (s StepInfo) Measure(req *llm.Request) tokens.Report {
	if s.measure == nil {
		return tokens.NewReport(tokens.Estimate(req), nil, 1, 0)
	}
	return s.measure(req)
}

// GetValue decodes the state value name into a T; ok is false when the
// state has no such value.
func GetValue[T any](s *State, name string) (v T, ok bool, err error) {
	raw, found := s.Values[name]
	if !found || len(raw) == 0 {
		return v, false, nil
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, true, fmt.Errorf("state value %q: %w", name, err)
	}
	return v, true, nil
}

// ResponseFormat is a structured final response: a named JSON schema.
type ResponseFormat struct {
	// Name is the tool's name, usually the schema's title or Go type name.
	Name        string
	Description string
	Schema      json.RawMessage
}

// Nested is implemented by tools that run agents of their own, such as the
// task tool. The loop calls RunNested instead of Run and hands it a Host so
// the nested run's events reach this run's stream. Besides the tool result
// the model reads, RunNested returns the nested run's *Result (nil when no
// run started, e.g. for bad arguments): that return value is the one way a
// child's run reaches its parent, which keeps it in Result.Children and adds
// its usage to the parent's. When the parent is cancelled it waits a few
// seconds for RunNested to return, so a nested run should stop promptly once
// ctx ends and return what it did so far.
type Nested interface {
	tool.Tool
	RunNested(ctx context.Context, env *tool.Env, args json.RawMessage, host Host) (tool.Result, *Result, error)
}

// Delegator is implemented by a tool that runs agents it holds, such as the
// task tool. Agent returns the one it runs under name, the Name of the path
// segment of the runs it starts, so that a person's edit of a call waiting
// in such a run is checked against its tool's schema before anything runs.
type Delegator interface {
	tool.Tool
	Agent(name string) (*Agent, bool)
}

// Host lets a nested tool report into the running agent.
type Host struct {
	// Path is the path of the run that hosts the tool; a nested run started
	// by the call has the path Path.Child(name, callID).
	Path Path
	// Runtime is the runtime the hosting run was given (WithRuntime), nil
	// for the in-process default. A nested run should be started with it,
	// and the tool's own events stamped by its clock.
	Runtime Runtime
	// Emit forwards an event to the run's stream. Safe from any goroutine.
	Emit func(Event)
	// Options are what a nested run must be started with, after its own
	// options: the hosting run's runtime, its recorder (the nested run is
	// recorded in the same thread, under its own path) and the decisions
	// for calls waiting in it.
	Options []RunOption
}

// Agent is an assembled, immutable agent. It is safe to run concurrently.
type Agent struct {
	cfg      Config
	name     string
	system   string
	tools    []tool.Tool
	byName   map[string]tool.Tool
	specs    []llm.ToolSpec
	names    []string
	respTool *responseTool
	// pool runs tool calls under the default runtime.
	pool workers
	// settings are sent with every request; dropped names those the model
	// said it will not send.
	settings llm.Settings
	dropped  []string
	// ungated names, by gating middleware, the tools it gates that are
	// not bound (Middleware.Gates); stepTools says whether a middleware may
	// bind more for a step.
	ungated   []ungated
	stepTools bool
	caps      llm.Capabilities

	tokOnce  sync.Once
	tokTotal int
}

// New validates cfg and assembles an agent. Every rejection is a
// *ConfigError.
func New(cfg Config) (*Agent, error) {
	if cfg.Model == nil {
		return nil, configErr("agent: Config.Model is required")
	}
	if cfg.MaxSteps < 0 {
		return nil, configErr("agent: MaxSteps is %d; it must be 0 (the default, %d) or more", cfg.MaxSteps, DefaultMaxSteps)
	}
	if cfg.MaxParallel < 0 {
		return nil, configErr("agent: MaxParallel is %d; it must be 0 (the default, %d) or more", cfg.MaxParallel, DefaultMaxParallel)
	}
	if cfg.ContextWindow < 0 {
		return nil, configErr("agent: ContextWindow is %d; it must be 0 (unknown) or more", cfg.ContextWindow)
	}
	a := &Agent{cfg: cfg, name: cfg.Name, byName: map[string]tool.Tool{}, pool: newWorkers()}
	if a.name == "" {
		a.name = DefaultName
	}
	if err := a.checkSettings(); err != nil {
		return nil, err
	}
	a.caps = llm.CapabilitiesOf(cfg.Model)
	var sections []string
	if cfg.System != "" {
		sections = append(sections, cfg.System)
	}
	all := slices.Clone(cfg.Tools)
	for _, m := range cfg.Middleware {
		all = append(all, m.Tools...)
		if m.Prompt != "" {
			sections = append(sections, m.Prompt)
		}
	}
	a.system = strings.Join(sections, "\n\n")
	if cfg.Response != nil {
		rt, err := newResponseTool(*cfg.Response)
		if err != nil {
			return nil, err
		}
		a.respTool = rt
		all = append(all, rt)
	}
	for _, t := range all {
		if t == nil {
			return nil, configErr("agent: a tool in Config.Tools or a middleware is nil")
		}
		spec := t.Spec()
		if spec.Name == "" {
			return nil, configErr("agent: a tool has an empty name")
		}
		if _, dup := a.byName[spec.Name]; dup {
			return nil, configErr("agent: two tools are named %q", spec.Name)
		}
		a.byName[spec.Name] = t
		a.tools = append(a.tools, t)
		a.specs = append(a.specs, spec)
		a.names = append(a.names, spec.Name)
	}
	for _, m := range cfg.Middleware {
		a.stepTools = a.stepTools || m.StepTools != nil
		if names := gatesWithoutTool(m.Gates, a.byName); len(names) > 0 {
			a.ungated = append(a.ungated, ungated{source: m.Name, names: names})
		}
	}
	return a, nil
}

// ungated are the tools a gating middleware (source) names that the agent
// does not have.
type ungated struct {
	source string
	names  []string
}

// gatesWithoutTool names, sorted, the gated tools that are not bound.
func gatesWithoutTool(gates []string, bound map[string]tool.Tool) []string {
	var out []string
	for _, name := range gates {
		if _, ok := bound[name]; !ok {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// UngatedNames names, sorted, the tools a middleware gates
// (Middleware.Gates) that match none of the agent's tools, as a misspelt
// name does: each run reports them in a warning event, since their calls
// can only wait if a middleware adds a tool by that name for a step.
func (a *Agent) UngatedNames() []string {
	var out []string
	for _, u := range a.ungated {
		out = append(out, u.names...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// checkSettings validates the reasoning setting and asks a model that can
// tell which of the settings it refuses or drops.
func (a *Agent) checkSettings() error {
	if r := a.cfg.Reasoning; r != nil {
		switch r.Effort {
		case "", llm.EffortLow, llm.EffortMedium, llm.EffortHigh:
		default:
			return configErr("agent %s: reasoning effort %q is not one of low, medium, high", a.name, r.Effort)
		}
		if r.BudgetTokens < 0 {
			return configErr("agent %s: reasoning budget_tokens is %d; it must be 0 (none) or more", a.name, r.BudgetTokens)
		}
		if !r.IsZero() {
			rc := *r
			a.settings.Reasoning = &rc
		}
	}
	if sc, ok := a.cfg.Model.(llm.SettingsChecker); ok {
		dropped, err := sc.CheckSettings(a.settings)
		if err != nil {
			return &ConfigError{Msg: fmt.Sprintf("agent %s: the model refuses its settings: %v", a.name, err), Err: err}
		}
		a.dropped = slices.Clone(dropped)
	}
	return nil
}

// Settings returns the settings sent with every request.
func (a *Agent) Settings() llm.Settings { return a.settings }

// DroppedSettings names the settings the model said it does not send; each
// run reports them in a warning event.
func (a *Agent) DroppedSettings() []string { return slices.Clone(a.dropped) }

// Name returns the agent's name.
func (a *Agent) Name() string { return a.name }

// System returns the system prompt sent on every step.
func (a *Agent) System() string { return a.system }

// Tools returns the bound tools in the order they are sent.
func (a *Agent) Tools() []tool.Tool { return slices.Clone(a.tools) }

// ToolSpecs returns the tool definitions as sent.
func (a *Agent) ToolSpecs() []llm.ToolSpec { return slices.Clone(a.specs) }

// Config returns a copy of the agent's configuration.
func (a *Agent) Config() Config { return a.cfg }

// Status is how a run ended.
type Status string

// Run statuses. Every status but StatusOK comes with an error that wraps
// its sentinel: StatusError ErrFailed, StatusLimit ErrLimit, StatusCancelled
// ErrCancelled, StatusRefused ErrRefused, StatusInterrupted ErrInterrupted.
const (
	StatusOK        Status = "ok"
	StatusError     Status = "error"
	StatusLimit     Status = "limit"
	StatusCancelled Status = "cancelled"
	// StatusRefused: the model declined to answer (Result.Refusal says
	// why). A refusal is not an empty answer.
	StatusRefused Status = "refused"
	// StatusInterrupted: tool calls wait for a person's decision
	// (Result.Interrupts); the run continues when its thread is resumed
	// with decisions.
	StatusInterrupted Status = "interrupted"
)

// State is what a run owns and returns: the conversation and, with the
// default backend, the files. It is JSON-serialisable, to be saved.
type State struct {
	Messages []llm.Message       `json:"messages"`
	Files    map[string]vfs.File `json:"files,omitzero"`
	// Values are middleware values by name, as JSON (StepInfo.SetValue).
	Values map[string]json.RawMessage `json:"values,omitempty"`
}

// Keys lists the state keys present, sorted.
func (s State) Keys() []string {
	keys := []string{"messages"}
	if s.Files != nil {
		keys = append(keys, "files")
	}
	if len(s.Values) > 0 {
		keys = append(keys, "values")
	}
	slices.Sort(keys)
	return keys
}

// Input starts a run.
type Input struct {
	// Messages is the conversation so far, ending with the new user turn.
	Messages []llm.Message
	// Files seeds the in-state filesystem (ignored when a Backend is set).
	Files map[string]vfs.File
	// Backend overrides Config.Backend for this run; subagents get a layer
	// of their parent's files this way.
	Backend vfs.Backend
}

// Prompt is a one-message Input.
func Prompt(text string) Input { return Input{Messages: []llm.Message{llm.User(text)}} }

// Result is a finished run.
type Result struct {
	Agent  Path   `json:"agent"`
	Status Status `json:"status"`
	// Error says why a run did not end with StatusOK (the text of Err).
	Error string `json:"error,omitempty"`
	// Refusal is the model's explanation of a refusal (StatusRefused).
	Refusal string `json:"refusal,omitempty"`
	State   State  `json:"state"`
	// Output is the structured response, when Config.Response is set.
	Output json.RawMessage `json:"output,omitempty"`
	// Rounds is the number of model calls this run made (children excluded).
	Rounds int `json:"rounds"`
	// Usage totals this run and every subagent run below it.
	Usage llm.Usage `json:"usage"`
	// UsageByAgent breaks Usage down by agent path.
	UsageByAgent map[string]llm.Usage `json:"usage_by_agent,omitempty"`
	// Children are the subagent runs this run started, by the tool-call id
	// of the task call that started each. A run cut short lists the
	// subagents it cut too, each with its own status and usage so far.
	Children map[string]*Result `json:"children,omitempty"`
	// Changed lists the paths this run wrote or deleted (for the default
	// backend, the net changes merged into its state).
	Changed []string `json:"changed,omitempty"`
	// Interrupts are the tool calls waiting for a person's decision
	// (StatusInterrupted), this run's and its subagents'.
	Interrupts []Interrupt `json:"interrupts,omitempty"`
	// Thread is the thread the run was recorded into, if any.
	Thread string `json:"thread_id,omitempty"`
	// SavedSteps counts the step records (input, steps, end) this run and
	// its subagents handed out to be saved.
	SavedSteps int `json:"checkpoints,omitempty"`
	// Context is the ledger of this run's own model requests (nil when it
	// made none): the last one, the largest one, and their sum.
	Context *tokens.Ledger `json:"context,omitempty"`
	// ContextByAgent is the ledger of every agent path in the run tree,
	// this run's and its subagents'; tokens.LedgerTree sums it.
	ContextByAgent map[string]tokens.Ledger `json:"context_by_agent,omitempty"`

	err error
}

// Err returns nil for a run that ended with StatusOK and otherwise the same
// error Invoke returned: a *RunError that wraps ErrFailed, ErrLimit,
// ErrCancelled, ErrRefused or ErrInterrupted, and the cause. For a Result that was built or decoded rather
// than returned by a run, the error is made from Status and Error.
func (r *Result) Err() error {
	if r == nil || r.Status == StatusOK || r.Status == "" {
		return nil
	}
	if r.err != nil {
		return r.err
	}
	var cause error
	if r.Error != "" {
		cause = errors.New(r.Error)
	}
	return &RunError{Agent: r.Agent, Status: r.Status, Err: cause}
}

// WithoutState returns a copy of r without message histories or files,
// its subagents' results too: what is saved beside a parent's step, whose
// children's own records hold the rest.
func (r *Result) WithoutState() *Result {
	if r == nil {
		return nil
	}
	s := *r
	s.State = State{}
	if len(r.Children) > 0 {
		s.Children = make(map[string]*Result, len(r.Children))
		for id, c := range r.Children {
			s.Children[id] = c.WithoutState()
		}
	}
	return &s
}

// FinalText returns the text of the last assistant message that has text,
// or "" if none has.
func (r *Result) FinalText() string {
	return llm.LastText(r.State.Messages)
}

// Child returns the subagent run started by the task call with this id,
// searching the whole run tree.
func (r *Result) Child(callID string) (*Result, bool) {
	if c, ok := r.Children[callID]; ok {
		return c, true
	}
	for _, c := range r.Children {
		if found, ok := c.Child(callID); ok {
			return found, true
		}
	}
	return nil, false
}
