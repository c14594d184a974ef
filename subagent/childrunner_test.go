package subagent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/approve"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/runner"
	"github.com/deepagents-go/deepagents/subagent"
	"github.com/deepagents-go/deepagents/tool"
)

// elsewhere is a runtime that takes the subagent runs the task tool offers
// it (agent.ChildRunner) and runs them as a runtime that runs them in
// another process would: from the values of agent.Nesting alone, on a
// handle of its own on the thread's store. decline makes it refuse them.
type elsewhere struct {
	agent.Runtime
	store   checkpoint.RunStore
	decline bool
	offers  []agent.Nesting
}

func (e *elsewhere) RunChild(ctx context.Context, c agent.ChildRun) (*agent.Result, bool) {
	n := c.Host.Nesting()
	e.offers = append(e.offers, n)
	if e.decline {
		return nil, false
	}
	opts := []agent.RunOption{agent.WithRuntime(e), agent.WithTimeout(c.Timeout)}
	if n.Recorded {
		opts = append(opts, agent.RecordNested(n, runner.Thread(e.store, n.Thread)))
	}
	opts = append(opts, agent.WithDecisions(n.Decisions...), agent.AsChild(c.Child))
	res, _ := agent.Drain(c.Agent.Run(ctx, c.Input, opts...), c.Host.Emit)
	return res, true
}

// savedThread is every checkpoint of thread in saver, as JSON.
func savedThread(t *testing.T, saver *checkpoint.Memory, thread string) []byte {
	t.Helper()
	cps, err := saver.List(t.Context(), checkpoint.ListOptions{ThreadID: thread, AllNamespaces: true})
	if err != nil {
		t.Fatal(err)
	}
	var full []*checkpoint.Checkpoint
	for _, c := range cps {
		cp, err := saver.Get(t.Context(), c.Ref())
		if err != nil {
			t.Fatal(err)
		}
		full = append(full, cp)
	}
	b, err := json.Marshal(full)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A runtime that runs each subagent run itself, from what agent.Nesting
// says, records the same thread as the run in process: the same
// checkpoints, the children in their namespaces. One that declines leaves
// the run as it is in process, event for event.
func TestChildRunnerRecordsAsInProcess(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	inProcess := checkpoint.NewMemory(0)
	stream, want := delegationStream(t, runner.Checkpoints(inProcess, "T"))

	handed := checkpoint.NewMemory(0)
	e := &elsewhere{Runtime: agent.Sequential(at), store: handed}
	_, got := delegationStream(t, agent.WithRuntime(e), runner.Checkpoints(handed, "T"))
	if len(e.offers) != 2 || !e.offers[0].Recorded || e.offers[0].Thread != "T" || e.offers[0].ParentStep == "" {
		t.Fatalf("offers %+v, want the two subagents, recorded into T by the parent's step", e.offers)
	}
	if a, b := savedThread(t, inProcess, "T"), savedThread(t, handed, "T"); !bytes.Equal(a, b) {
		t.Errorf("the thread in process:\n%s\nwith the children run by the runtime:\n%s", a, b)
	}
	if got.FinalText() != want.FinalText() || len(got.Children) != 2 || got.Children["t2"].FinalText() != "wrote b" ||
		!slices.Equal(got.Changed, want.Changed) || got.Usage != want.Usage {
		t.Errorf("result %+v, want %+v", got, want)
	}

	declined := &elsewhere{Runtime: agent.Sequential(at), decline: true}
	again, _ := delegationStream(t, agent.WithRuntime(declined), runner.Checkpoints(checkpoint.NewMemory(0), "T"))
	if len(declined.offers) != 2 || !bytes.Equal(again, stream) {
		t.Errorf("with a runtime that declines (%d offers) the stream differs:\n%s\nin process:\n%s", len(declined.offers), again, stream)
	}
}

// A subagent that the runtime runs and that waits for a person ends the
// parent's run interrupted with its waiting call; the resume hands the
// runtime the decisions, and the child resumes from its records.
func TestChildRunnerResumesWithTheDecisions(t *testing.T) {
	m := scripted.New(scripted.Script{
		"parent": {Steps: []scripted.Step{
			step("", scripted.StepCall{ID: "t1", Name: "task", Args: json.RawMessage(`{"description":"write a","subagent_type":"helper"}`)}),
			step("all done"),
		}},
		"helper": {Steps: []scripted.Step{
			step("", scripted.StepCall{ID: "w2", Name: "write", Args: json.RawMessage(`{"path":"/a.txt","content":"a"}`)}),
			step("wrote a"),
		}},
	}, scripted.Options{})
	gates := map[string]approve.Policy{"write": {}}
	task := newTask(t, subagent.Config{Model: m, BaseTools: []tool.Tool{writeTool}, Middleware: []agent.Middleware{approve.Gate(gates)},
		Subagents: []subagent.Spec{{Name: "helper", Description: "Helps."}}})
	a, err := agent.New(agent.Config{Model: m, Tools: []tool.Tool{task}})
	if err != nil {
		t.Fatal(err)
	}
	saver := checkpoint.NewMemory(0)
	e := &elsewhere{Runtime: agent.Sequential(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)), store: saver}
	res, err := a.Invoke(t.Context(), agent.Prompt("go"), agent.WithRuntime(e), runner.Checkpoints(saver, "T"))
	if !errors.Is(err, agent.ErrInterrupted) || len(res.Interrupts) != 1 || res.Interrupts[0].CallID != "w2" {
		t.Fatalf("first run: %v, waiting %+v", err, res.Interrupts)
	}
	d := agent.Decision{Type: agent.Approve, CallID: "w2", Path: res.Interrupts[0].Path}
	res, err = a.Invoke(t.Context(), agent.Input{}, agent.WithRuntime(e), runner.Checkpoints(saver, "T"), agent.WithDecisions(d))
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if len(e.offers) != 2 || len(e.offers[1].Decisions) != 1 || e.offers[1].Decisions[0].CallID != "w2" {
		t.Fatalf("offers %+v, want the resume's with the decision", e.offers)
	}
	if res.FinalText() != "all done" || res.State.Files["/a.txt"].Content != "a" || res.Children["t1"].FinalText() != "wrote a" {
		t.Fatalf("final %q, files %v, child %+v", res.FinalText(), res.State.Files, res.Children["t1"])
	}
}
