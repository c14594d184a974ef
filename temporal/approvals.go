package temporal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/hitl"
	"github.com/deepagents-go/deepagents/runner"
)

// This file is how a RunAgent workflow waits for a person: a run that ends
// interrupted keeps its workflow open, a query lists the calls that wait,
// an update takes the decisions on them and resumes the run in the same
// workflow, and a timer ends the wait.

// Names of the query and the update by which a client sees and decides the
// calls a RunAgent workflow waits on.
const (
	// PendingQuery returns the calls waiting for a decision, as
	// []agent.Interrupt (empty when none waits).
	PendingQuery = "pending"
	// DecideUpdate takes decisions on them: a list of decisions, or
	// {"decisions": [...]}, each in agent.Decision's shape or LangChain's
	// (package hitl); one without a call id answers the waiting call at
	// its position. It returns the decisions as taken.
	DecideUpdate = "decide"
)

// DefaultApprovalTimeout is how long a run waits for decisions when
// Registry.ApprovalTimeout is zero.
const DefaultApprovalTimeout = 24 * time.Hour

// approvalChange is the GetVersion change of the wait: a workflow that
// ended interrupted before it existed replays without waiting.
const approvalChange = "deepagents.approval-wait"

// approvals is a workflow's waiting calls and the decisions taken on them.
type approvals struct {
	a *agent.Agent
	// pending are the calls waiting now; nil when the run is not waiting.
	pending []agent.Interrupt
	// taken are the decisions the update accepted, not yet applied.
	taken []agent.Decision
	// ended is set once the wait timed out: no decision is taken any more.
	ended bool
	// continues is set when the run is on a stored thread, from which the
	// workflow can continue as new; until is when the wait in progress
	// ends.
	continues bool
	until     time.Time
	// rt is the run's runtime, which knows its waiting children; started
	// is set when this workflow run started at the wait, after a
	// continue-as-new.
	rt      *Runtime
	started bool
}

// approvals puts the pending query and the decide update on the workflow
// of a run of a. Call it before the run starts, so that a client never
// finds the workflow without them.
func (g *Registry) approvals(ctx workflow.Context, a *agent.Agent) (*approvals, error) {
	ap := &approvals{a: a}
	if err := workflow.SetQueryHandler(ctx, PendingQuery, func() ([]agent.Interrupt, error) {
		return slices.Clone(ap.pending), nil
	}); err != nil {
		return nil, err
	}
	err := workflow.SetUpdateHandlerWithOptions(ctx, DecideUpdate,
		func(ctx workflow.Context, raw json.RawMessage) ([]agent.Decision, error) {
			ds, err := ap.check(raw)
			if err != nil {
				return nil, err
			}
			ap.taken = ds
			return ds, nil
		},
		workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, raw json.RawMessage) error {
			_, err := ap.check(raw)
			return err
		}})
	return ap, err
}

// check reads decisions sent to the decide update and refuses them as a
// resume would (agent.Agent.CheckDecisions): when no call waits, when
// decisions were taken already, or when they do not fit the waiting calls.
// It changes nothing, as a validator must not.
func (ap *approvals) check(raw json.RawMessage) ([]agent.Decision, error) {
	switch {
	case ap.ended:
		return nil, errors.New("the wait for decisions timed out; resume the thread with a new run")
	case len(ap.pending) == 0:
		return nil, errors.New("no call is waiting for a decision")
	case ap.taken != nil:
		return nil, errors.New("decisions were taken already; the run is resuming")
	}
	ds, err := ParseDecisions(raw, ap.pending)
	if err != nil {
		return nil, err
	}
	if len(ds) == 0 {
		return nil, errors.New("no decisions were given")
	}
	if err := ap.a.CheckDecisions(ds, ap.pending); err != nil {
		return nil, err
	}
	return ds, nil
}

// ParseDecisions reads decisions as the decide update takes them: a list,
// or {"decisions": [...]}, each in agent.Decision's shape or LangChain's;
// one that names no call answers the call of waiting at its position.
// It checks their shape, not whether they fit the calls.
func ParseDecisions(raw json.RawMessage, waiting []agent.Interrupt) ([]agent.Decision, error) {
	raw = bytes.TrimSpace(raw)
	var list []json.RawMessage
	if len(raw) > 0 && raw[0] == '{' {
		var wrap struct {
			Decisions *[]json.RawMessage `json:"decisions"`
		}
		if err := json.Unmarshal(raw, &wrap); err != nil {
			return nil, fmt.Errorf("decisions: %v", err)
		}
		if wrap.Decisions == nil {
			return nil, errors.New(`decisions: the object has no "decisions" list`)
		}
		list = *wrap.Decisions
	} else if err := json.Unmarshal(raw, &list); err != nil {
		return nil, errors.New(`decisions must be a list of decisions or {"decisions": [...]}`)
	}
	return hitl.InOrder(list, waiting)
}

// await keeps the workflow of a run that ended interrupted open until a
// person decides on its waiting calls (the decide update), resuming it
// with the decisions each time, or until the wait times out
// (Registry.ApprovalTimeout): the run then ends interrupted, its calls
// still waiting. resume runs the agent again on the run's thread with the
// decisions. A cancelled workflow stops waiting with the run as it was.
func (g *Registry) await(ctx workflow.Context, ap *approvals, res *agent.Result, err error,
	resume func(ds []agent.Decision) (*agent.Result, error)) (*agent.Result, error) {
	for res != nil && res.Status == agent.StatusInterrupted && len(res.Interrupts) > 0 && ctx.Err() == nil {
		if workflow.GetVersion(ctx, approvalChange, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
			return res, err
		}
		ap.pending = slices.Clone(res.Interrupts)
		timeout := g.ApprovalTimeout
		if timeout == 0 {
			timeout = DefaultApprovalTimeout
		}
		if timeout < 0 {
			ap.ended = true
			return res, err
		}
		if ap.until.IsZero() {
			ap.until = workflow.Now(ctx).Add(timeout)
		} else {
			timeout = max(ap.until.Sub(workflow.Now(ctx)), time.Millisecond)
		}
		// A subagent whose child workflow waits too would be cancelled
		// with this run: then the wait stays here.
		if ap.continues && !ap.started && (ap.rt == nil || len(ap.rt.waiting) == 0) && g.continueNow(ctx, 0) {
			// The wait goes on in a new workflow run, with a short history.
			return res, errContinue
		}
		ok, werr := workflow.AwaitWithTimeout(ctx, timeout, func() bool { return ap.taken != nil })
		if werr != nil || !ok {
			// Cancelled (the caller sees ctx) or timed out: the calls
			// still wait, and the query still lists them.
			ap.ended = !ok && werr == nil
			return res, err
		}
		ds := ap.taken
		ap.pending, ap.taken, ap.until, ap.started = nil, nil, time.Time{}, false
		res, err = resume(ds)
	}
	return res, err
}

// memoryThread keeps the run's thread in the workflow's memory, so that a
// decision can resume the run in the same workflow; a replay rebuilds it.
// The store is hidden behind the interfaces a thread reads and writes
// through: a checkpoint.Leaser would have the runner renew a lease from a
// goroutine of its own, on the wall clock, outside workflow code. (The
// shared store of docs/TEMPORAL.md's step 1 replaces it.)
func memoryThread(thread string) agent.RunOption {
	m := checkpoint.NewMemory(0)
	return runner.Checkpoints(struct {
		checkpoint.RunStore
		checkpoint.PendingReader
	}{m, m}, thread)
}
