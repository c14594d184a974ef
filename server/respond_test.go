package server

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/approve"
	"github.com/deepagents-go/deepagents/internal/demoagent"
)

// TestResumeWithRespond: a command.resume decision {"type": "respond",
// "message": ...} answers a waiting call whose gate allows respond in its
// tool's place: the call does not run, and its result is the message, a
// success, not marked rejected. A respond to a call that does not allow it,
// or one without a message, is refused with 422 and the call keeps waiting.
func TestResumeWithRespond(t *testing.T) {
	model := demoagent.Model(0)
	asker, err := deepagents.New(deepagents.Config{Name: "asker", Model: model, Stream: true,
		InterruptOn: map[string]approve.Policy{"write_file": {Allowed: []agent.DecisionType{agent.Approve, agent.Respond}}}})
	if err != nil {
		t.Fatal(err)
	}
	researcher, err := DemoAgent("researcher", 0)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, Config{Agents: []AgentSpec{{Name: "asker", Agent: asker}, {Name: "researcher", Agent: researcher}}})
	start := func(thread, assistant string) {
		t.Helper()
		h.json("POST", "/threads/"+thread+"/runs/wait", map[string]any{"assistant_id": assistant, "if_not_exists": "create",
			"input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "compare A and B"}}}}, 200, nil)
	}
	resume := func(thread, assistant string, decision map[string]any) (int, string) {
		t.Helper()
		resp, b := h.do("POST", "/threads/"+thread+"/runs/wait", map[string]any{"assistant_id": assistant,
			"command": map[string]any{"resume": map[string]any{"decisions": []any{decision}}}})
		return resp.StatusCode, string(b)
	}
	status := func(thread string) string {
		t.Helper()
		var th Thread
		h.json("GET", "/threads/"+thread, nil, 200, &th)
		return string(th.Status)
	}

	start("d", "researcher")
	if code, body := resume("d", "researcher", map[string]any{"type": "respond", "message": "done by hand"}); code != 422 ||
		!strings.Contains(body, `call \"write_1\" (write_file) allows approve, edit, reject, not respond`) {
		t.Errorf("a respond the call does not allow: status %d, body %s", code, body)
	}
	if s := status("d"); s != "interrupted" {
		t.Errorf("after the refused respond the thread is %s", s)
	}

	start("r", "asker")
	if code, body := resume("r", "asker", map[string]any{"type": "respond"}); code != 422 || !strings.Contains(body, `has no \"message\"`) {
		t.Errorf("a respond without a message: status %d, body %s", code, body)
	}
	const answer = "The report is kept in the wiki, not in a file."
	if code, body := resume("r", "asker", map[string]any{"type": "respond", "message": answer}); code != 200 {
		t.Fatalf("respond: status %d, body %s", code, body)
	}
	var th Thread
	h.json("GET", "/threads/r", nil, 200, &th)
	var vals struct {
		Messages []LCMessage    `json:"messages"`
		Files    map[string]any `json:"files"`
	}
	if err := json.Unmarshal(th.Values, &vals); err != nil {
		t.Fatal(err)
	}
	w := toolMessage(vals.Messages, "write_1")
	if w == nil || w.Content != answer || w.Status != "success" || w.AdditionalKwargs != nil {
		t.Errorf("the answered call's result: %+v", w)
	}
	if _, ok := vals.Files["/report.md"]; ok {
		t.Error("the answered write_file ran: /report.md exists")
	}
	if th.Status != "idle" {
		t.Errorf("thread status %s after the respond", th.Status)
	}
}
