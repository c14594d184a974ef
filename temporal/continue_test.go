package temporal_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/approve"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/runner"
	"github.com/deepagents-go/deepagents/temporal"
	"github.com/deepagents-go/deepagents/tool"
)

// longCase is an agent that calls a counting tool for some rounds, then
// writes a file a person must approve, then ends.
type longCase struct {
	reg   *temporal.Registry
	a     *agent.Agent
	store checkpoint.RunStore
	mu    sync.Mutex
	calls map[string]int // count calls that ran, by call id
}

func newLongCase(t *testing.T, rounds int) *longCase {
	t.Helper()
	lc := &longCase{calls: map[string]int{}, store: openStore(t)}
	var steps []scripted.Step
	for i := range rounds {
		steps = append(steps, step("", scripted.StepCall{ID: fmt.Sprintf("c%d", i), Name: "count", Args: json.RawMessage(`{}`)}))
	}
	steps = append(steps, step("", scripted.StepCall{ID: "w", Name: "write", Args: json.RawMessage(`{"path":"/done.txt","content":"done"}`)}), step("all counted"))
	reg := temporal.NewRegistry()
	reg.Store = lc.store
	m := reg.Model("scripted", scripted.New(scripted.Script{"counter": {Steps: steps}}, scripted.Options{}))
	count := reg.Tool("counter", tool.MustFunc("count", "Counts.", func(_ context.Context, env *tool.Env, _ struct{}) (string, error) {
		lc.mu.Lock()
		defer lc.mu.Unlock()
		lc.calls[env.CallID]++
		return "counted " + env.CallID, nil
	}))
	lc.a = mustAgent(t, agent.Config{Name: "counter", Model: m, Tools: []tool.Tool{count, writeTool}, MaxSteps: rounds + 5,
		Middleware: []agent.Middleware{approve.Gate(map[string]approve.Policy{"write": {}})}})
	if err := reg.Agent("counter", lc.a); err != nil {
		t.Fatal(err)
	}
	lc.reg = reg
	return lc
}

// In the test environment, a run on a thread whose history is past
// Registry.ContinueAfter (as the environment says) stops right after its first step is saved and
// continues as new, carrying its thread and no messages.
func TestARunContinuesAsNewAfterASavedStep(t *testing.T) {
	lc := newLongCase(t, 3)
	lc.reg.ContinueAfter = 1000
	env := newEnv(t, lc.reg)
	env.SetCurrentHistoryLength(1000)
	env.ExecuteWorkflow(temporal.RunAgentWorkflow, temporal.RunInput{Agent: "counter", Thread: "T", Input: "count"})
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("the workflow ended with %v, want it to continue as new", err)
	}
	var next temporal.RunInput
	if err := temporal.DataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	if next.Thread != "T" || next.Input != "" || next.Continued != 1 || len(next.Waiting) != 0 {
		t.Errorf("the next run's input is %+v", next)
	}
	if len(lc.calls) != 0 {
		t.Errorf("calls ran before continuing: %v", lc.calls)
	}
	// The thread holds the step, its call not started: the next run
	// resumes from it.
	cp, err := lc.store.Get(context.Background(), checkpoint.Ref{ThreadID: "T"})
	if err != nil {
		t.Fatal(err)
	}
	msgs := cp.State.Messages
	if len(msgs) == 0 || len(msgs[len(msgs)-1].ToolCalls) != 1 || cp.Status == checkpoint.StatusDone {
		t.Errorf("the thread does not end with the saved step's call (status %q): %s", cp.Status, mustJSON(t, msgs))
	}
}

