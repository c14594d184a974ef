package server

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/llm/scripted"
)

// A background subagent's events stream under its task call's namespace
// (custom|task:<call_id>, messages|task:…) while it runs; the run goes on
// until its report is in, which the custom stream announces as a
// subagent.notification event and the thread's messages keep.
func TestStreamBackgroundSubagent(t *testing.T) {
	const script = `{
  "agent": [
    {"tool_calls": [{"id": "bg1", "name": "task", "args": {"description": "look around", "subagent_type": "general-purpose", "run_in_background": true}}]},
    {"content": "Waiting."},
    {"content": "Got the report."}],
  "general-purpose": [{"content": "Looked around.", "delay_ms": 500}]
}`
	var s scripted.Script
	if err := json.Unmarshal([]byte(script), &s); err != nil {
		t.Fatal(err)
	}
	a, err := deepagents.New(deepagents.Config{Name: "agent", Model: scripted.New(s, scripted.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, Config{Agents: []AgentSpec{{Name: "agent", Agent: a}}})
	_, evs := h.stream("POST", "/threads/bg/runs/stream", map[string]any{"assistant_id": "agent", "if_not_exists": "create",
		"input":       map[string]any{"messages": []any{map[string]any{"role": "user", "content": "go"}}},
		"stream_mode": []string{"values", "messages-tuple", "custom"}, "stream_subgraphs": true})
	names := eventNames(evs)
	for _, want := range []string{"custom|task:bg1", "messages|task:bg1"} {
		if !slices.Contains(names, want) {
			t.Errorf("no %q event in %v", want, names)
		}
	}
	var notified bool
	for _, e := range evs {
		if e.Event != "custom" {
			continue
		}
		var ev struct {
			Type     string `json:"type"`
			Subagent struct {
				CallID       string `json:"call_id"`
				Background   bool   `json:"background"`
				Notification string `json:"notification"`
			} `json:"subagent"`
		}
		if err := json.Unmarshal(e.Data, &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Type == "subagent.notification" && ev.Subagent.CallID == "bg1" && ev.Subagent.Background && strings.HasSuffix(ev.Subagent.Notification, "Looked around.") {
			notified = true
		}
	}
	if !notified {
		t.Errorf("no subagent.notification event for bg1")
	}
	last := evs[len(evs)-1]
	if last.Event != "values" || !strings.Contains(string(last.Data), "[Background task bg1 (subagent general-purpose) has ended: ok.") ||
		!strings.Contains(string(last.Data), "Got the report.") {
		t.Errorf("last values: %s", last.Data)
	}
}
