package runner_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/runner"
	"github.com/deepagents-go/deepagents/subagent"
	"github.com/deepagents-go/deepagents/tool"
)

// bgGate is a tool whose calls wait until the test opens the gates, and
// that counts its arrivals by agent path and call id.
type bgGate struct {
	mu      sync.Mutex
	open    chan struct{}
	arrived map[string]int
}

func newBGGate() *bgGate { return &bgGate{open: make(chan struct{}), arrived: map[string]int{}} }

func (g *bgGate) Spec() llm.ToolSpec {
	return llm.ToolSpec{Name: "gate", Description: "Wait.", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)}
}

func (g *bgGate) Run(ctx context.Context, env *tool.Env, _ json.RawMessage) (tool.Result, error) {
	g.mu.Lock()
	g.arrived[env.Agent+" "+env.CallID]++
	g.mu.Unlock()
	select {
	case <-g.open:
		return tool.Text("through"), nil
	case <-ctx.Done():
		return tool.Result{}, context.Cause(ctx)
	}
}

func (g *bgGate) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, v := range g.arrived {
		n += v
	}
	return n
}

// bgScript: the parent starts two background children (and, with
// parentGate, waits at a gate in the same step), then ends its turn; each
// child bumps (a side effect), waits at a gate, writes a file and reports.
func bgScript(parentGate bool) string {
	extra := ""
	if parentGate {
		extra = `, {"id": "pg", "name": "gate", "args": {}}`
	}
	return `{
  "parent": [
    {"tool_calls": [
      {"id": "t1", "name": "task", "args": {"description": "first job", "subagent_type": "general-purpose", "run_in_background": true}},
      {"id": "t2", "name": "task", "args": {"description": "second job", "subagent_type": "general-purpose", "run_in_background": true}}` + extra + `]},
    {"content": "waiting for them"},
    {"content": "heard one"},
    {"content": "heard both"}],
  "general-purpose": {"cases": [
    {"match": "first", "steps": [
      {"tool_calls": [{"id": "cb", "name": "bump", "args": {"n": 10}}]},
      {"tool_calls": [{"id": "cg", "name": "gate", "args": {}}]},
      {"tool_calls": [{"id": "cw", "name": "write_file", "args": {"file_path": "/first.md", "content": "one"}}]},
      {"content": "first report"}]},
    {"match": "second", "steps": [
      {"tool_calls": [{"id": "cb", "name": "bump", "args": {"n": 20}}]},
      {"tool_calls": [{"id": "cg", "name": "gate", "args": {}}]},
      {"tool_calls": [{"id": "cw", "name": "write_file", "args": {"file_path": "/second.md", "content": "two"}}]},
      {"content": "second report"}]}]}
}`
}

