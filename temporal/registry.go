package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/proto"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/fstools"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/providers/retry"
	"github.com/deepagents-go/deepagents/subagent"
	"github.com/deepagents-go/deepagents/todos"
	"github.com/deepagents-go/deepagents/tool"
	"github.com/deepagents-go/deepagents/vfs"
)

// Names under which Register puts the workflow and activities on a worker.
const (
	RunAgentWorkflow = "deepagents.RunAgent"
	ModelActivity    = "deepagents.Model"
	ToolActivity     = "deepagents.Tool"
)

// MaxPayload is the largest activity input, compressed, that the runtime
// schedules; Temporal itself refuses payloads over 2 MB.
const MaxPayload = 1536 << 10

// DataConverter is the converter that clients and workers of these
// workflows use: the SDK's default, with every payload compressed by its
// zlib codec. The runtime measures activity inputs against MaxPayload as
// it encodes them.
func DataConverter() converter.DataConverter {
	return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(),
		converter.NewZlibCodec(converter.ZlibCodecOptions{AlwaysEncode: true}))
}

// Registry is what a worker runs: the agents a RunAgent workflow may run,
// by name, and the models and tools that run as activities. Agents are Go
// values given at worker start, so a workflow runs only code the worker was
// built with. Fill it before Register, and build the agents with the models
// and tools Model and Tool return.
type Registry struct {
	agents map[string]*agent.Agent
	models map[string]llm.Model
	tools  map[toolKey]tool.Tool
	dirs   map[string]vfs.Backend // by root (Directory)
	dc     converter.DataConverter

	// Store is the checkpoint store (SQLite or PostgreSQL, as the CLI and
	// server use) in which a RunAgent workflow given a thread reads and
	// records the thread, in local activities; nil runs such workflows
	// without one, as before.
	Store checkpoint.RunStore

	// ModelTimeout and ToolTimeout bound one attempt of a model or tool
	// activity (start to close); zero is ten minutes.
	ModelTimeout, ToolTimeout time.Duration
	// HeartbeatTimeout is how long a model or tool activity may go
	// without a heartbeat before Temporal counts its worker as gone; zero
	// is 30 seconds. The activities beat four times as often: a
	// cancellation reaches a running call with the answer to a beat.
	HeartbeatTimeout time.Duration
	// ApprovalTimeout is how long a run that ends interrupted waits for
	// decisions (a workflow timer) before its workflow ends interrupted;
	// zero is DefaultApprovalTimeout, negative does not wait.
	ApprovalTimeout time.Duration
	// SessionTimeout is how long a run's session (SessionTool) may stay
	// open; zero is DefaultSessionTimeout.
	SessionTimeout time.Duration
	// ContinueAfter is the history length, in events, past which a run on
	// a stored thread continues as new (after its next step is saved, or
	// at an approval wait); zero is DefaultContinueAfter, negative never.
	ContinueAfter int
	// ContinueBytes is how much a run's history may grow past its size
	// once its thread was opened before the run continues as new; zero is
	// DefaultContinueBytes, negative no limit by size.
	ContinueBytes int
	// ModelRetry is the retry policy of model activities; nil is
	// DefaultModelRetry. Which failures are retried does not depend on
	// it (see DefaultModelRetry). Tool activities make one attempt.
	ModelRetry *sdktemporal.RetryPolicy
	// MaxHistorySize (bytes) and MaxHistoryLength (events) are how large
	// a workflow's history may grow before its run stops unfinished
	// (HistoryError), resumable on its thread; zero is
	// DefaultMaxHistorySize or DefaultMaxHistoryLength, negative no limit.
	// Every worker of a task queue must have the same, or a replay may
	// take another path.
	MaxHistorySize, MaxHistoryLength int
	// Snapshot identifies the files this worker's middleware read when it
	// started, and anything else workflow code sees that the worker fixed
	// at start (deepagents-temporal's hash of its skills and memory
	// snapshot and of its MCP tools; "" when none). A workflow records the snapshot of the
	// worker that starts it, and a worker whose Snapshot differs fails its
	// workflow tasks with a SnapshotMismatch error, so every worker of a
	// task queue must have the same.
	Snapshot string
	// Events, when set, takes the agent events of the runs a server in
	// front of the fleet started (see Executor): the model activity
	// publishes its chunks, the record activity the steps it saves.
	Events Events
}

