package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/tool"
	"github.com/deepagents-go/deepagents/vfs"
)

// This file starts a run on its thread (WithThread): a new thread, a new turn
// on a thread, or the resumption of an unfinished run, read through Thread.

// childrenValue is the value in which databases written before kept all
// the finished subagent runs of a turn: a new turn removes it.
const childrenValue = "agent.children"

// ReservedValue reports whether a saved state value belongs to the
// loop itself (names beginning "agent."), not to a middleware: views of a
// thread for people (the server's thread state) leave those out.
func ReservedValue(name string) bool { return strings.HasPrefix(name, "agent.") }

type recordConfig struct {
	src    Thread
	thread string
	count  *atomic.Int64 // step records handed out by the run tree
	nested bool          // a subagent run: its parent holds the thread (Hold)
	// parentStep names the parent's step that started a subagent run, so
	// that a later turn reusing the call id starts a history of its own.
	parentStep string
	// rec takes the run's step records (WithRecorder).
	rec Recorder
	// recOnly: the run is recorded (WithRecorder) but has no thread to
	// read a thread from.
	recOnly bool
}

// recording is a recorded run's bookkeeping: what is recorded already.
type recording struct {
	recordConfig
	ns     string
	msgs   int // messages saved so far
	files  map[string]vfs.File
	keeps  bool // the run's files are saved (a branchable backend)
	usage  llm.Usage
	values map[string]json.RawMessage // set since the last save
	// kids are the children finished since the last save; a nil one is
	// a child of the turn before, dropped from the thread.
	kids map[string]*Result
	own  int // step records this run handed out itself
	// legacyKids: the thread's state holds its finished children the way
	// databases written before did, all under childrenValue.
	legacyKids bool
	// tracked: the run's own vfs.Memory tracks its changes since the last
	// save (files is then unused).
	tracked bool
	// ended: the run's end is saved (see endWith).
	ended bool
	// deleted: the paths the last save listed as deleted (a run on a
	// layer, whose files are not tracked).
	deleted []string
}

// restore sets the run's value from rs: its loop and finished children as
// saved, its messages, values and files into the run's state and backend.
func (r *run) restore(rs *RunState) {
	r.state.Messages = slices.Clip(rs.Messages)
	r.state.Values = rs.Values
	ls := rs.Loop
	r.rs.Loop, r.rs.Finished = ls, rs.Finished
	// What a save fills in from elsewhere (see loopState) is not the
	// loop's, and calls waiting are put again unless refused (see open).
	r.rs.Loop.Status, r.rs.Loop.Error, r.rs.Loop.Refusal, r.rs.Loop.Changed, r.rs.Loop.Deleted = "", "", "", nil, nil
	r.rs.Loop.ParentStep, r.rs.Loop.StepInProgress, r.rs.Loop.Interrupts = "", "", nil
	if ls.Tree == nil {
		// Saved since children are saved one by one: the usage by agent
		// path is what the finished children report (see loopState).
		for _, kid := range rs.Finished {
			for p, u := range kid.UsageByAgent {
				if r.rs.Loop.Tree == nil {
					r.rs.Loop.Tree = map[string]llm.Usage{}
				}
				r.rs.Loop.Tree[p] = r.rs.Loop.Tree[p].Add(u)
			}
		}
	}
	for _, p := range ls.Changed {
		if r.changed == nil {
			r.changed = map[string]bool{}
		}
		r.changed[p] = true
	}
	if r.rec != nil {
		r.rec.legacyKids = rs.LegacyChildren
	}
	switch b := r.backend.(type) {
	case *vfs.Memory:
		if r.mem == b {
			r.mem = vfs.NewMemory(rs.Files)
			r.mem.SetClock(r.rt.Now)
			r.backend = r.mem
		} else {
			b.Apply(diffFiles(b.Files(), rs.Files))
		}
	case vfs.StateMounter:
		if r.mem != nil {
			r.mem.Apply(diffFiles(r.mem.Files(), rs.Files))
		}
	case *vfs.Layer:
		var d vfs.Delta
		for p, f := range rs.Files {
			f := f
			d = append(d, vfs.Change{Path: p, File: &f})
		}
		for _, p := range rs.Deleted {
			d = append(d, vfs.Change{Path: p})
		}
		b.Apply(d)
	}
	if r.rec != nil {
		r.rs.Step, r.rs.StepID, r.rec.msgs = rs.Step, rs.StepID, len(r.state.Messages)
		if rs.InProgress != nil {
			r.rs.Loop.StepInProgress = rs.InProgress.ID
		}
		if r.rec.keeps {
			if r.mem != nil && r.backend == vfs.Backend(r.mem) {
				r.mem.TrackChanges()
				r.rec.tracked, r.rec.files = true, nil
			} else {
				r.rec.files, _, _ = r.fileView()
			}
		}
	}
}

// storedErr is the error of a run that ended before, rebuilt from its state.
func storedErr(rs *RunState) error {
	switch rs.Status {
	case StatusOK:
		return nil
	case StatusRefused:
		return &refusalError{text: rs.Loop.Refusal}
	}
	return errors.New(rs.Loop.Error)
}

