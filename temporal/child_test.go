package temporal_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/checkpoint/sqlite"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/subagent"
	"github.com/deepagents-go/deepagents/temporal"
	"github.com/deepagents-go/deepagents/tool"
)

// childStarts records the child workflows a test environment starts: their
// workflow type and the path of the subagent each runs.
type childStarts struct {
	mu     sync.Mutex
	types  []string
	paths  []string
	inputs []temporal.SubagentInput
}

func (c *childStarts) listen(t *testing.T, info *workflow.Info, args converter.EncodedValues) {
	var in temporal.SubagentInput
	if err := args.Get(&in); err != nil {
		t.Error(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.types = append(c.types, info.WorkflowType.Name)
	c.paths = append(c.paths, in.Path.String())
	c.inputs = append(c.inputs, in)
}

// The parallel delegation run by RunAgent starts each subagent as a child
// workflow (RunSubagent) and ends as the same run in process does: the
// same summary, the subagents' files merged into the parent's.
func TestSubagentsRunAsChildWorkflows(t *testing.T) {
	reg, a := delegation(t, 0)
	env := newEnv(t, reg)
	var starts childStarts
	env.SetOnChildWorkflowStartedListener(func(info *workflow.Info, _ workflow.Context, args converter.EncodedValues) {
		starts.listen(t, info, args)
	})
	env.ExecuteWorkflow(temporal.RunAgentWorkflow, temporal.RunInput{Agent: "parent", Input: "delegate"})
	s := summary(t, env)

	slices.Sort(starts.paths)
	if !slices.Equal(starts.types, []string{temporal.RunSubagentWorkflow, temporal.RunSubagentWorkflow}) ||
		!slices.Equal(starts.paths, []string{"parent / general-purpose#t1", "parent / helper#t2"}) {
		t.Fatalf("child workflows %v of %v, want the two subagents", starts.types, starts.paths)
	}
	res, err := a.Invoke(t.Context(), agent.Prompt("delegate"), agent.WithRuntime(agent.Sequential(start)))
	if err != nil {
		t.Fatal(err)
	}
	want := temporal.Summarize("parent", "", res)
	if got := mustJSON(t, s); !bytes.Equal(got, mustJSON(t, want)) {
		t.Errorf("summary with child workflows:\n%s\nin process:\n%s", got, mustJSON(t, want))
	}
}

// A subagent that waits for a person keeps its child workflow open: the
// parent's workflow waits with the child's call listed, and the decisions
// reach the same child workflow, which resumes its run to its end.
func TestChildWorkflowWaitsForTheParentsDecisions(t *testing.T) {
	env := newEnv(t, approvalRegistry(t))
	var starts childStarts
	env.SetOnChildWorkflowStartedListener(func(info *workflow.Info, _ workflow.Context, args converter.EncodedValues) {
		starts.listen(t, info, args)
	})
	var waiting []agent.Interrupt
	var good *outcome
	env.RegisterDelayedCallback(func() {
		waiting = pending(t, env)
		if len(waiting) == 2 {
			good = decide(env, []agent.Decision{{Type: agent.Approve, CallID: "w1"}, {Type: agent.Approve, CallID: "w2", Path: waiting[1].Path}})
		}
	}, time.Minute)
	env.ExecuteWorkflow(temporal.RunAgentWorkflow, temporal.RunInput{Agent: "parent", Input: "go"})
	if !slices.Equal(callIDs(waiting), []string{"w1", "w2"}) || waiting[1].Path.String() != "parent / helper#t1" {
		t.Fatalf("waiting %+v", waiting)
	}
	if good == nil || good.refused != nil {
		t.Fatalf("decisions: %+v", good)
	}
	s := summary(t, env)
	if s.Status != agent.StatusOK || !slices.Equal(s.Files, []string{"/a.txt", "/p.txt"}) || len(s.Children) != 1 || s.Children[0].Text != "wrote a" {
		t.Fatalf("summary %+v", s)
	}
	if !slices.Equal(starts.paths, []string{"parent / helper#t1"}) {
		t.Errorf("child workflows of %v, want one, resumed", starts.paths)
	}
}

// Cancelling the parent's workflow while its subagents run cancels their
// child workflows; each ends cancelled with what its run did.
func TestCancellingTheParentCancelsItsChildWorkflows(t *testing.T) {
	reg := temporal.NewRegistry()
	var env *testsuite.TestWorkflowEnvironment
	var once sync.Once
	m := reg.Model("scripted", onCall{Model: scripted.New(scripted.Script{
		"parent": {Steps: []scripted.Step{
			step("", scripted.StepCall{ID: "t1", Name: "task", Args: json.RawMessage(`{"description":"write a","subagent_type":"helper"}`)},
				scripted.StepCall{ID: "t2", Name: "task", Args: json.RawMessage(`{"description":"write b","subagent_type":"helper"}`)}),
			step("all done"),
		}},
		"helper": {Steps: []scripted.Step{
			step("", tc("write", `{"path":"/x.txt","content":"x"}`)),
			step("wrote"),
		}},
	}, scripted.Options{}), hook: func(ctx context.Context, ci llm.CallInfo) error {
		if ci.Agent != "helper" || ci.Round != 1 {
			return nil
		}
		once.Do(env.CancelWorkflow)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Second):
			return errors.New("the model call was not cancelled")
		}
	}})
	task, err := subagent.NewTask(subagent.Config{Model: m, BaseTools: []tool.Tool{writeTool},
		Subagents: []subagent.Spec{{Name: "helper", Description: "Helps."}}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{Model: m, Tools: []tool.Tool{task}})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Agent("parent", a); err != nil {
		t.Fatal(err)
	}
	env = newEnv(t, reg)
	var mu sync.Mutex
	var cancelled []string
	env.SetOnChildWorkflowCompletedListener(func(info *workflow.Info, result converter.EncodedValue, err error) {
		var ce *sdktemporal.CanceledError
		var out temporal.SubagentOutcome
		if errors.As(err, &ce) && ce.Details(&out) == nil && out.Result != nil && out.Result.Status == agent.StatusCancelled {
			mu.Lock()
			cancelled = append(cancelled, out.Result.Agent.String())
			mu.Unlock()
		}
	})
	env.ExecuteWorkflow(temporal.RunAgentWorkflow, temporal.RunInput{Agent: "parent", Input: "go"})
	var ce *sdktemporal.CanceledError
	if err := env.GetWorkflowError(); !errors.As(err, &ce) {
		t.Fatalf("the workflow ended with %v, want it cancelled", err)
	}
	var s temporal.Summary
	if err := ce.Details(&s); err != nil {
		t.Fatal(err)
	}
	if s.Status != agent.StatusCancelled || len(s.Children) != 2 || s.Children[0].Status != agent.StatusCancelled || s.Children[1].Status != agent.StatusCancelled {
		t.Fatalf("summary %+v", s)
	}
	slices.Sort(cancelled)
	if !slices.Equal(cancelled, []string{"parent / helper#t1", "parent / helper#t2"}) {
		t.Errorf("child workflows that ended cancelled: %v", cancelled)
	}
}

// A fork subagent runs as a child workflow too, given its parent's
// conversation and prompt: it ends as in process, and its task tool, which
// refuses to delegate, is one the registry takes.
func TestForkSubagentRunsAsAChildWorkflow(t *testing.T) {
	reg, _ := forkRegistry(t)
	env := newEnv(t, reg)
	var starts childStarts
	env.SetOnChildWorkflowStartedListener(func(info *workflow.Info, _ workflow.Context, args converter.EncodedValues) {
		starts.listen(t, info, args)
	})
	env.ExecuteWorkflow(temporal.RunAgentWorkflow, temporal.RunInput{Agent: "parent", Input: "go"})
	s := summary(t, env)
	if len(starts.paths) != 1 {
		t.Fatalf("child workflows of %v, want the fork's", starts.paths)
	}
	_, a := forkRegistry(t)
	res, err := a.Invoke(t.Context(), agent.Prompt("go"), agent.WithRuntime(agent.Sequential(start)))
	if err != nil {
		t.Fatal(err)
	}
	want := temporal.Summarize("parent", "", res)
	if got := mustJSON(t, s); !bytes.Equal(got, mustJSON(t, want)) || s.Children[0].Text != "summed" {
		t.Errorf("summary with a child workflow:\n%s\nin process:\n%s", got, mustJSON(t, want))
	}
}

// On a thread in a store, a fork's child workflow is not sent its
// parent's conversation: a reference to the parent's saved step and the
// fork's own message, from which the child reads the rest back.
func TestForkOnAThreadRefersToTheParentsStep(t *testing.T) {
	reg, _ := forkRegistry(t)
	reg.Store = openStore(t)
	env := newEnv(t, reg)
	var starts childStarts
	env.SetOnChildWorkflowStartedListener(func(info *workflow.Info, _ workflow.Context, args converter.EncodedValues) {
		starts.listen(t, info, args)
	})
	env.ExecuteWorkflow(temporal.RunAgentWorkflow, temporal.RunInput{Agent: "parent", Thread: "F", Input: "go"})
	s := summary(t, env)
	if s.Status != agent.StatusOK || len(s.Children) != 1 || s.Children[0].Text != "summed" || !slices.Equal(s.Files, []string{"/f.txt", "/p.txt"}) {
		t.Fatalf("summary %+v", s)
	}
	if len(starts.inputs) != 1 {
		t.Fatalf("child workflows of %v", starts.paths)
	}
	in := starts.inputs[0]
	if in.Ref == nil || in.Ref.Prefix < 3 || len(in.Messages) != 1 || !strings.HasPrefix(in.Messages[0].Content, subagent.ForkPreamble) {
		t.Errorf("the fork's input: ref %+v, messages %+v", in.Ref, in.Messages)
	}
}

// forkRegistry registers as "parent" an agent that writes a file, then
// forks a subagent that writes another.
func forkRegistry(t *testing.T) (*temporal.Registry, *agent.Agent) {
	t.Helper()
	reg := temporal.NewRegistry()
	m := reg.Model("scripted", scripted.New(scripted.Script{
		"parent": {Steps: []scripted.Step{
			step("", tc("write", `{"path":"/p.txt","content":"parent"}`)),
			step("", tc("task", `{"description":"sum it up","subagent_type":"fork"}`)),
			step("all done"),
		}},
		"fork": {Steps: []scripted.Step{step("", tc("write", `{"path":"/f.txt","content":"fork"}`)), step("summed")}},
	}, scripted.Options{}))
	task, err := subagent.NewTask(subagent.Config{Model: m, ForkBefore: []tool.Tool{writeTool},
		Subagents: []subagent.Spec{{Name: "fork", Description: "Forks.", Mode: subagent.Fork}}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{Model: m, System: "You are the parent.", Tools: []tool.Tool{writeTool, task}})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Agent("parent", a); err != nil {
		t.Fatal(err)
	}
	return reg, a
}

// A subagent whose input is over the payload limit (here the files it
// would see) is not started: its call fails with an error that says why,
// and the parent's run goes on.
func TestSubagentOverThePayloadLimitIsRefused(t *testing.T) {
	reg := temporal.NewRegistry()
	var mu sync.Mutex
	var receipt string
	m := reg.Model("scripted", seeing{see: func(msg llm.Message) {
		mu.Lock()
		defer mu.Unlock()
		if msg.Role == llm.RoleTool {
			receipt = msg.Content
		}
	}, Model: scripted.New(scripted.Script{
		"parent": {Steps: []scripted.Step{
			step("", tc("fill", `{"path":"/1.bin"}`), tc("fill", `{"path":"/2.bin"}`)),
			step("", tc("task", `{"description":"look","subagent_type":"helper"}`)),
			step("gave up"),
		}},
	}, scripted.Options{})})
	fill := temporal.InWorkflow(tool.MustFunc("fill", "Fill a file.", func(ctx context.Context, env *tool.Env, in struct {
		Path string `json:"path"`
	}) (string, error) {
		// A megabyte that does not compress, the same on every run.
		b := make([]byte, 3<<18)
		x := uint64(len(in.Path)) * 0x9e3779b97f4a7c15
		for i := range b {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			b[i] = byte(x)
		}
		return "filled", env.Files.Write(ctx, in.Path, base64.StdEncoding.EncodeToString(b)+in.Path)
	}))
	task, err := subagent.NewTask(subagent.Config{Model: m, Subagents: []subagent.Spec{{Name: "helper", Description: "Helps."}}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{Model: m, Tools: []tool.Tool{fill, task}})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Agent("parent", a); err != nil {
		t.Fatal(err)
	}
	env := newEnv(t, reg)
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: time.Minute})
	env.ExecuteWorkflow(temporal.RunAgentWorkflow, temporal.RunInput{Agent: "parent", Input: "go"})
	s := summary(t, env)
	if s.Status != agent.StatusOK || s.Text != "gave up" || len(s.Children) != 1 || s.Children[0].Status != agent.StatusError {
		t.Fatalf("summary %+v", s)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(receipt, "Subagent helper did not finish") || !strings.Contains(receipt, "over the 1572864 a payload may have") {
		t.Errorf("the task call's result: %q", receipt)
	}
}

// seeing is a model that passes each request's last message to see before
// m answers it.
type seeing struct {
	llm.Model
	see func(llm.Message)
}

func (s seeing) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	if n := len(req.Messages); n > 0 {
		s.see(req.Messages[n-1])
	}
	return s.Model.Generate(ctx, req)
}

// downStore is a SQLite store whose lease renewals fail as an unavailable
// store's once down is set, for child workflows only: every step record
// renews the lease first, so a child's records fail and its parent's do
// not.
type downStore struct {
	*sqlite.Saver
	down atomic.Bool
}

func (s *downStore) Renew(ctx context.Context, threadID, holder string, now time.Time, ttl time.Duration) (checkpoint.Lease, error) {
	if s.down.Load() && activity.GetInfo(ctx).WorkflowType.Name == temporal.RunSubagentWorkflow {
		return checkpoint.Lease{}, fmt.Errorf("renewing the lease: %w", checkpoint.ErrUnavailable)
	}
	return s.Saver.Renew(ctx, threadID, holder, now, ttl)
}

// A subagent whose store fails stops its parent's run unfinished, as in
// process: the parent's model is not told the subagent failed.
func TestChildWhoseStoreFailsStopsTheParent(t *testing.T) {
	store := &downStore{Saver: openStore(t)}
	reg := temporal.NewRegistry()
	reg.Store = store
	m := reg.Model("scripted", scripted.New(scripted.Script{
		"parent": {Steps: []scripted.Step{step("", tc("task", `{"description":"go","subagent_type":"helper"}`)), step("all done")}},
		"helper": {Steps: []scripted.Step{step("", tc("fail", `{}`)), step("done")}},
	}, scripted.Options{}))
	fail := temporal.InWorkflow(tool.MustFunc("fail", "Make the store fail.", func(context.Context, *tool.Env, struct{}) (string, error) {
		store.down.Store(true)
		return "failed", nil
	}))
	task, err := subagent.NewTask(subagent.Config{Model: m, Subagents: []subagent.Spec{{Name: "helper", Description: "Helps.", Tools: []tool.Tool{fail}}}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{Model: m, Tools: []tool.Tool{task}})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Agent("parent", a); err != nil {
		t.Fatal(err)
	}
	env := newEnv(t, reg)
	env.ExecuteWorkflow(temporal.RunAgentWorkflow, temporal.RunInput{Agent: "parent", Thread: "D", Input: "go"})
	s := summary(t, env)
	if s.Status != agent.StatusError || s.Rounds != 1 || !strings.Contains(s.Error, "unavailable") {
		t.Fatalf("summary %+v, want the run stopped with the store's error after its first round", s)
	}
}

// A subagent that delegates in turn starts its own child workflow: the
// grandchild finds its agent through both task tools, and the run ends as
// in process.
func TestGrandchildIsAChildOfTheChild(t *testing.T) {
	build := func() (*temporal.Registry, *agent.Agent) {
		reg := temporal.NewRegistry()
		m := reg.Model("scripted", scripted.New(scripted.Script{
			"parent": {Steps: []scripted.Step{step("", tc("task", `{"description":"delegate","subagent_type":"helper"}`)), step("all done")}},
			"helper": {Steps: []scripted.Step{step("", tc("task", `{"description":"write","subagent_type":"leaf"}`)), step("delegated")}},
			"leaf":   {Steps: []scripted.Step{step("", tc("write", `{"path":"/leaf.txt","content":"leaf"}`)), step("wrote")}},
		}, scripted.Options{}))
		inner, err := subagent.NewTask(subagent.Config{Model: m, BaseTools: []tool.Tool{writeTool},
			Subagents: []subagent.Spec{{Name: "leaf", Description: "Writes."}}})
		if err != nil {
			t.Fatal(err)
		}
		task, err := subagent.NewTask(subagent.Config{Model: m,
			Subagents: []subagent.Spec{{Name: "helper", Description: "Delegates.", Tools: []tool.Tool{inner}}}})
		if err != nil {
			t.Fatal(err)
		}
		a, err := agent.New(agent.Config{Model: m, Tools: []tool.Tool{task}})
		if err != nil {
			t.Fatal(err)
		}
		if err := reg.Agent("parent", a); err != nil {
			t.Fatal(err)
		}
		return reg, a
	}
	reg, _ := build()
	env := newEnv(t, reg)
	var starts childStarts
	env.SetOnChildWorkflowStartedListener(func(info *workflow.Info, _ workflow.Context, args converter.EncodedValues) {
		starts.listen(t, info, args)
	})
	env.ExecuteWorkflow(temporal.RunAgentWorkflow, temporal.RunInput{Agent: "parent", Input: "go"})
	s := summary(t, env)
	if !slices.Equal(starts.paths, []string{"parent / helper#call_parent_0_r0_0", "parent / helper#call_parent_0_r0_0 / leaf#call_helper_0_r0_0"}) {
		t.Fatalf("child workflows of %v", starts.paths)
	}
	_, a := build()
	res, err := a.Invoke(t.Context(), agent.Prompt("go"), agent.WithRuntime(agent.Sequential(start)))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := mustJSON(t, s), mustJSON(t, temporal.Summarize("parent", "", res)); !bytes.Equal(got, want) || !slices.Equal(s.Files, []string{"/leaf.txt"}) {
		t.Errorf("summary with child workflows:\n%s\nin process:\n%s", got, want)
	}
}
