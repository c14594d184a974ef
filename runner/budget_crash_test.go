package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/budget"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/runner"
	"github.com/deepagents-go/deepagents/tool"
)

// crashOnce is a tool whose first call kills the process (cancels the
// run) once ready says so; later calls, after the resume, answer "ok".
func crashOnce(kill *context.CancelFunc, ready func() bool) tool.Tool {
	var calls atomic.Int32
	return tool.MustFunc("crash", "Stop the process.", func(ctx context.Context, _ *tool.Env, _ struct{}) (string, error) {
		if calls.Add(1) > 1 {
			return "ok", nil
		}
		for ready != nil && !ready() {
			select {
			case <-ctx.Done():
				return "", ctx.Err()
			case <-time.After(5 * time.Millisecond):
			}
		}
		(*kill)()
		return "", errors.New("killed")
	})
}

func budgetAgent(t *testing.T, script string, crash tool.Tool) *agent.Agent {
	t.Helper()
	var s scripted.Script
	if err := json.Unmarshal([]byte(script), &s); err != nil {
		t.Fatal(err)
	}
	a, err := deepagents.New(deepagents.Config{Model: scripted.New(s, scripted.Options{}), Tools: []tool.Tool{crash},
		Budget: budget.New(budget.Options{Limits: budget.Limits{Tokens: 10_000}})})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func savedSpent(t *testing.T, saver checkpoint.Saver, thread string) budget.Spent {
	t.Helper()
	rs, err := runner.LoadRunState(context.Background(), saver, thread, agent.RootPath("parent"), false)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := budget.SpentOf(rs.Values)
	for name := range rs.Values {
		if name != budget.ValueName && name != "agent.calibration" {
			t.Errorf("a value is left in the state: %s", name)
		}
	}
	return s
}

// What a subagent spent reaches its parent's saved spending whenever the
// process dies: while the subagent runs (it resumes from what it had
// spent), and after it finished but before the parent's next model call
// (its call's saved result hands it over).
func TestSubagentSpendingSurvivesACrash(t *testing.T) {
	const u = `"usage": {"input_tokens": 90, "output_tokens": 10}`
	kid := "parent / general-purpose#t1"
	t.Run("while the subagent runs", func(t *testing.T) {
		script := `{"parent": [
		  {"tool_calls": [{"id": "t1", "name": "task", "args": {"description": "work", "subagent_type": "general-purpose"}}], ` + u + `},
		  {"content": "done", ` + u + `}],
		 "general-purpose": [
		  {"tool_calls": [{"id": "g1", "name": "write_file", "args": {"file_path": "/a.md", "content": "a"}}], ` + u + `},
		  {"tool_calls": [{"id": "k1", "name": "crash", "args": {}}], ` + u + `},
		  {"content": "child done", ` + u + `}]}`
		saver := checkpoint.NewMemory(0)
		ctx, cancel := context.WithCancel(t.Context())
		crash := crashOnce(&cancel, nil)
		if _, err := budgetAgent(t, script, crash).Invoke(ctx, agent.Prompt("go"), runner.Checkpoints(saver, "a")); !errors.Is(err, agent.ErrCancelled) {
			t.Fatalf("first run: %v", err)
		}
		res, err := budgetAgent(t, script, crash).Invoke(t.Context(), agent.Input{}, runner.Checkpoints(saver, "a"))
		if err != nil || res.FinalText() != "done" {
			t.Fatalf("resumed: %v", err)
		}
		s := savedSpent(t, saver, "a")
		if s.Tokens != 500 || s.Calls != 5 || s.ByAgent["parent"].Calls != 2 || s.ByAgent[kid].Calls != 3 {
			t.Errorf("spending %+v, want 5 calls: the parent's 2 and the subagent's 3", s)
		}
	})
	t.Run("after the subagent finished", func(t *testing.T) {
		script := `{"parent": [
		  {"tool_calls": [{"id": "t1", "name": "task", "args": {"description": "work", "subagent_type": "general-purpose"}},
		                  {"id": "c1", "name": "crash", "args": {}}], ` + u + `},
		  {"content": "done", ` + u + `}],
		 "general-purpose": [
		  {"tool_calls": [{"id": "g1", "name": "write_file", "args": {"file_path": "/a.md", "content": "a"}}], ` + u + `},
		  {"content": "child done", ` + u + `}]}`
		saver := checkpoint.NewMemory(0)
		ctx, cancel := context.WithCancel(t.Context())
		// The process dies once the task call's result is saved.
		crash := crashOnce(&cancel, func() bool { return finishedCalls(t, saver, "b")["parent t1"] })
		if _, err := budgetAgent(t, script, crash).Invoke(ctx, agent.Prompt("go"), runner.Checkpoints(saver, "b")); !errors.Is(err, agent.ErrCancelled) {
			t.Fatalf("first run: %v", err)
		}
		res, err := budgetAgent(t, script, crash).Invoke(t.Context(), agent.Input{}, runner.Checkpoints(saver, "b"))
		if err != nil || res.FinalText() != "done" {
			t.Fatalf("resumed: %v", err)
		}
		s := savedSpent(t, saver, "b")
		if s.Tokens != 400 || s.Calls != 4 || s.ByAgent["parent"].Calls != 2 || s.ByAgent[kid].Calls != 2 {
			t.Errorf("spending %+v, want 4 calls: the parent's 2 and the subagent's 2", s)
		}
	})
}
