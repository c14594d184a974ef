package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/runner"
	"github.com/deepagents-go/deepagents/subagent"
	"github.com/deepagents-go/deepagents/tool"
)

// inBubble runs f in a testing/synctest bubble, whose clock moves only when
// every goroutine in it waits. When f is done the bubble's time runs on a
// minute, so that the agent's idle workers (they wait a second for another
// call) end with it.
func inBubble(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		defer time.Sleep(time.Minute)
		f(t)
	})
}

// Paths of the two subagents cutFamily's parent starts.
const (
	fastKid = "parent / worker#c1"
	slowKid = "parent / worker#c2"
)

// cutFamily is a parent whose first step starts two subagents at once: c1
// ("fast") answers at once; c2 ("slow") writes a file, then calls block,
// which waits until its context ends. A cut child takes a moment to wind
// down (it waits until every other goroutine of the test's synctest bubble
// waits), so that its end comes after its parent saw the cut. Every
// model call reports fixed usage: the parent 100 input tokens, the fast
// child 5, the slow child 7 a call.
// blocked is closed when the slow child's block call starts; only the
// first call of block blocks, so that a resumed run goes through.
func cutFamily(t *testing.T) (a *agent.Agent, m *scripted.Model, blocked chan struct{}) {
	t.Helper()
	blocked = make(chan struct{})
	var once sync.Once
	block := tool.MustFunc("block", "Wait until cancelled.", func(ctx context.Context, _ *tool.Env, _ struct{}) (string, error) {
		first := false
		once.Do(func() { first = true })
		if !first {
			return "unblocked", nil
		}
		close(blocked)
		<-ctx.Done()
		return "", ctx.Err()
	})
	task := scripted.StepCall{Name: "task"}
	fast, slow := task, task
	fast.ID, fast.Args = "c1", json.RawMessage(`{"description":"fast","subagent_type":"worker"}`)
	slow.ID, slow.Args = "c2", json.RawMessage(`{"description":"slow","subagent_type":"worker"}`)
	m = scripted.New(scripted.Script{
		"parent": steps(
			scripted.Step{ToolCalls: []scripted.StepCall{fast, slow}, Usage: &llm.Usage{InputTokens: 100}},
			scripted.Step{Content: "parent done", Usage: &llm.Usage{InputTokens: 100}},
		),
		"worker": {Cases: []scripted.Case{
			{Match: "fast", Steps: []scripted.Step{{Content: "fast report", Usage: &llm.Usage{InputTokens: 5}}}},
			{Match: "slow", Steps: []scripted.Step{
				{ToolCalls: []scripted.StepCall{call("write", `{"path":"/slow.md","content":"s"}`)}, Usage: &llm.Usage{InputTokens: 7}},
				{ToolCalls: []scripted.StepCall{call("block", `{}`)}, Usage: &llm.Usage{InputTokens: 7}},
				{Content: "slow report", Usage: &llm.Usage{InputTokens: 7}},
			}},
		}},
	}, scripted.Options{})
	windDown := agent.Middleware{Name: "wind-down", AfterRun: func(_ context.Context, _ agent.StepInfo, s agent.Status) {
		if s == agent.StatusCancelled {
			synctest.Wait()
		}
	}}
	tk, err := subagent.NewTask(subagent.Config{Model: m, Subagents: []subagent.Spec{
		{Name: "worker", Description: "Works.", Tools: []tool.Tool{writeTool, block}, Middleware: []agent.Middleware{windDown}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{tk}}), m, blocked
}

// cutWhenBlocked returns an event handler that calls cut once the fast
// child's call has ended in the parent and the slow child is blocked.
func cutWhenBlocked(blocked chan struct{}, cut func()) func(agent.Event) {
	fastEnded, slowBlocks := false, false
	return func(ev agent.Event) {
		switch {
		case ev.Type == agent.ToolEnd && ev.Agent.String() == "parent" && ev.Tool.CallID == "c1":
			fastEnded = true
		case ev.Type == agent.ToolStart && ev.Agent.String() == slowKid && ev.Tool.Name == "block":
			slowBlocks = true
		default:
			return
		}
		if fastEnded && slowBlocks {
			<-blocked
			cut()
		}
	}
}

// checkCutFamily checks a parent result cut while its slow child was
// blocked: both children are listed, the slow one cancelled, each with its
// own usage, and the parent's totals count them.
func checkCutFamily(t *testing.T, res *agent.Result) {
	t.Helper()
	if got := slices.Sorted(maps.Keys(res.Children)); !slices.Equal(got, []string{"c1", "c2"}) {
		t.Fatalf("children %v, want c1 and c2", got)
	}
	fast, slow := res.Children["c1"], res.Children["c2"]
	if fast.Status != agent.StatusOK || fast.Usage.InputTokens != 5 {
		t.Errorf("fast child: status %s, usage %+v", fast.Status, fast.Usage)
	}
	if slow.Status != agent.StatusCancelled || slow.Agent.String() != slowKid || slow.Usage.InputTokens != 14 || slow.Rounds != 2 {
		t.Errorf("slow child: status %s, agent %q, rounds %d, usage %+v", slow.Status, slow.Agent, slow.Rounds, slow.Usage)
	}
	if !slices.Equal(slow.Changed, []string{"/slow.md"}) {
		t.Errorf("slow child changed %v, want [/slow.md]", slow.Changed)
	}
	if res.Usage.InputTokens != 119 {
		t.Errorf("parent usage %+v, want 119 input tokens (100 own, 5 and 14 of the children)", res.Usage)
	}
	want := map[string]llm.Usage{"parent": {InputTokens: 100}, fastKid: {InputTokens: 5}, slowKid: {InputTokens: 14}}
	for p, u := range want {
		if res.UsageByAgent[p].InputTokens != u.InputTokens {
			t.Errorf("UsageByAgent[%q] = %+v, want %+v", p, res.UsageByAgent[p], u)
		}
	}
	if l := res.ContextByAgent[slowKid]; l.Calls != 2 {
		t.Errorf("the slow child's context ledger: %+v, want 2 calls", l)
	}
}

// A run cancelled while one of its subagents is still working lists that
// subagent in Result.Children, cancelled, with what it did and spent so
// far; the run's error still says it was cancelled.
func TestCancelledRunKeepsRunningChildren(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		for rep := range 20 {
			a, _, blocked := cutFamily(t)
			ctx, cancel := context.WithCancel(t.Context())
			res, err := agent.Drain(a.Run(ctx, agent.Prompt("go")), cutWhenBlocked(blocked, cancel))
			cancel()
			if !errors.Is(err, agent.ErrCancelled) || !errors.Is(err, context.Canceled) || res.Status != agent.StatusCancelled {
				t.Fatalf("rep %d: status %s, err %v; want cancelled", rep, res.Status, err)
			}
			checkCutFamily(t, res)
			if t.Failed() {
				t.Fatalf("rep %d failed", rep)
			}
		}
	})
}

