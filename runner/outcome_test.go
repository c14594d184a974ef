package runner

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/agent"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/tool"
)

// A result write keeps the tool's text once, in its message; writes saved
// before that (the text in the data too) still read back.
func TestOutcomeContentFromTheResultMessage(t *testing.T) {
	for _, c := range []struct {
		name, data, msg, want string
	}{
		{"the text in the message only", `{"content":"","content_in_result":true,"duration_ms":2}`, "listing of /", "listing of /"},
		{"an older write with both", `{"content":"old text","duration_ms":2}`, "old text", "old text"},
		{"text that differs from the message", `{"content":"raw"}`, "raw, shortened", "raw"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var done map[string]agent.CallOutcome
			w := checkpoint.Write{CallID: "call_1", Kind: checkpoint.KindResult, Data: []byte(c.data),
				Result: llm.Message{Role: llm.RoleTool, ToolCallID: "call_1", Content: c.msg}}
			if err := decodeOutcome(&done, w); err != nil {
				t.Fatal(err)
			}
			if got := done["call_1"].Content; got != c.want {
				t.Errorf("content %q, want %q", got, c.want)
			}
		})
	}
}

// finishCall saves a call's text once: in the result write's message, with
// the data saying so, and LoadRunState reads it back from there.
func TestResultWriteKeepsTheTextOnce(t *testing.T) {
	m := scripted.New(scripted.Script{"parent": scripted.AgentScript{Steps: []scripted.Step{
		{ToolCalls: []scripted.StepCall{{ID: "w1", Name: "echo", Args: json.RawMessage(`{}`)}}},
		{Content: "done"},
	}}}, scripted.Options{})
	echo := tool.MustFunc("echo", "Say something.", func(ctx context.Context, _ *tool.Env, _ struct{}) (string, error) {
		return "a tool result of some length", nil
	})
	a, err := agent.New(agent.Config{Model: m, Tools: []tool.Tool{echo}})
	if err != nil {
		t.Fatal(err)
	}
	saver := checkpoint.NewMemory(0)
	if _, err := agent.Drain(a.Run(t.Context(), agent.Prompt("go"), Checkpoints(saver, "once")), nil); err != nil {
		t.Fatal(err)
	}
	cps, err := saver.List(t.Context(), checkpoint.ListOptions{ThreadID: "once"})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, cp := range cps {
		full, err := saver.Get(t.Context(), checkpoint.Ref{ThreadID: "once", ID: cp.ID})
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range full.Pending {
			if w.CallID != "w1" || w.Kind != checkpoint.KindResult {
				continue
			}
			found = true
			if w.Result.Content != "a tool result of some length" {
				t.Errorf("the write's message holds %q", w.Result.Content)
			}
			if strings.Contains(string(w.Data), "some length") || !strings.Contains(string(w.Data), `"content_in_result":true`) {
				t.Errorf("the write's data repeats the text or does not say where it is: %s", w.Data)
			}
			var done map[string]agent.CallOutcome
			if err := decodeOutcome(&done, w); err != nil || done["w1"].Content != "a tool result of some length" {
				t.Errorf("read back: %q (%v)", done["w1"].Content, err)
			}
		}
	}
	if !found {
		t.Fatal("no result write for the call was saved")
	}
}
