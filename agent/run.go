package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/tokens"
	"github.com/deepagents-go/deepagents/tool"
	"github.com/deepagents-go/deepagents/vfs"
)

// RunOption is a per-run knob.
type RunOption func(*runConfig)

type runConfig struct {
	path     Path
	task     string
	maxSteps int
	timeout  time.Duration
	system   *string
	parts    map[string]int
	runtime  Runtime

	record    *recordConfig
	rec       Recorder
	decisions []Decision
}

// Child says which subagent run a run is. A tool that runs an agent of its
// own (Nested) starts it with AsChild.
type Child struct {
	// Path is the run's agent path: its parent's path plus its own segment
	// (Path.Child), whose call id is the parent's tool call that started
	// it (Event.TaskCall).
	Path Path
	// Task is the text the run was started with, as reported to the model
	// in llm.CallInfo (default: the first user message).
	Task string
	// System, when not nil, replaces the agent's system prompt (a fork
	// subagent runs under its parent's prompt this way).
	System *string
	// SystemParts are the estimated tokens of System's tagged parts
	// (Middleware.SystemPart), as tool.Env.SystemParts gives them, so that
	// the context report counts them as the parent's did: a fork inherits
	// them with its parent's prompt.
	SystemParts map[string]int
}

// AsChild runs the agent as the subagent run c describes. A run without it
// (or whose Child has no path) is a top-level run, at RootPath of the
// agent's name.
func AsChild(c Child) RunOption {
	return func(rc *runConfig) {
		rc.path, rc.task = slices.Clone(c.Path), c.Task
		if c.System != nil {
			system := *c.System
			rc.system = &system
		}
		rc.parts = maps.Clone(c.SystemParts)
	}
}

// WithRuntime runs the loop on rt (see Runtime); nil keeps the in-process
// default. Subagent runs started by this run use rt too.
func WithRuntime(rt Runtime) RunOption { return func(c *runConfig) { c.runtime = rt } }

// WithMaxSteps overrides Config.MaxSteps for this run.
func WithMaxSteps(n int) RunOption { return func(c *runConfig) { c.maxSteps = n } }

// WithTimeout bounds this run's wall time (0: no bound). When it runs out the
// run ends with StatusLimit, keeping what it did, and an error that wraps
// ErrLimit and context.DeadlineExceeded and reads "timed out after D". A
// subagent's Spec.Timeout works this way.
func WithTimeout(d time.Duration) RunOption { return func(c *runConfig) { c.timeout = d } }

// Run starts a run and streams its events. The last event is always RunEnd
// (unless the consumer stops early, which cancels the run); it is paired with
// the run's error, a *RunError, whenever the status is not StatusOK.
func (a *Agent) Run(ctx context.Context, in Input, opts ...RunOption) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		var rc runConfig
		for _, o := range opts {
			o(&rc)
		}
		r := a.newRun(in, rc)
		r.yield = yield
		r.loop(ctx)
	}
}

// Invoke runs to the end and returns the result. The error is nil only when
// the run ended with StatusOK; otherwise it is Result.Err(), which wraps
// ErrFailed, ErrLimit, ErrCancelled, ErrRefused or ErrInterrupted. A result is returned whenever the run
// started, so the work of a cut-off run is never lost.
func (a *Agent) Invoke(ctx context.Context, in Input, opts ...RunOption) (*Result, error) {
	return Drain(a.Run(ctx, in, opts...), nil)
}

// Drain consumes a run's events, passing each to fn if fn is not nil, and
// returns the result carried by the final RunEnd event with its Err().
func Drain(events iter.Seq2[Event, error], fn func(Event)) (*Result, error) {
	var res *Result
	var runErr error
	for ev, err := range events {
		if fn != nil && ev.Type != "" {
			fn(ev)
		}
		if err != nil {
			runErr = err
		}
		if ev.Type == RunEnd && ev.Run != nil && ev.Run.Result != nil {
			res = ev.Run.Result
		}
	}
	if res == nil {
		if runErr == nil {
			runErr = errors.New("agent: the run ended without a result")
		}
		return nil, runErr
	}
	return res, res.Err()
}

