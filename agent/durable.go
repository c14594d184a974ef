package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/tool"
	"github.com/deepagents-go/deepagents/vfs"
)

// This file is what makes a run durable: saving each step to a checkpoint
// saver and reading a run back.

// sourceInput is the "source" metadata of a checkpoint holding a run's input.
const sourceInput = "input"

// Names of the loop's own values in a checkpoint's state. Each finished
// subagent run of the current turn is kept under childValue and its call id,
// saved once with the checkpoint after it finished; childrenValue is how
// databases written before kept all of them, rewritten with every
// checkpoint (still read).
const (
	loopValue     = "agent.loop"
	childValue    = "agent.child/"
	childrenValue = "agent.children"
)

// ReservedValue reports whether a checkpointed state value belongs to the
// loop itself (names beginning "agent."), not to a middleware: views of a
// thread for people (the server's thread state) leave those out.
func ReservedValue(name string) bool { return strings.HasPrefix(name, "agent.") }

// WithCheckpoints saves the run in saver under thread, step by step: a
// model response before its tool calls start, each tool call's result as
// soon as it finishes, and the run's end. Subagent runs are saved under the
// same thread, each in the namespace of its agent path.
//
// A run given input continues the thread's conversation and files (a new
// thread starts empty); a run given no input resumes the thread's
// unfinished run from its last checkpoint, repeating no finished model or
// tool call. runner.Checkpoints does this and also tries again a save the
// store cannot take for now, and holds the thread's lease while the run
// goes on, so that a second run on the thread is refused.
func WithCheckpoints(saver checkpoint.Saver, thread string) RunOption {
	return func(c *runConfig) {
		c.ck = &ckConfig{saver: saver, thread: thread, count: new(atomic.Int64)}
	}
}

// WithMetadata saves md with the checkpoint of the run's input (beside the
// "source" key, which it cannot replace): what the caller needs to know of
// the turn later, such as the settings it was started with. Listing a
// thread's history can filter by it (checkpoint.ListOptions). A subagent
// run, and a run resumed without input, save no input and so no metadata.
func WithMetadata(md map[string]string) RunOption {
	return func(c *runConfig) { c.metadata = maps.Clone(md) }
}

// WithDecisions answers calls that wait for a person (Result.Interrupts)
// when a thread is resumed. Decisions may answer some of the waiting calls;
// the others keep waiting. A decision that answers no waiting call, or takes
// a decision its call does not allow, is refused with a *DecisionError and
// nothing runs.
func WithDecisions(ds ...Decision) RunOption {
	return func(c *runConfig) { c.decisions = append(c.decisions, ds...) }
}

// WithEndedResult makes a run given no input, on a thread whose last run
// has already ended, end at once with that run's saved status and result
// (messages, files, usage, subagents) instead of being refused. It is for a
// process that takes a thread over after a crash: a run saves its end
// before it shows its last response, so a process that died after showing
// it may have finished the run.
func WithEndedResult() RunOption {
	return func(c *runConfig) { c.ended = true }
}

type ckConfig struct {
	saver  checkpoint.Saver
	thread string
	count  *atomic.Int64 // checkpoints written by the run tree
	nested bool          // a subagent run: its parent holds the lease
	// parentStep names the parent's step that started a subagent run, so
	// that a later turn reusing the call id starts a history of its own.
	parentStep string
	// metadata goes with the input's checkpoint (WithMetadata).
	metadata map[string]string
	// rec takes the run's step records: a ckRecorder of saver unless
	// WithRecorder gave another.
	rec Recorder
	// recOnly: the run is recorded (WithRecorder) but has no saver to
	// read a thread from.
	recOnly bool
	// acceptEnded: a resume of an ended run returns its result
	// (WithEndedResult).
	acceptEnded bool
}

// DecisionError refuses decisions that do not fit the calls waiting for
// them. The thread is unchanged and still waits.
type DecisionError struct{ Msg string }

func (e *DecisionError) Error() string { return e.Msg }

// durable is a checkpointed run's bookkeeping: what is saved already.
type durable struct {
	ckConfig
	ns     string
	seq    int    // step number of the last checkpoint, -1 before the first
	last   string // its id
	stepCP string // checkpoint of the step in progress
	msgs   int    // messages saved so far
	files  map[string]vfs.File
	keeps  bool // the run's files are saved (a branchable backend)
	usage  llm.Usage
	values map[string]json.RawMessage // set since the last save
	// kids are the children finished since the last save; a nil one is
	// a child of the turn before, dropped from the thread.
	kids map[string]*Result
	own  int // checkpoints this run saved itself
	// legacyKids: the thread's state holds its finished children the way
	// databases written before did, all under childrenValue.
	legacyKids bool
	input      string // the checkpoint of this run's input
	// tracked: the run's own vfs.Memory tracks its changes since the last
	// save (files is then unused).
	tracked bool
	// ended: the run's end is saved (see endWith).
	ended bool
	// deleted: the paths the last save listed as deleted (a run on a
	// layer, whose files are not tracked).
	deleted []string
}

// unchanged says whether nothing the run saves changed since its last
// save.
func (r *run) unchanged() bool {
	d := r.ck
	if d.msgs != len(r.state.Messages) || d.values != nil || len(d.kids) > 0 || d.usage != (llm.Usage{}) {
		return false
	}
	// Files: a hook may write them (StepInfo.Files).
	switch {
	case !d.keeps:
		return true
	case d.tracked:
		return !r.mem.HasChanges()
	}
	files, deleted, _ := r.fileView()
	return slices.Equal(deleted, d.deleted) && len(diffFiles(d.files, files)) == 0
}

func nsOf(p Path) string {
	if !p.IsNested() {
		return ""
	}
	return p.String()
}

func cpID(step int) string { return fmt.Sprintf("%08d", step) }

func ckStatus(s Status) checkpoint.Status {
	switch s {
	case "":
		return checkpoint.StatusRunning
	case StatusOK:
		return checkpoint.StatusDone
	case StatusInterrupted:
		return checkpoint.StatusInterrupted
	}
	return checkpoint.StatusError
}

