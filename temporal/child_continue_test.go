package temporal_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/checkpoint/sqlite"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/runner"
	"github.com/deepagents-go/deepagents/subagent"
	"github.com/deepagents-go/deepagents/temporal"
	"github.com/deepagents-go/deepagents/tool"
)

// childLongCase is a parent that writes a file, then gives a subagent a
// task of many rounds: each round calls a counting tool (an activity), the
// first and a middle one also write a file.
type childLongCase struct {
	reg   *temporal.Registry
	a     *agent.Agent
	store *sqlite.Saver
	mu    sync.Mutex
	calls map[string]int // calls of the counting tool that ran, by call id
}

func newChildLongCase(t *testing.T, rounds int) *childLongCase {
	t.Helper()
	store := openStore(t)
	lc := &childLongCase{calls: map[string]int{}, store: store}
	var steps []scripted.Step
	for i := range rounds {
		calls := []scripted.StepCall{{ID: fmt.Sprintf("c%d", i), Name: "count", Args: json.RawMessage(`{}`)}}
		switch i {
		case 0:
			calls = append(calls, scripted.StepCall{ID: "w0", Name: "write", Args: json.RawMessage(`{"path":"/w.txt","content":"first"}`)})
		case rounds / 2:
			calls = append(calls, scripted.StepCall{ID: "w1", Name: "write", Args: json.RawMessage(`{"path":"/w.txt","content":"second"}`)},
				scripted.StepCall{ID: "w2", Name: "write", Args: json.RawMessage(`{"path":"/m.txt","content":"middle"}`)})
		}
		steps = append(steps, step("", calls...))
	}
	steps = append(steps, step("worker counted"))
	reg := temporal.NewRegistry()
	reg.Store = store
	m := reg.Model("scripted", scripted.New(scripted.Script{
		"parent": {Steps: []scripted.Step{
			step("", tc("write", `{"path":"/p.txt","content":"parent"}`)),
			step("", scripted.StepCall{ID: "t1", Name: "task", Args: json.RawMessage(`{"description":"count","subagent_type":"worker"}`)}),
			step("parent done"),
		}},
		"worker": {Steps: steps},
	}, scripted.Options{}))
	count := reg.Tool("worker", tool.MustFunc("count", "Counts.", func(_ context.Context, env *tool.Env, _ struct{}) (string, error) {
		lc.mu.Lock()
		defer lc.mu.Unlock()
		lc.calls[env.CallID]++
		return "counted " + env.CallID, nil
	}))
	task, err := subagent.NewTask(subagent.Config{Model: m, BaseTools: []tool.Tool{writeTool},
		Subagents: []subagent.Spec{{Name: "worker", Description: "Counts.", Tools: []tool.Tool{count}, MaxSteps: rounds + 5}}})
	if err != nil {
		t.Fatal(err)
	}
	lc.a = mustAgent(t, agent.Config{Name: "parent", Model: m, Tools: []tool.Tool{writeTool, task}})
	if err := reg.Agent("parent", lc.a); err != nil {
		t.Fatal(err)
	}
	lc.reg = reg
	return lc
}

// everyCallOnce fails t unless each of the rounds' counting calls ran
// exactly once.
func (lc *childLongCase) everyCallOnce(t *testing.T, rounds int) {
	t.Helper()
	lc.mu.Lock()
	defer lc.mu.Unlock()
	for i := range rounds {
		if n := lc.calls[fmt.Sprintf("c%d", i)]; n != 1 {
			t.Errorf("call c%d ran %d times", i, n)
		}
	}
}

// runSubagent runs a RunSubagent workflow with input in on lc's registry,
// its history as long as length says, and returns its outcome, or the
// input of the run it continues as new with.
func (lc *childLongCase) runSubagent(t *testing.T, in temporal.SubagentInput, length int) (*temporal.SubagentOutcome, *temporal.SubagentInput) {
	t.Helper()
	env := newEnv(t, lc.reg)
	if length > 0 {
		env.SetCurrentHistoryLength(length)
	}
	env.ExecuteWorkflow(temporal.RunSubagentWorkflow, in)
	if !env.IsWorkflowCompleted() {
		t.Fatal("the child workflow did not complete")
	}
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); errors.As(err, &can) {
		if can.WorkflowType.Name != temporal.RunSubagentWorkflow {
			t.Fatalf("continued as a %s", can.WorkflowType.Name)
		}
		var next temporal.SubagentInput
		if err := temporal.DataConverter().FromPayloads(can.Input, &next); err != nil {
			t.Fatal(err)
		}
		return nil, &next
	} else if err != nil {
		t.Fatal(err)
	}
	var out temporal.SubagentOutcome
	if err := env.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	return &out, nil
}

