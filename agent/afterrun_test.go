package agent_test

import (
	"context"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/runner"
)

// AfterRun is called once per run with the status it ends with, before
// run.end; a value it sets reaches the Result and the last step record.
func TestAfterRunHook(t *testing.T) {
	var statuses []agent.Status
	mw := agent.Middleware{Name: "closer", AfterRun: func(_ context.Context, st agent.StepInfo, status agent.Status) {
		statuses = append(statuses, status)
		st.Emit(agent.Event{Type: agent.Notice, Notice: &agent.NoticeInfo{Source: "closer", Text: "bye"}})
		if err := st.SetValue("closed", string(status)); err != nil {
			t.Error(err)
		}
	}}
	m := scripted.New(scripted.Script{"parent": steps(scripted.Step{Content: "done"})}, scripted.Options{})
	a := newAgent(t, agent.Config{Model: m, Middleware: []agent.Middleware{mw}})
	saver := checkpoint.NewMemory(0)
	var types []agent.EventType
	res, err := agent.Drain(a.Run(t.Context(), agent.Prompt("go"), runner.Checkpoints(saver, "ar")), func(ev agent.Event) {
		types = append(types, ev.Type)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(statuses) != 1 || statuses[0] != agent.StatusOK {
		t.Fatalf("AfterRun calls %v", statuses)
	}
	if n := len(types); n < 2 || types[n-2] != agent.Notice || types[n-1] != agent.RunEnd {
		t.Fatalf("events %v", types)
	}
	if got := string(res.State.Values["closed"]); got != `"ok"` {
		t.Fatalf("result value %s", got)
	}
	rs, err := runner.LoadRunState(t.Context(), saver, "ar", agent.RootPath("parent"), false)
	if err != nil || string(rs.Values["closed"]) != `"ok"` {
		t.Fatalf("saved value %s (%v)", rs.Values["closed"], err)
	}

	// A failing run reports its own status.
	statuses = nil
	m = scripted.New(scripted.Script{"parent": steps(scripted.Step{Error: "boom"})}, scripted.Options{})
	a = newAgent(t, agent.Config{Model: m, Middleware: []agent.Middleware{mw}})
	if _, err := a.Invoke(t.Context(), agent.Prompt("go")); err == nil {
		t.Fatal("no error")
	}
	if len(statuses) != 1 || statuses[0] != agent.StatusError {
		t.Fatalf("AfterRun calls %v", statuses)
	}
}