// fileView is the run's files as saved: all of them for an in-state
// filesystem, the net changes for a layer over given files.
func (r *run) fileView() (files map[string]vfs.File, deleted []string, ok bool) {
	if r.mem != nil { // the run's own files, maybe under mounts
		return r.mem.Files(), nil, true
	}
	switch b := r.backend.(type) {
	case *vfs.Memory:
		return b.Files(), nil, true
	case *vfs.Layer:
		files = map[string]vfs.File{}
		for _, c := range b.Delta() {
			if c.File == nil {
				deleted = append(deleted, c.Path)
			} else {
				files[c.Path] = *c.File
			}
		}
		return files, deleted, true
	}
	return nil, nil, false
}

func diffFiles(prev, cur map[string]vfs.File) vfs.Delta {
	var d vfs.Delta
	for p, f := range cur {
		if old, ok := prev[p]; !ok || old != f {
			f := f
			d = append(d, vfs.Change{Path: p, File: &f})
		}
	}
	for p := range prev {
		if _, ok := cur[p]; !ok {
			d = append(d, vfs.Change{Path: p})
		}
	}
	slices.SortFunc(d, func(a, b vfs.Change) int { return strings.Compare(a.Path, b.Path) })
	return d
}

// loopState is the loop's value as of now.
func (r *run) loopState(status Status, err error) LoopState {
	// Tree is the sum of the finished children's usage, which are saved
	// one by one, so it is left out (see restore) unless the thread still
	// keeps its children the old way, where it tells stale ones apart.
	ls := LoopState{Status: status, Rounds: r.rounds, TurnStart: r.turnStart, Usage: r.usage, Output: r.output,
		RespFailures: r.respFailures, RespRepaired: r.respRepaired, LastRespError: r.lastRespError,
		Rejected: r.rejected, Interrupts: r.waiting}
	if err != nil {
		ls.Error = err.Error()
		var re *refusalError
		if errors.As(err, &re) {
			ls.Refusal = re.text
		}
	}
	// The list of changed paths grows with the run, so it is saved only
	// when the run stops; a run resumed after a crash rebuilds it (see
	// rebuildChanged).
	if status != "" {
		for p := range r.changed {
			ls.Changed = append(ls.Changed, p)
		}
		slices.Sort(ls.Changed)
	}
	if r.ck != nil {
		if r.ck.legacyKids {
			ls.Tree = r.tree
		}
		ls.StepCheckpoint = r.ck.stepCP
		ls.Input = r.ck.input
		ls.ParentStep = r.ck.parentStep
	}
	return ls
}

// save records everything since the last record as the next step (kind
// input, loop or end). status is "" while the run goes on.
func (r *run) save(ctx context.Context, kind RecordKind, status Status, runErr error) error {
	d := r.ck
	if d == nil {
		return nil
	}
	rec := &StepRecord{Path: r.path, Kind: kind, Step: d.seq + 1, Checkpoint: cpID(d.seq + 1), Parent: d.last,
		Appended: r.state.Messages[d.msgs:], Usage: d.usage, Values: d.values, Children: d.kids, Time: r.rt.Now(), Warn: r.warnSave}
	if kind == RecordInput {
		rec.Metadata = d.metadata
	}
	if d.seq < 0 {
		rec.Parent = ""
	}
	var deleted []string
	switch {
	case d.keeps && d.tracked:
		// The run's own files say what changed: no copy of all of them.
		rec.Files = r.mem.TakeChanges()
	case d.keeps:
		files, del, _ := r.fileView()
		rec.Files = diffFiles(d.files, files)
		d.files, deleted, d.deleted = files, del, del
		if r.mem != nil && r.backend == vfs.Backend(r.mem) {
			// From the first save on, the run's own memory tracks its
			// changes; what came before is in this save.
			r.mem.TrackChanges()
			r.mem.TakeChanges()
			d.tracked, d.files = true, nil
		}
	}
	rec.Loop = r.loopState(status, runErr)
	rec.Loop.Deleted = deleted
	if err := d.rec.Record(ctx, rec); err != nil {
		if d.recOnly {
			return fmt.Errorf("recording step %d: %w", rec.Step, err)
		}
		return fmt.Errorf("saving checkpoint %d of thread %q: %w", rec.Step, d.thread, err)
	}
	d.count.Add(1)
	d.own++
	d.seq, d.last, d.msgs = rec.Step, rec.Checkpoint, len(r.state.Messages)
	d.usage, d.values, d.kids = llm.Usage{}, nil, nil
	return nil
}

// warnSave reports a save the run tries again.
func (r *run) warnSave(text string) {
	r.emit(Event{Type: Warning, Warning: &WarningInfo{Source: "checkpoint", Text: text}})
}

// recordCall records a call of the step in progress: its result, a
// decision taken for it, or that it waits for one.
func (r *run) recordCall(ctx context.Context, call *CallRecord) error {
	d := r.ck
	if d == nil || d.stepCP == "" {
		return nil
	}
	err := d.rec.Record(ctx, &StepRecord{Path: r.path, Kind: RecordCall, Step: d.seq + 1, Checkpoint: d.stepCP,
		Time: r.rt.Now(), Call: call, Warn: r.warnSave})
	switch {
	case err == nil:
		return nil
	case d.recOnly:
		return fmt.Errorf("recording call %s: %w", call.ID, err)
	}
	return fmt.Errorf("saving the result of call %s in thread %q: %w", call.ID, d.thread, err)
}

// CheckpointRecorder saves step records in saver under thread: one
// checkpoint per step, one write per call, in the namespace of the record's
// path. A save cut short by the run's cancellation is made again without it
// (what it saves was paid for); one the store cannot take for now fails
// with ErrRecorderUnavailable. A run given WithCheckpoints records with
// one, and so do the subagent runs it starts.
func CheckpointRecorder(saver checkpoint.Saver, thread string) Recorder {
	return &ckRecorder{saver: saver, thread: thread}
}