type run struct {
	a        *Agent
	path     Path
	where    string // path.String(), the Agent of this run's events
	instance string
	task     string
	maxSteps int
	timeout  time.Duration
	system   string

	rt      Runtime // never nil
	custom  Runtime // the runtime given with WithRuntime, passed on to nested runs
	yield   func(Event, error) bool
	stopped bool // the consumer stopped iterating
	cancel  context.CancelFunc
	// cancelCause ends the run with a reason (its Hold lost the thread).
	cancelCause context.CancelCauseFunc

	state State
	// rs is the run's saved value, read and written in place: a save hands
	// out its Loop, a resume sets it. Its messages and values are in state
	// (StepInfo.State points there for the whole run) and its files in
	// backend, so those fields stay empty. Step and StepID name the
	// last step recorded (Step is -1 before the first).
	rs      RunState
	backend vfs.Backend
	mem     *vfs.Memory
	// estimates remembers message estimates for this run's requests.
	estimates tokens.Cache
	// held are the subagent runs that stopped waiting for a person, by
	// call id: not finished, so not saved as children, but what they did
	// so far is in this run's result.
	held    map[string]*Result
	changed map[string]bool

	rec       *recording // nil when the run is not recorded
	hold      Hold       // nil but for a top-level run on a Thread that holds
	decisions []Decision
	stepTools map[string]tool.Tool
	stepSpecs []llm.ToolSpec

	// ledger counts this run's model requests, ctxTree its subagents' by
	// path.
	ledger  tokens.Ledger
	ctxTree map[string]tokens.Ledger
	// kept are the values middleware keep out of the state (StepInfo.Keep).
	kept map[string]json.RawMessage
	// claims is what middleware tagged of the current request's system
	// prompt (Middleware.SystemPart).
	claims *claims
	// inherited are the tagged parts of a prompt given by Child.System.
	inherited map[string]int
	// bg are the run's background subagent runs (set when its steps start).
	bg *Background
}

func (a *Agent) newRun(in Input, rc runConfig) *run {
	r := &run{a: a, path: rc.path, task: rc.task, maxSteps: rc.maxSteps, timeout: rc.timeout,
		system: a.system}
	if rc.system != nil {
		r.system = *rc.system
		r.inherited = rc.parts
	}
	r.rt, r.custom = rc.runtime, rc.runtime
	r.decisions = rc.decisions
	if r.rt == nil {
		r.rt = inProcess{a: a}
	}
	if len(r.path) == 0 {
		r.path = RootPath(a.name)
	}
	r.where = r.path.String()
	r.instance = r.path.Last().CallID // "" at the top
	if r.maxSteps == 0 {
		r.maxSteps = a.cfg.MaxSteps
	}
	if r.maxSteps == 0 {
		r.maxSteps = DefaultMaxSteps
	}
	r.state.Messages = slices.Clip(slices.Clone(in.Messages))
	r.rs.Loop.Request = turnRequest(in.Messages)
	switch {
	case in.Backend != nil:
		r.backend = in.Backend
	case a.cfg.Backend != nil:
		r.backend = a.cfg.Backend
	default:
		r.mem = vfs.NewMemory(in.Files)
		r.mem.SetClock(r.rt.Now)
		r.backend = r.mem
	}
	if sm, ok := r.backend.(vfs.StateMounter); ok {
		// Mounts over the run's own files (a vfs.Composite without a
		// fallback): those files stay in the run's state, as by default.
		mem := vfs.NewMemory(in.Files)
		mem.SetClock(r.rt.Now)
		if b, ok := sm.MountState(mem); ok {
			r.mem, r.backend = mem, b
		}
	}
	if rc.rec != nil {
		if rc.record == nil {
			rc.record = &recordConfig{count: new(atomic.Int64), recOnly: true}
		}
		rc.record.rec = rc.rec
	}
	if rc.record != nil {
		r.rec = &recording{recordConfig: *rc.record, ns: nsOf(r.path)}
		r.rs.Step = -1 // nothing recorded yet: the first record is step 0
		_, _, r.rec.keeps = r.fileView()
		if h, ok := r.rec.src.(Hold); ok && !r.rec.nested {
			r.hold = h
		}
	}
	if r.task == "" {
		for _, m := range in.Messages {
			if m.Role == llm.RoleUser {
				r.task = m.Content
				break
			}
		}
	}
	return r
}

