package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/approve"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/runner"
	"github.com/deepagents-go/deepagents/subagent"
	"github.com/deepagents-go/deepagents/tool"
)

// sameIDFamily is a parent whose first step starts the subagents alpha
// (task call t1) and, with parentToo false, beta (t2); with parentToo the
// parent makes its own write call instead of starting beta. Every model
// numbers its write call w1, so two calls wait with one id in two agents.
// written lists the files the write tool wrote.
func sameIDFamily(t *testing.T, parentToo bool) (a *agent.Agent, written func() []string) {
	t.Helper()
	var mu sync.Mutex
	var files []string
	write := tool.MustFunc("write", "Write a file.", func(ctx context.Context, env *tool.Env, in writeIn) (string, error) {
		mu.Lock()
		files = append(files, in.Path)
		mu.Unlock()
		return "wrote " + in.Path, env.Files.Write(ctx, in.Path, in.Content)
	})
	w1 := func(path string) scripted.StepCall {
		return scripted.StepCall{ID: "w1", Name: "write", Args: json.RawMessage(`{"path":"` + path + `","content":"x"}`)}
	}
	task := func(id, name string) scripted.StepCall {
		return scripted.StepCall{ID: id, Name: "task", Args: json.RawMessage(`{"description":"write","subagent_type":"` + name + `"}`)}
	}
	first := []scripted.StepCall{task("t1", "alpha"), task("t2", "beta")}
	if parentToo {
		first = []scripted.StepCall{task("t1", "alpha"), w1("/parent.md")}
	}
	m := scripted.New(scripted.Script{
		"parent": steps(scripted.Step{ToolCalls: first}, scripted.Step{Content: "parent done"}),
		"alpha":  steps(scripted.Step{ToolCalls: []scripted.StepCall{w1("/alpha.md")}}, scripted.Step{Content: "alpha done"}),
		"beta":   steps(scripted.Step{ToolCalls: []scripted.StepCall{w1("/beta.md")}}, scripted.Step{Content: "beta done"}),
	}, scripted.Options{})
	gates := map[string]approve.Policy{"write": {}}
	tk, err := subagent.NewTask(subagent.Config{Model: m, Middleware: []agent.Middleware{approve.Gate(gates)}, Subagents: []subagent.Spec{
		{Name: "alpha", Description: "Writes alpha.", Tools: []tool.Tool{write}},
		{Name: "beta", Description: "Writes beta.", Tools: []tool.Tool{write}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	a = newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{tk, write}, Middleware: []agent.Middleware{approve.Gate(gates)}})
	return a, func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := slices.Clone(files)
		slices.Sort(out)
		return out
	}
}

// When two agents of one run wait with the same call id (two subagents, or
// the parent and a subagent), a decision that names one agent's path is
// applied to that agent's call only: approving one and rejecting the other
// writes the approved agent's file and not the other's, whichever of the
// two decisions comes first in the list. A decision without a path is
// refused as ambiguous, before anything runs.
func TestDecisionForOneAgentIsNotAppliedToAnother(t *testing.T) {
	for _, tc := range []struct {
		name      string
		parentToo bool
		approve   string // the path whose call is approved
		reject    string
		want      string // the file written
	}{
		{"two subagents, first approved", false, "parent / alpha#t1", "parent / beta#t2", "/alpha.md"},
		{"two subagents, second approved", false, "parent / beta#t2", "parent / alpha#t1", "/beta.md"},
		{"parent approved, subagent rejected", true, "parent", "parent / alpha#t1", "/parent.md"},
		{"subagent approved, parent rejected", true, "parent / alpha#t1", "parent", "/alpha.md"},
	} {
		for _, rejectFirst := range []bool{false, true} {
			name := tc.name
			if rejectFirst {
				name += ", reject listed first"
			}
			t.Run(name, func(t *testing.T) {
				ctx := t.Context()
				a, written := sameIDFamily(t, tc.parentToo)
				saver := checkpoint.NewMemory(0)
				res, err := a.Invoke(ctx, agent.Prompt("go"), runner.Checkpoints(saver, "same"))
				if !errors.Is(err, agent.ErrInterrupted) || len(res.Interrupts) != 2 {
					t.Fatalf("first run: %v, interrupts %+v", err, res.Interrupts)
				}
				var paths []string
				for _, in := range res.Interrupts {
					if in.CallID != "w1" {
						t.Fatalf("waiting %+v; both calls should be w1", res.Interrupts)
					}
					paths = append(paths, in.Path.String())
				}
				if !slices.Contains(paths, tc.approve) || !slices.Contains(paths, tc.reject) {
					t.Fatalf("waiting in %q, want %q and %q", paths, tc.approve, tc.reject)
				}
				// Without a path the decision could be either call's.
				var de *agent.DecisionError
				bare := []agent.Decision{{Type: agent.Approve, CallID: "w1"}}
				if err := a.CheckDecisions(bare, res.Interrupts); !errors.As(err, &de) {
					t.Errorf("CheckDecisions of a decision without a path: %v", err)
				}
				if _, err := a.Invoke(ctx, agent.Input{}, runner.Checkpoints(saver, "same"), agent.WithDecisions(bare...)); !errors.As(err, &de) {
					t.Errorf("resume with a decision without a path: %v", err)
				}
				if got := written(); len(got) != 0 {
					t.Fatalf("written before any decision: %v", got)
				}
				ds := []agent.Decision{
					{Type: agent.Approve, CallID: "w1", Path: mustPath(t, tc.approve)},
					{Type: agent.Reject, CallID: "w1", Path: mustPath(t, tc.reject), Message: "not this one"},
				}
				if rejectFirst {
					ds[0], ds[1] = ds[1], ds[0]
				}
				if err := a.CheckDecisions(ds, res.Interrupts); err != nil {
					t.Fatalf("CheckDecisions refused decisions with paths: %v", err)
				}
				res, err = a.Invoke(ctx, agent.Input{}, runner.Checkpoints(saver, "same"), agent.WithDecisions(ds...))
				if err != nil || res.Status != agent.StatusOK {
					t.Fatalf("resume: %v (status %v, waiting %+v)", err, res.Status, res.Interrupts)
				}
				if got := written(); !slices.Equal(got, []string{tc.want}) {
					t.Errorf("written %v, want only %s", got, tc.want)
				}
				if !slices.Equal(res.Changed, []string{tc.want}) {
					t.Errorf("files changed %v, want only %s", res.Changed, tc.want)
				}
			})
		}
	}
}

func mustPath(t *testing.T, text string) agent.Path {
	t.Helper()
	p, err := agent.ParsePath(text)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The paths of waiting calls and decisions are typed but read and written as
// their text: a waiting call always has "path" (empty at no agent), a
// decision only when it names one.
func TestInterruptAndDecisionPathJSON(t *testing.T) {
	nested := agent.RootPath("parent").Child("general-purpose", "t1")
	for _, tc := range []struct {
		v    any
		want string
	}{
		{agent.Interrupt{CallID: "c1", Tool: "write"}, `{"path":"","call_id":"c1","tool":"write","args":null,"allowed_decisions":null}`},
		{agent.Interrupt{Path: nested, CallID: "c1", Tool: "write"}, `{"path":"parent / general-purpose#t1","call_id":"c1","tool":"write","args":null,"allowed_decisions":null}`},
		{agent.Decision{Type: agent.Approve, CallID: "c1"}, `{"type":"approve","call_id":"c1"}`},
		{agent.Decision{Type: agent.Approve, CallID: "c1", Path: nested}, `{"type":"approve","call_id":"c1","path":"parent / general-purpose#t1"}`},
	} {
		b, err := json.Marshal(tc.v)
		if err != nil || string(b) != tc.want {
			t.Errorf("%+v: %s, %v; want %s", tc.v, b, err, tc.want)
		}
	}
	var in agent.Interrupt
	if err := json.Unmarshal([]byte(`{"path":"parent / general-purpose#t1","call_id":"c1"}`), &in); err != nil || !in.Path.Equal(nested) {
		t.Errorf("read back: %+v, %v", in, err)
	}
	var d agent.Decision
	if err := json.Unmarshal([]byte(`{"type":"approve","call_id":"c1","path":""}`), &d); err != nil || d.Path != nil {
		t.Errorf("empty path: %+v, %v", d, err)
	}
	if err := json.Unmarshal([]byte(`{"type":"approve","call_id":"c1","path":"parent / "}`), &d); err == nil {
		t.Error("a decision with a path that is not one was read")
	}
}