// ckRecorder is CheckpointRecorder's recorder.
type ckRecorder struct {
	saver  checkpoint.Saver
	thread string

	mu sync.Mutex
	// kidJSON holds, by namespace and call id, the summaries of subagent
	// runs already encoded for their calls' result writes, so that the
	// next step's save does not encode them again.
	kidJSON map[string]map[string]encodedKid
}

type encodedKid struct {
	kid *Result
	b   json.RawMessage
}

// Record saves rec.
func (c *ckRecorder) Record(ctx context.Context, rec *StepRecord) error {
	ns := nsOf(rec.Path)
	if rec.Kind == RecordCall {
		return c.recordCall(ctx, ns, rec)
	}
	st := checkpoint.Step{ThreadID: c.thread, NS: ns, ID: rec.Checkpoint, ParentID: rec.Parent, Step: rec.Step,
		Metadata: map[string]string{"source": string(rec.Kind)}, Messages: rec.Appended, Usage: rec.Usage,
		Files: rec.Files, Status: ckStatus(rec.Loop.Status), Time: rec.Time}
	for k, v := range rec.Metadata {
		if k != "source" {
			st.Metadata[k] = v
		}
	}
	lv, err := json.Marshal(rec.Loop)
	if err != nil {
		return err
	}
	st.Values = map[string]json.RawMessage{loopValue: lv}
	maps.Copy(st.Values, rec.Values)
	c.mu.Lock()
	encoded := c.kidJSON[ns]
	c.mu.Unlock()
	for id, kid := range rec.Children {
		if kid == nil {
			st.Values[childValue+id] = nil
			continue
		}
		b := encoded[id].b
		if encoded[id].kid != kid {
			if b, err = json.Marshal(summary(kid)); err != nil {
				return err
			}
		}
		st.Values[childValue+id] = b
	}
	if err := keep(ctx, func(ctx context.Context) error { return c.saver.Put(ctx, st) }); err != nil {
		return marked(err)
	}
	c.mu.Lock()
	delete(c.kidJSON, ns)
	c.mu.Unlock()
	return nil
}

// recordCall saves a call record as a write under the step in progress.
func (c *ckRecorder) recordCall(ctx context.Context, ns string, rec *StepRecord) error {
	call := rec.Call
	w := checkpoint.Write{CallID: call.ID, Time: rec.Time}
	switch {
	case call.Decision != nil:
		w.Kind = kindDecision
		w.Data, _ = json.Marshal(*call.Decision)
	case call.Waiting != nil:
		w.Kind = kindWaiting
		w.Data, _ = json.Marshal(*call.Waiting)
	case call.Outcome != nil:
		oc := *call.Outcome
		oc.Child, oc.Files = nil, nil
		saved := outcomeOut{savedOutcome: savedOutcome{CallOutcome: oc, Rejected: call.Rejected}}
		if kid := call.Outcome.Child; kid != nil {
			// Encoded once, for this write and for the next checkpoint's value.
			b, err := json.Marshal(summary(kid))
			if err != nil {
				return err
			}
			saved.Child = b
			c.mu.Lock()
			if c.kidJSON == nil {
				c.kidJSON = map[string]map[string]encodedKid{}
			}
			if c.kidJSON[ns] == nil {
				c.kidJSON[ns] = map[string]encodedKid{}
			}
			c.kidJSON[ns][call.ID] = encodedKid{kid: kid, b: b}
			c.mu.Unlock()
		}
		if saved.Content != "" && call.Message.Content == saved.Content {
			// The write's message holds the text already: one copy is enough.
			saved.Content, saved.InResult = "", true
		}
		data, err := saved.encode()
		if err != nil {
			return err
		}
		w.Kind, w.Result, w.Files, w.Data = checkpoint.KindResult, call.Message, call.Outcome.Files, data
	}
	ref := checkpoint.Ref{ThreadID: c.thread, NS: ns, ID: rec.Checkpoint}
	return marked(keep(ctx, func(ctx context.Context) error { return c.saver.PutWrite(ctx, ref, w) }))
}

// marked marks a save the store could not take for now as the recorder
// being unavailable.
func marked(err error) error {
	if errors.Is(err, checkpoint.ErrUnavailable) {
		return unavailableError{err}
	}
	return err
}

// keepTimeout bounds a save made after the run was cancelled.
const keepTimeout = 30 * time.Second

// keep runs a save. One that fails because the run was cancelled meanwhile
// is made again, without the cancellation (bounded by keepTimeout): what
// it saves was paid for — a model response, a call that finished — and
// the resume must find it. Saves are idempotent, so a save that had landed
// before it failed is not doubled.
func keep(ctx context.Context, save func(context.Context) error) error {
	err := save(ctx)
	if err == nil || ctx.Err() == nil {
		return err
	}
	dctx, stop := context.WithTimeout(context.WithoutCancel(ctx), keepTimeout)
	defer stop()
	return save(dctx)
}

// Kinds of the writes a step in progress keeps besides results.
const (
	kindWaiting  = "interrupt"
	kindDecision = "decision"
)

