package server

import (
	"strings"
	"testing"
)

// wantError sends a request and checks its status and that its detail
// says each of says.
func (h *harness) wantError(method, path string, body any, status int, says ...string) {
	h.t.Helper()
	resp, b := h.do(method, path, body)
	if resp.StatusCode != status {
		h.t.Errorf("%s %s: status %d, want %d; body %s", method, path, resp.StatusCode, status, b)
		return
	}
	for _, s := range says {
		if !strings.Contains(string(b), s) {
			h.t.Errorf("%s %s: %s; want it to say %q", method, path, b, s)
		}
	}
}

// TestResumeErrorsSayWhy: a refused resume says what is wrong: the thread
// is busy (409, whatever the multitask strategy), the thread is not
// interrupted, input came with it, or there are more decisions than
// waiting calls.
func TestResumeErrorsSayWhy(t *testing.T) {
	h := newHarness(t, Config{})
	msg := func(text string) map[string]any {
		return map[string]any{"messages": []any{map[string]any{"role": "user", "content": text}}}
	}
	approve := map[string]any{"type": "approve"}
	resume := map[string]any{"assistant_id": "researcher", "command": map[string]any{"resume": []any{approve}}}

	// Busy: a slow run is going on.
	var run Run
	h.json("POST", "/threads", map[string]any{"thread_id": "busy"}, 200, nil)
	h.json("POST", "/threads/busy/runs", map[string]any{"assistant_id": "researcher", "input": msg("slow please")}, 200, &run)
	h.wantError("POST", "/threads/busy/runs", resume, 409, "busy", run.RunID)
	h.wantError("POST", "/threads/busy/runs", map[string]any{"assistant_id": "researcher", "multitask_strategy": "enqueue",
		"command": map[string]any{"resume": []any{approve}}}, 409, "busy")
	h.json("POST", "/threads/busy/runs/"+run.RunID+"/cancel?wait=1", nil, 202, nil)

	// Idle now (the run was cancelled): nothing waits.
	h.wantError("POST", "/threads/busy/runs", resume, 422, "not interrupted", "status is idle")
	h.wantError("POST", "/threads/busy/runs", map[string]any{"assistant_id": "researcher", "input": msg("hi"),
		"command": map[string]any{"resume": []any{approve}}}, 422, "not both")

	// Interrupted, one call waits: two decisions are too many. (Another
	// thread: the demo's every model call on one that said "slow" is slow.)
	h.json("POST", "/threads", map[string]any{"thread_id": "waits"}, 200, nil)
	h.wantError("POST", "/threads/waits/runs", resume, 422, "not interrupted", "status is idle")
	h.json("POST", "/threads/waits/runs/wait", map[string]any{"assistant_id": "researcher", "input": msg("go")}, 200, nil)
	h.wantError("POST", "/threads/waits/runs", map[string]any{"assistant_id": "researcher",
		"command": map[string]any{"resume": []any{approve, approve}}}, 422, "2 decisions for 1 waiting call", "write_file write_1")
	h.wantError("POST", "/threads/waits/runs", map[string]any{"assistant_id": "researcher", "input": msg("hi"),
		"command": map[string]any{"resume": []any{approve}}}, 422, "not both")
	// An edit whose arguments do not fit write_file is refused before a
	// run starts.
	h.wantError("POST", "/threads/waits/runs", map[string]any{"assistant_id": "researcher",
		"command": map[string]any{"resume": []any{map[string]any{"type": "edit", "args": map[string]any{"file_path": 5}}}}}, 422, "do not fit write_file")
	var runs []Run
	h.json("GET", "/threads/waits/runs?limit=100", nil, 200, &runs)
	if len(runs) != 1 {
		t.Errorf("the refused requests stored runs: %d runs, want 1", len(runs))
	}
	var res map[string]any
	h.json("POST", "/threads/waits/runs/wait", resume, 200, &res)
	if _, ok := res["__interrupt__"]; ok {
		t.Errorf("still waiting after a resume with one decision: %v", res)
	}
}

// TestCrashAdviceWorks: the error a thread cut off by a crash during its
// first model call is stored with gives advice that works: a new message
// continues it (a resume is refused, as nothing waits for a decision).
func TestCrashAdviceWorks(t *testing.T) {
	h, _, _, _, _ := stoppedServer(t, "")
	var th Thread
	h.json("GET", "/threads/T", nil, 200, &th)
	if th.Status != "error" || !strings.Contains(th.Error, "new message") || strings.Contains(th.Error, "resume") {
		t.Fatalf("thread status %q, error %q; want error advising a new message only", th.Status, th.Error)
	}
	h.wantError("POST", "/threads/T/runs", map[string]any{"assistant_id": "researcher",
		"command": map[string]any{"resume": []any{map[string]any{"type": "approve"}}}}, 422, "not interrupted")
	var res map[string]any
	h.json("POST", "/threads/T/runs/wait", map[string]any{"assistant_id": "researcher",
		"input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "go"}}}}, 200, &res)
	if _, ok := res["__interrupt__"]; !ok {
		t.Errorf("the new message did not run the turn to its approval: %v", res)
	}
}
