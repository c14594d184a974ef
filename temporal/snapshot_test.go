package temporal_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/temporal"
)

// snapshotHistory is recorded by TestSnapshotOnADevServer: a run started
// on a worker whose snapshot is "aaaa".
const snapshotHistory = "testdata/snapshot.history.json"

// snapshotRegistry runs an agent that answers at once, on a worker whose
// skills and memory snapshot is snap.
func snapshotRegistry(t *testing.T, snap string) *temporal.Registry {
	t.Helper()
	reg := temporal.NewRegistry()
	reg.Snapshot = snap
	m := reg.Model("scripted", scripted.New(scripted.Script{"helper": {Steps: []scripted.Step{step("hello")}}}, scripted.Options{}))
	if err := reg.Agent("helper", mustAgent(t, agent.Config{Name: "helper", Model: m})); err != nil {
		t.Fatal(err)
	}
	return reg
}

// checkSnapshotReplays replays h on workers with the same snapshot (it
// replays), another (refused, naming both and saying what to do) and none.
func checkSnapshotReplays(t *testing.T, replay func(worker.WorkflowReplayer) error) {
	t.Helper()
	if err := replay(replayerOf(t, snapshotRegistry(t, "aaaa"))); err != nil {
		t.Fatalf("on a worker with the same snapshot: %v", err)
	}
	for _, other := range []string{"bbbb", ""} {
		err := replay(replayerOf(t, snapshotRegistry(t, other)))
		if err == nil {
			t.Fatalf("a worker with snapshot %q replayed a run started with aaaa", other)
		}
		for _, want := range []string{"aaaa", "Restart every worker", temporal.SnapshotMismatch} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("a worker with snapshot %q refused with %v, which does not say %q", other, err, want)
			}
		}
		if other != "" && !strings.Contains(err.Error(), other) {
			t.Errorf("the refusal does not name this worker's snapshot: %v", err)
		}
	}
}

// A run records the snapshot of the worker that starts it, and a worker
// with other skills or memory files refuses to replay it; with
// DEEPAGENTS_TEMPORAL_RECORD=1 the history is written to testdata for
// TestSnapshotHistoryReplays.
func TestSnapshotOnADevServer(t *testing.T) {
	c := devClient(t)
	reg := snapshotRegistry(t, "aaaa")
	w := worker.New(c, "deepagents-snapshot", worker.Options{})
	reg.Register(w)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "snapshot", TaskQueue: "deepagents-snapshot"},
		temporal.RunAgentWorkflow, temporal.RunInput{Agent: "helper", Input: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	var s temporal.Summary
	if err := run.Get(ctx, &s); err != nil {
		t.Fatal(err)
	}
	if s.Status != agent.StatusOK || s.Text != "hello" {
		t.Fatalf("summary %+v", s)
	}
	h := history(ctx, t, c, run)
	checkSnapshotReplays(t, func(r worker.WorkflowReplayer) error { return r.ReplayWorkflowHistory(nil, h) })
	record(t, snapshotHistory, h)
}

// The committed history of a run started on a worker whose snapshot is
// "aaaa" replays on such a worker, and only there; a history recorded
// before runs recorded their snapshot replays on any worker.
func TestSnapshotHistoryReplays(t *testing.T) {
	checkSnapshotReplays(t, func(r worker.WorkflowReplayer) error {
		return r.ReplayWorkflowHistoryFromJSONFile(nil, snapshotHistory)
	})
	if err := replayerOf(t, searchRegistry(t, t.TempDir())).ReplayWorkflowHistoryFromJSONFile(nil, searchHistory); err != nil {
		t.Fatalf("%s, recorded before, does not replay: %v", searchHistory, err)
	}
}

// In the test environment a run on a worker with a snapshot completes:
// recording it changes nothing of the run.
func TestARunRecordsItsSnapshot(t *testing.T) {
	env := newEnv(t, snapshotRegistry(t, "aaaa"))
	env.ExecuteWorkflow(temporal.RunAgentWorkflow, temporal.RunInput{Agent: "helper", Input: "hi"})
	if s := summary(t, env); s.Status != agent.StatusOK || s.Text != "hello" {
		t.Fatalf("summary %+v", s)
	}
}

// A run asked to have a snapshot this worker lacks (set by the run it
// continues, or by the client) is refused here: its workflow task fails
// with an error naming both.
func TestARunPinnedToOtherFilesIsRefused(t *testing.T) {
	env := newEnv(t, snapshotRegistry(t, "aaaa"))
	env.ExecuteWorkflow(temporal.RunAgentWorkflow, temporal.RunInput{Agent: "helper", Input: "hi", Snapshot: "bbbb"})
	err := env.GetWorkflowError()
	if err == nil || !strings.Contains(err.Error(), temporal.SnapshotMismatch) || !strings.Contains(err.Error(), "aaaa") || !strings.Contains(err.Error(), "bbbb") {
		t.Errorf("a run pinned to bbbb on a worker with aaaa ended with %v", err)
	}
}

// A subagent's child workflow carries its parent's snapshot, and a worker
// with another refuses it.
func TestAChildHasItsParentsSnapshot(t *testing.T) {
	reg, _ := delegation(t, 2)
	reg.Snapshot = "aaaa"
	env := newEnv(t, reg)
	var mu sync.Mutex
	var children []temporal.SubagentInput
	env.SetOnChildWorkflowStartedListener(func(_ *workflow.Info, _ workflow.Context, args converter.EncodedValues) {
		var in temporal.SubagentInput
		if err := args.Get(&in); err != nil {
			t.Error(err)
		}
		mu.Lock()
		children = append(children, in)
		mu.Unlock()
	})
	env.ExecuteWorkflow(temporal.RunAgentWorkflow, temporal.RunInput{Agent: "parent", Thread: "T", Input: "delegate"})
	if s := summary(t, env); s.Status != agent.StatusOK {
		t.Fatalf("summary %+v", s)
	}
	if len(children) != 2 || children[0].Snapshot != "aaaa" || children[1].Snapshot != "aaaa" {
		t.Fatalf("children's inputs %+v, want two with snapshot aaaa", children)
	}
	other, _ := delegation(t, 2)
	other.Snapshot = "bbbb"
	env = newEnv(t, other)
	env.ExecuteWorkflow(temporal.RunSubagentWorkflow, children[0])
	if err := env.GetWorkflowError(); err == nil || !strings.Contains(err.Error(), temporal.SnapshotMismatch) || !strings.Contains(err.Error(), "aaaa") {
		t.Errorf("a child of a parent with aaaa on a worker with bbbb ended with %v", err)
	}
}

// A run that continues as new carries its snapshot to the next run.
func TestAContinuedRunKeepsItsSnapshot(t *testing.T) {
	lc := newLongCase(t, 3)
	lc.reg.ContinueAfter = 1000
	lc.reg.Snapshot = "aaaa"
	env := newEnv(t, lc.reg)
	env.SetCurrentHistoryLength(1000)
	env.ExecuteWorkflow(temporal.RunAgentWorkflow, temporal.RunInput{Agent: "counter", Thread: "T", Input: "count"})
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("the workflow ended with %v, want it to continue as new", err)
	}
	var next temporal.RunInput
	if err := temporal.DataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	if next.Snapshot != "aaaa" {
		t.Errorf("the next run's input is %+v, want snapshot aaaa", next)
	}
}