// LoadRunState reads the state of the run at path in thread as of its latest
// checkpoint. With deep set, the states of subagents started by the step in
// progress are read too (RunState.Children). It returns checkpoint.ErrNotFound
// when the run has no checkpoint.
func LoadRunState(ctx context.Context, saver checkpoint.Saver, thread string, path Path, deep bool) (*RunState, error) {
	ns := nsOf(path)
	cp, err := saver.Get(ctx, checkpoint.Ref{ThreadID: thread, NS: ns})
	if err != nil {
		return nil, err
	}
	rs := &RunState{V: RunStateVersion, Thread: thread, Path: path.String(), Checkpoint: cp.ID, Step: cp.Step,
		Messages: cp.State.Messages, Files: cp.State.Files, Values: map[string]json.RawMessage{}}
	for k, v := range cp.State.Values {
		switch k {
		case loopValue:
			if err := json.Unmarshal(v, &rs.Loop); err != nil {
				return nil, fmt.Errorf("checkpoint %s of thread %q: the loop's value: %w", cp.ID, thread, err)
			}
		case childrenValue:
			rs.legacyKids = true
		default:
			if id, ok := strings.CutPrefix(k, childValue); ok {
				var kid *Result
				if err := json.Unmarshal(v, &kid); err != nil {
					return nil, fmt.Errorf("checkpoint %s of thread %q: subagent run %s: %w", cp.ID, thread, id, err)
				}
				if kid == nil {
					continue
				}
				if rs.Finished == nil {
					rs.Finished = map[string]*Result{}
				}
				rs.Finished[id] = kid
				continue
			}
			rs.Values[k] = v // the calibration too: a resumed run takes it out
		}
	}
	if len(rs.Values) == 0 {
		rs.Values = nil
	}
	rs.Status = rs.Loop.Status
	rs.Deleted = rs.Loop.Deleted
	if rs.Status == "" && cp.Status != checkpoint.StatusRunning && cp.Status != "" {
		rs.Status = StatusError
	}
	// The step in progress: the last assistant message with calls that have
	// no results after it.
	if n := len(rs.Messages); n > 0 && rs.Messages[n-1].Role == llm.RoleAssistant && len(rs.Messages[n-1].ToolCalls) > 0 &&
		rs.Status != StatusOK && rs.Status != StatusError && rs.Status != StatusLimit && rs.Status != StatusRefused {
		sc := rs.Loop.StepCheckpoint
		if sc == "" {
			sc = cp.ID
		}
		ss := &StepState{Checkpoint: sc, Calls: rs.Messages[n-1].ToolCalls}
		pending := cp.Pending
		if sc != cp.ID {
			at, err := saver.Get(ctx, checkpoint.Ref{ThreadID: thread, NS: ns, ID: sc})
			if err != nil {
				return nil, fmt.Errorf("thread %q: the checkpoint of the step in progress: %w", thread, err)
			}
			pending = at.Pending
		}
		for _, w := range pending {
			var err error
			switch w.Kind {
			case checkpoint.KindResult, "":
				err = decodeOutcome(&ss.Done, w)
			case kindWaiting:
				err = decodeInto(&ss.Waiting, w)
			case kindDecision:
				err = decodeInto(&ss.Decided, w)
			}
			if err != nil {
				return nil, fmt.Errorf("thread %q: the saved %s of call %s: %w", thread, w.Kind, w.CallID, err)
			}
		}
		rs.InProgress = ss
		if deep {
			kids, err := saver.List(ctx, checkpoint.ListOptions{ThreadID: thread, AllNamespaces: true})
			if err != nil {
				return nil, err
			}
			seen := map[string]bool{}
			for _, k := range kids {
				kp, err := ParsePath(k.NS)
				// The parent is known by its namespace: a top-level run's is
				// "" whatever name the path gives the root.
				if k.NS == "" || err != nil || nsOf(kp.Parent()) != ns || seen[k.NS] {
					continue
				}
				seen[k.NS] = true
				if _, done := ss.Done[kp.Last().CallID]; done {
					continue
				}
				child, err := LoadRunState(ctx, saver, thread, kp, true)
				if err != nil {
					return nil, err
				}
				if rs.Children == nil {
					rs.Children = map[string]*RunState{}
				}
				rs.Children[kp.Last().CallID] = child
			}
		}
	}
	if rs.Status == StatusInterrupted {
		if err := dropAnswered(ctx, saver, rs, path); err != nil {
			return nil, err
		}
	}
	// Databases written before kept the turn's finished children in one
	// value and their usage in the loop's Tree, which a new turn emptied
	// while the children stayed until replaced: children without a Tree
	// are the turn before's.
	if raw, ok := cp.State.Values[childrenValue]; ok && rs.Loop.Tree != nil {
		var kids map[string]*Result
		if err := json.Unmarshal(raw, &kids); err == nil {
			for id, kid := range kids {
				if _, newer := rs.Finished[id]; !newer && kid != nil {
					if rs.Finished == nil {
						rs.Finished = map[string]*Result{}
					}
					rs.Finished[id] = kid
				}
			}
		}
	}
	return rs, nil
}

// CheckDecisions is the package's CheckDecisions for a top-level run of a:
// it also refuses an edit whose arguments do not fit the schema of the
// tool of the waiting call, whether a's own model or a subagent's made it,
// so that a caller can refuse decisions before it starts a run (a run
// checks them the same way).
func (a *Agent) CheckDecisions(ds []Decision, waiting []Interrupt) error {
	if err := CheckDecisions(ds, waiting); err != nil {
		return err
	}
	return a.checkEdits(ds, waiting, RootPath(a.name).String())
}

// checkEdits refuses an edit whose arguments do not fit the schema of the
// tool of a call waiting in the agent at path or in a subagent below it,
// before anything runs: a person's typo should be theirs to fix, not the
// model's to puzzle over. A call whose agent, tool or schema cannot be
// found or read here is left to its tool to check when it runs.
func (a *Agent) checkEdits(ds []Decision, waiting []Interrupt, path string) error {
	var where Path
	for _, d := range ds {
		if d.Type != Edit {
			continue
		}
		for _, in := range waiting {
			if in.CallID != d.CallID || d.Path != "" && d.Path != in.Path {
				continue
			}
			var rest Path
			if in.Path != path {
				if where == nil {
					var err error
					if where, err = ParsePath(path); err != nil {
						return nil // not a path this agent can read
					}
				}
				p, err := ParsePath(in.Path)
				if err != nil || len(p) <= len(where) || !p[:len(where)].Equal(where) {
					continue // not below this run
				}
				rest = p[len(where):]
			}
			specs, ok := a.toolSpecsAt(rest)
			if !ok {
				continue
			}
			for _, spec := range specs {
				if spec.Name != in.Tool || len(spec.Parameters) == 0 {
					continue
				}
				s, err := tool.CompileSchema(spec.Parameters)
				if err != nil {
					break // a schema this package cannot read: the tool checks
				}
				var args map[string]any
				if err := tool.DecodeArgs(s, d.Args, &args); err != nil {
					return &DecisionError{Msg: fmt.Sprintf("the new arguments of call %q do not fit %s: %v", d.CallID, in.Tool, err)}
				}
			}
		}
	}
	return nil
}