type toolKey struct{ agent, name string }

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{agents: map[string]*agent.Agent{}, models: map[string]llm.Model{}, tools: map[toolKey]tool.Tool{}, dc: DataConverter()}
}

// Agent registers a under name: RunAgent{Agent: name} runs it. Its model,
// and those of the subagents its tools delegate to, must be ones Model
// returned, or their calls would run in workflow code; and every tool of
// theirs must be an activity (Tool), a tool whose calls may run in
// workflow code (InWorkflow, the file tools of package fstools and the
// todo tools), or a delegating tool (task) whose agents pass the same
// check. A replayed workflow runs its workflow code again, so a tool with
// side effects there would repeat them. Agent refuses anything else, and
// an agent whose files are on a backend of its own (Config.Backend): its
// file tools would do I/O in workflow code.
func (g *Registry) Agent(name string, a *agent.Agent) error {
	if err := checkAgent(a, a.Name(), map[*agent.Agent]bool{}); err != nil {
		return fmt.Errorf("agent %q: %w", name, err)
	}
	g.agents[name] = a
	return nil
}

// Lookup returns the agent registered as name.
func (g *Registry) Lookup(name string) (*agent.Agent, bool) {
	a, ok := g.agents[name]
	return a, ok
}

// delegator is a tool that runs subagents it names (subagent.Task).
type delegator interface {
	agent.Delegator
	Names() []string
}

// workflowTool is a tool InWorkflow marked as safe to run in workflow code.
type workflowTool struct{ tool.Tool }

// InWorkflow marks t as a tool whose calls may run in workflow code rather
// than as activities: its result follows from its arguments and the run's
// own state (its files in the run's memory, its values), and it does no
// I/O and reads no clock of its own, so running it again when a workflow
// replays changes nothing. Registry.Agent refuses any other tool that is
// not an activity.
func InWorkflow(t tool.Tool) tool.Tool {
	if _, ok := t.(agent.Nested); ok {
		panic(fmt.Sprintf("temporal: InWorkflow: %q runs agents of its own; register the agents' tools instead", t.Spec().Name))
	}
	return &workflowTool{Tool: t}
}

// inWorkflow reports whether t's calls may run in workflow code.
func inWorkflow(t tool.Tool) bool {
	switch t.(type) {
	case *activityTool, *sessionTool, *workflowTool:
		return true
	}
	// execute runs commands only through the call's files, which in
	// workflow code are the run's memory or a directory of the workers.
	return fstools.Made(t) || fstools.IsExecute(t) || t == todos.Tool() || t == todos.UpdateTool() || subagent.Refuses(t)
}

