package temporal_test

import (
	"encoding/json"
	"testing"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/subagent"
	"github.com/deepagents-go/deepagents/temporal"
	"github.com/deepagents-go/deepagents/tool"
)

// A task call with run_in_background in a workflow starts nothing: it is
// answered with an error result saying background subagents do not run on
// Temporal yet, and the run goes on to its answer (no child workflow).
func TestBackgroundTaskIsRefusedOnTemporal(t *testing.T) {
	reg := temporal.NewRegistry()
	sm := scripted.New(scripted.Script{
		"parent": {Steps: []scripted.Step{
			step("", scripted.StepCall{ID: "t1", Name: "task", Args: json.RawMessage(`{"description":"write a","subagent_type":"general-purpose","run_in_background":true}`)}),
			step("went on"),
		}},
		"general-purpose": {Steps: []scripted.Step{step("never")}},
	}, scripted.Options{})
	m := reg.Model("scripted", sm)
	task, err := subagent.NewTask(subagent.Config{Model: m, BaseTools: []tool.Tool{writeTool}, Subagents: []subagent.Spec{subagent.GeneralPurpose()}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{Model: m, Tools: []tool.Tool{writeTool, task}})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Agent("parent", a); err != nil {
		t.Fatal(err)
	}
	env := newEnv(t, reg)
	children := 0
	env.SetOnChildWorkflowStartedListener(func(_ *workflow.Info, _ workflow.Context, _ converter.EncodedValues) { children++ })
	env.ExecuteWorkflow(temporal.RunAgentWorkflow, temporal.RunInput{Agent: "parent", Input: "go"})
	s := summary(t, env)
	if s.Status != agent.StatusOK || s.Text != "went on" || len(s.Children) != 0 || children != 0 {
		t.Fatalf("summary %+v, %d child workflows", s, children)
	}
	var result *llm.Message
	for _, r := range sm.Records() {
		for i, msg := range r.Request.Messages {
			if msg.Role == llm.RoleTool && msg.ToolCallID == "t1" {
				result = &r.Request.Messages[i]
			}
		}
	}
	if result == nil || !result.IsError || result.Content != subagent.TemporalText {
		t.Fatalf("the task call's result: %+v", result)
	}
}