// toolSpecsAt returns the tool definitions of the agent at rest, a path
// below a: a's own when rest is empty, else those of the subagent that a
// tool of a (a Delegator) runs under rest's first name, and so on down.
// ok is false when no tool of a, or more than one, holds such an agent.
func (a *Agent) toolSpecsAt(rest Path) ([]llm.ToolSpec, bool) {
	if len(rest) == 0 {
		return a.specs, true
	}
	var found *Agent
	for _, t := range a.tools {
		d, ok := t.(Delegator)
		if !ok {
			continue
		}
		kid, ok := d.Agent(rest[0].Name)
		if !ok || kid == nil || kid == found {
			continue
		}
		if found != nil {
			return nil, false // two tools run agents by that name
		}
		found = kid
	}
	if found == nil {
		return nil, false
	}
	return found.toolSpecsAt(rest[1:])
}

// decidedToRun reports whether a person approved or edited the call: it
// was then started, whatever the run did after.
func decidedToRun(st *StepState, id string) bool {
	d, ok := st.Decided[id]
	return ok && (d.Type == Approve || d.Type == Edit)
}

// dropAnswered leaves out of an interrupted run's waiting calls those that
// have been answered since it stopped: a resume that took their decisions
// was cut off before the run's next checkpoint. Such a run is no longer
// waiting for them; with none left it is unfinished, and resuming it
// continues without decisions.
func dropAnswered(ctx context.Context, saver checkpoint.Saver, rs *RunState, path Path) error {
	// Paths are compared by namespace: a top-level run's is "" whatever
	// name its root is read under.
	own := nsOf(path)
	states := map[string]*RunState{} // the subagents' own states, by path
	waiting := rs.Loop.Interrupts[:0:0]
	for _, in := range rs.Loop.Interrupts {
		st := rs.InProgress
		p, perr := ParsePath(in.Path)
		if perr != nil {
			waiting = append(waiting, in) // not a path this run can read
			continue
		}
		if nsOf(p) != own {
			at, ok := states[in.Path]
			if !ok {
				if len(p) <= len(path) || nsOf(p[:len(path)]) != own {
					waiting = append(waiting, in) // not below this run
					continue
				}
				var err error
				switch at, err = LoadRunState(ctx, saver, rs.Thread, p, false); {
				case errors.Is(err, checkpoint.ErrNotFound):
					at = nil
				case err != nil:
					return err
				}
				states[in.Path] = at
			}
			if at == nil {
				waiting = append(waiting, in)
				continue
			}
			if at.Status != StatusInterrupted {
				continue // the subagent went on, or finished
			}
			st = at.InProgress
		}
		if st != nil {
			if _, decided := st.Decided[in.CallID]; decided {
				continue
			}
			if _, done := st.Done[in.CallID]; done {
				continue
			}
		}
		waiting = append(waiting, in)
	}
	if len(waiting) == len(rs.Loop.Interrupts) {
		return nil
	}
	rs.Loop.Interrupts = waiting
	if len(waiting) == 0 {
		rs.Loop.Interrupts = nil
		rs.Status, rs.Loop.Status = "", ""
	}
	return nil
}

// decodeOutcome adds the outcome a result write holds to m, taking its
// text from the write's message when the data says it is there.
func decodeOutcome(m *map[string]CallOutcome, w checkpoint.Write) error {
	var s savedOutcome
	if err := json.Unmarshal(w.Data, &s); err != nil {
		return err
	}
	if s.InResult {
		s.Content = w.Result.Content
	}
	s.Files = w.Files
	if *m == nil {
		*m = map[string]CallOutcome{}
	}
	(*m)[w.CallID] = s.CallOutcome
	return nil
}

// decodeInto decodes a write's data into (*m)[call id], making the map when
// needed.
func decodeInto[T any](m *map[string]T, w checkpoint.Write) error {
	var v T
	if err := json.Unmarshal(w.Data, &v); err != nil {
		return err
	}
	if *m == nil {
		*m = map[string]T{}
	}
	(*m)[w.CallID] = v
	return nil
}

