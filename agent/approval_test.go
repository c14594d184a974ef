package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/approve"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/runner"
	"github.com/deepagents-go/deepagents/subagent"
	"github.com/deepagents-go/deepagents/tool"
)

// A middleware that gates a name no tool has is reported by a warning
// right after run.start, under the middleware's name.
func TestMiddlewareGatesWithoutToolWarn(t *testing.T) {
	m := scripted.New(scripted.Script{"parent": steps(scripted.Step{Content: "hi"})}, scripted.Options{})
	gate := agent.Middleware{Name: "budget", Gates: []string{"spend", "write", "spend"}}
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{writeTool}, Middleware: []agent.Middleware{gate}})
	types, warn := warningOf(t, a)
	if warn == nil || types[1] != agent.Warning {
		t.Fatalf("events %v: want a warning right after run.start", types)
	}
	want := "budget names spend, which is not one of the agent's tools (write), so nothing waits for a decision on them"
	if warn.Source != "budget" || !slices.Equal(warn.Tools, []string{"spend"}) || warn.Text != want ||
		!slices.Equal(a.UngatedNames(), []string{"spend"}) {
		t.Errorf("warning %+v (ungated %v), want text %q", warn, a.UngatedNames(), want)
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
	gates := map[string]approve.Policy{"write": {}}
	tk, err := subagent.NewTask(subagent.Config{Model: m, Middleware: []agent.Middleware{approve.Gate(gates)}, Subagents: []subagent.Spec{
		{Name: "slow", Description: "Writes slowly.", Tools: []tool.Tool{write}},
		{Name: "quick", Description: "Writes.", Tools: []tool.Tool{write}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{tk}, Middleware: []agent.Middleware{approve.Gate(gates)}})
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
