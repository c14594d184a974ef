package temporal_test

import (
	"encoding/json"
	"slices"
	"testing"

	"go.temporal.io/sdk/workflow"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/approve"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/runner"
	"github.com/deepagents-go/deepagents/subagent"
	"github.com/deepagents-go/deepagents/temporal"
	"github.com/deepagents-go/deepagents/tool"
)

type approvalIn struct {
	Input     string           `json:"input,omitempty"`
	Decisions []agent.Decision `json:"decisions,omitempty"`
}

type approvalOut struct {
	Summary    *temporal.Summary `json:"summary"`
	Interrupts []agent.Interrupt `json:"interrupts,omitempty"`
}

// The approval scenario of subagent's cooperative runtime test, in
// workflows: a parent's write and a subagent's write both need a person's
// approval, so the first workflow's run stops with both calls waiting, and
// a second one resumes the thread with the decisions to its end. The
// thread is kept in memory by workflow code here, which only a test may do:
// a worker keeps it in the shared store, through activities (a later step).
func TestWorkflowRunsApproval(t *testing.T) {
	reg := temporal.NewRegistry()
	m := reg.Model("scripted", scripted.New(scripted.Script{
		"parent": {Steps: []scripted.Step{
			step("", scripted.StepCall{ID: "t1", Name: "task", Args: json.RawMessage(`{"description":"write a","subagent_type":"helper"}`)},
				scripted.StepCall{ID: "w1", Name: "write", Args: json.RawMessage(`{"path":"/p.txt","content":"parent"}`)}),
			step("all done"),
		}},
		"helper": {Steps: []scripted.Step{
			step("", scripted.StepCall{ID: "w2", Name: "write", Args: json.RawMessage(`{"path":"/a.txt","content":"a"}`)}, tc("note", `{}`)),
			step("wrote a"),
		}},
	}, scripted.Options{}))
	gates := map[string]approve.Policy{"write": {}}
	task, err := subagent.NewTask(subagent.Config{Model: m, BaseTools: []tool.Tool{writeTool}, Middleware: []agent.Middleware{approve.Gate(gates)},
		Subagents: []subagent.Spec{{Name: "helper", Description: "Helps.", Tools: []tool.Tool{noteTool}}}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{Model: m, Tools: []tool.Tool{writeTool, task}, Middleware: []agent.Middleware{approve.Gate(gates)}})
	if err != nil {
		t.Fatal(err)
	}
	saver := checkpoint.NewMemory(0)
	run := func(in approvalIn) approvalOut {
		t.Helper()
		env := newEnv(t, reg)
		env.RegisterWorkflowWithOptions(func(ctx workflow.Context, in approvalIn) (*approvalOut, error) {
			rt := temporal.NewRuntime(ctx)
			rctx, cancel := rt.Context()
			defer cancel()
			var input agent.Input
			if in.Input != "" {
				input = agent.Prompt(in.Input)
			}
			res, err := a.Invoke(rctx, input, agent.WithRuntime(rt), runner.Checkpoints(saver, "T"), agent.WithDecisions(in.Decisions...))
			if res == nil {
				return nil, err
			}
			return &approvalOut{Summary: temporal.Summarize("parent", "T", res), Interrupts: res.Interrupts}, nil
		}, workflow.RegisterOptions{Name: "approval"})
		env.ExecuteWorkflow("approval", in)
		if err := env.GetWorkflowError(); err != nil {
			t.Fatal(err)
		}
		var out approvalOut
		if err := env.GetWorkflowResult(&out); err != nil {
			t.Fatal(err)
		}
		return out
	}

	first := run(approvalIn{Input: "go"})
	if first.Summary.Status != agent.StatusInterrupted || len(first.Summary.Files) != 0 {
		t.Fatalf("first run: %+v", first.Summary)
	}
	var waiting []string
	for _, in := range first.Interrupts {
		waiting = append(waiting, in.CallID)
	}
	if !slices.Equal(waiting, []string{"w1", "w2"}) {
		t.Fatalf("waiting calls %v, want w1 (the parent's) and w2 (the subagent's)", waiting)
	}

	second := run(approvalIn{Decisions: []agent.Decision{{Type: agent.Approve, CallID: "w1"}, {Type: agent.Approve, CallID: "w2", Path: first.Interrupts[1].Path}}})
	s := second.Summary
	if s.Status != agent.StatusOK || s.Text != "all done" || !slices.Equal(s.Files, []string{"/a.txt", "/p.txt"}) {
		t.Fatalf("resume: %+v", s)
	}
	if len(s.Children) != 1 || s.Children[0].Text != "wrote a" {
		t.Errorf("children %+v", s.Children)
	}
}