// checkAgent checks that a and the subagents below it call their models
// through activities, and that their tools may run where they will.
func checkAgent(a *agent.Agent, path string, seen map[*agent.Agent]bool) error {
	if seen[a] {
		return nil
	}
	seen[a] = true
	cfg := a.Config()
	switch cfg.Model.(type) {
	case *activityModel, *checkingModel:
	default:
		return fmt.Errorf("the model of %s was not made with Registry.Model, so its calls would run in workflow code rather than as activities", path)
	}
	if cfg.Backend != nil && dirOf(cfg.Backend) == "" {
		return fmt.Errorf("%s keeps its files on a backend of its own (Config.Backend), whose reads and writes would run in workflow code; on Temporal an agent's files are the run's own, in memory, or a directory of the workers (Registry.Directory)", path)
	}
	for _, t := range a.Tools() {
		d, ok := t.(delegator)
		if !ok {
			if !inWorkflow(t) {
				return fmt.Errorf("tool %s of %s would run in workflow code, where a replay runs it again: make it an activity with Registry.Tool, or mark it with InWorkflow if its result follows from its arguments and the run's state alone", t.Spec().Name, path)
			}
			continue
		}
		for _, n := range d.Names() {
			if sub, ok := d.Agent(n); ok {
				if err := checkAgent(sub, path+" / "+n, seen); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// Model registers m under name and returns the model to build agents with:
// in workflow code (a run on a Runtime) each of its calls is an activity
// that calls m on a worker; anywhere else it is m.
func (g *Registry) Model(name string, m llm.Model) llm.Model {
	g.models[name] = m
	am := &activityModel{g: g, name: name, m: m}
	if sc, ok := m.(llm.SettingsChecker); ok {
		return &checkingModel{am, sc}
	}
	return am
}

// Tool registers t as the tool of that name of the named agent (the
// agent's name, as in its path, e.g. a subagent's spec name) and returns
// the tool to build that agent with: in workflow code each of its calls is an activity
// that runs t on a worker; anywhere else it is t. The activity's call sees
// its call id and agent path in tool.Env, but neither the run's files nor
// its state: it suits tools whose result follows from their arguments and
// the world outside the run.
//
// A tool that runs agents of its own (agent.Nested, such as the task tool)
// cannot be one: its runs belong to the workflow. Tool panics on one, as
// a mistake in the worker's code.
func (g *Registry) Tool(agentName string, t tool.Tool) tool.Tool {
	if _, ok := t.(agent.Nested); ok {
		panic(fmt.Sprintf("temporal: Registry.Tool: %q runs agents of its own, which run in the workflow; register their tools instead", t.Spec().Name))
	}
	g.tools[toolKey{agentName, t.Spec().Name}] = t
	return &activityTool{g: g, agent: agentName, t: t}
}

// Register puts the RunAgent and RunSubagent workflows and the model and tool activities on
// w (a worker, or the SDK's test environment).
func (g *Registry) Register(w interface {
	worker.WorkflowRegistry
	worker.ActivityRegistry
}) {
	g.RegisterWorkflow(w)
	w.RegisterActivityWithOptions(g.CallModel, activity.RegisterOptions{Name: ModelActivity})
	w.RegisterActivityWithOptions(g.RunTool, activity.RegisterOptions{Name: ToolActivity})
	w.RegisterActivityWithOptions(g.Files, activity.RegisterOptions{Name: FilesActivity})
}

// RegisterWorkflow puts the RunAgent and RunSubagent workflows on w alone:
// a replayer needs no activities.
func (g *Registry) RegisterWorkflow(w interface {
	RegisterWorkflowWithOptions(w any, options workflow.RegisterOptions)
}) {
	w.RegisterWorkflowWithOptions(g.RunAgent, workflow.RegisterOptions{Name: RunAgentWorkflow})
	w.RegisterWorkflowWithOptions(g.RunSubagent, workflow.RegisterOptions{Name: RunSubagentWorkflow})
}

// ModelCall is the input of the model activity. In a run on a thread,
// Request holds only the messages the store does not (Ref says which it
// does), so that no message history is in a payload; elsewhere it is the
// request itself.
type ModelCall struct {
	Model    string       `json:"model"`
	CallInfo CallInfo     `json:"call_info"`
	Request  *llm.Request `json:"request"`
	Ref      *MessagesRef `json:"ref,omitempty"`
}

// CallInfo is llm.CallInfo without its callback.
type CallInfo struct {
	Agent    string `json:"agent"`
	Instance string `json:"instance,omitempty"`
	Path     string `json:"path"`
	Task     string `json:"task,omitempty"`
	Round    int    `json:"round"`
	Attempt  int    `json:"attempt,omitempty"`
}

// ToolRun is the input of the tool activity. Arguments that are not valid
// JSON (a model's mistake) are in RawArgs instead of Args, and reach the
// tool as they are, for it to say what is wrong.
type ToolRun struct {
	Agent   string          `json:"agent"`
	Tool    string          `json:"tool"`
	CallID  string          `json:"call_id"`
	Path    string          `json:"path"`
	Args    json.RawMessage `json:"args"`
	RawArgs *string         `json:"raw_args,omitempty"`
}

// ToolOutcome is the output of the tool activity: the tool's result, and
// its error as text (a tool's error is its call's outcome, not a failure
// of the activity, so it is not retried).
type ToolOutcome struct {
	Result tool.Result `json:"result"`
	Err    string      `json:"error,omitempty"`
}

// CallModel is the model activity: it calls the registered model, with the
// provider's own retries off (Temporal retries the activity).
func (g *Registry) CallModel(ctx context.Context, in ModelCall) (*ModelResult, error) {
	m, ok := g.models[in.Model]
	if !ok {
		return nil, sdktemporal.NewNonRetryableApplicationError(fmt.Sprintf("no model %q is registered on this worker", in.Model), "UnknownModel", nil)
	}
	defer heartbeat(ctx)()
	req := in.Request
	if in.Ref != nil {
		var err error
		if req, err = g.rebuild(ctx, req, in.Ref); err != nil {
			return nil, refFailure(err)
		}
	}
	ci := in.CallInfo
	ctx = llm.WithCallInfo(ctx, llm.CallInfo{Agent: ci.Agent, Instance: ci.Instance, Path: ci.Path, Task: ci.Task, Round: ci.Round, Attempt: ci.Attempt})
	// The provider makes one attempt: Temporal retries the activity. A
	// served run's chunks are published as they stream.
	resp, err := g.generate(retry.ByCaller(ctx), m, req, ci)
	if err != nil {
		return nil, g.modelFailure(ctx, err)
	}
	return g.modelResult(ctx, resp)
}

// apiErrorType is the type of the application error that carries an
// *llm.APIError out of the model activity.
const apiErrorType = "deepagents.APIError"

// apiError is an *llm.APIError without its underlying error, which does
// not cross a process.
type apiError struct {
	Kind       llm.ErrorKind `json:"kind"`
	Provider   string        `json:"provider,omitempty"`
	StatusCode int           `json:"status_code,omitempty"`
	Message    string        `json:"message,omitempty"`
	RetryAfter time.Duration `json:"retry_after,omitempty"`
}

// modelError rebuilds the *llm.APIError or *PayloadError a model activity
// failed with, or the store's unavailability; other errors are returned as
// they are.
func modelError(err error) error {
	var appErr *sdktemporal.ApplicationError
	if !errors.As(err, &appErr) {
		return err
	}
	switch appErr.Type() {
	case apiErrorType:
		var d apiError
		if appErr.Details(&d) != nil {
			return err
		}
		return &llm.APIError{Kind: d.Kind, Provider: d.Provider, StatusCode: d.StatusCode, Message: d.Message, RetryAfter: d.RetryAfter}
	case payloadType:
		var pe PayloadError
		if appErr.Details(&pe) != nil {
			return err
		}
		return &pe
	case unavailableType:
		// The store stayed unavailable through the retries: the run stops
		// unfinished, as when a record cannot be saved.
		return storeErrorOf(err)
	}
	return err
}

// RunTool is the tool activity: it runs the registered tool.
func (g *Registry) RunTool(ctx context.Context, in ToolRun) (*ToolOutcome, error) {
	t, ok := g.tools[toolKey{in.Agent, in.Tool}]
	if !ok {
		return nil, sdktemporal.NewNonRetryableApplicationError(fmt.Sprintf("no tool %q of agent %q is registered on this worker", in.Tool, in.Agent), "UnknownTool", nil)
	}
	defer heartbeat(ctx)()
	args := in.Args
	if in.RawArgs != nil {
		args = json.RawMessage(*in.RawArgs)
	}
	res, err := t.Run(ctx, &tool.Env{CallID: in.CallID, Agent: in.Path}, args)
	out := &ToolOutcome{Result: res}
	if err != nil {
		out.Err = err.Error()
	}
	// A result too large to return fails the call here, for the model to
	// read, rather than the activity's completion.
	if n, err := g.payloadSize(out); err != nil || n > MaxPayload {
		msg := toolOutputError(in.Tool, n)
		if err != nil {
			msg = fmt.Sprintf("the result of %s cannot be encoded: %v", in.Tool, err)
		}
		out = &ToolOutcome{Err: msg}
	}
	return out, nil
}

// heartbeat beats for the activity of ctx until the returned function is
// called or ctx is done, four times per heartbeat timeout (the SDK sends
// fewer, as it sees fit).
func heartbeat(ctx context.Context) (stop func()) {
	every := activity.GetInfo(ctx).HeartbeatTimeout / 4
	if every <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	return func() { close(done) }
}

// activity runs the named activity from workflow code, with the running
// coroutine's context, and waits for it until ctx is done (which cancels
// it). An input over MaxPayload, compressed, is refused before it is
// scheduled, and nothing is scheduled once the workflow's history is at
// the registry's limits (HistoryError).
func (r *Runtime) activity(ctx context.Context, g *Registry, name string, timeout time.Duration, policy *sdktemporal.RetryPolicy, in, out any) error {
	if err := g.checkHistory(r.cur); err != nil {
		return err
	}
	// Compressing a large input may take longer than workflow code is
	// allowed to run without giving way.
	dc := workflow.DataConverterWithoutDeadlockDetection(g.dc)
	p, err := dc.ToPayload(in)
	if err != nil {
		return err
	}
	if n := proto.Size(p); n > MaxPayload {
		return &PayloadError{Activity: name, Size: n}
	}
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	beat := g.HeartbeatTimeout
	if beat <= 0 {
		beat = 30 * time.Second
	}
	var ferr error
	r.wait(func(c workflow.Context) {
		base := c
		if s, ok := sessionFrom(ctx); ok {
			base = s // the activity goes to the session's worker
		}
		// The activity is sent with the converter its input was measured
		// with, whatever the worker's.
		actx, cancel := workflow.WithCancel(workflow.WithDataConverter(workflow.WithActivityOptions(base, workflow.ActivityOptions{
			StartToCloseTimeout: timeout,
			HeartbeatTimeout:    beat,
			RetryPolicy:         policy,
		}), dc))
		defer cancel()
		f := workflow.ExecuteActivity(actx, name, in)
		_ = workflow.Await(c, func() bool { return f.IsReady() || ctx.Err() != nil })
		if !f.IsReady() {
			cancel()
			ferr = context.Cause(ctx)
			return
		}
		ferr = f.Get(c, out)
	})
	return ferr
}

// activityModel is a registered model: an activity in workflow code.
type activityModel struct {
	g    *Registry
	name string
	m    llm.Model
}

func (am *activityModel) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	r, ok := runtimeFrom(ctx)
	if !ok {
		return am.m.Generate(ctx, req)
	}
	in := ModelCall{Model: am.name, Request: req}
	if ci, ok := llm.CallInfoFrom(ctx); ok {
		in.CallInfo = CallInfo{Agent: ci.Agent, Instance: ci.Instance, Path: ci.Path, Task: ci.Task, Round: ci.Round, Attempt: ci.Attempt}
		if th := threadFrom(ctx); th != nil {
			if tail, ref, ok := th.reference(ci.Path, req); ok {
				in.Request, in.Ref = tail, ref
			}
		}
	}
	var res ModelResult
	if err := r.activity(ctx, am.g, ModelActivity, am.g.ModelTimeout, am.g.modelRetry(), in, &res); err != nil {
		return nil, modelError(err)
	}
	noteRetries(ctx, &res)
	return &res.Response, nil
}

// Stream is m.Stream outside a workflow; in one, the activity's response
// as a stream of one event: deltas would not belong in the history.
func (am *activityModel) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.StreamEvent, error] {
	if _, ok := runtimeFrom(ctx); !ok {
		return am.m.Stream(ctx, req)
	}
	return llm.StreamOf(ctx, req, am.Generate)
}

// checkingModel is a registered model that checks settings as its model
// does.
type checkingModel struct {
	*activityModel
	sc llm.SettingsChecker
}

func (c *checkingModel) CheckSettings(s llm.Settings) ([]string, error) { return c.sc.CheckSettings(s) }

// activityTool is a registered tool: an activity in workflow code.
type activityTool struct {
	g     *Registry
	agent string
	t     tool.Tool
}

func (at *activityTool) Spec() llm.ToolSpec { return at.t.Spec() }

func (at *activityTool) Run(ctx context.Context, env *tool.Env, args json.RawMessage) (tool.Result, error) {
	r, ok := runtimeFrom(ctx)
	if !ok {
		return at.t.Run(ctx, env, args)
	}
	in := ToolRun{Agent: at.agent, Tool: at.t.Spec().Name, Args: args}
	if env != nil {
		in.CallID, in.Path = env.CallID, env.Agent
	}
	if args != nil && !json.Valid(args) && r.rawArgs() {
		raw := string(args)
		in.Args, in.RawArgs = nil, &raw
	}
	var out ToolOutcome
	// A tool's call is made once: a tool may have done part of its work
	// when it fails.
	if err := r.activity(ctx, at.g, ToolActivity, at.g.ToolTimeout, &sdktemporal.RetryPolicy{MaximumAttempts: 1}, in, &out); err != nil {
		return tool.Result{}, err
	}
	if out.Err != "" {
		return out.Result, errors.New(out.Err)
	}
	return out.Result, nil
}
