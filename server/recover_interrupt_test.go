package server

import (
	"context"
	"iter"
	"slices"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/agent"
)

// TestRestartKeepsPendingApproval: a server stopped after a run saved its
// interrupt checkpoint but before it marked the run and thread leaves them
// running and busy; the server restarted over the same files marks the
// thread interrupted (not error) with its waiting call, the run
// interrupted, and a resume answers the call.
func TestRestartKeepsPendingApproval(t *testing.T) {
	dir := t.TempDir()
	serve := func(run func(context.Context, string, *agent.Agent, agent.Input, ...agent.RunOption) iter.Seq2[agent.Event, error]) (*harness, Store) {
		sv, st := openFiles(t, dir)
		t.Cleanup(func() { _ = st.Close(); _ = sv.Close() })
		return newHarness(t, Config{Saver: sv, Store: st, Run: run}), st
	}
	// Server A's runs run to their end (the interrupt is saved, the lease
	// let go) but the server never sees the last event: as if killed then.
	stuck := make(chan struct{})
	hA, stA := serve(func(ctx context.Context, _ string, a *agent.Agent, in agent.Input, opts ...agent.RunOption) iter.Seq2[agent.Event, error] {
		return func(yield func(agent.Event, error) bool) {
			var last agent.Event
			var lastErr error
			held := false
			for ev, err := range a.Run(ctx, in, opts...) {
				if held && !yield(last, lastErr) {
					return
				}
				last, lastErr, held = ev, err, true
			}
			close(stuck)
			<-ctx.Done()
		}
	})
	var run Run
	hA.json("POST", "/threads", map[string]any{"thread_id": "T"}, 200, nil)
	hA.json("POST", "/threads/T/runs", map[string]any{"assistant_id": "researcher",
		"input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "go"}}}}, 200, &run)
	select {
	case <-stuck:
	case <-time.After(20 * time.Second):
		t.Fatal("the run did not reach its end")
	}
	ctx := context.Background()
	if rec, err := stA.GetRun(ctx, "T", run.RunID); err != nil || rec.Status != runRunning {
		t.Fatalf("stored run %q (%v); want running, as a kill leaves it", rec.Status, err)
	}

	hB, st := serve(nil)
	var th Thread
	hB.json("GET", "/threads/T", nil, 200, &th)
	if th.Status != "interrupted" || len(th.Interrupts) != 1 || th.Error != "" {
		t.Fatalf("thread status %q, interrupts %v, error %q; want interrupted with one interrupt", th.Status, th.Interrupts, th.Error)
	}
	if rec, err := st.GetThread(ctx, "T"); err != nil || rec.Status != threadInterrupted {
		t.Errorf("stored thread status %q (%v); want interrupted", rec.Status, err)
	}
	var found []Thread
	hB.json("POST", "/threads/search", map[string]any{"status": "interrupted"}, 200, &found)
	if !slices.ContainsFunc(found, func(th Thread) bool { return th.ThreadID == "T" }) {
		t.Errorf("a search by status interrupted did not find the thread: %v", found)
	}
	var got Run
	hB.json("GET", "/threads/T/runs/"+run.RunID, nil, 200, &got)
	if got.Status != "interrupted" {
		t.Errorf("run status %q, want interrupted", got.Status)
	}
	var res map[string]any
	hB.json("POST", "/threads/T/runs/wait", map[string]any{"assistant_id": "researcher",
		"command": map[string]any{"resume": []any{map[string]any{"type": "approve"}}}}, 200, &res)
	if _, ok := res["__interrupt__"]; ok {
		t.Errorf("still waiting after the resume: %v", res)
	}
	hB.json("GET", "/threads/T", nil, 200, &th)
	if th.Status != "idle" {
		t.Errorf("thread status after the resume %q, want idle", th.Status)
	}
}
