package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/vfs"
)

// RecordKind says what a StepRecord records.
type RecordKind string

const (
	// RecordInput is a turn's input, the record its changes count from.
	RecordInput RecordKind = "input"
	// RecordStep is a model response, recorded before any of its calls
	// starts and before anyone sees it.
	RecordStep RecordKind = "loop"
	// RecordEnd is the run's end.
	RecordEnd RecordKind = "end"
	// RecordCall is one call of the step in progress that finished, was
	// decided, or waits for a decision (StepRecord.Call).
	RecordCall RecordKind = "call"
)

// StepRecord is what a run did since its last record: handed to the run's
// Recorder once per step (its input, each model response, its end) and once
// per call of the step in progress that finished, was decided or now waits,
// so that a process that dies never repeats a finished model or tool call.
type StepRecord struct {
	// Path is the run's agent path: a subagent's records go to the
	// recorder of the run that started it.
	Path Path
	Kind RecordKind
	// Step numbers the run's steps; ID names the step (for a call,
	// the step in progress it belongs to) and Parent the record this step
	// follows ("" starts a new history).
	Step   int
	ID     string
	Parent string
	Time   time.Time

	// Appended are the messages added since the last step record, Files
	// the file changes, Values the values set (nil: removed) and Usage the
	// model usage.
	Appended []llm.Message
	Files    vfs.Delta
	Values   map[string]json.RawMessage
	Usage    llm.Usage
	// Children are the subagent runs that finished since the last step
	// record, by call id; a nil one is dropped from the thread.
	Children map[string]*Result
	// Loop is the loop's own value as of this step.
	Loop LoopState

	// Call is set in a RecordCall.
	Call *CallRecord

	// Warn reports a warning event (source "checkpoint") on the run that
	// made the record, while Record runs: a recorder that tries a save
	// again says so.
	Warn func(text string) `json:"-"`
}

// CallRecord is one call of the step in progress: exactly one of Outcome,
// Decision and Waiting is set.
type CallRecord struct {
	ID string
	// Message is the tool message a finished call appends, Outcome what
	// it did (its files and subagent run included).
	Message llm.Message
	Outcome *CallOutcome
	// Rejected: the call never ran, a person rejected it.
	Rejected bool
	Decision *Decision
	Waiting  *Interrupt
}

// Recorder takes a run's step records, and those of the subagent runs it
// starts, in order per run. An error stops the run: it fails, as when its
// store cannot save a step. An error that matches ErrRecorderUnavailable
// leaves the run unfinished instead, to be resumed once the recorder is
// back: the run records no end, and a subagent stopped so stops its whole
// run rather than telling its parent's model it failed.
type Recorder interface {
	Record(ctx context.Context, rec *StepRecord) error
}

// WithRecorder hands the run's step records, and those of the subagent runs
// it starts, to rec, in place of its thread's (WithThread). A run given no
// thread starts afresh from its input (there is no thread to resume) and
// rec sees what it does.
func WithRecorder(rec Recorder) RunOption { return func(c *runConfig) { c.rec = rec } }

// Hold keeps a run's thread for it while it runs, so that no other run
// takes it meanwhile (package runner holds a lease): a Thread that
// implements it is held by every top-level run on it (subagent runs are
// held by their top-level run's). A run calls Hold once, before it reads
// its thread, on its runtime's clock now; lost ends the run with a reason
// when the thread is taken from it, and release lets the thread go when the
// run ends. An error ends the run at once.
type Hold interface {
	Hold(ctx context.Context, now func() time.Time, lost func(error)) (release func(), err error)
}

// Thread is a saved thread as a run reads it back and records into it
// (package runner keeps one in its store): it takes the run's step records,
// and tells how a run starts on it, the files of a run as of one of its
// records, and what an unfinished run changed so far.
type Thread interface {
	Recorder
	// Open reads the run at path and decides how it starts (a new
	// history, a new turn, the resumption of an unfinished run, the
	// result of one that had ended, or refused decisions), with the
	// run's state as saved (nil when there is none). An error ends the
	// run at once (StatusError); with StartRefused it is why the
	// decisions were refused, and the run stays waiting as rs is.
	Open(ctx context.Context, path Path, o Opening) (how StartHow, rs *RunState, err error)
	// FilesAt reads the files of the run at path as of its record id.
	FilesAt(ctx context.Context, path Path, id string) (map[string]vfs.File, error)
	// Changed lists the paths that the unfinished run rs changed: in its
	// finished steps when finished is set, and in the subagent runs that
	// calls of its step in progress started and that have not finished.
	Changed(ctx context.Context, rs *RunState, finished bool) ([]string, error)
}

