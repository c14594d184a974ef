package server

import (
	"strings"
	"testing"
)

// TestResumeKeyedByInterruptID: a command.resume keyed by an interrupt id
// answers the waiting calls only when the id is the thread's waiting
// interrupt's; an unknown or earlier id is refused with 422 and stores no
// run, and the calls still wait.
func TestResumeKeyedByInterruptID(t *testing.T) {
	h := newHarness(t, Config{})
	msg := map[string]any{"messages": []any{map[string]any{"role": "user", "content": "go"}}}
	approve := map[string]any{"decisions": []any{map[string]any{"type": "approve"}}}
	h.json("POST", "/threads/k/runs/wait", map[string]any{"assistant_id": "researcher", "input": msg, "if_not_exists": "create"}, 200, nil)
	waitingID := func() string {
		var th Thread
		h.json("GET", "/threads/k", nil, 200, &th)
		if th.Status != "interrupted" || len(th.Interrupts) != 1 {
			t.Fatalf("thread status %q, interrupts %v; want one waiting interrupt", th.Status, th.Interrupts)
		}
		for id := range th.Interrupts {
			return id
		}
		return ""
	}
	runs := func() int {
		var rs []Run
		h.json("GET", "/threads/k/runs?limit=100", nil, 200, &rs)
		return len(rs)
	}
	first := waitingID()
	resp, b := h.do("POST", "/threads/k/runs/wait", map[string]any{"assistant_id": "researcher", "command": map[string]any{"resume": map[string]any{"99999": approve}}})
	if resp.StatusCode != 422 || !strings.Contains(string(b), first) {
		t.Fatalf("resume keyed by an unknown id: status %d, body %s; want 422 naming %s", resp.StatusCode, b, first)
	}
	if n := runs(); n != 1 {
		t.Errorf("the refused resume stored a run: %d runs", n)
	}
	if waitingID() != first {
		t.Fatal("the refused resume changed the waiting interrupt")
	}
	// Keyed by the waiting interrupt's id: taken.
	h.json("POST", "/threads/k/runs/wait", map[string]any{"assistant_id": "researcher", "command": map[string]any{"resume": map[string]any{first: approve}}}, 200, nil)
	h.json("POST", "/threads/k/runs/wait", map[string]any{"assistant_id": "researcher", "input": msg}, 200, nil)
	second := waitingID()
	if second == first {
		t.Fatalf("the second turn's interrupt has the first's id %s", first)
	}
	// The first interrupt's id is stale now.
	h.json("POST", "/threads/k/runs", map[string]any{"assistant_id": "researcher", "command": map[string]any{"resume": map[string]any{first: approve}}}, 422, nil)
	// Keyed list of decisions, by the current id.
	var res map[string]any
	h.json("POST", "/threads/k/runs/wait", map[string]any{"assistant_id": "researcher", "command": map[string]any{"resume": map[string]any{second: []any{map[string]any{"type": "approve"}}}}}, 200, &res)
	if _, ok := res["__interrupt__"]; ok {
		t.Errorf("still waiting after a resume keyed by %s", second)
	}
}