// In the test environment, a subagent's child workflow on a stored thread
// whose history is past Registry.ContinueAfter continues as new right
// after each of its steps is saved, with an input that carries no
// messages; each next run resumes from the store, and the last ends with
// the outcome, file changes included, of a run that never continued.
func TestAChildContinuesAsNewAfterASavedStep(t *testing.T) {
	const rounds = 4
	// The parent's run, to learn its child's input.
	first := newChildLongCase(t, rounds)
	env := newEnv(t, first.reg)
	var starts childStarts
	env.SetOnChildWorkflowStartedListener(func(info *workflow.Info, _ workflow.Context, args converter.EncodedValues) {
		starts.listen(t, info, args)
	})
	env.ExecuteWorkflow(temporal.RunAgentWorkflow, temporal.RunInput{Agent: "parent", Thread: "T", Input: "go"})
	if s := summary(t, env); s.Status != agent.StatusOK || !slices.Equal(s.Files, []string{"/m.txt", "/p.txt", "/w.txt"}) ||
		len(s.Children) != 1 || s.Children[0].Text != "worker counted" {
		t.Fatalf("summary %+v", s)
	}
	if len(starts.inputs) != 1 {
		t.Fatalf("child workflows of %v", starts.paths)
	}
	in := starts.inputs[0]
	if len(in.Messages) == 0 || len(in.Files) != 1 || in.Holder == "" {
		t.Fatalf("the child's input %+v", in)
	}

	// The same child, on a store of its own, once without continuing and
	// once with a long history.
	outcomeOf := func(continues bool) (*temporal.SubagentOutcome, int) {
		lc := newChildLongCase(t, rounds)
		lc.reg.ContinueAfter = 1000
		if _, err := lc.store.Acquire(t.Context(), "T", in.Holder, start, runner.DefaultLeaseTTL); err != nil {
			t.Fatal(err)
		}
		length := 0
		if continues {
			length = 1000
		}
		cur, n := in, 0
		cur.Timeout = time.Hour // its budget must not restart at each continue
		var deadline time.Time
		for {
			out, next := lc.runSubagent(t, cur, length)
			if out != nil {
				lc.everyCallOnce(t, rounds)
				return out, n
			}
			n++
			if n > rounds+2 {
				t.Fatalf("the child continued %d times", n)
			}
			if len(next.Messages) != 0 || next.Ref != nil || next.Continued != n || !maps.Equal(next.Files, in.Files) ||
				next.Nesting.Thread != "T" || next.Nesting.ParentStep != in.Nesting.ParentStep || next.Holder != in.Holder ||
				next.Path.String() != in.Path.String() || next.Signal != in.Signal {
				t.Fatalf("continued input %d: %+v", n, next)
			}
			if next.Deadline.IsZero() || (n > 1 && !next.Deadline.Equal(deadline)) {
				t.Fatalf("continued input %d has deadline %v, the first had %v", n, next.Deadline, deadline)
			}
			deadline = next.Deadline
			if n == 1 {
				lc.mu.Lock()
				ran := len(lc.calls)
				lc.mu.Unlock()
				if ran != 0 {
					t.Errorf("%d calls ran before the child continued", ran)
				}
			}
			cur = *next
		}
	}
	want, n := outcomeOf(false)
	if n != 0 {
		t.Fatalf("the child continued %d times with a short history", n)
	}
	got, n := outcomeOf(true)
	if n != rounds {
		t.Errorf("the child continued %d times, want once after each of its %d steps with calls", n, rounds)
	}
	// What a workflow run counts of itself (the records it saved, the
	// context its model calls sent) starts again with each run.
	for _, o := range []*temporal.SubagentOutcome{got, want} {
		o.Result.SavedSteps, o.Result.Context, o.Result.ContextByAgent = 0, nil, nil
	}
	if g, w := mustJSON(t, got), mustJSON(t, want); !bytes.Equal(g, w) {
		t.Errorf("outcome of the child that continued:\n%s\nof one that did not:\n%s", g, w)
	}
	if len(got.Files) != 2 || got.Files[0].Path != "/m.txt" || got.Files[1].Path != "/w.txt" || got.Files[1].File.Content != "second" {
		t.Errorf("the child's file changes %s", mustJSON(t, got.Files))
	}
}

// childContinueHistory is the first run of a subagent's child workflow
// that continued as new.
const childContinueHistory = "testdata/child-continue.history.json"

// runsOf are the histories of every run of workflow id, from run first on
// through its continuations, in order.
func runsOf(ctx context.Context, t *testing.T, c client.Client, id, first string) []*historypb.History {
	t.Helper()
	var hs []*historypb.History
	for run := first; run != ""; {
		h := history(ctx, t, c, c.GetWorkflow(ctx, id, run))
		hs = append(hs, h)
		run = ""
		if last := h.Events[len(h.Events)-1]; last.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW {
			run = last.GetWorkflowExecutionContinuedAsNewEventAttributes().GetNewExecutionRunId()
		}
	}
	return hs
}