// errWaiting is the cause of a run that stopped for approval.
type errWaiting struct{ n int }

func (e errWaiting) Error() string {
	if e.n == 1 {
		return "1 tool call is waiting for approval"
	}
	return fmt.Sprintf("%d tool calls are waiting for approval", e.n)
}

// open starts a run on its thread as the thread's Open decides: a new
// thread, a new turn on a thread, or the resumption of an unfinished run.
// done says the run has nothing more to do (a nested run that had finished
// already, or input that cannot be taken), with its status and error.
func (r *run) open(ctx context.Context) (pending *StepState, done bool, status Status, err error) {
	d := r.rec
	input := r.state.Messages
	how, rs, err := d.src.Open(ctx, r.path, Opening{Input: len(input) > 0, Decisions: r.decisions, Nested: d.nested,
		ParentStep: d.parentStep, Check: func(ds []Decision, waiting []Interrupt) error {
			if err := CheckDecisions(ds, waiting); err != nil {
				return err
			}
			return r.a.checkEdits(ds, waiting, r.path)
		}})
	if err != nil && how != StartRefused {
		return nil, true, StatusError, err
	}
	switch how {
	case StartFresh:
		if rs != nil {
			// A history of its own after another run's in the same
			// namespace: its steps are numbered after that one's.
			r.rs.Step = rs.Step
		}
		r.closeDangling()
		if err := r.saveInput(ctx); err != nil {
			return nil, true, StatusError, err
		}
		return nil, false, "", nil
	case StartEnded:
		r.restore(rs)
		return nil, true, rs.Status, storedErr(rs)
	case StartRefused:
		// Decisions that do not fit the waiting calls: the run stays as
		// it was, waiting for them.
		r.restore(rs)
		r.rs.Loop.Interrupts = rs.Loop.Interrupts
		return nil, true, StatusInterrupted, err
	case StartCloseStep:
		r.restore(rs)
		if err := r.closeStep(ctx, rs); err != nil {
			return nil, true, StatusError, err
		}
		return r.newTurn(ctx, input)
	case StartNewTurn:
		r.restore(rs)
		return r.newTurn(ctx, input)
	}
	r.restore(rs)
	if err := r.rebuildChanged(ctx, rs); err != nil {
		return nil, true, StatusError, err
	}
	r.resumed(rs)
	return rs.InProgress, false, "", nil
}

// newTurn starts a new run on a restored thread with input.
func (r *run) newTurn(ctx context.Context, input []llm.Message) (*StepState, bool, Status, error) {
	// A new turn is a new run on the thread's conversation and files: its
	// step budget, usage, children and answer are its own. Rounds keep
	// counting, so each model call of the thread has its own number.
	r.rs.Loop.TurnStart = r.rs.Loop.Rounds
	r.dropChildren()
	r.rs.Loop.Usage, r.rs.Loop.Tree, r.rs.Finished, r.changed, r.rs.Loop.Output = llm.Usage{}, nil, nil, nil, nil
	r.rs.Loop.RespFailures, r.rs.Loop.RespRepaired, r.rs.Loop.LastRespError = 0, false, ""
	// Background runs of an ended turn that never reported are not started
	// again: the turn they belonged to is over.
	r.rs.Loop.Background = nil
	r.state.Messages = append(r.state.Messages, input...)
	r.rs.Loop.Request = turnRequest(input)
	r.closeDangling()
	if err := r.saveInput(ctx); err != nil {
		return nil, true, StatusError, err
	}
	return nil, false, "", nil
}

// dropChildren removes the finished subagent runs of the turn before from
// the thread's state with the next step record: a new turn's result lists
// only its own.
func (r *run) dropChildren() {
	d := r.rec
	if d == nil || len(r.rs.Finished) == 0 && !d.legacyKids {
		return
	}
	if d.kids == nil {
		d.kids = map[string]*Result{}
	}
	for id := range r.rs.Finished {
		if _, kept := d.kids[id]; !kept { // a child saved with a closed step stays
			d.kids[id] = nil
		}
	}
	if d.legacyKids {
		if d.values == nil {
			d.values = map[string]json.RawMessage{}
		}
		d.values[childrenValue] = nil
		d.legacyKids = false
	}
}

