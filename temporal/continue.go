package temporal

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/deepagents-go/deepagents/agent"
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
	return workflow.GetVersion(c, continueChange, workflow.DefaultVersion, 1) == 1
}

// continueAsNew is the error that ends a RunAgent workflow run and starts
// the next one on the same thread: it resumes the unfinished run from its
// last record or, when waiting is set, waits for decisions on those calls
// until the same deadline.
func continueAsNew(ctx workflow.Context, in RunInput, rt *Runtime, waiting []agent.Interrupt, until time.Time) error {
	next := RunInput{Agent: in.Agent, Thread: in.Thread, Waiting: waiting, WaitUntil: until, Continued: in.Continued + 1,
		Sessions: rt.sess.opened}
	return workflow.NewContinueAsNewError(ctx, RunAgentWorkflow, next)
}
