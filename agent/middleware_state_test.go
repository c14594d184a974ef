package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/runner"
	"github.com/deepagents-go/deepagents/tool"
)

type lateTool struct{}

func (lateTool) Spec() llm.ToolSpec {
	return llm.ToolSpec{Name: "late", Description: "Arrives later.", Parameters: json.RawMessage(`{"type":"object"}`)}
}

func (lateTool) Run(context.Context, *tool.Env, json.RawMessage) (tool.Result, error) {
	return tool.Text("late tool ran"), nil
}

// Middleware keep typed values in the run's state (saved with each step and
// read back), and may bind a tool from one step on.
func TestMiddlewareValuesAndStepTools(t *testing.T) {
	type seen struct {
		Rounds []int `json:"rounds"`
	}
	var reservedErr error
	mw := agent.Middleware{
		Name: "tracker",
		BeforeModel: func(_ context.Context, st agent.StepInfo, _ *llm.Request) error {
			v, _, err := agent.GetValue[seen](st.State, "tracker")
			if err != nil {
				return err
			}
			v.Rounds = append(v.Rounds, st.Round)
			reservedErr = st.SetValue("agent.loop", 1)
			return st.SetValue("tracker", v)
		},
		StepTools: func(_ context.Context, st agent.StepInfo) []tool.Tool {
			if st.Round >= 1 {
				return []tool.Tool{lateTool{}}
			}
			return nil
		},
	}
	m := scripted.New(scripted.Script{"parent": steps(
		scripted.Step{ToolCalls: []scripted.StepCall{{ID: "a", Name: "late", Args: json.RawMessage(`{}`)}}},
		scripted.Step{ToolCalls: []scripted.StepCall{{ID: "b", Name: "late", Args: json.RawMessage(`{}`)}}},
		scripted.Step{Content: "done"},
	)}, scripted.Options{})
	a, err := agent.New(agent.Config{Model: m, Middleware: []agent.Middleware{mw}})
	if err != nil {
		t.Fatal(err)
	}
	saver := checkpoint.NewMemory(0)
	res, err := a.Invoke(t.Context(), agent.Prompt("go"), runner.Checkpoints(saver, "mw"))
	if err != nil {
		t.Fatal(err)
	}
	if reservedErr == nil || !strings.Contains(reservedErr.Error(), "reserved") {
		t.Errorf("setting a reserved name: %v", reservedErr)
	}
	v, ok, err := agent.GetValue[seen](&res.State, "tracker")
	if err != nil || !ok || !slices.Equal(v.Rounds, []int{0, 1, 2}) {
		t.Fatalf("value %+v %v %v", v, ok, err)
	}
	rs, err := runner.LoadRunState(t.Context(), saver, "mw", agent.RootPath("parent"), false)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(rs.Values["tracker"]); got != `{"rounds":[0,1,2]}` {
		t.Fatalf("saved value %s", got)
	}
	var results []string
	for _, msg := range res.State.Messages {
		if msg.Role == llm.RoleTool {
			results = append(results, msg.Content)
		}
	}
	if len(results) != 2 || !strings.Contains(results[0], `no tool named "late"`) || results[1] != "late tool ran" {
		t.Fatalf("results %q", results)
	}
	recs := m.Records()
	if slices.ContainsFunc(recs[0].Request.Tools, func(s llm.ToolSpec) bool { return s.Name == "late" }) ||
		!slices.ContainsFunc(recs[1].Request.Tools, func(s llm.ToolSpec) bool { return s.Name == "late" }) {
		t.Fatalf("the late tool was not sent from round 1 only")
	}
}

type setter struct{}

func (setter) Spec() llm.ToolSpec {
	return llm.ToolSpec{Name: "set", Description: "Set k.", Parameters: json.RawMessage(`{"type":"object","properties":{"v":{"type":"integer"}}}`)}
}

func (setter) Run(_ context.Context, env *tool.Env, args json.RawMessage) (tool.Result, error) {
	var in struct{ V int }
	if err := json.Unmarshal(args, &in); err != nil {
		return tool.Result{}, err
	}
	before := string(env.State["k"])
	return tool.Result{Content: "saw " + before + " of " + fmt.Sprint(len(env.Calls)), State: map[string]json.RawMessage{"k": json.RawMessage(fmt.Sprint(in.V))}}, nil
}

// Tools set state values through their results: applied after the step, in
// call order, seen by the next step's calls, and saved with the step.
func TestToolsSetStateInCallOrder(t *testing.T) {
	m := scripted.New(scripted.Script{"parent": steps(
		scripted.Step{ToolCalls: []scripted.StepCall{{ID: "a", Name: "set", Args: json.RawMessage(`{"v":1}`)}, {ID: "b", Name: "set", Args: json.RawMessage(`{"v":2}`)}}},
		scripted.Step{ToolCalls: []scripted.StepCall{{ID: "c", Name: "set", Args: json.RawMessage(`{"v":3}`)}}},
		scripted.Step{Content: "done"},
	)}, scripted.Options{})
	a, err := agent.New(agent.Config{Model: m, Tools: []tool.Tool{setter{}}})
	if err != nil {
		t.Fatal(err)
	}
	saver := checkpoint.NewMemory(0)
	res, err := a.Invoke(t.Context(), agent.Prompt("go"), runner.Checkpoints(saver, "ts"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, msg := range res.State.Messages {
		if msg.Role == llm.RoleTool {
			got = append(got, msg.Content)
		}
	}
	if !slices.Equal(got, []string{"saw  of 2", "saw  of 2", "saw 2 of 1"}) || string(res.State.Values["k"]) != "3" {
		t.Fatalf("results %q, k=%s", got, res.State.Values["k"])
	}
	rs, err := runner.LoadRunState(t.Context(), saver, "ts", agent.RootPath("parent"), false)
	if err != nil || string(rs.Values["k"]) != "3" {
		t.Fatalf("saved k=%s (%v)", rs.Values["k"], err)
	}
}
