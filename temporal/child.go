package temporal

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/proto"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/runner"
	"github.com/deepagents-go/deepagents/vfs"
)

// RunSubagentWorkflow is the name of the workflow that runs one subagent
// run (a task call) as a child workflow of its parent's.
const RunSubagentWorkflow = "deepagents.RunSubagent"

// DecisionsSignal is the signal a parent sends to a child workflow whose
// run waits for a person: the decisions the parent's run was resumed with.
const DecisionsSignal = "deepagents.decisions"

// childChange is the GetVersion change that made each subagent run a child
// workflow: a workflow started before it runs its subagents in its own
// workflow code, as it did.
const childChange = "deepagents.task-child"

// SubagentInput is what a RunSubagent workflow is started with: which
// subagent of which registered agent runs, and what it sees of its parent.
type SubagentInput struct {
	// Agent is the name the top-level agent was registered under; Path is
	// the subagent run's path below it, through the task tools that hold
	// each agent on the way.
	Agent string     `json:"agent"`
	Path  agent.Path `json:"path"`
	// Task is the task text; Messages the run's input (the description,
	// or, for a fork, the parent's conversation and the description). On
	// a thread in a store, Ref points to the first of them in the
	// parent's last saved step record, and Messages holds the rest.
	Task     string        `json:"task,omitempty"`
	Messages []llm.Message `json:"messages"`
	Ref      *MessagesRef  `json:"ref,omitempty"`
	// System and SystemParts replace the agent's system prompt (a fork).
	System      *string        `json:"system,omitempty"`
	SystemParts map[string]int `json:"system_parts,omitempty"`
	// Files are the files the run sees: its parent's, as the call sees
	// them.
	Files   map[string]vfs.File `json:"files,omitempty"`
	Timeout time.Duration       `json:"timeout,omitempty"`
	// Root is set instead of Files when the files the run sees are a
	// directory of the workers (Registry.Directory); Exec says it runs
	// commands.
	Root string `json:"root,omitempty"`
	Exec bool   `json:"exec,omitempty"`
	// Nesting says where the run is recorded and with which decisions it
	// starts; Holder is the thread's lease holder, the parent's.
	Nesting agent.Nesting `json:"nesting"`
	Holder  string        `json:"holder,omitempty"`
	// Signal is the parent's signal by which the child reports that its
	// run waits for a person.
	Signal string `json:"signal"`
	// Snapshot is the parent's skills and memory snapshot
	// (Registry.Snapshot): a worker with another refuses the child's
	// workflow tasks.
	Snapshot string `json:"snapshot,omitempty"`
	// Continued is how many workflow runs of the child came before this
	// one (it continues as new on a long history); Done, on a directory,
	// the paths they changed there, which the parent learns at the end.
	Continued int       `json:"continued,omitempty"`
	Done      vfs.Delta `json:"done,omitempty"`
	// Deadline is when the run's time budget (Timeout) ends, set by its
	// first workflow run and carried on, so that continuing as new does
	// not give the run a new budget; Sessions is how many sessions of
	// stateful tools the runs before this one opened.
	Deadline time.Time `json:"deadline,omitzero"`
	Sessions int       `json:"sessions,omitempty"`
}

// SubagentOutcome is how a subagent run ended, as its parent's run needs
// it: its result without message histories or files (but its final
// message, the text it reports), and the changes it made to the files.
type SubagentOutcome struct {
	Result *agent.Result `json:"result"`
	Files  vfs.Delta     `json:"files,omitempty"`
	// StoreDown: the run failed because its store did
	// (agent.ErrRecorderUnavailable), which stops the parent's run
	// unfinished as in process.
	StoreDown bool `json:"store_down,omitempty"`
}

// storeDown is the error of a subagent run whose store failed, as its
// parent sees it: its text, matching agent.ErrRecorderUnavailable.
type storeDown struct{ msg string }

func (e *storeDown) Error() string        { return e.msg }
func (e *storeDown) Is(target error) bool { return target == agent.ErrRecorderUnavailable }

