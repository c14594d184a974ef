package subagent_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/runner"
	"github.com/deepagents-go/deepagents/subagent"
	"github.com/deepagents-go/deepagents/tool"
)

// delegationStream runs a parent that delegates to two subagents at once
// (each writes a file) and writes a file itself in the same step, under a
// fresh Sequential runtime, and returns the JSON of every event.
func delegationStream(t *testing.T, opts ...agent.RunOption) ([]byte, *agent.Result) {
	t.Helper()
	m := scripted.New(scripted.Script{
		"parent": {Steps: []scripted.Step{
			step("", scripted.StepCall{ID: "t1", Name: "task", Args: json.RawMessage(`{"description":"write a","subagent_type":"general-purpose"}`)},
				scripted.StepCall{ID: "t2", Name: "task", Args: json.RawMessage(`{"description":"write b","subagent_type":"helper"}`)},
				tc("write", `{"path":"/p.txt","content":"parent"}`)),
			step("all done"),
		}},
		"general-purpose": {Steps: []scripted.Step{
			step("", tc("write", `{"path":"/a.txt","content":"a"}`), tc("note", `{}`)),
			step("wrote a"),
		}},
		"helper": {Steps: []scripted.Step{
			step("", tc("write", `{"path":"/b.txt","content":"b"}`)),
			step("wrote b"),
		}},
	}, scripted.Options{})
	task := newTask(t, subagent.Config{Model: m, Subagents: []subagent.Spec{subagent.GeneralPurpose(), {Name: "helper", Description: "Helps."}}, DefaultTools: []tool.Tool{noteTool}})
	a, err := agent.New(agent.Config{Model: m, Tools: []tool.Tool{writeTool, task}})
	if err != nil {
		t.Fatal(err)
	}
	rt := agent.Sequential(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	res, err := agent.Drain(a.Run(t.Context(), agent.Prompt("delegate"), append([]agent.RunOption{agent.WithRuntime(rt)}, opts...)...), func(ev agent.Event) {
		if err := enc.Encode(ev); err != nil {
			t.Fatal(err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), res
}

// Under the Sequential runtime a delegation's whole event stream, children
// included, is the same byte for byte on every run; its clock stamps every
// event, and the children ran on it too.
func TestSequentialRuntimeGivesIdenticalStreams(t *testing.T) {
	first, res := delegationStream(t)
	if len(res.Children) != 2 || res.FinalText() != "all done" || len(res.State.Files) != 3 {
		t.Fatalf("children %d, final %q, files %v", len(res.Children), res.FinalText(), res.State.Files)
	}
	var events []agent.Event
	dec := json.NewDecoder(bytes.NewReader(first))
	childEvents := 0
	for dec.More() {
		var ev agent.Event
		if err := dec.Decode(&ev); err != nil {
			t.Fatal(err)
		}
		if !ev.Time.Equal(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) {
			t.Errorf("%s of %s stamped %v, not by the runtime's clock", ev.Type, ev.Agent, ev.Time)
		}
		if ev.TaskCall != "" {
			childEvents++
		}
		events = append(events, ev)
	}
	if childEvents < 10 {
		t.Errorf("only %d child events in %d", childEvents, len(events))
	}
	for i := range 5 {
		again, _ := delegationStream(t)
		if !bytes.Equal(first, again) {
			t.Fatalf("run %d differs from the first:\n%s\n---\n%s", i+2, first, again)
		}
	}
}

// With checkpoints on, the Sequential runtime also makes what is saved the
// same on every run: every namespace's checkpoints, their states and the
// results saved for each call.
func TestSequentialRuntimeSavesIdenticalCheckpoints(t *testing.T) {
	saved := func() (stream, store []byte) {
		saver := checkpoint.NewMemory(0)
		stream, res := delegationStream(t, runner.Checkpoints(saver, "det"))
		if res.SavedSteps < 6 {
			t.Fatalf("only %d checkpoints", res.SavedSteps)
		}
		cps, err := saver.List(t.Context(), checkpoint.ListOptions{ThreadID: "det", AllNamespaces: true})
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
		store, err = json.Marshal(full)
		if err != nil {
			t.Fatal(err)
		}
		return stream, store
	}
	stream, store := saved()
	if !bytes.Contains(store, []byte(`"NS":"parent / helper#t2"`)) || !bytes.Contains(store, []byte(`2026-01-02T03:04:05Z`)) {
		t.Fatalf("the child's namespace or the runtime's clock is missing from the saved checkpoints")
	}
	for i := range 3 {
		s2, st2 := saved()
		if !bytes.Equal(stream, s2) || !bytes.Equal(store, st2) {
			t.Fatalf("run %d saved something else than the first", i+2)
		}
	}
}

// The Sequential runtime runs a step's calls one at a time, in call order.
func TestSequentialRuntimeRunsCallsInOrder(t *testing.T) {
	stream, _ := delegationStream(t)
	var order []string
	dec := json.NewDecoder(bytes.NewReader(stream))
	for dec.More() {
		var ev agent.Event
		if err := dec.Decode(&ev); err != nil {
			t.Fatal(err)
		}
		if ev.Agent.String() == "parent" && ev.Type == agent.ToolEnd {
			order = append(order, ev.Tool.CallID)
		}
	}
	if len(order) != 3 || order[0] != "t1" || order[1] != "t2" {
		t.Errorf("parent's calls ended in order %v, want t1, t2, then the write", order)
	}
}