// A run whose own time runs out (a limit, not a cancellation) lists the
// subagents it cut the same way: the slow one blocks until the time is up.
func TestTimedOutRunKeepsRunningChildren(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		a, _, _ := cutFamily(t)
		res, err := a.Invoke(t.Context(), agent.Prompt("go"), agent.WithTimeout(500*time.Millisecond))
		if !errors.Is(err, agent.ErrLimit) || !errors.Is(err, context.DeadlineExceeded) || res.Status != agent.StatusLimit {
			t.Fatalf("status %s, err %v; want a limit", res.Status, err)
		}
		checkCutFamily(t, res)
	})
}

// A recorded run cancelled while a subagent works lists it the same
// way, and resuming the thread finishes that subagent where it stopped,
// without running the finished one again.
func TestCancelledDurableRunKeepsRunningChildren(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		a, m, blocked := cutFamily(t)
		saver := checkpoint.NewMemory(0)
		ctx, cancel := context.WithCancel(t.Context())
		res, err := agent.Drain(a.Run(ctx, agent.Prompt("go"), runner.Checkpoints(saver, "cut")), cutWhenBlocked(blocked, cancel))
		cancel()
		if !errors.Is(err, agent.ErrCancelled) || res.Status != agent.StatusCancelled {
			t.Fatalf("status %s, err %v; want cancelled", res.Status, err)
		}
		checkCutFamily(t, res)

		res, err = a.Invoke(t.Context(), agent.Input{}, runner.Checkpoints(saver, "cut"))
		if err != nil || res.FinalText() != "parent done" {
			t.Fatalf("resume: %v %q", err, res.FinalText())
		}
		fast, slow := res.Children["c1"], res.Children["c2"]
		if fast == nil || slow == nil || fast.Status != agent.StatusOK || slow.Status != agent.StatusOK {
			t.Fatalf("children after the resume: %v", res.Children)
		}
		if slow.Usage.InputTokens != 21 || res.Usage.InputTokens != 226 {
			t.Errorf("usage after the resume: slow child %+v, parent %+v; want 21 and 226 (200 own, 5, 21)", slow.Usage, res.Usage)
		}
		calls := map[string]int{}
		for _, r := range m.Records() {
			calls[r.Path]++
		}
		if calls[fastKid] != 1 || calls[slowKid] != 3 {
			t.Errorf("model calls by path %v: the fast child must call once, the slow one three times in all", calls)
		}
	})
}

