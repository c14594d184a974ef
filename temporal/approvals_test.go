package temporal_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/approve"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/subagent"
	"github.com/deepagents-go/deepagents/temporal"
	"github.com/deepagents-go/deepagents/tool"
)

// approvalRegistry registers as "parent" the agent of TestWorkflowRunsApproval
// on a fresh registry: the parent's write w1 and its helper subagent's
// write w2 wait for a person. The parent's write allows all four decisions,
// the helper's approve, edit and reject.
func approvalRegistry(t *testing.T) *temporal.Registry {
	t.Helper()
	reg := temporal.NewRegistry()
	m := reg.Model("scripted", scripted.New(scripted.Script{
		"parent": {Steps: []scripted.Step{
			step("", scripted.StepCall{ID: "t1", Name: "task", Args: json.RawMessage(`{"description":"write a","subagent_type":"helper"}`)},
				scripted.StepCall{ID: "w1", Name: "write", Args: json.RawMessage(`{"path":"/p.txt","content":"parent"}`)}),
			step("all done"),
		}},
		"helper": {Steps: []scripted.Step{
			step("", scripted.StepCall{ID: "w2", Name: "write", Args: json.RawMessage(`{"path":"/a.txt","content":"a"}`)}, tc("note", `{}`)),
			step("wrote a"),
		}},
	}, scripted.Options{}))
	task, err := subagent.NewTask(subagent.Config{Model: m, BaseTools: []tool.Tool{writeTool},
		Middleware: []agent.Middleware{approve.Gate(map[string]approve.Policy{"write": {}})},
		Subagents:  []subagent.Spec{{Name: "helper", Description: "Helps.", Tools: []tool.Tool{noteTool}}}})
	if err != nil {
		t.Fatal(err)
	}
	all := approve.Policy{Allowed: []agent.DecisionType{agent.Approve, agent.Edit, agent.Reject, agent.Respond}}
	a, err := agent.New(agent.Config{Model: m, Tools: []tool.Tool{writeTool, task},
		Middleware: []agent.Middleware{approve.Gate(map[string]approve.Policy{"write": all})}})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Agent("parent", a); err != nil {
		t.Fatal(err)
	}
	return reg
}

// pending queries the calls the workflow waits on.
func pending(t *testing.T, env *testsuite.TestWorkflowEnvironment) []agent.Interrupt {
	t.Helper()
	v, err := env.QueryWorkflow(temporal.PendingQuery)
	if err != nil {
		t.Fatal(err)
	}
	var ins []agent.Interrupt
	if err := v.Get(&ins); err != nil {
		t.Fatal(err)
	}
	return ins
}

// outcome is what became of a decide update.
type outcome struct {
	done    bool
	refused error
}

// decide sends the decide update; the test environment answers it once the
// workflow has taken it.
func decide(env *testsuite.TestWorkflowEnvironment, decisions any) *outcome {
	o := &outcome{}
	env.UpdateWorkflow(temporal.DecideUpdate, "", &testsuite.TestUpdateCallback{
		OnReject:   func(err error) { o.refused, o.done = err, true },
		OnAccept:   func() {},
		OnComplete: func(any, error) { o.done = true },
	}, decisions)
	return o
}

func callIDs(ins []agent.Interrupt) []string {
	var ids []string
	for _, in := range ins {
		ids = append(ids, in.CallID)
	}
	return ids
}

func summary(t *testing.T, env *testsuite.TestWorkflowEnvironment) *temporal.Summary {
	t.Helper()
	if !env.IsWorkflowCompleted() {
		t.Fatal("the workflow did not complete")
	}
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var s temporal.Summary
	if err := env.GetWorkflowResult(&s); err != nil {
		t.Fatal(err)
	}
	return &s
}