// childHost is what a Runtime needs to run subagents as child workflows:
// the registry of the worker, the registered name of the top-level agent,
// and the lease holder of its thread.
type childHost struct {
	g      *Registry
	agent  string
	holder string
	// snapshot is the workflow's snapshot, which its children must have
	// ("" when the workflow does not check it).
	snapshot string
	// unchecked is true when the workflow started before the snapshot
	// check (see StartedBeforeSnapshot).
	unchecked bool
}

// childWF is a child workflow a parent's run started.
type childWF struct {
	f      workflow.ChildWorkflowFuture
	cancel workflow.CancelFunc
	sig    workflow.ReceiveChannel
}

// runsChildren makes the runtime run each subagent run as a child
// workflow of its own (RunSubagent), on worker g, for the top-level agent
// registered as name, whose thread's lease is holder's.
func (r *Runtime) runsChildren(g *Registry, name, holder string) {
	r.host = &childHost{g: g, agent: name, holder: holder}
}

// RunChild implements agent.ChildRunner: in a workflow started with
// RunAgent or RunSubagent, it runs the subagent run as a child workflow
// and waits for it. The child is cancelled with the run (and with the
// workflow, whatever it does then: its parent close policy is
// REQUEST_CANCEL). A child whose run waits for a person reports it by a
// signal and keeps its workflow open: the parent's run ends interrupted
// with the child's waiting calls, and the next RunChild of its path sends
// it the decisions. Workflows started before child workflows existed, and
// runtimes made with NewRuntime alone, run their subagents in process.
func (r *Runtime) RunChild(ctx context.Context, c agent.ChildRun) (*agent.Result, bool) {
	if r.host == nil {
		return nil, false
	}
	if !r.versioned {
		r.version, r.versioned = workflow.GetVersion(r.cur, childChange, workflow.DefaultVersion, 1), true
	}
	if r.version == workflow.DefaultVersion {
		return nil, false
	}
	path := c.Child.Path
	key := path.String()
	n := c.Host.Nesting()
	if w := r.waiting[key]; w != nil {
		delete(r.waiting, key)
		var err error
		r.wait(func(wc workflow.Context) {
			err = w.f.SignalChildWorkflow(wc, DecisionsSignal, n.Decisions).Get(wc, nil)
		})
		if err != nil {
			return failed(path, fmt.Errorf("sending the decisions to subagent %s: %w", key, err)), true
		}
		return r.awaitChild(ctx, w, key, c), true
	}
	in := SubagentInput{Agent: r.host.agent, Path: path, Task: c.Child.Task, Messages: c.Input.Messages,
		System: c.Child.System, SystemParts: c.Child.SystemParts, Timeout: c.Timeout,
		Nesting: n, Signal: "deepagents.subagent:" + key, Snapshot: r.host.snapshot}
	if d := dirBehind(c.Input.Backend); d != nil {
		// The child works on the same directory, through activities.
		in.Root, in.Exec = d.root, d.exec
	} else if root := r.hiddenDir(c); root != "" {
		return failed(path, fmt.Errorf("subagent %s cannot run as a child workflow: the files it sees include the directory %s of the workers behind a view "+
			"that mounts other files on it or holds changes of its own (a vfs.Composite with routes, a vfs.Layer), which a child workflow cannot share; "+
			"build the agent on the directory alone (Registry.Directory's backend, or a vfs.Composite over it with no routes, made Unlayered)", key, root)), true
	} else {
		// Read in the run's context: a directory this does not know of is
		// still read through activities, never from workflow code.
		files, err := snapshot(ctx, c.Input.Backend)
		if err != nil {
			return failed(path, fmt.Errorf("reading the files subagent %s sees: %w", key, err)), true
		}
		in.Files = files
	}
	if n.Recorded && r.host.g.Store != nil {
		in.Holder = r.host.holder
	}
	if th := threadFrom(ctx); th != nil && len(in.Messages) > 1 {
		// A fork's conversation is the parent's, which the store holds.
		if tail, ref, ok := th.reference(c.Host.Path.String(), &llm.Request{Messages: in.Messages}); ok {
			in.Messages, in.Ref = tail.Messages, ref
		}
	}
	// A fork's conversation, or many files, may be too large to send.
	p, err := workflow.DataConverterWithoutDeadlockDetection(r.host.g.dc).ToPayload(in)
	if err != nil {
		return failed(path, err), true
	}
	if size := proto.Size(p); size > MaxPayload {
		return failed(path, fmt.Errorf("the input of subagent %s's child workflow is %d bytes compressed, over the %d a payload may have (Temporal refuses 2 MB): "+
			"the conversation it forks or the files it sees are too large to send; use a subagent that does not fork, or keep fewer files", key, size, MaxPayload)), true
	}
	w := &childWF{}
	r.wait(func(wc workflow.Context) {
		opts := workflow.ChildWorkflowOptions{
			ParentClosePolicy:   enumspb.PARENT_CLOSE_POLICY_REQUEST_CANCEL,
			WaitForCancellation: true,
		}
		// A served run's children publish their events as its own do:
		// their ids say which run they belong to.
		if id := workflow.GetInfo(wc).WorkflowExecution.ID; isServed(id) {
			opts.WorkflowID = servedChildID(id, path)
		}
		cctx, cancel := workflow.WithCancel(workflow.WithChildOptions(wc, opts))
		w.sig = workflow.GetSignalChannel(wc, in.Signal)
		w.f, w.cancel = workflow.ExecuteChildWorkflow(cctx, RunSubagentWorkflow, in), cancel
	})
	return r.awaitChild(ctx, w, key, c), true
}