// stubborn is a nested tool whose run ignores its context: it takes a
// minute whatever happens, then reports a child run. started is closed
// when its run begins.
type stubborn struct{ started chan struct{} }

func (stubborn) Spec() llm.ToolSpec {
	return llm.ToolSpec{Name: "stubborn", Description: "Take a minute.", Parameters: json.RawMessage(`{"type":"object"}`)}
}

func (s stubborn) Run(ctx context.Context, env *tool.Env, args json.RawMessage) (tool.Result, error) {
	res, _, err := s.RunNested(ctx, env, args, agent.Host{})
	return res, err
}

func (s stubborn) RunNested(_ context.Context, env *tool.Env, _ json.RawMessage, host agent.Host) (tool.Result, *agent.Result, error) {
	close(s.started)
	time.Sleep(time.Minute) // the call that ignores its context; a bubble's minute passes at once
	return tool.Text("done"), &agent.Result{Agent: host.Path.Child("stubborn", env.CallID), Status: agent.StatusOK}, nil
}

// A cancelled run waits for its subagents to stop only so long: one that
// does not heed the cancellation is left behind after a few seconds, and
// the run ends cancelled without it. In a synctest bubble the wait is
// exact.
func TestCancelledRunDoesNotWaitForeverForAChild(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := scripted.New(scripted.Script{"parent": steps(
			scripted.Step{ToolCalls: []scripted.StepCall{{ID: "s1", Name: "stubborn", Args: json.RawMessage(`{}`)}, call("write", `{"path":"/x","content":"1"}`)}},
			scripted.Step{Content: "never"},
		)}, scripted.Options{NoUsage: true})
		slow := stubborn{started: make(chan struct{})}
		a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{slow, writeTool}})
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		start := time.Now()
		res, err := agent.Drain(a.Run(ctx, agent.Prompt("go")), func(ev agent.Event) {
			if ev.Type == agent.ToolEnd && ev.Tool.Name == "write" {
				<-slow.started // the two calls start in either order
				cancel()
			}
		})
		if waited := time.Since(start); waited != 5*time.Second {
			t.Errorf("the run ended %s after the cancellation, want 5s", waited)
		}
		if !errors.Is(err, agent.ErrCancelled) || res.Status != agent.StatusCancelled || len(res.Children) != 0 {
			t.Errorf("status %s, err %v, children %v", res.Status, err, res.Children)
		}
		time.Sleep(time.Minute) // the stubborn call ends, and the bubble with it
	})
}