// A run that ends interrupted keeps its workflow waiting: the query lists
// the parent's and the subagent's waiting calls with their paths,
// decisions that do not fit are refused and leave it waiting, and each
// kind of decision on the parent's call (the subagent's approved by its
// path) resumes the run to its end.
func TestApprovalWaitsForDecisions(t *testing.T) {
	for _, c := range []struct {
		name     string
		decision agent.Decision
		files    []string
	}{
		{"approve", agent.Decision{Type: agent.Approve, CallID: "w1"}, []string{"/a.txt", "/p.txt"}},
		{"reject", agent.Decision{Type: agent.Reject, CallID: "w1", Message: "no"}, []string{"/a.txt"}},
		{"edit", agent.Decision{Type: agent.Edit, CallID: "w1", Args: json.RawMessage(`{"path":"/q.txt","content":"edited"}`)}, []string{"/a.txt", "/q.txt"}},
		{"respond", agent.Decision{Type: agent.Respond, CallID: "w1", Message: "pretend it is written"}, []string{"/a.txt"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := newEnv(t, approvalRegistry(t))
			var waiting, after []agent.Interrupt
			var refusals []*outcome
			var good *outcome
			env.RegisterDelayedCallback(func() {
				waiting = pending(t, env)
				if len(waiting) != 2 {
					return
				}
				sub := waiting[1].Path
				for _, bad := range []any{
					[]agent.Decision{{Type: agent.Approve, CallID: "nope"}},                                 // no such call
					[]agent.Decision{{Type: agent.Respond, CallID: "w2", Path: sub, Message: "hi"}},         // not allowed there
					[]agent.Decision{{Type: agent.Edit, CallID: "w1", Args: json.RawMessage(`{"path":5}`)}}, // does not fit the tool
					[]agent.Decision{{Type: agent.Approve, CallID: "w1"}, {Type: agent.Reject, CallID: "w1"}},
					[]agent.Decision{},
					json.RawMessage(`{"nothing":1}`),
				} {
					refusals = append(refusals, decide(env, bad))
				}
			}, time.Minute)
			env.RegisterDelayedCallback(func() {
				after = pending(t, env)
				if len(waiting) == 2 {
					good = decide(env, []agent.Decision{c.decision, {Type: agent.Approve, CallID: "w2", Path: waiting[1].Path}})
				}
			}, 2*time.Minute)
			env.ExecuteWorkflow(temporal.RunAgentWorkflow, temporal.RunInput{Agent: "parent", Input: "go"})

			if !slices.Equal(callIDs(waiting), []string{"w1", "w2"}) {
				t.Fatalf("waiting %v, want w1 (the parent's) and w2 (the subagent's)", callIDs(waiting))
			}
			if p := waiting[1].Path.String(); !strings.Contains(p, "helper") {
				t.Errorf("the subagent's call has path %q", p)
			}
			for i, o := range refusals {
				if !o.done || o.refused == nil {
					t.Errorf("bad decisions %d were not refused: %+v", i, o)
				}
			}
			if good == nil || !good.done || good.refused != nil {
				t.Errorf("good decisions: %+v", good)
			}
			if !slices.Equal(callIDs(after), []string{"w1", "w2"}) {
				t.Errorf("after the refusals, waiting %v", callIDs(after))
			}
			s := summary(t, env)
			if s.Status != agent.StatusOK || s.Text != "all done" || !slices.Equal(s.Files, c.files) || len(s.Interrupts) != 0 {
				t.Fatalf("summary %+v, want ok with files %v", s, c.files)
			}
			if len(s.Children) != 1 || s.Children[0].Text != "wrote a" {
				t.Errorf("children %+v", s.Children)
			}
		})
	}
}

// LangChain's shape, decisions in the order of the waiting calls and
// without call ids, is taken too; decisions for some of the calls resume
// the run, which then waits again for the others.
func TestApprovalTakesLangChainShapeAndPartialDecisions(t *testing.T) {
	env := newEnv(t, approvalRegistry(t))
	var first, second []agent.Interrupt
	var errs []*outcome
	env.RegisterDelayedCallback(func() {
		first = pending(t, env)
		if len(first) != 2 {
			return
		}
		errs = append(errs, decide(env, json.RawMessage(`[{"type":"approve","call_id":"w1"}]`)))
	}, time.Minute)
	env.RegisterDelayedCallback(func() {
		second = pending(t, env)
		errs = append(errs, decide(env, json.RawMessage(`{"decisions":[{"type":"approve"}]}`)))
	}, 2*time.Minute)
	env.ExecuteWorkflow(temporal.RunAgentWorkflow, temporal.RunInput{Agent: "parent", Thread: "T", Input: "go"})
	for _, o := range errs {
		if !o.done || o.refused != nil {
			t.Errorf("decisions not taken: %+v", o)
		}
	}
	if !slices.Equal(callIDs(first), []string{"w1", "w2"}) || !slices.Equal(callIDs(second), []string{"w2"}) {
		t.Fatalf("waiting %v, then %v", callIDs(first), callIDs(second))
	}
	s := summary(t, env)
	if s.Status != agent.StatusOK || s.Thread != "T" || !slices.Equal(s.Files, []string{"/a.txt", "/p.txt"}) {
		t.Fatalf("summary %+v", s)
	}
}