// Opening is what a run brings to its thread (Thread.Open).
type Opening struct {
	// Input: the run was given messages.
	Input     bool
	Decisions []Decision
	// Nested: a subagent run, started by its parent's step ParentStep
	// (namespace@step id).
	Nested     bool
	ParentStep string
	// Check refuses decisions that do not fit the calls waiting, as the
	// agent checks them (edits against its tools' schemas included).
	Check func(ds []Decision, waiting []Interrupt) error
}

// StartHow says how a run starts on its thread.
type StartHow int

const (
	// StartResume continues the run's state, its unfinished step included.
	StartResume StartHow = iota
	// StartFresh starts a new history: a new thread, or (a state given) a
	// new run under a call id that an earlier run used.
	StartFresh
	// StartNewTurn takes the state's conversation and files and starts a
	// turn with the run's input.
	StartNewTurn
	// StartCloseStep is StartNewTurn on an unfinished run: its step in
	// progress is closed first, its unfinished calls told they did not run.
	StartCloseStep
	// StartEnded ends the run at once with the state's saved result.
	StartEnded
	// StartRefused ends the run at once, interrupted as its state is, with
	// Open's error: the decisions do not fit its waiting calls.
	StartRefused
)

// WithThread has the run continue thread, named name, and record into it: a
// run given input continues the thread's conversation and files (a new
// thread starts empty); a run given no input resumes the thread's
// unfinished run from its last record, repeating no finished model or tool
// call. Subagent runs read their own state from the same thread, and
// record into it. Package runner gives a run one over its store.
func WithThread(name string, thread Thread) RunOption {
	return func(c *runConfig) {
		c.record = &recordConfig{src: thread, thread: name, count: new(atomic.Int64)}
		if thread != nil {
			c.record.rec = thread
		}
	}
}

// unchanged says whether nothing the run saves changed since its last
// save.
func (r *run) unchanged() bool {
	d := r.rec
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

func stepID(step int) string { return fmt.Sprintf("%08d", step) }

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

// loopState is the copy of the run's loop a save hands out, with what is
// kept outside it filled in: how the run stopped, the paths it changed and
// the parent step that started it.
func (r *run) loopState(status Status, err error) LoopState {
	// Tree is the sum of the finished children's usage, which are saved
	// one by one, so it is left out (see restore) unless the thread still
	// keeps its children the old way, where it tells stale ones apart.
	ls := r.rs.Loop
	ls.Status, ls.Error, ls.Refusal, ls.Changed, ls.Tree, ls.Deleted, ls.ParentStep = status, "", "", nil, nil, nil, ""
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
	if r.rec != nil {
		if r.rec.legacyKids {
			ls.Tree = r.rs.Loop.Tree
		}
		ls.ParentStep = r.rec.parentStep
	}
	return ls
}

// save records everything since the last record as the next step (kind
// input, loop or end). status is "" while the run goes on.
func (r *run) save(ctx context.Context, kind RecordKind, status Status, runErr error) error {
	d := r.rec
	if d == nil {
		return nil
	}
	rec := &StepRecord{Path: r.path, Kind: kind, Step: r.rs.Step + 1, ID: stepID(r.rs.Step + 1), Parent: r.rs.StepID,
		Appended: r.state.Messages[d.msgs:], Usage: d.usage, Values: d.values, Children: d.kids, Time: r.rt.Now(), Warn: r.warnSave}
	if r.rs.Step < 0 {
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
	r.rs.Step, r.rs.StepID, d.msgs = rec.Step, rec.ID, len(r.state.Messages)
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
	d := r.rec
	if d == nil || r.rs.Loop.StepInProgress == "" {
		return nil
	}
	err := d.rec.Record(ctx, &StepRecord{Path: r.path, Kind: RecordCall, Step: r.rs.Step + 1, ID: r.rs.Loop.StepInProgress,
		Time: r.rt.Now(), Call: call, Warn: r.warnSave})
	switch {
	case err == nil:
		return nil
	case d.recOnly:
		return fmt.Errorf("recording call %s: %w", call.ID, err)
	}
	return fmt.Errorf("saving the result of call %s in thread %q: %w", call.ID, d.thread, err)
}
