package temporal_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/temporal"
	"github.com/deepagents-go/deepagents/tool"
)

// The histories of the parallel delegation with each subagent a child
// workflow: the parent's, and its helper child's.
const (
	childrenHistory = "testdata/children.history.json"
	childHistory    = "testdata/child.history.json"
)

// childIDs are the workflow ids of the children h started, in order.
func childIDs(h *historypb.History) []string {
	var ids []string
	for _, ev := range h.Events {
		if a := ev.GetStartChildWorkflowExecutionInitiatedEventAttributes(); a != nil {
			ids = append(ids, a.GetWorkflowId())
		}
	}
	return ids
}

// On a real server the parallel delegation starts its two subagents as
// child workflows of the RunAgent workflow (the server describes each with
// its parent), both in flight at once: each has started before either has
// completed. The parent's and a child's histories replay; with
// DEEPAGENTS_TEMPORAL_RECORD=1 they are written to testdata for
// TestChildHistoriesReplay.
func TestChildWorkflowsOnADevServer(t *testing.T) {
	c := devClient(t)
	reg, _ := delegation(t, 0)
	w := worker.New(c, "deepagents-children", worker.Options{})
	reg.Register(w)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "children", TaskQueue: "deepagents-children"},
		temporal.RunAgentWorkflow, temporal.RunInput{Agent: "parent", Thread: "T", Input: "delegate"})
	if err != nil {
		t.Fatal(err)
	}
	var s temporal.Summary
	if err := run.Get(ctx, &s); err != nil {
		t.Fatal(err)
	}
	if s.Status != agent.StatusOK || s.Text != "all done" || !slices.Equal(s.Files, []string{"/a.txt", "/b.txt", "/p.txt"}) ||
		len(s.Children) != 2 || s.Children[0].Text != "wrote a" || s.Children[1].Text != "wrote b" {
		t.Fatalf("summary %+v", s)
	}

	h := history(ctx, t, c, run)
	ids := childIDs(h)
	if len(ids) != 2 {
		t.Fatalf("the parent started %d child workflows, want 2", len(ids))
	}
	started, completed := 0, -1
	for i, ev := range h.Events {
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED:
			started = i
		case enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED:
			if completed < 0 {
				completed = i
			}
		}
	}
	if completed < 0 || started > completed {
		t.Errorf("a child completed (event %d) before the other started (event %d)", completed, started)
	}
	var helper client.WorkflowRun
	for _, id := range ids {
		d, err := c.DescribeWorkflowExecution(ctx, id, "")
		if err != nil {
			t.Fatal(err)
		}
		info := d.GetWorkflowExecutionInfo()
		if info.GetType().GetName() != temporal.RunSubagentWorkflow || info.GetParentExecution().GetWorkflowId() != "children" ||
			info.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
			t.Errorf("child %s: type %s, parent %v, status %v", id, info.GetType().GetName(), info.GetParentExecution(), info.GetStatus())
		}
		var out temporal.SubagentOutcome
		if err := c.GetWorkflow(ctx, id, "").Get(ctx, &out); err != nil {
			t.Fatal(err)
		}
		if out.Result.Agent.Last().Name == "helper" {
			helper = c.GetWorkflow(ctx, id, info.GetExecution().GetRunId())
		}
	}
	if helper == nil {
		t.Fatal("no child ran the helper")
	}
	ch := history(ctx, t, c, helper)
	for name, h := range map[string]*historypb.History{"parent": h, "helper": ch} {
		if err := replayer(t, true).ReplayWorkflowHistory(nil, h); err != nil {
			t.Errorf("the %s's history does not replay: %v", name, err)
		}
	}
	record(t, childrenHistory, h)
	record(t, childHistory, ch)
}

// The committed histories of the delegation with child workflows replay,
// the parent's and the helper's; the helper's note run in the workflow
// rather than as an activity fails the child's replay.
func TestChildHistoriesReplay(t *testing.T) {
	for _, path := range []string{childrenHistory, childHistory} {
		if err := replayer(t, true).ReplayWorkflowHistoryFromJSONFile(nil, path); err != nil {
			t.Errorf("%s does not replay: %v", path, err)
		}
	}
	if err := replayer(t, false).ReplayWorkflowHistoryFromJSONFile(nil, childHistory); err == nil {
		t.Errorf("%s replayed on a changed workflow, want a nondeterminism error", childHistory)
	}
}

// On a real server, cancelling the parent's workflow while its subagent's
// tool runs cancels the child workflow: the tool's context is cancelled,
// the parent ends cancelled, and the server has the child cancelled too.
func TestCancellingTheParentCancelsTheChildOnADevServer(t *testing.T) {
	c := devClient(t)
	started, stopped := make(chan struct{}), make(chan error, 1)
	wait := tool.MustFunc("wait", "Wait.", func(ctx context.Context, _ *tool.Env, _ struct{}) (string, error) {
		close(started)
		select {
		case <-ctx.Done():
			stopped <- ctx.Err()
			return "", ctx.Err()
		case <-time.After(time.Minute):
			stopped <- errors.New("not cancelled within a minute")
			return "waited", nil
		}
	})
	reg := waitingDelegation(t, wait)
	w := worker.New(c, "deepagents-cancel-child", worker.Options{})
	reg.Register(w)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "cancel-child", TaskQueue: "deepagents-cancel-child"},
		temporal.RunAgentWorkflow, temporal.RunInput{Agent: "parent", Input: "wait"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("the tool did not start")
	}
	if err := c.CancelWorkflow(ctx, run.GetID(), run.GetRunID()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-stopped:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the tool ended with %v, want its context cancelled", err)
		}
	case <-ctx.Done():
		t.Fatal("the tool did not end")
	}
	var ce *sdktemporal.CanceledError
	if err := run.Get(ctx, nil); !errors.As(err, &ce) {
		t.Fatalf("the workflow ended with %v, want it cancelled", err)
	}
	ids := childIDs(history(ctx, t, c, run))
	if len(ids) != 1 {
		t.Fatalf("the parent started %d child workflows, want 1", len(ids))
	}
	d, err := c.DescribeWorkflowExecution(ctx, ids[0], "")
	if err != nil {
		t.Fatal(err)
	}
	if st := d.GetWorkflowExecutionInfo().GetStatus(); st != enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED {
		t.Errorf("the child workflow is %v, want it cancelled", st)
	}
}