// A wait that no decision ends times out on the registry's timer: the
// workflow ends interrupted, its waiting calls in the summary.
func TestApprovalWaitTimesOut(t *testing.T) {
	reg := approvalRegistry(t)
	reg.ApprovalTimeout = time.Hour
	env := newEnv(t, reg)
	env.ExecuteWorkflow(temporal.RunAgentWorkflow, temporal.RunInput{Agent: "parent", Input: "go"})
	s := summary(t, env)
	if s.Status != agent.StatusInterrupted || !slices.Equal(callIDs(s.Interrupts), []string{"w1", "w2"}) || len(s.Files) != 0 {
		t.Fatalf("summary %+v", s)
	}
	if got := env.Now().Sub(start); got < time.Hour || got > 2*time.Hour {
		t.Errorf("the workflow ended %v after its start, want an hour", got)
	}
}

// A negative ApprovalTimeout does not wait: the workflow ends interrupted
// as soon as the run does.
func TestApprovalNoWait(t *testing.T) {
	reg := approvalRegistry(t)
	reg.ApprovalTimeout = -1
	env := newEnv(t, reg)
	env.ExecuteWorkflow(temporal.RunAgentWorkflow, temporal.RunInput{Agent: "parent", Input: "go"})
	s := summary(t, env)
	if s.Status != agent.StatusInterrupted || len(s.Interrupts) != 2 || env.Now().Sub(start) > time.Minute {
		t.Fatalf("summary %+v after %v", s, env.Now().Sub(start))
	}
	if got := pending(t, env); !slices.Equal(callIDs(got), []string{"w1", "w2"}) {
		t.Errorf("the ended workflow lists %v", callIDs(got))
	}
}

const approvalHistory = "testdata/approval.history.json"

