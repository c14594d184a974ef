package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/subagent"
	"github.com/deepagents-go/deepagents/tool"
)

// recorded keeps the step records a run hands out.
type recorded struct {
	mu   sync.Mutex
	recs []agent.StepRecord
	fail error // returned for the first call record
}

func (r *recorded) Record(_ context.Context, rec *agent.StepRecord) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rec.Kind == agent.RecordCall && r.fail != nil {
		return r.fail
	}
	r.recs = append(r.recs, *rec)
	return nil
}

// A run with a recorder and no saver hands out one record for its input,
// one per model response with calls, one per finished call and one for its
// end, each with what changed since the record before.
func TestRecorderSeesEveryStepAndCall(t *testing.T) {
	m := scripted.New(scripted.Script{"parent": steps(
		scripted.Step{ToolCalls: []scripted.StepCall{
			{ID: "c1", Name: "nest", Args: json.RawMessage(`{}`)},
			{ID: "c2", Name: "nest", Args: json.RawMessage(`{"child":"parent / a#c2","in":7}`)},
		}, Usage: &llm.Usage{InputTokens: 100}},
		scripted.Step{Content: "done", Usage: &llm.Usage{InputTokens: 200}},
	)}, scripted.Options{})
	rec := &recorded{}
	res, err := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{fakeNested{}}}).
		Invoke(t.Context(), agent.Prompt("go"), agent.WithRecorder(rec))
	if err != nil {
		t.Fatal(err)
	}
	var kinds []agent.RecordKind
	var calls []string
	for _, r := range rec.recs {
		kinds = append(kinds, r.Kind)
		if r.Call != nil {
			calls = append(calls, r.Call.ID)
		}
	}
	slices.Sort(calls)
	want := []agent.RecordKind{agent.RecordInput, agent.RecordStep, agent.RecordCall, agent.RecordCall, agent.RecordEnd}
	if !slices.Equal(kinds, want) || !slices.Equal(calls, []string{"c1", "c2"}) {
		t.Fatalf("records %v (calls %v), want %v (c1, c2)", kinds, calls, want)
	}
	in, step, end := rec.recs[0], rec.recs[1], rec.recs[4]
	if len(in.Appended) != 1 || in.Appended[0].Content != "go" || in.Parent != "" {
		t.Errorf("input record: appended %v, parent %q", in.Appended, in.Parent)
	}
	if len(step.Appended) != 1 || len(step.Appended[0].ToolCalls) != 2 || step.Usage.InputTokens != 100 || step.Parent != in.ID {
		t.Errorf("step record: appended %v, usage %v, parent %q", step.Appended, step.Usage, step.Parent)
	}
	for _, r := range rec.recs[2:4] {
		if r.ID != step.ID || r.Call.Outcome == nil {
			t.Errorf("call %s recorded under %q with %+v, want under the step %q with its outcome", r.Call.ID, r.ID, r.Call.Outcome, step.ID)
		}
	}
	if len(end.Appended) != 3 || end.Loop.Status != agent.StatusOK || end.Usage.InputTokens != 200 || end.Parent != step.ID {
		t.Errorf("end record: %d appended, status %q, usage %v, parent %q", len(end.Appended), end.Loop.Status, end.Usage, end.Parent)
	}
	if kid := end.Children["c2"]; kid == nil || kid != res.Children["c2"] {
		t.Errorf("end record's children %v, want c2's run", end.Children)
	}
	if res.SavedSteps != 3 || res.Thread != "" {
		t.Errorf("result: %d saved steps, thread %q; want 3 records of steps, no thread", res.SavedSteps, res.Thread)
	}
}

// A recorder's error stops the run, as a save that fails does.
func TestRecorderErrorFailsTheRun(t *testing.T) {
	m := scripted.New(scripted.Script{"parent": steps(
		scripted.Step{ToolCalls: []scripted.StepCall{{ID: "c1", Name: "nest", Args: json.RawMessage(`{}`)}}},
		scripted.Step{Content: "done"},
	)}, scripted.Options{})
	boom := errors.New("disk on fire")
	res, err := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{fakeNested{}}}).
		Invoke(t.Context(), agent.Prompt("go"), agent.WithRecorder(&recorded{fail: boom}))
	if !errors.Is(err, boom) || res == nil || res.Status != agent.StatusError {
		t.Fatalf("err %v, result %+v; want the recorder's error and StatusError", err, res)
	}
}

// A recorded run without a saver has no thread to take decisions from.
func TestRecorderWithoutSaverRefusesDecisions(t *testing.T) {
	m := scripted.New(scripted.Script{"parent": steps(scripted.Step{Content: "done"})}, scripted.Options{})
	_, err := newAgent(t, agent.Config{Model: m}).Invoke(t.Context(), agent.Prompt("go"),
		agent.WithRecorder(&recorded{}), agent.WithDecisions(agent.Decision{CallID: "x", Type: agent.Approve}))
	var de *agent.DecisionError
	if !errors.As(err, &de) {
		t.Fatalf("err %v, want a *DecisionError", err)
	}
}

// A subagent run records with its parent's recorder, under its own path.
func TestSubagentRecordsWithItsParentsRecorder(t *testing.T) {
	task := scripted.StepCall{ID: "c1", Name: "task", Args: json.RawMessage(`{"description":"write it","subagent_type":"worker"}`)}
	m := scripted.New(scripted.Script{
		"parent": steps(scripted.Step{ToolCalls: []scripted.StepCall{task}}, scripted.Step{Content: "parent done"}),
		"worker": steps(scripted.Step{ToolCalls: []scripted.StepCall{call("write", `{"path":"/w.md","content":"w"}`)}}, scripted.Step{Content: "worker done"}),
	}, scripted.Options{})
	tk, err := subagent.NewTask(subagent.Config{Model: m, Subagents: []subagent.Spec{{Name: "worker", Description: "Works.", Tools: []tool.Tool{writeTool}}}})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorded{}
	if _, err := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{tk}}).Invoke(t.Context(), agent.Prompt("go"), agent.WithRecorder(rec)); err != nil {
		t.Fatal(err)
	}
	byPath := map[string][]agent.RecordKind{}
	var files []string
	for _, r := range rec.recs {
		byPath[r.Path.String()] = append(byPath[r.Path.String()], r.Kind)
		for _, c := range r.Files {
			files = append(files, r.Path.String()+" "+c.Path)
		}
	}
	want := map[string][]agent.RecordKind{
		"parent":             {agent.RecordInput, agent.RecordStep, agent.RecordCall, agent.RecordEnd},
		"parent / worker#c1": {agent.RecordStep, agent.RecordCall, agent.RecordEnd},
	}
	if len(byPath) != len(want) || !slices.Equal(byPath["parent"], want["parent"]) || !slices.Equal(byPath["parent / worker#c1"], want["parent / worker#c1"]) {
		t.Errorf("records by path %v, want %v", byPath, want)
	}
	if !slices.Contains(files, "parent / worker#c1 /w.md") {
		t.Errorf("file changes recorded %v; want the worker's /w.md in its own records", files)
	}
}