// On a real server, a subagent of 12 rounds on a stored thread continues
// as new several times; the parent's summary, the child's text and the
// thread's files equal those of the same run on a worker that never
// continues, every call ran once, and every run's history replays. With
// DEEPAGENTS_TEMPORAL_RECORD=1 the child's first run is written to testdata
// for TestChildContinueHistoryReplays.
func TestChildContinuesAsNewOnADevServer(t *testing.T) {
	c := devClient(t)
	const rounds = 12
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	runOn := func(queue string, continueAfter int) (*childLongCase, client.WorkflowRun, *temporal.Summary) {
		lc := newChildLongCase(t, rounds)
		lc.reg.ContinueAfter = continueAfter
		w := worker.New(c, queue, worker.Options{})
		lc.reg.Register(w)
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.Stop)
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: queue, TaskQueue: queue}, temporal.RunAgentWorkflow,
			temporal.RunInput{Agent: "parent", Thread: "long", Input: "go"})
		if err != nil {
			t.Fatal(err)
		}
		first := c.GetWorkflow(ctx, queue, run.GetRunID())
		var s temporal.Summary
		if err := run.Get(ctx, &s); err != nil {
			t.Fatal(err)
		}
		lc.everyCallOnce(t, rounds)
		return lc, first, &s
	}
	lc, run, got := runOn("deepagents-child-continue", 40)
	plain, _, want := runOn("deepagents-child-plain", -1)
	if got.Status != agent.StatusOK || got.Text != "parent done" || len(got.Children) != 1 || got.Children[0].Text != "worker counted" ||
		got.Children[0].Rounds != rounds+1 {
		t.Errorf("summary %+v", got)
	}
	got.Continued = 0 // the parent may continue too
	if g, w := mustJSON(t, got), mustJSON(t, want); !bytes.Equal(g, w) {
		t.Errorf("summary of the run whose child continued:\n%s\nof one that did not:\n%s", g, w)
	}
	filesOf := func(s *sqlite.Saver) []byte {
		cp, err := s.Get(ctx, checkpoint.Ref{ThreadID: "long"})
		if err != nil {
			t.Fatal(err)
		}
		files := map[string]string{}
		for p, f := range cp.State.Files {
			files[p] = f.Content
		}
		return mustJSON(t, files)
	}
	if g, w := filesOf(lc.store), filesOf(plain.store); !bytes.Equal(g, w) {
		t.Errorf("the thread's files: %s, without continuing: %s", g, w)
	}

	// The parent's runs, then its child's: every one replays, and the
	// child continued at least twice.
	parents := runsOf(ctx, t, c, run.GetID(), run.GetRunID())
	var childID, childRun string
	for _, h := range parents {
		for _, ev := range h.Events {
			if a := ev.GetChildWorkflowExecutionStartedEventAttributes(); a != nil {
				childID, childRun = a.GetWorkflowExecution().GetWorkflowId(), a.GetWorkflowExecution().GetRunId()
			}
		}
	}
	if childID == "" {
		t.Fatal("the parent started no child workflow")
	}
	children := runsOf(ctx, t, c, childID, childRun)
	t.Logf("the parent ran %d workflow runs, its child %d", len(parents), len(children))
	if len(children) < 3 {
		t.Errorf("the child ran %d workflow runs, want it to continue at least twice", len(children))
	}
	for i, h := range append(parents, children...) {
		if err := replayerOf(t, lc.reg).ReplayWorkflowHistory(nil, h); err != nil {
			t.Errorf("run %d does not replay: %v", i, err)
		}
	}
	record(t, childContinueHistory, children[0])
}

// The committed history of a subagent's child workflow that continued as
// new replays on a worker with the limit it ran with, and not on one that
// would have gone on in the same run (a replay takes the path its limits
// say).
func TestChildContinueHistoryReplays(t *testing.T) {
	lc := newChildLongCase(t, 12)
	lc.reg.ContinueAfter = 40
	if err := replayerOf(t, lc.reg).ReplayWorkflowHistoryFromJSONFile(nil, childContinueHistory); err != nil {
		t.Errorf("%s does not replay: %v", childContinueHistory, err)
	}
	lc.reg.ContinueAfter = -1
	if err := replayerOf(t, lc.reg).ReplayWorkflowHistoryFromJSONFile(nil, childContinueHistory); err == nil {
		t.Errorf("%s replayed on a worker that does not continue, want a nondeterminism error", childContinueHistory)
	}
}
