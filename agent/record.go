package agent

import (
	"context"
	"encoding/json"
	"errors"
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
	// Step numbers the run's steps; Checkpoint names the step (for a call,
	// the step in progress it belongs to) and Parent the record this step
	// follows ("" starts a new history).
	Step       int
	Checkpoint string
	Parent     string
	// Metadata goes with a turn's input (WithMetadata).
	Metadata map[string]string
	Time     time.Time

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

// ErrRecorderUnavailable is matched by a Recorder's error when its store
// could not take the record for now (a database restarting, a network
// cut), not because the record was wrong.
var ErrRecorderUnavailable = errors.New("the run's recorder is unavailable")

// unavailableError marks err as ErrRecorderUnavailable, keeping its text
// and what it wraps.
type unavailableError struct{ err error }

func (e unavailableError) Error() string        { return e.err.Error() }
func (e unavailableError) Unwrap() error        { return e.err }
func (e unavailableError) Is(target error) bool { return target == ErrRecorderUnavailable }

// WithRecorder hands the run's step records, and those of the subagent runs
// it starts, to rec. With WithCheckpoints, rec takes them in place of the
// saver, which the run still reads a thread from; without, the run starts
// afresh from its input (there is no thread to resume) and rec sees what it
// does.
func WithRecorder(rec Recorder) RunOption { return func(c *runConfig) { c.rec = rec } }

// Hold keeps a run's thread for it while it runs, so that no other run
// takes it meanwhile (package runner holds a lease). A top-level run calls
// Hold once, before it reads its thread, on its runtime's clock now; lost
// ends the run with a reason when the thread is taken from it, and release
// lets the thread go when the run ends. An error ends the run at once.
type Hold interface {
	Hold(ctx context.Context, now func() time.Time, lost func(error)) (release func(), err error)
}

// WithHold has the run keep its thread with h (subagent runs are held by
// their top-level run's).
func WithHold(h Hold) RunOption { return func(c *runConfig) { c.hold = h } }

// Options makes one option of several, applied in order: for a package
// that gives runs a set of options at once.
func Options(opts ...RunOption) RunOption {
	return func(c *runConfig) {
		for _, o := range opts {
			o(c)
		}
	}
}