// closeStep ends a restored run's step in progress without running what
// had not finished: finished calls keep their results and file changes,
// calls in flight and calls waiting for a decision get results saying they
// did not run.
func (r *run) closeStep(ctx context.Context, rs *RunState) error {
	st := rs.InProgress
	if st == nil {
		return nil
	}
	results := make([]tool.Result, len(st.Calls))
	deltas := make([]vfs.Delta, len(st.Calls))
	owners := make([]string, len(st.Calls))
	open := 0
	for i, c := range st.Calls {
		owners[i] = c.ID
		oc, done := st.Done[c.ID]
		switch _, waiting := st.Waiting[c.ID]; {
		case done:
			results[i] = tool.Result{Content: oc.Content, IsError: oc.IsError, Structured: oc.Structured, Parts: oc.Parts, State: oc.State}
			deltas[i] = oc.Files
			if oc.Child != nil {
				r.addChild(c.ID, oc.Child)
			}
			continue
		case waiting && !decidedToRun(st, c.ID):
			results[i] = tool.Errorf("Error: this %s call waited for a person's approval, but they sent a new message instead, so it did not run.", c.Name)
		default:
			results[i] = tool.Errorf("%s", cutOffResult(c, r.rec.keeps))
		}
		open++
	}
	if ap, ok := r.backend.(vfs.Applier); ok && r.rec.keeps {
		net, _ := vfs.Merge(ctx, ap, deltas, owners)
		r.fileEvents(net)
	}
	r.appendResults(st.Calls, results)
	r.applyState(results)
	r.rs.Loop.StepInProgress = ""
	r.emit(Event{Type: Notice, Notice: &NoticeInfo{Source: "history", Count: open,
		Text: fmt.Sprintf("new input on an unfinished run: its last step was closed; %d of its %d tool calls had not finished and were closed without a result", open, len(st.Calls))}})
	return nil
}

// saveInput records the run's input, the record its changes are counted
// from. A subagent's input is not saved on its own: its parent's step holds
// the call that starts it (a crash before its first step starts it again,
// from the same call), and its first step is saved before any of its tools
// runs, with the files as they were at its input, so that record is the
// one its changes are counted from.
func (r *run) saveInput(ctx context.Context) error {
	if r.rec.nested {
		// The input's step number is taken all the same, so that a
		// subagent's steps are numbered as a top-level run's are.
		r.rs.Step++
		r.rs.Loop.Input = stepID(r.rs.Step + 1)
		return nil
	}
	r.rs.Loop.Input = stepID(r.rs.Step + 1)
	return r.save(ctx, RecordInput, "", nil)
}

// rebuildChanged recomputes the paths an unfinished run changed, after a
// crash: from its files now and at its input when its records keep its
// files, else (a real directory, say) from the file changes saved with the
// results of its finished steps' calls, and with what the subagents that
// calls of its step in progress started changed so far. The step in
// progress adds its calls' own changes when it completes.
func (r *run) rebuildChanged(ctx context.Context, rs *RunState) error {
	if !r.rec.keeps {
		// A call of the step in progress that started a subagent continues
		// its run, and the call's own file changes count only what it
		// changes from now on: what it changed before counts here.
		paths, err := r.rec.src.Changed(ctx, rs, rs.Loop.Changed == nil)
		if err != nil {
			return err
		}
		for _, p := range paths {
			r.markChanged(p)
		}
		return nil
	}
	if rs.Loop.Changed != nil {
		return nil
	}
	var before map[string]vfs.File
	if _, own := r.backend.(*vfs.Memory); (own || r.mem != nil) && rs.Loop.Input != "" {
		files, err := r.rec.src.FilesAt(ctx, r.path, rs.Loop.Input)
		if err != nil {
			return fmt.Errorf("thread %q: the run's input checkpoint: %w", r.rec.thread, err)
		}
		before = files
	}
	now, deleted, _ := r.fileView()
	for _, c := range diffFiles(before, now) {
		r.markChanged(c.Path)
	}
	for _, p := range deleted {
		r.markChanged(p)
	}
	return nil
}

func (r *run) markChanged(p string) {
	if r.changed == nil {
		r.changed = map[string]bool{}
	}
	r.changed[p] = true
}

// resumed reports a resumption.
func (r *run) resumed(rs *RunState) {
	text := fmt.Sprintf("resumed from checkpoint %s of thread %q", rs.StepID, r.rec.thread)
	n := 0
	if st := rs.InProgress; st != nil {
		n = len(st.Calls)
		text += fmt.Sprintf("; %d of the step's %d tool calls had finished and are kept", len(st.Done), len(st.Calls))
	}
	r.emit(Event{Type: Notice, Notice: &NoticeInfo{Source: "resume", Count: n, Text: text}})
}

// nestedOptions are the options a nested run is started with: this run's
// runtime, its recorder and the decisions not meant for this run.
func (r *run) nestedOptions() []RunOption {
	step := ""
	if r.rec != nil {
		step = r.rec.ns + "@" + r.rs.Loop.StepInProgress
	}
	return r.nestedOptionsAt(step)
}

// nestedOptionsAt are nestedOptions for a nested run started by the step
// parentStep (namespace@step id).
func (r *run) nestedOptionsAt(parentStep string) []RunOption {
	var opts []RunOption
	if r.custom != nil {
		opts = append(opts, WithRuntime(r.custom))
	}
	if r.rec != nil {
		nc := r.rec.recordConfig
		nc.nested = true
		nc.parentStep = parentStep
		opts = append(opts, func(c *runConfig) { c.record = &nc })
	}
	if len(r.decisions) > 0 {
		opts = append(opts, WithDecisions(r.decisions...))
	}
	return opts
}
