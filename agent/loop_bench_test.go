package agent_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/tool"
)

// BenchmarkLoop runs a whole in-memory run: three steps, each writing a file
// through one tool call, then an answer.
func BenchmarkLoop(b *testing.B) {
	st := scripted.Step{ToolCalls: []scripted.StepCall{call("write", `{"path":"/a.txt","content":"hello"}`)}}
	for b.Loop() {
		m := scripted.New(scripted.Script{"parent": steps(st, st, st, scripted.Step{Content: "done"})}, scripted.Options{})
		a, err := agent.New(agent.Config{Model: m, Tools: []tool.Tool{writeTool}})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := a.Invoke(b.Context(), agent.Prompt("go")); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEventJSON encodes the events a subagent's step reports.
func BenchmarkEventJSON(b *testing.B) {
	path := agent.RootPath("parent").Child("general-purpose", "call_1")
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	evs := []agent.Event{
		{Type: agent.ModelResponse, Agent: path, TaskCall: "call_1", Time: now,
			Response: &agent.ResponseInfo{Round: 1, Usage: llm.Usage{InputTokens: 100, OutputTokens: 20}, Text: "hi", ToolCalls: []string{"write"}}},
		{Type: agent.ToolStart, Agent: path, TaskCall: "call_1", Time: now,
			Tool: &agent.ToolInfo{CallID: "call_2", Name: "write", Args: json.RawMessage(`{"path":"/a.txt","content":"hello"}`)}},
		{Type: agent.SubagentStart, Agent: agent.RootPath("parent"), Time: now,
			Subagent: &agent.SubagentInfo{Name: "general-purpose", Mode: "task", CallID: "call_1", Path: path, Task: "do it"}},
	}
	for b.Loop() {
		for _, ev := range evs {
			if _, err := json.Marshal(ev); err != nil {
				b.Fatal(err)
			}
		}
	}
}
