package temporal_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

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