// On a real server: a client queries the waiting calls, an update that
// does not fit them is refused, one that does resumes the run to its end,
// and the history (update messages included) replays; a second workflow
// waits past its timeout and ends interrupted, its calls still listed. With
// DEEPAGENTS_TEMPORAL_RECORD=1 the first history is written to testdata.
func TestApprovalOnADevServer(t *testing.T) {
	c := devClient(t)
	reg := approvalRegistry(t)
	reg.ApprovalTimeout = 3 * time.Second
	w := worker.New(c, "deepagents-approval", worker.Options{})
	reg.Register(w)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	start := func(id string) client.WorkflowRun {
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: "deepagents-approval"},
			temporal.RunAgentWorkflow, temporal.RunInput{Agent: "parent", Thread: id, Input: "go"})
		if err != nil {
			t.Fatal(err)
		}
		return run
	}
	update := func(run client.WorkflowRun, ds any) error {
		h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: run.GetID(), RunID: run.GetRunID(),
			UpdateName: temporal.DecideUpdate, Args: []any{ds}, WaitForStage: client.WorkflowUpdateStageCompleted})
		if err != nil {
			return err
		}
		return h.Get(ctx, nil)
	}

	run := start("approval")
	var waiting []agent.Interrupt
	for len(waiting) == 0 {
		v, err := c.QueryWorkflow(ctx, run.GetID(), run.GetRunID(), temporal.PendingQuery)
		if err != nil {
			t.Fatal(err)
		}
		if err := v.Get(&waiting); err != nil {
			t.Fatal(err)
		}
		if len(waiting) == 0 {
			time.Sleep(50 * time.Millisecond)
		}
	}
	if !slices.Equal(callIDs(waiting), []string{"w1", "w2"}) {
		t.Fatalf("waiting %v", callIDs(waiting))
	}
	if err := update(run, []agent.Decision{{Type: agent.Approve, CallID: "nope"}}); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("an update for no waiting call: %v", err)
	}
	if err := update(run, []agent.Decision{{Type: agent.Edit, CallID: "w1", Args: json.RawMessage(`{"path":"/q.txt","content":"q"}`)},
		{Type: agent.Approve, CallID: "w2", Path: waiting[1].Path}}); err != nil {
		t.Fatal(err)
	}
	var s temporal.Summary
	if err := run.Get(ctx, &s); err != nil {
		t.Fatal(err)
	}
	if s.Status != agent.StatusOK || !slices.Equal(s.Files, []string{"/a.txt", "/q.txt"}) {
		t.Fatalf("summary %+v", s)
	}
	h := history(ctx, t, c, run)
	if err := approvalReplayer(t).ReplayWorkflowHistory(nil, h); err != nil {
		t.Fatalf("the history does not replay: %v", err)
	}
	record(t, approvalHistory, h)

	late := start("approval-late")
	if err := late.Get(ctx, &s); err != nil {
		t.Fatal(err)
	}
	if s.Status != agent.StatusInterrupted || !slices.Equal(callIDs(s.Interrupts), []string{"w1", "w2"}) {
		t.Fatalf("summary after the timeout %+v", s)
	}
	// The closed workflow still answers the query (by replay), and
	// refuses decisions.
	v, err := c.QueryWorkflow(ctx, late.GetID(), late.GetRunID(), temporal.PendingQuery)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Get(&waiting); err != nil || !slices.Equal(callIDs(waiting), []string{"w1", "w2"}) {
		t.Errorf("the closed workflow's pending calls: %v, %v", callIDs(waiting), err)
	}
	if err := update(late, []agent.Decision{{Type: agent.Approve, CallID: "w1"}}); err == nil {
		t.Error("a closed workflow took decisions")
	}
}

func approvalReplayer(t *testing.T) worker.WorkflowReplayer {
	t.Helper()
	return replayerOf(t, approvalRegistry(t))
}

// The committed history of a run that waited, had an update refused and
// one taken, replays on the workflow as it is now.
func TestApprovalHistoryReplays(t *testing.T) {
	if err := approvalReplayer(t).ReplayWorkflowHistoryFromJSONFile(nil, approvalHistory); err != nil {
		t.Fatalf("%s does not replay: %v", approvalHistory, err)
	}
}

// interruptedHistory is the history of a RunAgent workflow of
// approvalRegistry's agent recorded before the wait existed: it ended as
// soon as its run was interrupted.
const interruptedHistory = "testdata/interrupted.history.json"

// A workflow that ended interrupted without waiting, before the wait
// existed, replays: the wait is guarded by workflow.GetVersion, so the
// replay takes the old path (no timer) where the history has no marker.
func TestInterruptedHistoryReplaysWithoutTheWait(t *testing.T) {
	if err := approvalReplayer(t).ReplayWorkflowHistoryFromJSONFile(nil, interruptedHistory); err != nil {
		t.Fatalf("%s does not replay: %v", interruptedHistory, err)
	}
}

// Cancelling a workflow that waits for decisions ends it cancelled at
// once, the summary (the run as it stopped, its calls still waiting) in
// its CanceledError.
func TestApprovalWaitIsCancelled(t *testing.T) {
	env := newEnv(t, approvalRegistry(t))
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Minute)
	env.ExecuteWorkflow(temporal.RunAgentWorkflow, temporal.RunInput{Agent: "parent", Input: "go"})
	var ce *sdktemporal.CanceledError
	if err := env.GetWorkflowError(); !errors.As(err, &ce) {
		t.Fatalf("the workflow ended with %v, want it cancelled", err)
	}
	var s temporal.Summary
	if err := ce.Details(&s); err != nil {
		t.Fatal(err)
	}
	if s.Status != agent.StatusInterrupted || !slices.Equal(callIDs(s.Interrupts), []string{"w1", "w2"}) {
		t.Fatalf("summary %+v", s)
	}
	if got := env.Now().Sub(start); got > 2*time.Minute {
		t.Errorf("the workflow ended %v after its start, want at its cancellation", got)
	}
}
