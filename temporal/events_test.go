package temporal_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.temporal.io/sdk/client"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/temporal"
)

// published keeps what workers publish, by thread.
type published struct {
	mu  sync.Mutex
	evs map[string][]temporal.Event
}

func (p *published) Publish(_ context.Context, thread string, evs []temporal.Event) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.evs[thread] = append(p.evs[thread], evs...)
	return nil
}

// A served workflow's activities publish the run's model requests, chunks
// (tagged with the attempt), responses, finished calls and subagent starts;
// a workflow no server started publishes nothing.
func TestServedRunPublishesItsEvents(t *testing.T) {
	pub := &published{evs: map[string][]temporal.Event{}}
	reg := temporal.NewRegistry()
	reg.Store = openStore(t)
	reg.Events = pub
	reg.ApprovalTimeout = -1
	if err := reg.Agent("researcher", demoAgent(t, reg)); err != nil {
		t.Fatal(err)
	}
	run := func(id, thread string) {
		env := newEnv(t, reg)
		env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: id})
		env.ExecuteWorkflow(temporal.RunAgentWorkflow, temporal.RunInput{Agent: "researcher", Thread: thread, Input: "compare A and B"})
		if s := summary(t, env); s.Status != agent.StatusInterrupted {
			t.Fatalf("the run ended %s, want interrupted (the demo's write waits)", s.Status)
		}
	}
	id := temporal.WorkflowID("T", "run-1")
	run(id, "T")
	var root, sub []string
	starts := 0
	for _, e := range pub.evs["T"] {
		if e.Workflow != id {
			t.Fatalf("an event names workflow %q, want %q", e.Workflow, id)
		}
		kind := string(e.Type)
		if (e.Type == agent.ModelRequest || e.Type == agent.ModelDelta) && e.Attempt != 1 {
			t.Fatalf("%s of %s has attempt %d, want 1", e.Type, e.Agent, e.Attempt)
		}
		if e.Message != nil && e.Type == agent.ModelResponse {
			for _, c := range e.Message.ToolCalls {
				kind += " " + c.Name
			}
		}
		switch {
		case e.Type == agent.SubagentStart:
			starts++
			if !strings.HasPrefix(e.Task, "Research topic") {
				t.Fatalf("a subagent started with task %q", e.Task)
			}
		case e.Agent.IsNested():
			if len(sub) == 0 || sub[len(sub)-1] != kind {
				sub = append(sub, kind)
			}
		default:
			root = append(root, kind)
		}
	}
	want := []string{"model.request", "model.response task task", "tool.end", "tool.end", "model.request", "model.response write_file", "interrupt"}
	if !slices.Equal(root, want) || starts != 2 {
		t.Fatalf("the parent published %v and %d subagent starts, want %v and 2", root, starts, want)
	}
	if !slices.Contains(sub, "model.delta") || !slices.Contains(sub, "model.response") {
		t.Fatalf("the subagents published %v, want their chunks and responses", sub)
	}

	run("not-served", "U")
	if n := len(pub.evs["U"]); n != 0 {
		t.Fatalf("a workflow no server started published %d events", n)
	}
}

// A served run's child workflows, and theirs, belong to the run and its
// thread, whatever the thread's id holds.
func TestServedChildIDsBelongToTheirRun(t *testing.T) {
	for _, thread := range []string{"T", "a~b", "x/y~z"} {
		run := temporal.WorkflowID(thread, "run-1")
		child := temporal.ServedChildID(run, agent.RootPath("p").Child("helper", "call/1"))
		grandchild := temporal.ServedChildID(child, agent.RootPath("p").Child("helper", "call/1").Child("sub", "c~2"))
		for _, id := range []string{run, child, grandchild} {
			if got := temporal.ServedRun(id); got != run {
				t.Errorf("ServedRun(%q) = %q, want %q", id, got, run)
			}
		}
	}
	if got := temporal.ServedRun("deepagents-thread-T"); got != "deepagents-thread-T" {
		t.Errorf("an unserved id became %q", got)
	}
}
