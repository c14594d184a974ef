package temporal

import (
	"context"
	"fmt"

	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// A worker's middleware read the skills and memory files once, at start
// (deepagents-temporal's snapshot): a run replayed on a worker that read
// other files would build other prompts than its history's. So a workflow
// records the snapshot of the worker that starts it, and a worker with
// another refuses its workflow tasks.

// snapshotChange is the GetVersion change that records the snapshot;
// a workflow that started before it is not checked.
const snapshotChange = "deepagents.snapshot-check"

// SnapshotMismatch is the type of the error with which a worker refuses
// a workflow task of a run that started on a worker with another snapshot
// (Registry.Snapshot).
const SnapshotMismatch = "deepagents.SnapshotMismatch"

// checkSnapshot records g.Snapshot in the workflow's history when the
// workflow starts, and fails the workflow task when this worker's
// snapshot is not the one recorded (a replay on a worker that read other
// files) or not want (the parent's, or the run's before it continued as
// new; "" when nothing is asked), so that the run waits for a worker with the same
// files rather than take another path than its history's. The workflow
// itself is not failed: a worker with the same files takes the task. It
// reports whether the workflow checks its snapshot (one started before
// this change does not).
func (g *Registry) checkSnapshot(ctx workflow.Context, want string) bool {
	if workflow.GetVersion(ctx, snapshotChange, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return false
	}
	if want != "" && want != g.Snapshot {
		panic(snapshotError(want, g.Snapshot))
	}
	var recorded string
	if err := workflow.SideEffect(ctx, func(workflow.Context) any { return g.Snapshot }).Get(&recorded); err != nil {
		panic(err)
	}
	if recorded != g.Snapshot {
		// A panic fails the workflow task (not the workflow): it is how
		// workflow code refuses a task.
		panic(snapshotError(recorded, g.Snapshot))
	}
	return true
}

// StartedBeforeSnapshot reports whether ctx is workflow code of a run
// whose workflow started before workflows checked their snapshot: its
// history may come from a worker that bound what the snapshot now covers
// (its MCP tools) otherwise, so a worker keeps such a run's calls working
// (every MCP tool callable by name). False outside workflow code.
func StartedBeforeSnapshot(ctx context.Context) bool {
	rt, ok := runtimeFrom(ctx)
	return ok && rt.host != nil && rt.host.unchecked
}

func snapshotError(recorded, here string) error {
	name := func(s string) string {
		if s == "" {
			return "none (no skills, memory files or MCP tools)"
		}
		return s
	}
	return sdktemporal.NewNonRetryableApplicationError(fmt.Sprintf(
		"this run started on a worker whose snapshot (skills, memory and MCP tools) is %s, and this worker's is %s: its prompts would differ from its history's, so this worker refuses it. "+
			"Restart every worker of the task queue with the same skill folders, AGENTS.md files and MCP servers (deepagents-temporal worker prints its snapshot when it starts)",
		name(recorded), name(here)), SnapshotMismatch, nil)
}