func (r *run) totalUsage() llm.Usage {
	total := r.rs.Loop.Usage
	for _, c := range r.rs.Finished {
		total = total.Add(c.Usage)
	}
	return total
}

func (r *run) loop(parent context.Context) {
	ctx, cancel := context.WithCancelCause(parent)
	r.cancel = func() { cancel(nil) }
	r.cancelCause = cancel
	defer cancel(nil)
	if r.timeout > 0 {
		var stop context.CancelFunc
		ctx, stop = r.rt.Timeout(ctx, r.timeout, &timeoutError{r.timeout})
		defer stop()
	}
	r.emit(Event{Type: RunStart, Run: &RunInfo{}})
	if len(r.a.dropped) > 0 {
		r.emit(Event{Type: Warning, Warning: &WarningInfo{Source: "settings", Dropped: slices.Clone(r.a.dropped),
			Text: fmt.Sprintf("the model does not take %s, so %s not sent with its requests",
				strings.Join(r.a.dropped, ", "), isAre(len(r.a.dropped)))}})
	}
	for _, u := range r.a.ungated {
		r.emit(Event{Type: Warning, Warning: &WarningInfo{Source: u.source, Tools: slices.Clone(u.names),
			Text: ungatedText(u.source, u.names, r.a.names, r.a.stepTools)}})
	}
	var pending *StepState
	if r.rec != nil && (r.rec.src == nil || r.rec.rec == nil) && !r.rec.recOnly {
		r.end(parent, StatusError, errors.New("the run's thread was given no saver to read it from and record it to (WithThread, WithRecorder)"))
		return
	}
	if r.rec == nil || r.rec.recOnly {
		switch {
		case len(r.decisions) > 0:
			r.end(parent, StatusError, &DecisionError{Msg: "decisions answer the waiting calls of a thread: resume it with runner.Checkpoints"})
			return
		case len(r.state.Messages) == 0:
			r.end(parent, StatusError, errors.New("the run has no input: give it a message (or resume a thread with runner.Checkpoints)"))
			return
		}
	}
	switch {
	case r.rec != nil && r.rec.recOnly:
		// Recorded but with no thread to read: a run from its input alone.
		r.closeDangling()
		if err := r.saveInput(ctx); err != nil {
			r.end(parent, cancelledBy(ctx, StatusError, err), err)
			return
		}
	case r.rec != nil:
		if r.hold != nil {
			release, err := r.hold.Hold(ctx, r.rt.Now, r.cancelCause)
			if err != nil {
				r.end(parent, cancelledBy(ctx, StatusError, err), err)
				return
			}
			defer release()
		}
		p, done, status, err := r.open(ctx)
		if done {
			r.takeKept() // a run that had ended: they are no part of its result
			r.end(parent, cancelledBy(ctx, status, err), err)
			return
		}
		pending = p
		r.takeKept()
	default:
		r.closeDangling()
	}
	status, err := r.steps(ctx, pending)
	r.stopBackground(ctx, status)
	status, err = settle(parent, cancelledBy(ctx, status, err), err)
	for _, m := range r.a.cfg.Middleware {
		if m.AfterRun != nil {
			m.AfterRun(context.WithoutCancel(ctx), r.stepInfo(), status)
		}
	}
	// A cancelled run saves no end, and neither does one its recorder
	// failed for now (its store stayed unavailable through the retries): both
	// stay unfinished, so that they can be resumed from their last save.
	if r.rec != nil && status != StatusCancelled && !(status == StatusError && errors.Is(err, ErrRecorderUnavailable)) &&
		!(r.rec.ended && r.unchanged()) {
		if serr := r.saveEnd(ctx, status, err); serr != nil {
			status, err = StatusError, errors.Join(err, serr)
		}
	}
	r.end(parent, status, err)
}

// saveEnd saves the run's end, even once the run was cancelled: what it
// saves was paid for.
func (r *run) saveEnd(ctx context.Context, status Status, err error) error {
	sctx, stop := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer stop()
	return r.save(sctx, RecordEnd, status, err)
}