// restore takes the run's state from rs.
func (r *run) restore(rs *RunState) {
	r.state.Messages = slices.Clip(rs.Messages)
	r.state.Values = rs.Values
	ls := rs.Loop
	r.rounds, r.turnStart, r.usage, r.tree, r.output = ls.Rounds, ls.TurnStart, ls.Usage, ls.Tree, ls.Output
	if ls.Tree == nil {
		// Saved since children are saved one by one: the usage by agent
		// path is what the finished children report (see loopState).
		for _, kid := range rs.Finished {
			for p, u := range kid.UsageByAgent {
				if r.tree == nil {
					r.tree = map[string]llm.Usage{}
				}
				r.tree[p] = r.tree[p].Add(u)
			}
		}
	}
	r.respFailures, r.respRepaired, r.lastRespError = ls.RespFailures, ls.RespRepaired, ls.LastRespError
	r.rejected = ls.Rejected
	for _, p := range ls.Changed {
		if r.changed == nil {
			r.changed = map[string]bool{}
		}
		r.changed[p] = true
	}
	if r.ck != nil {
		r.ck.input = ls.Input
		r.ck.legacyKids = rs.legacyKids
	}
	r.children = rs.Finished
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
	if r.ck != nil {
		r.ck.seq, r.ck.last, r.ck.msgs = rs.Step, rs.Checkpoint, len(r.state.Messages)
		if rs.InProgress != nil {
			r.ck.stepCP = rs.InProgress.Checkpoint
		}
		if r.ck.keeps {
			if r.mem != nil && r.backend == vfs.Backend(r.mem) {
				r.mem.TrackChanges()
				r.ck.tracked, r.ck.files = true, nil
			} else {
				r.ck.files, _, _ = r.fileView()
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

// open starts a checkpointed run: a new thread, a new turn on a thread, or
// the resumption of an unfinished run. done says the run has nothing more to
// do (a nested run that had finished already, or input that cannot be
// taken), with its status and error.
func (r *run) open(ctx context.Context) (pending *StepState, done bool, status Status, err error) {
	d := r.ck
	input := r.state.Messages
	rs, err := LoadRunState(ctx, d.saver, d.thread, r.path, false)
	if errors.Is(err, checkpoint.ErrNotFound) {
		if len(input) == 0 {
			return nil, true, StatusError, fmt.Errorf("thread %q has no run to resume; start it with a message (%w)", d.thread, err)
		}
		if len(r.decisions) > 0 && !d.nested {
			return nil, true, StatusError, &DecisionError{Msg: fmt.Sprintf("thread %q has no calls waiting for a decision", d.thread)}
		}
		r.closeDangling()
		if err := r.saveInput(ctx); err != nil {
			return nil, true, StatusError, err
		}
		return nil, false, "", nil
	}
	if err != nil {
		return nil, true, StatusError, fmt.Errorf("reading thread %q: %w", d.thread, err)
	}
	if rs.V > RunStateVersion {
		return nil, true, StatusError, fmt.Errorf("thread %q was saved by a newer version (state v%d; this one reads v%d)", d.thread, rs.V, RunStateVersion)
	}
	unfinished := rs.Status == "" || rs.Status == StatusInterrupted
	if d.nested && rs.Loop.ParentStep != d.parentStep {
		// The call id was used by an earlier step of the thread (models and
		// servers that number calls per response do that): this is another
		// run, with a history of its own in the same namespace.
		d.seq = rs.Step
		r.closeDangling()
		if err := r.saveInput(ctx); err != nil {
			return nil, true, StatusError, err
		}
		return nil, false, "", nil
	}
	if d.nested {
		// A subagent's namespace is its call's, and the step that started it
		// is this one: whatever it holds is this very run, started before a
		// crash or an interrupt.
		r.restore(rs)
		if !unfinished {
			return nil, true, rs.Status, storedErr(rs)
		}
		if err := r.rebuildChanged(ctx, rs); err != nil {
			return nil, true, StatusError, err
		}
		r.resumed(rs)
		return rs.InProgress, false, "", nil
	}
	if unfinished && len(input) > 0 && len(r.decisions) > 0 {
		return nil, true, StatusError, &DecisionError{Msg: fmt.Sprintf("thread %q: decisions go with a resume, which sends no message; "+
			"a new message instead closes the waiting calls unanswered. Send one or the other", d.thread)}
	}
	if unfinished && len(input) > 0 {
		// New input on a run that was cut off or waits for approval: the
		// person moved on. The step in progress is closed (finished calls
		// keep their results, the others are told they did not run) and the
		// input starts a new turn.
		r.restore(rs)
		if err := r.closeStep(ctx, rs); err != nil {
			return nil, true, StatusError, err
		}
		return r.newTurn(ctx, input)
	}
	if unfinished {
		err := CheckDecisions(r.decisions, rs.Loop.Interrupts)
		if err == nil {
			err = r.a.checkEdits(r.decisions, rs.Loop.Interrupts, r.where)
		}
		if err != nil {
			r.restore(rs)
			r.waiting = rs.Loop.Interrupts
			return nil, true, StatusInterrupted, err
		}
		r.restore(rs)
		if err := r.rebuildChanged(ctx, rs); err != nil {
			return nil, true, StatusError, err
		}
		r.resumed(rs)
		return rs.InProgress, false, "", nil
	}
	if len(r.decisions) > 0 {
		return nil, true, StatusError, &DecisionError{Msg: fmt.Sprintf("thread %q has no calls waiting for a decision (its last run ended %s)", d.thread, rs.Status)}
	}
	if len(input) == 0 && d.acceptEnded && rs.Status != "" {
		r.restore(rs)
		return nil, true, rs.Status, storedErr(rs)
	}
	if len(input) == 0 {
		return nil, true, StatusError, fmt.Errorf("thread %q has no unfinished run to resume (its last run ended %s); send a new message instead", d.thread, rs.Status)
	}
	r.restore(rs)
	return r.newTurn(ctx, input)
}

// newTurn starts a new run on a restored thread with input.
func (r *run) newTurn(ctx context.Context, input []llm.Message) (*StepState, bool, Status, error) {
	// A new turn is a new run on the thread's conversation and files: its
	// step budget, usage, children and answer are its own. Rounds keep
	// counting, so each model call of the thread has its own number.
	r.turnStart = r.rounds
	r.dropChildren()
	r.usage, r.tree, r.children, r.changed, r.output = llm.Usage{}, nil, nil, nil, nil
	r.respFailures, r.respRepaired, r.lastRespError = 0, false, ""
	r.state.Messages = append(r.state.Messages, input...)
	r.closeDangling()
	if err := r.saveInput(ctx); err != nil {
		return nil, true, StatusError, err
	}
	return nil, false, "", nil
}

// dropChildren removes the finished subagent runs of the turn before from
// the thread's state with the next checkpoint: a new turn's result lists
// only its own.
func (r *run) dropChildren() {
	d := r.ck
	if d == nil || len(r.children) == 0 && !d.legacyKids {
		return
	}
	if d.kids == nil {
		d.kids = map[string]*Result{}
	}
	for id := range r.children {
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
			results[i] = tool.Errorf("%s", cutOffResult(c, r.ck.keeps))
		}
		open++
	}
	if ap, ok := r.backend.(vfs.Applier); ok && r.ck.keeps {
		net, _ := vfs.Merge(ctx, ap, deltas, owners)
		r.fileEvents(net)
	}
	r.appendResults(st.Calls, results)
	r.applyState(results)
	r.ck.stepCP = ""
	r.emit(Event{Type: Notice, Notice: &NoticeInfo{Source: "history", Count: open,
		Text: fmt.Sprintf("new input on an unfinished run: its last step was closed; %d of its %d tool calls had not finished and were closed without a result", open, len(st.Calls))}})
	return nil
}

// saveInput saves the run's input, the checkpoint its changes are counted
// from. A subagent's input is not saved on its own: its parent's step holds
// the call that starts it (a crash before its first step starts it again,
// from the same call), and its first step is saved before any of its tools
// runs, with the files as they were at its input, so that checkpoint is the
// one its changes are counted from.
func (r *run) saveInput(ctx context.Context) error {
	if r.ck.nested {
		// The input's step number is taken all the same, so that a
		// subagent's steps are numbered as a top-level run's are.
		r.ck.seq++
		r.ck.input = cpID(r.ck.seq + 1)
		return nil
	}
	r.ck.input = cpID(r.ck.seq + 1)
	return r.save(ctx, RecordInput, "", nil)
}

// rebuildChanged recomputes the paths an unfinished run changed, after a
// crash: from its files now and at its input when its checkpoints keep its
// files, else (a real directory, say) from the file changes saved with the
// results of its finished steps' calls, and with what the subagents that
// calls of its step in progress started changed so far. The step in
// progress adds its calls' own changes when it completes.
func (r *run) rebuildChanged(ctx context.Context, rs *RunState) error {
	if !r.ck.keeps {
		var paths []string
		if rs.Loop.Changed == nil {
			var err error
			if paths, err = changedByCalls(ctx, r.ck.saver, r.ck.thread, r.ck.ns, rs); err != nil {
				return err
			}
		}
		// A call of the step in progress that started a subagent continues
		// its run, and the call's own file changes count only what it
		// changes from now on: what it changed before counts here.
		kids, err := changedByKidsInFlight(ctx, r.ck.saver, r.ck.thread, r.ck.ns, rs)
		if err != nil {
			return err
		}
		for _, p := range append(paths, kids...) {
			r.markChanged(p)
		}
		return nil
	}
	if rs.Loop.Changed != nil {
		return nil
	}
	var before map[string]vfs.File
	if _, own := r.backend.(*vfs.Memory); (own || r.mem != nil) && rs.Loop.Input != "" {
		cp, err := r.ck.saver.Get(ctx, checkpoint.Ref{ThreadID: r.ck.thread, NS: r.ck.ns, ID: rs.Loop.Input})
		if err != nil {
			return fmt.Errorf("thread %q: the run's input checkpoint: %w", r.ck.thread, err)
		}
		before = cp.State.Files
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

// ChangedByFinishedSteps lists, sorted, the paths that the finished steps of
// an unfinished run changed, as its Result would list them, read back from
// the file changes saved with its calls' results (checkpoint.Write.Files).
// rs is the run's state as LoadRunState reads it; the calls of its step in
// progress (rs.InProgress) are left out. A run that stops saves its list
// (rs.Loop.Changed), and one whose files are in its state can compare them
// with its input's; one cut off on a real directory has only this.
func ChangedByFinishedSteps(ctx context.Context, saver checkpoint.Saver, rs *RunState) ([]string, error) {
	ns := ""
	if rs.Path != "" {
		p, err := ParsePath(rs.Path)
		if err != nil {
			return nil, err
		}
		ns = nsOf(p)
	}
	return changedByCalls(ctx, saver, rs.Thread, ns, rs)
}

// changedByCalls gathers the paths in the file deltas of the result writes
// of the run's finished steps: the step checkpoints from its latest back to
// its input, but for the step in progress. A finished step merged every
// such delta, so these are the paths it changed. Only a run cut off pays
// for reading them, once, when it is read back (saving the list with each
// step would cost every step): a saver that reads a namespace's writes
// alone (checkpoint.PendingReader) does it in one read; with any other,
// each step's checkpoint is read whole.
func changedByCalls(ctx context.Context, saver checkpoint.Saver, thread, ns string, rs *RunState) ([]string, error) {
	cps, err := saver.List(ctx, checkpoint.ListOptions{ThreadID: thread, NS: ns})
	if err != nil {
		return nil, fmt.Errorf("thread %q: listing the run's checkpoints: %w", thread, err)
	}
	var pending map[string][]checkpoint.Write
	if pr, ok := saver.(checkpoint.PendingReader); ok {
		switch pending, err = pr.PendingWrites(ctx, thread, ns); {
		case errors.Is(err, errors.ErrUnsupported):
			pending = nil
		case err != nil:
			return nil, fmt.Errorf("thread %q: the run's call results: %w", thread, err)
		}
	}
	byID := make(map[string]*checkpoint.Checkpoint, len(cps))
	for i := range cps {
		byID[cps[i].ID] = &cps[i]
	}
	inProgress := ""
	if rs.InProgress != nil {
		inProgress = rs.InProgress.Checkpoint
	}
	changed := map[string]bool{}
	seen := map[string]bool{}
	for id := rs.Checkpoint; id != "" && !seen[id]; {
		seen[id] = true
		cp, ok := byID[id]
		if !ok {
			break
		}
		// The results of a step's calls are saved under the checkpoint
		// of its model response (source "loop"); a subagent's first one
		// is also its input.
		if source := cp.Metadata["source"]; source == "loop" && id != inProgress {
			writes := pending[id]
			if pending == nil {
				at, err := saver.Get(ctx, checkpoint.Ref{ThreadID: thread, NS: ns, ID: id})
				if err != nil {
					return nil, fmt.Errorf("thread %q: checkpoint %s of the run: %w", thread, id, err)
				}
				writes = at.Pending
			}
			for _, w := range writes {
				if w.Kind != checkpoint.KindResult && w.Kind != "" {
					continue
				}
				for _, c := range w.Files {
					changed[c.Path] = true
				}
			}
		}
		if id == rs.Loop.Input || rs.Loop.Input == "" && cp.Metadata["source"] == sourceInput {
			break
		}
		id = cp.ParentID
	}
	return slices.Sorted(maps.Keys(changed)), nil
}

// changedByKidsInFlight lists the paths that the subagent runs started by
// the calls of rs's step in progress that have not finished changed so far,
// theirs and their own subagents'.
func changedByKidsInFlight(ctx context.Context, saver checkpoint.Saver, thread, ns string, rs *RunState) ([]string, error) {
	st := rs.InProgress
	if st == nil {
		return nil, nil
	}
	open := map[string]bool{}
	for _, c := range st.Calls {
		if _, done := st.Done[c.ID]; !done {
			open[c.ID] = true
		}
	}
	if len(open) == 0 {
		return nil, nil
	}
	cps, err := saver.List(ctx, checkpoint.ListOptions{ThreadID: thread, AllNamespaces: true})
	if err != nil {
		return nil, fmt.Errorf("thread %q: listing its runs: %w", thread, err)
	}
	step := ns + "@" + st.Checkpoint
	seen := map[string]bool{}
	var out []string
	for _, k := range cps {
		if k.NS == "" || seen[k.NS] {
			continue
		}
		seen[k.NS] = true
		kp, err := ParsePath(k.NS)
		if err != nil || nsOf(kp.Parent()) != ns || !open[kp.Last().CallID] {
			continue
		}
		kid, err := LoadRunState(ctx, saver, thread, kp, false)
		if err != nil {
			return nil, err
		}
		if kid.Loop.ParentStep != step {
			continue // an earlier run under a call id used again
		}
		paths := kid.Loop.Changed
		if paths == nil && kid.Status == "" {
			if paths, err = changedByCalls(ctx, saver, thread, k.NS, kid); err != nil {
				return nil, err
			}
		}
		out = append(out, paths...)
		if st := kid.InProgress; st != nil && (kid.Status == "" || kid.Status == StatusInterrupted) {
			// Its step in progress merges these only when it completes.
			for _, oc := range st.Done {
				for _, c := range oc.Files {
					out = append(out, c.Path)
				}
			}
			more, err := changedByKidsInFlight(ctx, saver, thread, k.NS, kid)
			if err != nil {
				return nil, err
			}
			out = append(out, more...)
		}
	}
	return out, nil
}

func (r *run) markChanged(p string) {
	if r.changed == nil {
		r.changed = map[string]bool{}
	}
	r.changed[p] = true
}

// resumed reports a resumption.
func (r *run) resumed(rs *RunState) {
	text := fmt.Sprintf("resumed from checkpoint %s of thread %q", rs.Checkpoint, r.ck.thread)
	n := 0
	if st := rs.InProgress; st != nil {
		n = len(st.Calls)
		text += fmt.Sprintf("; %d of the step's %d tool calls had finished and are kept", len(st.Done), len(st.Calls))
	}
	r.emit(Event{Type: Notice, Notice: &NoticeInfo{Source: "resume", Count: n, Text: text}})
}

// CheckDecisions refuses, with a *DecisionError, decisions that answer no
// call of waiting, answer one twice, or take a decision the call does not
// allow: what a resume with them would refuse, for callers (a server) that
// check before they start it.
func CheckDecisions(ds []Decision, waiting []Interrupt) error {
	seen := map[string]bool{}
	for _, d := range ds {
		if err := d.Check(); err != nil {
			return &DecisionError{Msg: err.Error()}
		}
		var match *Interrupt
		for i := range waiting {
			if waiting[i].CallID == d.CallID && (d.Path == "" || d.Path == waiting[i].Path) {
				if match != nil {
					return &DecisionError{Msg: fmt.Sprintf("call id %q is waiting in more than one agent (%s and %s); give the decision a path",
						d.CallID, match.Path, waiting[i].Path)}
				}
				match = &waiting[i]
			}
		}
		if match == nil {
			ids := make([]string, 0, len(waiting))
			seen := map[string]int{}
			for _, w := range waiting {
				seen[w.CallID]++
			}
			for _, w := range waiting {
				if seen[w.CallID] > 1 {
					ids = append(ids, w.CallID+" (in "+w.Path+")") // one id in two agents
				} else {
					ids = append(ids, w.CallID)
				}
			}
			if len(ids) == 0 {
				return &DecisionError{Msg: fmt.Sprintf("no call is waiting for a decision, so the decision for %q cannot be taken", d.CallID)}
			}
			return &DecisionError{Msg: fmt.Sprintf("no call %q is waiting for a decision; waiting: %s", d.CallID, strings.Join(ids, ", "))}
		}
		if d.Tool != "" && d.Tool != match.Tool {
			return &DecisionError{Msg: fmt.Sprintf("the edit of call %q names tool %s, but the call is a %s call; an edit changes the arguments only", d.CallID, d.Tool, match.Tool)}
		}
		key := match.Path + "\x00" + match.CallID
		if seen[key] {
			return &DecisionError{Msg: fmt.Sprintf("call %q has two decisions", d.CallID)}
		}
		seen[key] = true
		if !slices.Contains(match.Allowed, d.Type) {
			return &DecisionError{Msg: fmt.Sprintf("call %q (%s) allows %s, not %s", d.CallID, match.Tool, joinDecisions(match.Allowed), d.Type)}
		}
	}
	return nil
}

func joinDecisions(ds []DecisionType) string {
	s := make([]string, len(ds))
	for i, d := range ds {
		s[i] = string(d)
	}
	return strings.Join(s, ", ")
}

// decisionFor returns the decision given for this run's call id.
func (r *run) decisionFor(callID string) (Decision, bool) {
	for _, d := range r.decisions {
		if d.CallID == callID && (d.Path == "" || d.Path == r.where) {
			return d, true
		}
	}
	return Decision{}, false
}

// nestedOptions are the options a nested run is started with: this run's
// runtime, its checkpointer and the decisions not meant for this run.
func (r *run) nestedOptions() []RunOption {
	var opts []RunOption
	if r.custom != nil {
		opts = append(opts, WithRuntime(r.custom))
	}
	if r.ck != nil {
		ck := r.ck.ckConfig
		ck.nested, ck.metadata = true, nil
		ck.parentStep = r.ck.ns + "@" + r.ck.stepCP
		opts = append(opts, func(c *runConfig) { c.ck = &ck })
	}
	if len(r.decisions) > 0 {
		opts = append(opts, WithDecisions(r.decisions...))
	}
	return opts
}