// awaitChild waits until child w reports that its run waits for a person,
// or ends; once ctx is done, it cancels the child and waits for what it
// did. The child's file changes are applied to the files the call sees.
func (r *Runtime) awaitChild(ctx context.Context, w *childWF, key string, c agent.ChildRun) *agent.Result {
	var out SubagentOutcome
	var err error
	waits := false
	r.wait(func(wc workflow.Context) {
		_ = workflow.Await(wc, func() bool { return w.f.IsReady() || w.sig.Len() > 0 || ctx.Err() != nil })
		if !w.f.IsReady() && w.sig.Len() == 0 {
			// The parent's run is cancelled: so is the child, which ends
			// with what it did so far.
			w.cancel()
			_ = workflow.Await(wc, func() bool { return w.f.IsReady() || w.sig.Len() > 0 })
		}
		if w.sig.ReceiveAsync(&out) {
			waits = true
			return
		}
		err = w.f.Get(wc, &out)
	})
	if waits {
		if r.waiting == nil {
			r.waiting = map[string]*childWF{}
		}
		r.waiting[key] = w
	}
	var canceled *sdktemporal.CanceledError
	if errors.As(err, &canceled) && canceled.HasDetails() {
		if derr := canceled.Details(&out); derr != nil {
			return failed(c.Child.Path, fmt.Errorf("subagent %s was cancelled, and what it did cannot be read: %w", key, derr))
		}
	} else if err != nil {
		return failed(c.Child.Path, fmt.Errorf("subagent %s's child workflow failed: %w", key, err))
	}
	if out.Result == nil {
		return failed(c.Child.Path, fmt.Errorf("subagent %s's child workflow gave back no result", key))
	}
	if out.StoreDown {
		out.Result = out.Result.WithCause(&storeDown{msg: out.Result.Error})
	}
	if dirBehind(c.Input.Backend) != nil {
		// The child wrote through the directory itself: the call's view
		// only learns what changed (out.Files has no contents).
		if tr := trackedBehind(c.Input.Backend); tr != nil {
			tr.Note(out.Files)
		}
	} else if len(out.Files) > 0 {
		if err := applyDelta(c.Input.Backend, out.Files); err != nil {
			return failed(c.Child.Path, fmt.Errorf("applying subagent %s's file changes: %w", key, err))
		}
	}
	return out.Result
}