// endWith ends the steps with the model's last response (ev), saving the
// run's end before the response is emitted: a crash after anyone saw the
// response finds the run finished rather than asking the model again. The
// loop saves the end again only if the AfterRun hooks change something.
func (r *run) endWith(ctx context.Context, ev Event, status Status, err error) (Status, error) {
	if r.rec != nil {
		if serr := r.saveEnd(ctx, status, err); serr != nil {
			r.emit(ev)
			return StatusError, serr
		}
		r.rec.ended = true
	}
	r.emit(ev)
	return status, err
}

// cancelledBy makes an error status that the run's cancellation caused (a
// save or a read cut short) a cancellation: the run was not at fault, and
// a cancelled run saves no end, so it can be resumed.
func cancelledBy(ctx context.Context, status Status, err error) Status {
	if status == StatusError && err != nil && ctx.Err() != nil &&
		(errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Cause(ctx))) {
		return StatusCancelled
	}
	return status
}

// settle tells a cancellation by the caller from the run's own time budget
// running out, which is a limit.
func settle(parent context.Context, status Status, err error) (Status, error) {
	if status == StatusCancelled {
		if err == nil {
			err = context.Cause(parent)
		}
		var te *timeoutError
		if parent.Err() == nil && errors.As(err, &te) {
			status = StatusLimit
		}
	}
	return status, err
}

// end reports how the run ended.
func (r *run) end(parent context.Context, status Status, err error) {
	status, err = settle(parent, status, err)
	res := r.result(status, err)
	ev := Event{Type: RunEnd, Agent: r.path, TaskCall: r.instance, Time: r.rt.Now(),
		Run: &RunInfo{Status: status, Error: res.Error, Rounds: res.Rounds, Usage: res.Usage, Result: res}}
	if !r.stopped {
		r.yield(ev, res.Err())
	}
}

func (r *run) result(status Status, err error) *Result {
	res := &Result{Agent: r.path, Status: status, State: r.state, Rounds: r.rs.Loop.Rounds - r.rs.Loop.TurnStart, Children: r.rs.Finished}
	var re *refusalError
	if errors.As(err, &re) {
		res.Refusal = re.text
	}
	if status != StatusOK {
		res.err = &RunError{Agent: r.path, Status: status, Err: err}
		res.Error = res.err.Error()
	}
	if r.mem != nil {
		res.State.Files = r.mem.Files()
	}
	if r.rs.Loop.Output != nil {
		res.Output = r.rs.Loop.Output
	}
	if status == StatusInterrupted {
		res.Interrupts = slices.Clone(r.rs.Loop.Interrupts)
	}
	if r.rec != nil {
		res.Thread = r.rec.thread
		res.SavedSteps = int(r.rec.count.Load()) // the whole tree's, for a top-level run
		if r.rec.nested {
			// A subagent's own and its subagents': the tree's counter is
			// shared with its siblings.
			res.SavedSteps = r.rec.own
			for _, c := range r.rs.Finished {
				res.SavedSteps += c.SavedSteps
			}
		}
	}
	res.Usage = r.totalUsage()
	res.UsageByAgent = map[string]llm.Usage{r.where: r.rs.Loop.Usage}
	maps.Copy(res.UsageByAgent, r.rs.Loop.Tree)
	for p := range r.changed {
		res.Changed = append(res.Changed, p)
	}
	slices.Sort(res.Changed)
	r.contextResult(res)
	if len(r.held) > 0 {
		// Subagents waiting for a person made model calls too: an
		// interrupted result counts them, and lists the subagents.
		res.Children = maps.Clone(res.Children)
		if res.Children == nil {
			res.Children = map[string]*Result{}
		}
		for id, kid := range r.held {
			res.Children[id] = kid
			if r.rec != nil && r.rec.nested {
				res.SavedSteps += kid.SavedSteps
			}
			res.Usage = res.Usage.Add(kid.Usage)
			for p, u := range kid.UsageByAgent {
				res.UsageByAgent[p] = res.UsageByAgent[p].Add(u)
			}
			for p, l := range kid.ContextByAgent {
				if res.ContextByAgent == nil {
					res.ContextByAgent = map[string]tokens.Ledger{}
				}
				res.ContextByAgent[p] = res.ContextByAgent[p].Merge(l)
			}
		}
	}
	return res
}