// TestBackgroundChildrenSurviveACrash stops a durable run while two
// background children wait at a gate (the process "dies": the saver takes
// no more writes and everything in memory is dropped), resumes the thread
// with a new agent, and checks that both children finish, that their
// receipts reach the parent once each, that their files are merged, and
// that no call that had finished ran again. With parentGate the crash comes
// inside the parent's step that started them (their starts are saved only
// with the task calls' results); without, after the parent ended its turn
// and waits for them.
func TestBackgroundChildrenSurviveACrash(t *testing.T) {
	for _, parentGate := range []bool{false, true} {
		t.Run(fmt.Sprintf("parent-gate=%v", parentGate), func(t *testing.T) {
			ctx := context.Background()
			base := checkpoint.NewMemory(0)
			saver := &crashable{Saver: base}
			c := &counter{}
			g := newBGGate()
			script := bgScript(parentGate)
			a := durableAgent(t, script, deepagents.Config{Tools: []tool.Tool{c, g}})
			want := 2
			if parentGate {
				want = 3
			}
			crashed := false
			ended := map[string]bool{}
			gates := 0
			for ev := range a.Run(ctx, agent.Prompt("go"), runner.Checkpoints(saver, "bg", runner.Lease("first", 30*time.Millisecond))) {
				if ev.Type == agent.ToolEnd && !ev.Agent.IsNested() {
					ended[ev.Tool.CallID] = true // its result is saved
				}
				if ev.Type == agent.ModelResponse && !ev.Agent.IsNested() && ev.Response.Text == "waiting for them" {
					ended["turn"] = true // the parent ended its turn, saved
				}
				if ev.Type == agent.ToolStart && ev.Tool.Name == "gate" {
					gates++ // its step is saved, and the gate call is in flight
				}
				if ended["t1"] && ended["t2"] && gates >= want && (parentGate || ended["turn"]) {
					saver.dead.Store(true)
					crashed = true
					break
				}
			}
			if !crashed {
				t.Fatal("the run ended before both children reached their gates")
			}
			finished := finishedCalls(t, base, "bg")
			before := c.snapshot()
			if len(before) != 2 {
				t.Fatalf("bumps before the crash: %v", before)
			}
			rs, err := runner.LoadRunState(ctx, base, "bg", agent.RootPath("parent"), false)
			if err != nil {
				t.Fatal(err)
			}
			if parentGate {
				if rs.InProgress == nil || rs.InProgress.Done["t1"].Background == nil || rs.InProgress.Done["t2"].Background == nil {
					t.Fatalf("the starts are not saved with the task calls: %+v", rs.InProgress)
				}
			} else if len(rs.Loop.Background) != 2 {
				t.Fatalf("saved background tasks %+v", rs.Loop.Background)
			}
			time.Sleep(60 * time.Millisecond) // the dead process's lease runs out

			g2 := newBGGate()
			close(g2.open)
			a2 := durableAgent(t, script, deepagents.Config{Tools: []tool.Tool{c, g2}})
			rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			res, err := a2.Invoke(rctx, agent.Input{}, runner.Checkpoints(base, "bg", runner.Lease("second", time.Minute)))
			if err != nil {
				t.Fatalf("resume: %v", err)
			}
			after := c.snapshot()
			for k := range finished {
				if after[k] != before[k] {
					t.Errorf("call %s had finished before the crash but ran again (%d → %d)", k, before[k], after[k])
				}
			}
			for k, n := range after {
				if n != 1 {
					t.Errorf("bump %s ran %d times", k, n)
				}
			}
			notes := map[string]int{}
			for _, m := range res.State.Messages {
				if m.Role == llm.RoleUser && strings.HasPrefix(m.Content, "[Background task ") {
					notes[strings.Fields(m.Content)[2]]++
					if !strings.Contains(m.Content, "has ended: ok") {
						t.Errorf("notification %q", m.Content)
					}
				}
			}
			if notes["t1"] != 1 || notes["t2"] != 1 {
				t.Errorf("notifications %v in %+v", notes, res.State.Messages)
			}
			if res.State.Files["/first.md"].Content != "one" || res.State.Files["/second.md"].Content != "two" {
				t.Errorf("files %v", res.State.Files)
			}
			// The last message is the model's answer after the last receipt
			// (which step of the script it is depends on when the children
			// ended).
			if last := res.State.Messages[len(res.State.Messages)-1]; res.Status != agent.StatusOK || last.Role != llm.RoleAssistant {
				t.Errorf("status %s, last message %+v", res.Status, last)
			}
			// Saved in the thread like every message.
			saved, err := runner.LoadRunState(ctx, base, "bg", agent.RootPath("parent"), false)
			if err != nil {
				t.Fatal(err)
			}
			if len(saved.Messages) != len(res.State.Messages) || len(saved.Loop.Background) != 0 {
				t.Errorf("saved %d messages (%d in the result), %d background tasks left", len(saved.Messages), len(res.State.Messages), len(saved.Loop.Background))
			}
		})
	}
}

// A parent that stops to wait for a person while a background child runs
// stops the child too; resumed with the decision, it starts the child
// again where it was, and the child's receipt reaches it: the child's
// finished call does not run again.
func TestBackgroundChildAcrossAnApproval(t *testing.T) {
	const script = `{
  "parent": [
    {"tool_calls": [
      {"id": "t1", "name": "task", "args": {"description": "first job", "subagent_type": "general-purpose", "run_in_background": true}},
      {"id": "w1", "name": "write_file", "args": {"file_path": "/p.md", "content": "parent"}}]},
    {"content": "waiting"},
    {"content": "heard it"},
    {"content": "heard it again"}],
  "general-purpose": [
    {"tool_calls": [{"id": "cb", "name": "bump", "args": {"n": 1}}]},
    {"tool_calls": [{"id": "cg", "name": "gate", "args": {}}]},
    {"content": "child report"}]
}`
	ctx := context.Background()
	saver := checkpoint.NewMemory(0)
	c := &counter{}
	g := newBGGate()
	a := durableAgent(t, script, deepagents.Config{Tools: []tool.Tool{c, g}, InterruptOn: gated()})
	res, err := agent.Drain(a.Run(ctx, agent.Prompt("go"), runner.Checkpoints(saver, "ap")), func(ev agent.Event) {
		if ev.Type == agent.InterruptEvent && ev.Agent.IsNested() {
			t.Errorf("a background child's call asked: %+v", ev.Interrupt)
		}
	})
	if res == nil || res.Status != agent.StatusInterrupted || len(res.Interrupts) != 1 || res.Interrupts[0].CallID != "w1" {
		t.Fatalf("first stop: %v %+v", err, res)
	}
	if kid := res.Children["t1"]; kid == nil || kid.Status != agent.StatusCancelled {
		t.Errorf("the child in the stopped run's result: %+v", kid)
	}
	rs, err := runner.LoadRunState(ctx, saver, "ap", agent.RootPath("parent"), false)
	if err != nil || len(rs.Loop.Background) != 1 {
		t.Fatalf("saved background tasks %+v (%v)", rs.Loop.Background, err)
	}
	close(g.open)
	res, err = a.Invoke(ctx, agent.Input{}, runner.Checkpoints(saver, "ap"), agent.WithDecisions(agent.Decision{Type: agent.Approve, CallID: "w1"}))
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if n := c.snapshot(); len(n) != 1 || n["parent / general-purpose#t1 cb"] != 1 {
		t.Errorf("bumps %v", n)
	}
	notes := 0
	for _, m := range res.State.Messages {
		if m.Role == llm.RoleUser && strings.HasPrefix(m.Content, "[Background task t1 (subagent general-purpose) has ended: ok") &&
			strings.HasSuffix(m.Content, "child report") {
			notes++
		}
	}
	if notes != 1 || res.State.Files["/p.md"].Content != "parent" {
		t.Errorf("notifications %d, files %v, messages %+v", notes, res.State.Files, res.State.Messages)
	}
}

