package server

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/approve"
	"github.com/deepagents-go/deepagents/hitl"
)

// TestSubagentApproval: a call a subagent makes that needs approval is
// surfaced as the run's interrupt, with the subagent's path, and a resume
// by order answers it; the subagent then finishes and so does the parent.
// An edit that does not fit the subagent's tool is refused up front.
func TestSubagentApproval(t *testing.T) {
	model := subagentWriter("from the subagent")
	a, err := deepagents.New(deepagents.Config{Name: "boss", Model: model, InterruptOn: map[string]approve.Policy{"write_file": {}}})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, Config{Agents: []AgentSpec{{Name: "boss", Agent: a}}})
	var res struct {
		Interrupt []struct {
			Value hitl.Request `json:"value"`
		} `json:"__interrupt__"`
	}
	h.json("POST", "/threads/sa/runs/wait", map[string]any{"assistant_id": "boss", "if_not_exists": "create",
		"input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "go"}}}}, 200, &res)
	if len(res.Interrupt) != 1 || len(res.Interrupt[0].Value.ActionRequests) != 1 {
		t.Fatalf("interrupts %+v", res.Interrupt)
	}
	ar := res.Interrupt[0].Value.ActionRequests[0]
	if ar.Name != "write_file" || ar.ID != "w" || !strings.Contains(ar.Path, "general-purpose#t1") {
		t.Fatalf("the waiting call %+v", ar)
	}
	// An edit whose arguments do not fit the subagent's write_file is
	// refused before a run starts, as one of the parent's own calls is.
	h.wantError("POST", "/threads/sa/runs", map[string]any{"assistant_id": "boss",
		"command": map[string]any{"resume": []any{map[string]any{"type": "edit", "args": map[string]any{"path": "/sub.md", "content": "x"}}}}}, 422, "do not fit write_file")
	var runs []Run
	h.json("GET", "/threads/sa/runs?limit=100", nil, 200, &runs)
	if len(runs) != 1 {
		t.Errorf("the refused edit stored a run: %d runs, want 1", len(runs))
	}
	var done map[string]json.RawMessage
	h.json("POST", "/threads/sa/runs/wait", map[string]any{"assistant_id": "boss",
		"command": map[string]any{"resume": map[string]any{"decisions": []any{map[string]any{"type": "approve"}}}}}, 200, &done)
	if !strings.Contains(string(done["messages"]), "parent done") || !strings.Contains(string(done["files"]), "from the subagent") {
		t.Errorf("after the approval: messages %s files %s", done["messages"], done["files"])
	}
}
