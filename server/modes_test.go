package server

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/approve"
)

// confinedModes serves every mode but auto (no classifier), as for files in
// memory.
func confinedModes() *ApprovalModes {
	return &ApprovalModes{New: func(m approve.Mode) (*approve.Session, error) {
		return approve.NewSession(m, approve.SessionOptions{Confined: true})
	}}
}

func reportRun(mode string) map[string]any {
	body := map[string]any{"assistant_id": "researcher", "if_not_exists": "create",
		"input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "compare A and B"}}}}
	if mode != "" {
		body["config"] = map[string]any{"configurable": map[string]any{ModeKey: mode}}
	}
	return body
}

func threadOf(t *testing.T, h *harness, id string) (Thread, map[string]any) {
	t.Helper()
	var th Thread
	h.json("GET", "/threads/"+id, nil, 200, &th)
	var vals struct {
		Files map[string]any `json:"files"`
	}
	if err := json.Unmarshal(th.Values, &vals); err != nil {
		t.Fatal(err)
	}
	return th, vals.Files
}

// A run's config.configurable.approval_mode decides on its gated calls: the
// demo's write of /report.md waits in manual and runs in accept-edits and
// yolo; the thread's metadata then says the mode in force.
func TestApprovalModeOfARun(t *testing.T) {
	for _, tc := range []struct {
		mode        string
		interrupted bool
	}{{"", true}, {"manual", true}, {"accept-edits", false}, {"yolo", false}} {
		t.Run("mode "+tc.mode, func(t *testing.T) {
			h := newHarness(t, Config{ApprovalModes: confinedModes()})
			h.json("POST", "/threads/t/runs/wait", reportRun(tc.mode), 200, nil)
			th, files := threadOf(t, h, "t")
			if got := th.Status == "interrupted"; got != tc.interrupted {
				t.Fatalf("status %s, want interrupted %v", th.Status, tc.interrupted)
			}
			if _, wrote := files["/report.md"]; wrote == tc.interrupted {
				t.Errorf("/report.md written: %v", wrote)
			}
			want := tc.mode
			if want == "manual" || want == "" {
				want = "" // a thread that never left manual keeps its metadata
			}
			if got, _ := th.Metadata[ModeKey].(string); got != want {
				t.Errorf("metadata %s = %q, want %q", ModeKey, got, want)
			}
		})
	}
}

// A PATCH of the thread's metadata switches its mode for the runs that
// follow; modes the server cannot give are refused before anything runs.
func TestApprovalModeSwitchedOnTheThread(t *testing.T) {
	h := newHarness(t, Config{ApprovalModes: confinedModes()})
	h.json("POST", "/threads", map[string]any{"thread_id": "p"}, 200, nil)
	for mode, want := range map[any]string{"careful": `approval mode \"careful\" is not one of`, "auto": "needs a model to judge calls with", 3: "must be a string"} {
		resp, b := h.do("PATCH", "/threads/p", map[string]any{"metadata": map[string]any{ModeKey: mode}})
		if resp.StatusCode != 422 || !strings.Contains(string(b), want) {
			t.Errorf("mode %v: status %d %s, want 422 %q", mode, resp.StatusCode, b, want)
		}
	}
	h.json("PATCH", "/threads/p", map[string]any{"metadata": map[string]any{ModeKey: "accept-edits"}}, 200, nil)
	h.json("POST", "/threads/p/runs/wait", reportRun(""), 200, nil)
	th, files := threadOf(t, h, "p")
	if th.Status != "idle" || files["/report.md"] == nil {
		t.Fatalf("accept-edits from the metadata: status %s, files %v", th.Status, files)
	}
	// Back to manual: the next turn's write waits.
	h.json("PATCH", "/threads/p", map[string]any{"metadata": map[string]any{ModeKey: "manual"}}, 200, nil)
	h.json("POST", "/threads/p/runs/wait", reportRun(""), 200, nil)
	if th, _ := threadOf(t, h, "p"); th.Status != "interrupted" {
		t.Errorf("after the switch to manual: status %s", th.Status)
	}
	if resp, b := h.do("POST", "/threads/q/runs/wait", reportRun("auto")); resp.StatusCode != 422 || !strings.Contains(string(b), "needs a model") {
		t.Errorf("a run in auto without a classifier: %d %s", resp.StatusCode, b)
	}
}

// A server that does not serve modes refuses a run that names one.
func TestApprovalModeNotServed(t *testing.T) {
	h := newHarness(t, Config{})
	resp, b := h.do("POST", "/threads/t/runs/wait", reportRun("yolo"))
	if resp.StatusCode != 422 || !strings.Contains(string(b), "does not serve approval modes") {
		t.Errorf("status %d %s", resp.StatusCode, b)
	}
}

// A run's values carry the thread's record of its mode; a thread deleted
// and made again under its id starts from the server's mode, not the old
// thread's.
func TestApprovalModeRecordAndDelete(t *testing.T) {
	h := newHarness(t, Config{ApprovalModes: confinedModes()})
	h.json("POST", "/threads/t/runs/wait", reportRun("yolo"), 200, nil)
	var st struct {
		Values map[string]json.RawMessage `json:"values"`
	}
	h.json("GET", "/threads/t/state", nil, 200, &st)
	rec, ok := approve.ModeRecordOf(st.Values)
	if !ok || rec.Mode != approve.Yolo || len(rec.Calls) == 0 || rec.Calls[len(rec.Calls)-1].Outcome != "passed" {
		t.Fatalf("the thread's record: %+v (%v) from %s", rec, ok, st.Values[approve.ModeValue])
	}
	h.do("DELETE", "/threads/t", nil)
	h.json("POST", "/threads/t/runs/wait", reportRun(""), 200, nil)
	if th, _ := threadOf(t, h, "t"); th.Status != "interrupted" {
		t.Errorf("the thread made again ran in the old thread's yolo: status %s", th.Status)
	}
}
