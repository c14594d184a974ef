package agent

import (
	"context"
	"slices"
	"sync/atomic"
	"time"
)

// ChildRunner is implemented by a Runtime that runs subagent runs
// somewhere other than inside their parent's run, as a durable-execution
// engine runs each one as a child workflow. A tool that runs agents of its
// own (Nested) offers each run to the hosting run's runtime through
// RunChild, and runs it in process, as it would without one, when the
// runtime does not take it.
type ChildRunner interface {
	// RunChild runs c to its end and returns its result, as the run in
	// process would have ended (a run that waits for a person ends
	// StatusInterrupted and is resumed by a later RunChild of the same
	// path, with the decisions in c.Host). ok false: the runtime does not
	// run this one, and the caller runs it in process. A panic in RunChild
	// is not recovered by the caller: an engine's own panics (a replay
	// that does not match its history) must reach the engine.
	RunChild(ctx context.Context, c ChildRun) (res *Result, ok bool)
}

// ChildRun is one subagent run as a nested tool would start it in process:
// c.Agent.Run(ctx, c.Input, WithTimeout(c.Timeout), c.Host.Options...,
// AsChild(c.Child)), with WithRuntime(c.Host.Runtime) first when
// c.Host.Options is empty.
type ChildRun struct {
	// Agent is the subagent, Name the name the tool holds it under
	// (Delegator.Agent), the Name of the last segment of Child.Path.
	Agent *Agent
	Name  string
	Input Input
	Child Child
	// Timeout is the run's time budget (WithTimeout; 0: none).
	Timeout time.Duration
	// Host is the hosting run's (see Nesting for what its Options say).
	Host Host
}

// Nesting is what Host.Options tell a nested run, as values that can be
// sent elsewhere: the thread it is recorded into and the decisions it is
// resumed with. RecordNested turns it back into an option.
type Nesting struct {
	// Recorded: the hosting run is recorded into Thread, and so is the
	// nested run, under its own path.
	Recorded bool   `json:"recorded,omitempty"`
	Thread   string `json:"thread,omitempty"`
	// ParentStep names the hosting run's step that starts the nested run.
	ParentStep string `json:"parent_step,omitempty"`
	// Decisions are the person's decisions the hosting run was given.
	Decisions []Decision `json:"decisions,omitempty"`
}

// Nesting reports what h.Options tell a nested run.
func (h Host) Nesting() Nesting {
	var rc runConfig
	for _, o := range h.Options {
		o(&rc)
	}
	n := Nesting{Decisions: slices.Clone(rc.decisions)}
	if rc.record != nil {
		n.Recorded, n.Thread, n.ParentStep = true, rc.record.thread, rc.record.parentStep
	}
	return n
}

// RecordNested records a nested run into th, a handle on the thread
// n.Thread, as Host.Options would have recorded it in its hosting run's
// process: under its own path, held by its top-level run (it takes no
// Hold), and started by the parent's step n.ParentStep. The decisions of n
// are not included (WithDecisions). Its Result.SavedSteps counts its own
// records and its subagents'.
func RecordNested(n Nesting, th Thread) RunOption {
	return func(c *runConfig) {
		c.record = &recordConfig{src: th, thread: n.Thread, count: new(atomic.Int64), nested: true, parentStep: n.ParentStep, rec: th}
	}
}

// WithCause returns a copy of r whose Err wraps cause. A result rebuilt
// from values, such as a ChildRunner's that ran elsewhere, has only its
// Error text; with its cause back (ErrRecorderUnavailable, say) the task
// tool and the loop treat it as they treat the run in process.
func (r *Result) WithCause(cause error) *Result {
	c := *r
	if r.Status != StatusOK && r.Status != "" && cause != nil {
		c.err = &RunError{Agent: r.Agent, Status: r.Status, Err: cause}
	}
	return &c
}