// failed is a subagent run that could not run, or whose end could not be
// read.
func failed(path agent.Path, err error) *agent.Result {
	return &agent.Result{Agent: path, Status: agent.StatusError, Error: err.Error()}
}

// hiddenDir is the root of a registered directory that the files c sees
// reach behind a view dirBehind does not see through, "" for none: the
// call's view itself, or, when it is a layer (which does not say what it
// is over), the files the agents it runs for were built with.
func (r *Runtime) hiddenDir(c agent.ChildRun) string {
	if root := dirInside(c.Input.Backend); root != "" {
		return root
	}
	if _, ok := c.Input.Backend.(*vfs.Layer); !ok {
		return ""
	}
	if a, ok := r.host.g.agents[r.host.agent]; ok {
		if root := dirInside(a.Config().Backend); root != "" {
			return root
		}
	}
	if c.Agent != nil {
		return dirInside(c.Agent.Config().Backend)
	}
	return ""
}

// trackedBehind is the tracked view b is or wraps (dirBehind's way), nil
// for none.
func trackedBehind(b vfs.Backend) *vfs.Tracked {
	for range 8 {
		switch d := b.(type) {
		case *vfs.Tracked:
			return d
		case *vfs.Composite:
			b = d.Fallback()
		case interface{ Unwrap() vfs.Backend }:
			b = d.Unwrap()
		default:
			return nil
		}
	}
	return nil
}

// dirInside is the root of a registered directory b reaches through the
// wrappers that say what they wrap (tracked views, composites' routes and
// fallbacks, Unwrap), "" for none.
func dirInside(b vfs.Backend) string {
	return dirIn(b, 0)
}

func dirIn(b vfs.Backend, depth int) string {
	if b == nil || depth > 8 {
		return ""
	}
	switch d := b.(type) {
	case *dirFiles:
		return d.root
	case *dirExec:
		return d.root
	case *vfs.Tracked:
		return dirIn(d.Backend, depth+1)
	case *vfs.Composite:
		for _, rt := range d.Routes() {
			if root := dirIn(rt.Backend, depth+1); root != "" {
				return root
			}
		}
		return dirIn(d.Fallback(), depth+1)
	case interface{ Unwrap() vfs.Backend }:
		return dirIn(d.Unwrap(), depth+1)
	}
	return ""
}

// snapshot returns the files of b, nil for none, read in ctx (the run's:
// a registered directory reached through it is read through activities).
func snapshot(ctx context.Context, b vfs.Backend) (map[string]vfs.File, error) {
	if b == nil {
		return nil, nil
	}
	var files map[string]vfs.File
	for e, err := range b.Walk(ctx, "/") {
		if err != nil {
			return nil, err
		}
		if e.IsDir {
			continue
		}
		text, err := b.Read(ctx, e.Path)
		if err != nil {
			return nil, err
		}
		if files == nil {
			files = map[string]vfs.File{}
		}
		files[e.Path] = vfs.File{Content: text, CreatedAt: e.ModifiedAt, ModifiedAt: e.ModifiedAt}
	}
	return files, nil
}

