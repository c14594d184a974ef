package temporal

import (
	"fmt"
	"time"

	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/proto"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/vfs"
)

// This file is how a long run on a thread keeps its workflow's history
// short: once the history is long, the workflow continues as new, carrying
// only the thread (the store holds the rest) and, at an approval wait, the
// calls that wait.

// DefaultContinueAfter is the history length, in events, past which a run
// on a thread continues as new when Registry.ContinueAfter is zero: well
// under Temporal's limit of 51,200 events.
const DefaultContinueAfter = 10000

// continueChange is the GetVersion change of continuing as new: histories
// from before it went on in the same workflow.
const continueChange = "deepagents.continue-as-new"

// errContinue stops a run right after one of its steps was recorded, so
// that its workflow continues as new and resumes it from the store. It
// leaves the run unfinished, as a recorder that is unavailable does: the
// run records no end.
var errContinue = fmt.Errorf("the workflow continues as new: %w", agent.ErrRecorderUnavailable)

// DefaultContinueBytes is how much a run's history may grow, in bytes,
// past its size once the thread was opened, before the run continues as
// new, when Registry.ContinueBytes is zero.
const DefaultContinueBytes = 16 << 20

// continueNow reports whether the workflow should continue as new: its
// history is longer than Registry.ContinueAfter events, or has grown by
// Registry.ContinueBytes since base (its size once the thread was opened:
// an open brings the thread's messages in, and a new run would bring them
// in again). The server's own suggestion is not followed: it comes at a
// few megabytes, which a long thread's open alone passes, and a run that
// continued at once each time would read its thread over and over.
func (g *Registry) continueNow(c workflow.Context, base int) bool {
	return g.continueNowAs(c, base, continueChange)
}

// childContinueChange is the GetVersion change of continuing a subagent's
// child workflow as new: histories from before it went on in the same
// workflow (and stopped at the history limits).
const childContinueChange = "deepagents.child-continue-as-new"

// continueNowAs is continueNow with the GetVersion change that guards
// continuing: a RunAgent workflow's or a RunSubagent workflow's.
func (g *Registry) continueNowAs(c workflow.Context, base int, change string) bool {
	limit, bytes := g.ContinueAfter, g.ContinueBytes
	if limit == 0 {
		limit = DefaultContinueAfter
	}
	if bytes == 0 {
		bytes = DefaultContinueBytes
	}
	if limit < 0 {
		return false
	}
	info := workflow.GetInfo(c)
	if info.GetCurrentHistoryLength() < limit && (bytes < 0 || info.GetCurrentHistorySize()-base < bytes) {
		return false
	}
	return workflow.GetVersion(c, change, workflow.DefaultVersion, 1) == 1
}

// owns reports whether p is the path of the run this thread's workflow
// runs: its records, not those of subagents run in the same workflow
// code, are where the workflow may continue as new.
func (t *wfThread) owns(p agent.Path) bool {
	if t.own == nil {
		return !p.IsNested()
	}
	return p.String() == t.own.String()
}

// continueNow reports whether the workflow of t should continue as new
// right after a record of its own run was saved.
func (t *wfThread) continueNow() bool {
	if t.own == nil {
		return t.g.continueNow(t.rt.cur, t.openedSize)
	}
	return t.g.continueNowAs(t.rt.cur, t.openedSize, childContinueChange)
}

// continueSubagent is the error that ends a RunSubagent workflow run and
// starts the next one, which resumes the subagent's unfinished run from
// its records in the thread. Its input carries what finds and runs the
// run again, not the run's messages or the files it changed (the store
// holds them): the files its parent gave it, which its reads fall through
// to, and, on a directory, the paths its earlier workflow runs changed.
func continueSubagent(ctx workflow.Context, g *Registry, in SubagentInput, done vfs.Delta) error {
	next := in
	next.Messages, next.Ref, next.Continued = nil, nil, in.Continued+1
	// The decisions were given to the run before this step, which was
	// recorded after the calls they answered ran: the resume needs none.
	next.Nesting.Decisions = nil
	if next.Root != "" {
		next.Done = done
	}
	p, err := workflow.DataConverterWithoutDeadlockDetection(g.dc).ToPayload(next)
	if err != nil {
		return err
	}
	if size := proto.Size(p); size > MaxPayload {
		return sdktemporal.NewNonRetryableApplicationError(fmt.Sprintf("subagent %s cannot continue as new: its next input is %d bytes compressed, over the %d a payload may have; "+
			"the paths it changed on its directory are too many to carry, so its task call fails here; give it a task that changes fewer files", in.Path, size, MaxPayload), "PayloadTooLarge", nil)
	}
	return workflow.NewContinueAsNewError(ctx, RunSubagentWorkflow, next)
}

// continueAsNew is the error that ends a RunAgent workflow run and starts
// the next one on the same thread: it resumes the unfinished run from its
// last record or, when waiting is set, waits for decisions on those calls
// until the same deadline.
func continueAsNew(ctx workflow.Context, in RunInput, rt *Runtime, waiting []agent.Interrupt, until time.Time) error {
	next := RunInput{Agent: in.Agent, Thread: in.Thread, Waiting: waiting, WaitUntil: until, Continued: in.Continued + 1,
		Sessions: rt.sess.opened, Snapshot: in.Snapshot}
	return workflow.NewContinueAsNewError(ctx, RunAgentWorkflow, next)
}