// A background child saved by a stopped run starts again in the
// background, even when its call did not ask for it (its subagent ran in
// the background by default) and the subagent's default has changed since.
func TestBackgroundChildRestartsInTheBackground(t *testing.T) {
	const script = `{
  "parent": [
    {"tool_calls": [
      {"id": "t1", "name": "task", "args": {"description": "first job", "subagent_type": "digger"}},
      {"id": "w1", "name": "write_file", "args": {"file_path": "/p.md", "content": "parent"}}]},
    {"content": "waiting"},
    {"content": "heard it"},
    {"content": "heard it again"}],
  "digger": [
    {"tool_calls": [{"id": "cg", "name": "gate", "args": {}}]},
    {"content": "child report"}]
}`
	ctx := context.Background()
	saver := checkpoint.NewMemory(0)
	g := newBGGate()
	spec := subagent.Spec{Name: "digger", Description: "digs", Background: true}
	a := durableAgent(t, script, deepagents.Config{Tools: []tool.Tool{g}, InterruptOn: gated(), Subagents: []subagent.Spec{spec}})
	res, err := a.Invoke(ctx, agent.Prompt("go"), runner.Checkpoints(saver, "rb"))
	if res == nil || res.Status != agent.StatusInterrupted {
		t.Fatalf("first stop: %v %+v", err, res)
	}
	close(g.open)
	spec.Background = false
	a2 := durableAgent(t, script, deepagents.Config{Tools: []tool.Tool{g}, InterruptOn: gated(), Subagents: []subagent.Spec{spec}})
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err = a2.Invoke(rctx, agent.Input{}, runner.Checkpoints(saver, "rb"), agent.WithDecisions(agent.Decision{Type: agent.Approve, CallID: "w1"}))
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	notes := 0
	for _, m := range res.State.Messages {
		if m.Role == llm.RoleUser && strings.HasPrefix(m.Content, "[Background task t1 (subagent digger) has ended: ok") &&
			strings.HasSuffix(m.Content, "child report") {
			notes++
		}
	}
	if notes != 1 {
		t.Errorf("notifications %d, messages %+v", notes, res.State.Messages)
	}
}

// A background child that its parent cancelled (task_cancel) before the
// run stopped is not started again when the run resumes: its receipt says
// it was cancelled.
func TestCancelledBackgroundChildStaysCancelled(t *testing.T) {
	const script = `{
  "parent": [
    {"tool_calls": [{"id": "t1", "name": "task", "args": {"description": "first job", "subagent_type": "general-purpose", "run_in_background": true}}]},
    {"tool_calls": [
      {"id": "c1", "name": "task_cancel", "args": {"task_id": "t1"}},
      {"id": "w1", "name": "write_file", "args": {"file_path": "/p.md", "content": "parent"}}]},
    {"content": "waiting"},
    {"content": "heard it"},
    {"content": "heard it again"}],
  "general-purpose": [
    {"tool_calls": [{"id": "cg", "name": "gate", "args": {}}]},
    {"content": "child report"}]
}`
	ctx := context.Background()
	saver := checkpoint.NewMemory(0)
	g := newBGGate()
	a := durableAgent(t, script, deepagents.Config{Tools: []tool.Tool{g}, InterruptOn: gated()})
	res, err := a.Invoke(ctx, agent.Prompt("go"), runner.Checkpoints(saver, "cc"))
	if res == nil || res.Status != agent.StatusInterrupted {
		t.Fatalf("first stop: %v %+v", err, res)
	}
	arrived := g.count()
	close(g.open)
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err = a.Invoke(rctx, agent.Input{}, runner.Checkpoints(saver, "cc"), agent.WithDecisions(agent.Decision{Type: agent.Approve, CallID: "w1"}))
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if g.count() != arrived {
		t.Errorf("the cancelled child ran again: %d gate calls, %d before", g.count(), arrived)
	}
	notes := 0
	for _, m := range res.State.Messages {
		if m.Role == llm.RoleUser && strings.HasPrefix(m.Content, "[Background task t1 (subagent general-purpose) has ended: cancelled by you") {
			notes++
		}
	}
	if notes != 1 {
		t.Errorf("notifications %d, messages %+v", notes, res.State.Messages)
	}
}