// applyDelta makes the changes d on b.
func applyDelta(b vfs.Backend, d vfs.Delta) error {
	if a, ok := b.(vfs.Applier); ok {
		a.Apply(d)
		return nil
	}
	ctx := context.Background()
	for _, c := range d {
		var err error
		if c.File == nil {
			_, err = b.Delete(ctx, c.Path)
		} else {
			err = b.Write(ctx, c.Path, c.File.Content)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// RunSubagent is the workflow of one subagent run: it runs the subagent
// at in.Path of the agent registered as in.Agent, as its parent's run
// would have run it, and returns its outcome. A run that waits for a
// person signals its parent (in.Signal) and waits for the decisions
// (DecisionsSignal), then resumes; cancelling the workflow cancels the
// run, and the workflow then ends cancelled with the outcome as the
// details of its CanceledError.
func (g *Registry) RunSubagent(ctx workflow.Context, in SubagentInput) (*SubagentOutcome, error) {
	a, err := g.subagentAt(in.Agent, in.Path)
	if err != nil {
		return nil, sdktemporal.NewNonRetryableApplicationError(err.Error(), "UnknownAgent", nil)
	}
	checked := g.checkSnapshot(ctx, in.Snapshot)
	if checked {
		in.Snapshot = g.Snapshot // the next run, if it continues as new, keeps it
	}
	rt := NewRuntime(ctx)
	defer rt.Close()
	rt.sess.opened = in.Sessions
	rt.runsChildren(g, in.Agent, in.Holder)
	rt.host.snapshot, rt.host.unchecked = in.Snapshot, !checked
	timeout := in.Timeout
	if timeout > 0 {
		if in.Deadline.IsZero() {
			in.Deadline = workflow.Now(ctx).Add(timeout)
		}
		timeout = max(in.Deadline.Sub(workflow.Now(ctx)), time.Millisecond)
	}
	if in.Ref != nil {
		msgs, err := rt.referred(g, in.Ref, in.Messages)
		if err != nil {
			return nil, err
		}
		in.Messages = msgs
	}
	rctx, cancel := rt.Context()
	defer cancel()
	rctx = context.WithValue(rctx, runtimeKey{}, rt) // as RunAgent's
	opts := []agent.RunOption{agent.WithRuntime(rt), agent.WithTimeout(timeout)}
	n := in.Nesting
	switch {
	case n.Recorded && g.Store != nil && in.Holder != "":
		th := newWFThread(g, rt, n.Thread, in.Holder)
		th.own = in.Path
		rctx = withThread(rctx, th)
		opts = append(opts, agent.RecordNested(n, th))
	case n.Recorded:
		// Without a store the parent's thread is in its workflow's
		// memory; the child records into its own, for its resume.
		m := checkpoint.NewMemory(0)
		opts = append(opts, agent.RecordNested(n, runner.Thread(struct {
			checkpoint.RunStore
			checkpoint.PendingReader
		}{m, m}, n.Thread)))
	}
	opts = append(opts, agent.AsChild(agent.Child{Path: in.Path, Task: in.Task, System: in.System, SystemParts: in.SystemParts}))
	files := vfs.NewMemory(in.Files)
	files.SetClock(rt.Now)
	var dir *vfs.Tracked
	if in.Root != "" {
		dir = vfs.Track(g.directory(in.Root, in.Exec))
	}
	decisions := in.Nesting.Decisions
	var layer *vfs.Layer
	var res *agent.Result
	var runErr error
	for {
		// A fresh view of the parent's files each time, as the parent's
		// call would have: a resumed run restores its own changes.
		layer = files.Branch()
		var view vfs.Backend = layer
		if dir != nil {
			view = dir
		}
		res, runErr = a.Invoke(rctx, agent.Input{Messages: in.Messages, Backend: view}, append(opts[:len(opts):len(opts)], agent.WithDecisions(decisions...))...)
		if res == nil || res.Status != agent.StatusInterrupted || ctx.Err() != nil {
			break
		}
		parent := workflow.GetInfo(ctx).ParentWorkflowExecution
		if parent == nil {
			break
		}
		if err := workflow.SignalExternalWorkflow(ctx, parent.ID, parent.RunID, in.Signal, outcome(res, nil)).Get(ctx, nil); err != nil {
			return nil, err
		}
		decisions = nil
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(workflow.GetSignalChannel(ctx, DecisionsSignal), func(ch workflow.ReceiveChannel, _ bool) {
			ch.Receive(ctx, &decisions)
		})
		sel.AddReceive(ctx.Done(), func(workflow.ReceiveChannel, bool) {})
		sel.Select(ctx)
		if ctx.Err() != nil {
			break
		}
	}
	if res == nil {
		res = &agent.Result{Agent: in.Path, Status: agent.StatusError, Error: "the subagent's run ended without a result"}
	}
	d := layer.Delta()
	if dir != nil {
		d = mergePaths(in.Done, pathsOf(dir.Changes()))
	}
	if errors.Is(runErr, errContinue) && ctx.Err() == nil {
		// A long history: the next workflow run resumes the run from the
		// step just saved. On a layer, the run's own records restore its
		// file changes there.
		in.Sessions = rt.sess.opened
		return nil, continueSubagent(ctx, g, in, d)
	}
	out := outcome(res, d)
	if ctx.Err() != nil {
		return nil, sdktemporal.NewCanceledError(*out)
	}
	return out, nil
}

// mergePaths is the changed paths of earlier, then later, with a path
// both name taken from later, sorted by path.
func mergePaths(earlier, later vfs.Delta) vfs.Delta {
	if len(earlier) == 0 {
		return later
	}
	byPath := map[string]vfs.Change{}
	for _, c := range earlier {
		byPath[c.Path] = c
	}
	for _, c := range later {
		byPath[c.Path] = c
	}
	out := make(vfs.Delta, 0, len(byPath))
	for _, p := range slices.Sorted(maps.Keys(byPath)) {
		out = append(out, byPath[p])
	}
	return out
}

// outcome is res as a parent needs it, and the file changes d.
func outcome(res *agent.Result, d vfs.Delta) *SubagentOutcome {
	s := res.WithoutState()
	for i := len(res.State.Messages) - 1; i >= 0; i-- {
		if m := res.State.Messages[i]; m.Role == llm.RoleAssistant && m.HasText() {
			s.State.Messages = []llm.Message{m}
			break
		}
	}
	return &SubagentOutcome{Result: s, Files: d, StoreDown: errors.Is(res.Err(), agent.ErrRecorderUnavailable)}
}

// subagentAt is the subagent at path below the agent registered as name:
// each segment after the first names an agent a task tool of the one
// above holds.
func (g *Registry) subagentAt(name string, path agent.Path) (*agent.Agent, error) {
	a, ok := g.agents[name]
	if !ok {
		return nil, fmt.Errorf("no agent %q is registered on this worker", name)
	}
	if len(path) < 2 {
		return nil, fmt.Errorf("%q is not the path of a subagent", path)
	}
	for _, seg := range path[1:] {
		var found *agent.Agent
		for _, t := range a.Tools() {
			if d, ok := t.(agent.Delegator); ok {
				if sub, ok := d.Agent(seg.Name); ok {
					found = sub
					break
				}
			}
		}
		if found == nil {
			return nil, fmt.Errorf("agent %q registered on this worker has no subagent at %s", name, path)
		}
		a = found
	}
	return a, nil
}

// referred is the messages ref points to, read from the store in pieces
// (local activities), followed by tail; they must hash to ref.Hash.
func (r *Runtime) referred(g *Registry, ref *MessagesRef, tail []llm.Message) ([]llm.Message, error) {
	var msgs []llm.Message
	for len(msgs) < ref.Prefix {
		var piece []llm.Message
		if err := r.local(g.ThreadMessages, &piece, MessagesIn{Thread: ref.Thread, NS: ref.NS, Step: ref.Step, From: len(msgs)}); err != nil {
			return nil, fmt.Errorf("reading the messages the subagent forks (thread %q, step %s): %w", ref.Thread, ref.Step, err)
		}
		if len(piece) == 0 {
			return nil, fmt.Errorf("reading the messages the subagent forks (thread %q, step %s): none from %d", ref.Thread, ref.Step, len(msgs))
		}
		msgs = append(msgs, piece...)
	}
	msgs = append(msgs[:ref.Prefix:ref.Prefix], tail...)
	if h := hashMessages(msgs); h != ref.Hash {
		return nil, sdktemporal.NewNonRetryableApplicationError(fmt.Sprintf("the messages the subagent forks, rebuilt from step %s of thread %q, are not its parent's (hash %s, want %s): the store does not hold what the parent saved",
			ref.Step, ref.Thread, h[:12], ref.Hash[:12]), "MessagesMismatch", nil)
	}
	return msgs, nil
}
