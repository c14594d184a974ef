package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/tool"
)

// fakeNested is a tool that runs "agents" of its own without a model: each
// call returns the child run its arguments describe, and may emit a
// subagent.end event whose run differs from the one returned.
type fakeNested struct{}

type fakeNestedArgs struct {
	Child string `json:"child"` // path of the child run to return; "" for none
	In    int    `json:"in"`    // the child's own input tokens
	Grand int    `json:"grand"` // input tokens of a grandchild under it (0: none)
	Decoy bool   `json:"decoy"` // emit a subagent.end event carrying another run
}

func (fakeNested) Spec() llm.ToolSpec {
	return llm.ToolSpec{Name: "nest", Description: "Run a pretend child.", Parameters: json.RawMessage(`{"type":"object"}`)}
}

func (f fakeNested) Run(ctx context.Context, env *tool.Env, args json.RawMessage) (tool.Result, error) {
	res, _, err := f.RunNested(ctx, env, args, agent.Host{})
	return res, err
}

func (fakeNested) RunNested(_ context.Context, env *tool.Env, raw json.RawMessage, host agent.Host) (tool.Result, *agent.Result, error) {
	var a fakeNestedArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return tool.Result{}, nil, err
	}
	if host.Path.String() != env.Agent {
		return tool.Result{}, nil, fmt.Errorf("host path %q, env.Agent %q", host.Path, env.Agent)
	}
	if a.Decoy && host.Emit != nil {
		path := host.Path.Child("decoy", env.CallID)
		decoy := &agent.Result{Agent: path, Status: agent.StatusOK,
			Usage: llm.Usage{InputTokens: 1000}, UsageByAgent: map[string]llm.Usage{"decoy": {InputTokens: 1000}}}
		host.Emit(agent.Event{Type: agent.SubagentEnd, Agent: host.Path, Subagent: &agent.SubagentInfo{
			Name: "decoy", CallID: env.CallID, Path: path, Status: agent.StatusOK, Run: decoy}})
	}
	if a.Child == "" {
		return tool.Text("no child"), nil, nil
	}
	own := llm.Usage{InputTokens: a.In}
	cp, err := agent.ParsePath(a.Child)
	if err != nil {
		return tool.Result{}, nil, err
	}
	child := &agent.Result{Agent: cp, Status: agent.StatusOK, Usage: own,
		UsageByAgent: map[string]llm.Usage{a.Child: own}}
	if a.Grand > 0 {
		g := llm.Usage{InputTokens: a.Grand}
		gp := cp.Child("g", "x").String()
		child.Children = map[string]*agent.Result{"x": {Agent: cp.Child("g", "x"), Status: agent.StatusOK, Usage: g, UsageByAgent: map[string]llm.Usage{gp: g}}}
		child.UsageByAgent[gp] = g
		child.Usage = own.Add(g)
	}
	return tool.Text("child done"), child, nil
}

// A nested tool's child run reaches Result.Children and the usage roll-up
// through its return value alone: a subagent.end event in the stream does
// not add or replace children.
func TestNestedChildResultsComeFromTheToolCall(t *testing.T) {
	m := scripted.New(scripted.Script{"parent": steps(
		scripted.Step{ToolCalls: []scripted.StepCall{
			{ID: "c1", Name: "nest", Args: json.RawMessage(`{"child":"parent / a#c1","in":10,"grand":5}`)},
			{ID: "c2", Name: "nest", Args: json.RawMessage(`{"child":"parent / b#c2","in":20,"decoy":true}`)},
			{ID: "c3", Name: "nest", Args: json.RawMessage(`{"decoy":true}`)},
		}, Usage: &llm.Usage{InputTokens: 100}},
		scripted.Step{Content: "done", Usage: &llm.Usage{InputTokens: 200}},
	)}, scripted.Options{})
	res, err := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{fakeNested{}}}).Invoke(t.Context(), agent.Prompt("go"))
	if err != nil {
		t.Fatal(err)
	}
	if got := len(res.Children); got != 2 {
		t.Fatalf("%d children, want 2 (c1, c2): %v", got, slices.Collect(maps.Keys(res.Children)))
	}
	if res.Children["c1"].Agent.String() != "parent / a#c1" || res.Children["c2"].Agent.String() != "parent / b#c2" {
		t.Errorf("children %q, %q", res.Children["c1"].Agent, res.Children["c2"].Agent)
	}
	if c, ok := res.Child("x"); !ok || c.Agent.String() != "parent / a#c1 / g#x" {
		t.Errorf("grandchild x not found through Child: %v", c)
	}
	want := map[string]llm.Usage{
		"parent":              {InputTokens: 300},
		"parent / a#c1":       {InputTokens: 10},
		"parent / a#c1 / g#x": {InputTokens: 5},
		"parent / b#c2":       {InputTokens: 20},
	}
	if !maps.Equal(res.UsageByAgent, want) {
		t.Errorf("UsageByAgent = %v, want %v", res.UsageByAgent, want)
	}
	if res.Usage.InputTokens != 335 {
		t.Errorf("Usage.InputTokens = %d, want 335 (300 own + 15 + 20)", res.Usage.InputTokens)
	}
}

// A middleware that answers a nested call without running it leaves no
// child behind.
func TestSkippedNestedCallHasNoChild(t *testing.T) {
	m := scripted.New(scripted.Script{"parent": steps(
		scripted.Step{ToolCalls: []scripted.StepCall{{ID: "c1", Name: "nest", Args: json.RawMessage(`{"child":"parent / a#c1","in":10}`)}}},
		scripted.Step{Content: "done"},
	)}, scripted.Options{})
	gate := agent.Middleware{Name: "gate", WrapTool: func(context.Context, *agent.ToolCall, agent.ToolFunc) (tool.Result, error) {
		return tool.Errorf("not allowed"), nil
	}}
	res, err := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{fakeNested{}}, Middleware: []agent.Middleware{gate}}).Invoke(t.Context(), agent.Prompt("go"))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Children) != 0 {
		t.Errorf("children %v, want none", res.Children)
	}
	if _, ok := res.UsageByAgent["parent / a#c1"]; ok {
		t.Errorf("usage of a child that never ran: %v", res.UsageByAgent)
	}
}
