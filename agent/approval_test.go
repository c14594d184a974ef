package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/runner"
	"github.com/deepagents-go/deepagents/subagent"
	"github.com/deepagents-go/deepagents/tool"
)

// A gate on a name no tool has (a misspelling) is reported by a warning
// right after run.start, and the agent says which names those are.
func TestGateWithoutToolWarns(t *testing.T) {
	stepTools := agent.Middleware{Name: "late", StepTools: func(context.Context, agent.StepInfo) []tool.Tool { return nil }}
	for _, tc := range []struct {
		name  string
		gates map[string]agent.Approval
		mw    []agent.Middleware
		want  string
	}{
		{"misspelt", map[string]agent.Approval{"wirte": {}, "write": {}}, nil,
			"interrupt_on names wirte, which is not one of the agent's tools (write), so nothing waits for a decision on them"},
		{"two, with step tools", map[string]agent.Approval{"b": {}, "a": {}}, []agent.Middleware{stepTools},
			"interrupt_on names a, b, which are not among the agent's tools (write), so their calls wait only if a middleware adds a tool by that name for a step"},
		{"all bound", map[string]agent.Approval{"write": {}}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := scripted.New(scripted.Script{"parent": steps(scripted.Step{Content: "hi"})}, scripted.Options{})
			a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{writeTool}, InterruptOn: tc.gates, Middleware: tc.mw})
			types, warn := warningOf(t, a)
			if tc.want == "" {
				if warn != nil || len(a.UngatedNames()) != 0 {
					t.Fatalf("unexpected warning %+v (ungated %v)", warn, a.UngatedNames())
				}
				return
			}
			if warn == nil || types[1] != agent.Warning {
				t.Fatalf("events %v: want a warning right after run.start", types)
			}
			if warn.Source != "interrupt_on" || !slices.Equal(warn.Tools, a.UngatedNames()) || warn.Text != tc.want {
				t.Errorf("warning %+v (ungated %v), want text %q", warn, a.UngatedNames(), tc.want)
			}
		})
	}
}

// Calls that wait for a person in parallel subagents are listed in the
// order of the task calls that started them, however the subagents were
// scheduled: the first task's subagent is the slower one here.
func TestSubagentsWaitingCallsAreInCallOrder(t *testing.T) {
	write := tool.MustFunc("write", "Write a file.", func(ctx context.Context, env *tool.Env, in writeIn) (string, error) {
		return "wrote " + in.Path, env.Files.Write(ctx, in.Path, in.Content)
	})
	slow := 40.0
	task := func(id, name string) scripted.StepCall {
		return scripted.StepCall{ID: id, Name: "task", Args: json.RawMessage(`{"description":"write","subagent_type":"` + name + `"}`)}
	}
	wr := func(id, path string) scripted.StepCall {
		return scripted.StepCall{ID: id, Name: "write", Args: json.RawMessage(`{"path":"` + path + `","content":"x"}`)}
	}
	m := scripted.New(scripted.Script{
		"parent": steps(scripted.Step{ToolCalls: []scripted.StepCall{task("t1", "slow"), task("t2", "quick")}}, scripted.Step{Content: "done"}),
		"slow":   steps(scripted.Step{DelayMS: &slow, ToolCalls: []scripted.StepCall{wr("s1", "/s.md")}}, scripted.Step{Content: "s"}),
		"quick":  steps(scripted.Step{ToolCalls: []scripted.StepCall{wr("q1", "/q.md")}}, scripted.Step{Content: "q"}),
	}, scripted.Options{})
	gates := map[string]agent.Approval{"write": {}}
	tk, err := subagent.NewTask(subagent.Config{Model: m, InterruptOn: gates, Subagents: []subagent.Spec{
		{Name: "slow", Description: "Writes slowly.", Tools: []tool.Tool{write}},
		{Name: "quick", Description: "Writes.", Tools: []tool.Tool{write}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{tk}, InterruptOn: gates})
	res, err := a.Invoke(t.Context(), agent.Prompt("go"), runner.Checkpoints(checkpoint.NewMemory(0), "T"))
	if !errors.Is(err, agent.ErrInterrupted) {
		t.Fatalf("run: %v", err)
	}
	var got []string
	for _, in := range res.Interrupts {
		got = append(got, in.CallID)
	}
	if want := []string{"s1", "q1"}; !slices.Equal(got, want) {
		t.Errorf("waiting calls %v, want %v (the task calls' order)", got, want)
	}
}