// On a real server, a run of 12 rounds continues as new every few steps
// and at its approval wait; the decision sent to the workflow id reaches
// the newest run, and the run ends with every call run once, the whole
// run's rounds counted, and the same messages as a run in process. Each
// run's history replays.
func TestContinueAsNewOnADevServer(t *testing.T) {
	c := devClient(t)
	const rounds = 12
	lc := newLongCase(t, rounds)
	lc.reg.ContinueAfter = 40
	w := worker.New(c, "deepagents-continue", worker.Options{})
	lc.reg.Register(w)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "continue", TaskQueue: "deepagents-continue"}, temporal.RunAgentWorkflow,
		temporal.RunInput{Agent: "counter", Thread: "long", Input: "count"})
	if err != nil {
		t.Fatal(err)
	}
	first := run.GetRunID() // Get moves the run on to the last one
	// The write waits for a person: ask the newest run until it lists it.
	var pending []agent.Interrupt
	for len(pending) == 0 {
		if ctx.Err() != nil {
			t.Fatal("the write never waited")
		}
		time.Sleep(100 * time.Millisecond)
		v, err := c.QueryWorkflow(ctx, "continue", "", temporal.PendingQuery)
		if err == nil {
			_ = v.Get(&pending)
		}
	}
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: "continue", UpdateName: temporal.DecideUpdate,
		Args: []any{[]agent.Decision{{Type: agent.Approve, CallID: "w"}}}, WaitForStage: client.WorkflowUpdateStageCompleted})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Get(ctx, nil); err != nil {
		t.Fatal(err)
	}
	var s temporal.Summary
	if err := run.Get(ctx, &s); err != nil {
		t.Fatal(err)
	}
	if s.Status != agent.StatusOK || s.Text != "all counted" || s.Rounds != rounds+2 || s.Continued < 3 {
		t.Errorf("summary %+v", s)
	}
	for i := range rounds {
		if n := lc.calls[fmt.Sprintf("c%d", i)]; n != 1 {
			t.Errorf("call c%d ran %d times", i, n)
		}
	}

	// Every run of the workflow replays, and each but the last continued
	// as new.
	runs := 0
	for id := first; id != ""; runs++ {
		var hist historypb.History
		it := c.GetWorkflowHistory(ctx, "continue", id, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			e, err := it.Next()
			if err != nil {
				t.Fatal(err)
			}
			hist.Events = append(hist.Events, e)
		}
		if err := replayerOf(t, lc.reg).ReplayWorkflowHistory(nil, &hist); err != nil {
			t.Fatalf("run %d does not replay: %v", runs, err)
		}
		if runs == 0 {
			record(t, continueHistory, &hist)
		}
		id = ""
		if last := hist.Events[len(hist.Events)-1]; last.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW {
			id = last.GetWorkflowExecutionContinuedAsNewEventAttributes().GetNewExecutionRunId()
		}
	}
	if runs != s.Continued+1 {
		t.Errorf("%d runs, the summary says it continued %d times", runs, s.Continued)
	}

	// The same run in process, on its own store.
	want := newLongCase(t, rounds)
	res, err := want.a.Invoke(ctx, agent.Prompt("count"), runner.Checkpoints(want.store, "long"))
	if res == nil || res.Status != agent.StatusInterrupted {
		t.Fatalf("in process: %v %+v", err, res)
	}
	res, err = want.a.Invoke(ctx, agent.Input{}, runner.Checkpoints(want.store, "long"), agent.WithDecisions(agent.Decision{Type: agent.Approve, CallID: "w"}))
	if err != nil || res.Status != agent.StatusOK {
		t.Fatalf("in process, resumed: %v %+v", err, res)
	}
	got, err := lc.store.Get(ctx, checkpoint.Ref{ThreadID: "long"})
	if err != nil {
		t.Fatal(err)
	}
	wantCP, err := want.store.Get(ctx, checkpoint.Ref{ThreadID: "long"})
	if err != nil {
		t.Fatal(err)
	}
	if g, w := mustJSON(t, got.State.Messages), mustJSON(t, wantCP.State.Messages); string(g) != string(w) {
		t.Errorf("the thread's messages differ from the run in process:\n got %s\nwant %s", g, w)
	}
}

// A run that waits for a person on a long history continues as new
// carrying the waiting calls and the wait's deadline; the next workflow
// run starts at the wait, and a decision sent to it finishes the run.
func TestAWaitContinuesAsNew(t *testing.T) {
	lc := newLongCase(t, 1)
	lc.reg.ContinueAfter = 1000
	// In process: the count, then the write waits.
	res, _ := lc.a.Invoke(t.Context(), agent.Prompt("count"), runner.Checkpoints(lc.store, "T"))
	if res == nil || res.Status != agent.StatusInterrupted {
		t.Fatalf("in process: %+v", res)
	}
	env := newEnv(t, lc.reg)
	env.SetCurrentHistoryLength(1000)
	env.ExecuteWorkflow(temporal.RunAgentWorkflow, temporal.RunInput{Agent: "counter", Thread: "T"})
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("the workflow ended with %v, want it to continue as new", err)
	}
	var next temporal.RunInput
	if err := temporal.DataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	if len(next.Waiting) != 1 || next.Waiting[0].CallID != "w" || next.WaitUntil.IsZero() || next.Continued != 1 {
		t.Fatalf("the next run's input is %+v", next)
	}

	env = newEnv(t, lc.reg)
	var pending []agent.Interrupt
	var o *outcome
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(temporal.PendingQuery)
		if err != nil {
			t.Error(err)
			return
		}
		_ = v.Get(&pending)
		o = decide(env, []agent.Decision{{Type: agent.Approve, CallID: "w"}})
	}, time.Minute)
	env.ExecuteWorkflow(temporal.RunAgentWorkflow, next)
	s := summary(t, env)
	if len(pending) != 1 || o == nil || !o.done || o.refused != nil {
		t.Fatalf("pending %v, update %+v", pending, o)
	}
	if s.Status != agent.StatusOK || s.Text != "all counted" || s.Continued != 1 || s.Rounds != 3 {
		t.Errorf("summary %+v", s)
	}
	if lc.calls["c0"] != 1 {
		t.Errorf("c0 ran %d times", lc.calls["c0"])
	}

	// The wait keeps its deadline: past it, the next run ends at once.
	env = newEnv(t, lc.reg)
	next.WaitUntil = time.Unix(0, 0)
	env.ExecuteWorkflow(temporal.RunAgentWorkflow, next)
	if s := summary(t, env); s.Status != agent.StatusInterrupted || len(s.Interrupts) != 1 {
		t.Errorf("past its deadline: %+v", s)
	}
}

// continueHistory is the first run of TestContinueAsNewOnADevServer's
// workflow: it continued as new after a saved step.
const continueHistory = "testdata/continue.history.json"

// The committed history of a run that continued as new replays: its
// version marker, the records and the continuation take the same steps.
func TestContinueHistoryReplays(t *testing.T) {
	lc := newLongCase(t, 12)
	lc.reg.ContinueAfter = 40
	if err := replayerOf(t, lc.reg).ReplayWorkflowHistoryFromJSONFile(nil, continueHistory); err != nil {
		t.Fatalf("%s does not replay: %v", continueHistory, err)
	}
	// Continuing later is another workflow: the replay says so.
	lc = newLongCase(t, 12)
	lc.reg.ContinueAfter = 400
	if err := replayerOf(t, lc.reg).ReplayWorkflowHistoryFromJSONFile(nil, continueHistory); err == nil {
		t.Fatal("a workflow that continues later replayed the history")
	}
}
