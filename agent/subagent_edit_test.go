package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/approve"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/runner"
	"github.com/deepagents-go/deepagents/subagent"
	"github.com/deepagents-go/deepagents/tool"
)

// subEditFamily is a parent whose task call t1 starts the subagent worker;
// with nested, worker's own task call t2 starts inner, which makes the
// write call w1 instead. The write call waits for a decision (the parent's
// policy, inherited). writes counts the times write ran.
func subEditFamily(t *testing.T, nested bool) (a *agent.Agent, writes *atomic.Int32) {
	t.Helper()
	writes = &atomic.Int32{}
	write := tool.MustFunc("write", "Write a file.", func(ctx context.Context, env *tool.Env, in writeIn) (string, error) {
		writes.Add(1)
		return "wrote " + in.Path, env.Files.Write(ctx, in.Path, in.Content)
	})
	w1 := scripted.StepCall{ID: "w1", Name: "write", Args: json.RawMessage(`{"path":"/w.md","content":"w"}`)}
	task := func(id, name string) scripted.StepCall {
		return scripted.StepCall{ID: id, Name: "task", Args: json.RawMessage(`{"description":"write","subagent_type":"` + name + `"}`)}
	}
	script := scripted.Script{
		"parent": steps(scripted.Step{ToolCalls: []scripted.StepCall{task("t1", "worker")}}, scripted.Step{Content: "parent done"}),
		"worker": steps(scripted.Step{ToolCalls: []scripted.StepCall{w1}}, scripted.Step{Content: "written"}),
	}
	if nested {
		script["worker"] = steps(scripted.Step{ToolCalls: []scripted.StepCall{task("t2", "inner")}}, scripted.Step{Content: "written"})
		script["inner"] = steps(scripted.Step{ToolCalls: []scripted.StepCall{w1}}, scripted.Step{Content: "inner wrote"})
	}
	m := scripted.New(script, scripted.Options{})
	gates := map[string]approve.Policy{"write": {}}
	workerTools := []tool.Tool{write}
	if nested {
		inner, err := subagent.NewTask(subagent.Config{Model: m, Middleware: []agent.Middleware{approve.Gate(gates)}, Subagents: []subagent.Spec{
			{Name: "inner", Description: "Writes.", Tools: []tool.Tool{write}},
		}})
		if err != nil {
			t.Fatal(err)
		}
		workerTools = []tool.Tool{inner}
	}
	tk, err := subagent.NewTask(subagent.Config{Model: m, Middleware: []agent.Middleware{approve.Gate(gates)}, Subagents: []subagent.Spec{
		{Name: "worker", Description: "Works.", Tools: workerTools},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{tk}, Middleware: []agent.Middleware{approve.Gate(gates)}}), writes
}

// An edit of a call waiting in a subagent (or in a subagent's subagent)
// whose arguments do not fit the subagent's tool is refused before
// anything runs, as one of the top-level agent's own calls is: by
// CheckDecisions and by the run, which stays interrupted with the thread
// unchanged. An edit that fits then runs.
func TestSubagentEditThatDoesNotFitIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		nested bool
		path   string
	}{
		{"child", false, "parent / worker#t1"},
		{"grandchild", true, "parent / worker#t1 / inner#t2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			a, writes := subEditFamily(t, tc.nested)
			saver := checkpoint.NewMemory(0)
			res, err := a.Invoke(ctx, agent.Prompt("go"), runner.Checkpoints(saver, "sub"))
			if !errors.Is(err, agent.ErrInterrupted) || len(res.Interrupts) != 1 || res.Interrupts[0].Path.String() != tc.path {
				t.Fatalf("first run: %v, interrupts %+v", err, res.Interrupts)
			}
			waiting := res.Interrupts
			for _, args := range []string{`{"file_path":"/w.md","content":"w"}`, `{"path":5,"content":"w"}`, `{"content":"w"}`} {
				bad := agent.Decision{Type: agent.Edit, CallID: "w1", Args: json.RawMessage(args)}
				var de *agent.DecisionError
				if err := a.CheckDecisions([]agent.Decision{bad}, waiting); !errors.As(err, &de) || !strings.Contains(err.Error(), `call "w1" do not fit write`) {
					t.Errorf("CheckDecisions, edit %s: %v", args, err)
				}
				named := bad
				named.Path = mustPath(t, tc.path)
				if err := a.CheckDecisions([]agent.Decision{named}, waiting); !errors.As(err, &de) {
					t.Errorf("CheckDecisions, edit %s naming the path: %v", args, err)
				}
				res, err := a.Invoke(ctx, agent.Input{}, runner.Checkpoints(saver, "sub"), agent.WithDecisions(bad))
				if !errors.As(err, &de) || res.Status != agent.StatusInterrupted || len(res.Interrupts) != 1 || res.Interrupts[0].Path.String() != tc.path {
					t.Fatalf("resume, edit %s: %v (status %v, waiting %+v)", args, err, res.Status, res.Interrupts)
				}
			}
			rs, err := runner.LoadRunState(ctx, saver, "sub", agent.RootPath("parent"), false)
			if err != nil || rs.Status != agent.StatusInterrupted || len(rs.Loop.Interrupts) != 1 || writes.Load() != 0 {
				t.Fatalf("the thread changed: %v, %+v, %d writes", err, rs, writes.Load())
			}
			good := agent.Decision{Type: agent.Edit, CallID: "w1", Args: json.RawMessage(`{"path":"/v.md","content":"v"}`)}
			if err := a.CheckDecisions([]agent.Decision{good}, waiting); err != nil {
				t.Fatalf("CheckDecisions refused an edit that fits: %v", err)
			}
			res, err = a.Invoke(ctx, agent.Input{}, runner.Checkpoints(saver, "sub"), agent.WithDecisions(good))
			if err != nil || res.Status != agent.StatusOK || writes.Load() != 1 {
				t.Fatalf("resume with an edit that fits: %v (status %v, %d writes)", err, res.Status, writes.Load())
			}
		})
	}
}

// A waiting call whose agent or tool this agent cannot find is left to its
// tool to check when it runs, as before: no decision is refused for it.
func TestEditOfUnknownAgentIsLeftToTheTool(t *testing.T) {
	a, _ := subEditFamily(t, true)
	bad := json.RawMessage(`{"file_path":"/w.md"}`)
	for _, in := range []agent.Interrupt{
		{Path: agent.RootPath("parent").Child("nobody", "t1"), CallID: "w1", Tool: "write"},
		{Path: agent.RootPath("parent").Child("worker", "t1").Child("nobody", "t2"), CallID: "w1", Tool: "write"},
		{Path: agent.RootPath("parent").Child("worker", "t1"), CallID: "w1", Tool: "write"}, // worker has no write here
		{Path: agent.RootPath("parent").Child("worker", "t1").Child("inner", "t2"), CallID: "w1", Tool: "unknown"},
		{Path: agent.RootPath("other").Child("worker", "t1"), CallID: "w1", Tool: "write"}, // not below this agent
	} {
		in.Allowed = agent.AllDecisions
		if err := a.CheckDecisions([]agent.Decision{{Type: agent.Edit, CallID: "w1", Args: bad}}, []agent.Interrupt{in}); err != nil {
			t.Errorf("%s %s: %v", in.Path, in.Tool, err)
		}
	}
}
