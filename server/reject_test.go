package server

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/approve"
)

// toolMessage finds the tool message answering call id in msgs.
func toolMessage(msgs []LCMessage, id string) *LCMessage {
	for i := range msgs {
		if msgs[i].Type == "tool" && msgs[i].ToolCallID == id {
			return &msgs[i]
		}
	}
	return nil
}

// TestRejectedCallMarked: a call the person rejects answers the model with
// an error, as LangChain's status says ("error"), and is marked rejected
// (additional_kwargs.rejected) wherever a client reads it: the resumed
// run's streamed values, the thread's values and its state. The demo's
// answer then says the report was not written. On the next turn the same
// call, rejected again without asking, is marked too; a call that ran is
// not.
func TestRejectedCallMarked(t *testing.T) {
	h := newHarness(t, Config{})
	turn := func(text string) {
		t.Helper()
		h.json("POST", "/threads/t/runs/wait", map[string]any{"assistant_id": "researcher", "if_not_exists": "create",
			"input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": text}}}}, 200, nil)
	}
	turn("compare A and B")
	_, evs := h.stream("POST", "/threads/t/runs/stream", map[string]any{"assistant_id": "researcher", "stream_mode": []string{"values", "messages-tuple"},
		"command": map[string]any{"resume": []any{map[string]any{"type": "reject", "message": "not now"}}}})
	var streamed *LCMessage
	for _, ev := range evs {
		if ev.Event != "values" {
			continue
		}
		var v struct {
			Messages []LCMessage `json:"messages"`
		}
		if err := json.Unmarshal(ev.Data, &v); err != nil {
			t.Fatal(err)
		}
		if m := toolMessage(v.Messages, "write_1"); m != nil && streamed == nil {
			streamed = m // the first values event that has the result
		}
	}
	if streamed == nil || streamed.AdditionalKwargs == nil || !streamed.AdditionalKwargs.Rejected || streamed.Status != "error" {
		t.Fatalf("the rejected call's result as first streamed: %+v", streamed)
	}

	var th Thread
	h.json("GET", "/threads/t", nil, 200, &th)
	var vals struct {
		Messages []LCMessage `json:"messages"`
	}
	if err := json.Unmarshal(th.Values, &vals); err != nil {
		t.Fatal(err)
	}
	w := toolMessage(vals.Messages, "write_1")
	if w == nil || w.AdditionalKwargs == nil || !w.AdditionalKwargs.Rejected || w.Status != "error" {
		t.Errorf("the thread's write_1 result: %+v", w)
	}
	if a := toolMessage(vals.Messages, "task_a_1"); a == nil || a.AdditionalKwargs != nil || a.Status != "success" {
		t.Errorf("a call that ran is marked: %+v", a)
	}
	answer := vals.Messages[len(vals.Messages)-1]
	if text, _ := answer.Content.(string); answer.Type != "ai" || strings.Contains(text, "Done") || strings.Contains(text, "the report is in") ||
		!strings.Contains(text, "did not write /report.md") {
		t.Errorf("the demo's answer after the rejection: %+v", answer)
	}

	// The next turn asks for the same write; the agent answers it as
	// rejected without asking, and it is marked as such.
	turn("again please")
	h.json("GET", "/threads/t", nil, 200, &th)
	if err := json.Unmarshal(th.Values, &vals); err != nil {
		t.Fatal(err)
	}
	again := toolMessage(vals.Messages, "write_2")
	if again == nil || again.AdditionalKwargs == nil || !again.AdditionalKwargs.Rejected || !strings.Contains(again.Content.(string), "already rejected") {
		t.Errorf("the write rejected again without asking: %+v", again)
	}
	var st ThreadState
	h.json("GET", "/threads/t/state", nil, 200, &st)
	if err := json.Unmarshal(st.Values, &vals); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"write_1", "write_2"} {
		if m := toolMessage(vals.Messages, id); m == nil || m.AdditionalKwargs == nil || !m.AdditionalKwargs.Rejected {
			t.Errorf("the state's %s: %+v", id, m)
		}
	}
}

// TestRejectedSubagentCallMarked: a subagent's call the person rejects is
// marked in the subagent's streamed values (values|task:...) and in its
// state read by checkpoint namespace.
func TestRejectedSubagentCallMarked(t *testing.T) {
	model := subagentWriter("x")
	a, err := deepagents.New(deepagents.Config{Name: "boss", Model: model, InterruptOn: map[string]approve.Policy{"write_file": {}}})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, Config{Agents: []AgentSpec{{Name: "boss", Agent: a}}})
	h.json("POST", "/threads/sa/runs/wait", map[string]any{"assistant_id": "boss", "if_not_exists": "create",
		"input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "go"}}}}, 200, nil)
	_, evs := h.stream("POST", "/threads/sa/runs/stream", map[string]any{"assistant_id": "boss", "stream_subgraphs": true,
		"command": map[string]any{"resume": []any{map[string]any{"type": "reject", "message": "no"}}}})
	marked := false
	for _, ev := range evs {
		if ev.Event != "values|task:t1" {
			continue
		}
		var v struct {
			Messages []LCMessage `json:"messages"`
		}
		if err := json.Unmarshal(ev.Data, &v); err != nil {
			t.Fatal(err)
		}
		if m := toolMessage(v.Messages, "w"); m != nil {
			marked = m.AdditionalKwargs != nil && m.AdditionalKwargs.Rejected
		}
	}
	if !marked {
		t.Errorf("the subagent's rejected call is not marked in its streamed values: %v", eventNames(evs))
	}
	var st ThreadState
	h.json("GET", "/threads/sa/state?checkpoint_ns=task:t1", nil, 200, &st)
	var vals struct {
		Messages []LCMessage `json:"messages"`
	}
	if err := json.Unmarshal(st.Values, &vals); err != nil {
		t.Fatal(err)
	}
	if m := toolMessage(vals.Messages, "w"); m == nil || m.AdditionalKwargs == nil || !m.AdditionalKwargs.Rejected {
		t.Errorf("the subagent's state: %+v", m)
	}
}
