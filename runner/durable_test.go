package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/approve"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/checkpoint/sqlite"
	"github.com/deepagents-go/deepagents/hitl"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/runner"
	"github.com/deepagents-go/deepagents/tool"
	"github.com/deepagents-go/deepagents/vfs"
	"github.com/deepagents-go/deepagents/vfs/osfs"
)

// counter is a tool with a side effect: it records every run of every call
// id, so a test can tell whether a finished call ran again.
type counter struct {
	mu   sync.Mutex
	runs map[string]int
}

func (c *counter) Spec() llm.ToolSpec {
	return llm.ToolSpec{Name: "bump", Description: "Count.", Parameters: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)}
}

func (c *counter) Run(_ context.Context, env *tool.Env, args json.RawMessage) (tool.Result, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.runs == nil {
		c.runs = map[string]int{}
	}
	key := env.Agent + " " + env.CallID
	c.runs[key]++
	var in struct{ N int }
	_ = json.Unmarshal(args, &in)
	return tool.Text(fmt.Sprintf("bumped %d", in.N)), nil
}

func (c *counter) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, v := range c.runs {
		out[k] = v
	}
	return out
}

// crashable is a saver that dies: after crash() every write fails, as if the
// process had been killed.
type crashable struct {
	checkpoint.Saver
	dead atomic.Bool
}

var errDead = errors.New("the process is dead")

func (c *crashable) Put(ctx context.Context, s checkpoint.Step) error {
	if c.dead.Load() {
		return errDead
	}
	return c.Saver.Put(ctx, s)
}

func (c *crashable) PutWrite(ctx context.Context, ref checkpoint.Ref, w checkpoint.Write) error {
	if c.dead.Load() {
		return errDead
	}
	return c.Saver.PutWrite(ctx, ref, w)
}

func (c *crashable) Renew(ctx context.Context, thread, holder string, now time.Time, ttl time.Duration) (checkpoint.Lease, error) {
	if c.dead.Load() {
		return checkpoint.Lease{}, errDead
	}
	return c.Saver.Renew(ctx, thread, holder, now, ttl)
}

func (c *crashable) Release(ctx context.Context, thread, holder string) error {
	if c.dead.Load() {
		return errDead // a dead process releases nothing; its lease runs out
	}
	return c.Saver.Release(ctx, thread, holder)
}

// durableScript: the parent writes a file and bumps twice in parallel, then
// delegates two tasks in parallel (each child bumps and writes), bumps once
// more, then answers.
const durableScript = `{
  "parent": [
    {"tool_calls": [
      {"id": "w1", "name": "write_file", "args": {"file_path": "/a.md", "content": "alpha"}},
      {"id": "b1", "name": "bump", "args": {"n": 1}},
      {"id": "b2", "name": "bump", "args": {"n": 2}}]},
    {"tool_calls": [
      {"id": "t1", "name": "task", "args": {"description": "first job", "subagent_type": "general-purpose"}},
      {"id": "t2", "name": "task", "args": {"description": "second job", "subagent_type": "general-purpose"}}]},
    {"tool_calls": [{"id": "b3", "name": "bump", "args": {"n": 3}}]},
    {"content": "all done"}],
  "general-purpose": {"cases": [
    {"match": "first", "steps": [
      {"tool_calls": [{"id": "cb", "name": "bump", "args": {"n": 10}}]},
      {"tool_calls": [{"id": "cw", "name": "write_file", "args": {"file_path": "/first.md", "content": "one"}}]},
      {"content": "first report"}]},
    {"match": "second", "steps": [
      {"tool_calls": [{"id": "cb", "name": "bump", "args": {"n": 20}}]},
      {"content": "second report"}]}]}
}`

// inBubble runs f in a testing/synctest bubble, whose clock moves only when
// every goroutine in it waits: a wait for a lease to run out takes no real
// time. When f is done the bubble's time runs on a minute, so that the
// agents' idle workers (they wait a second for another call) end with it.
func inBubble(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		defer time.Sleep(time.Minute)
		f(t)
	})
}

func durableAgent(t *testing.T, script string, cfg deepagents.Config) *agent.Agent {
	t.Helper()
	var s scripted.Script
	if err := json.Unmarshal([]byte(script), &s); err != nil {
		t.Fatal(err)
	}
	cfg.Model = scripted.New(s, scripted.Options{})
	a, err := deepagents.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// finishedCalls lists the calls whose results a saver holds, over every
// namespace of a thread: those must never run again.
func finishedCalls(t *testing.T, s checkpoint.Saver, thread string) map[string]bool {
	t.Helper()
	ctx := context.Background()
	cps, err := s.List(ctx, checkpoint.ListOptions{ThreadID: thread, AllNamespaces: true})
	if err != nil {
		t.Fatal(err)
	}
	done := map[string]bool{}
	seen := map[string]bool{}
	for _, c := range cps {
		if seen[c.NS] {
			continue
		}
		seen[c.NS] = true
		path := agent.RootPath("parent")
		if c.NS != "" {
			if path, err = agent.ParsePath(c.NS); err != nil {
				t.Fatal(err)
			}
		}
		rs, err := runner.LoadRunState(ctx, s, thread, path, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range rs.Messages {
			if m.Role == llm.RoleTool {
				done[path.String()+" "+m.ToolCallID] = true
			}
		}
		if rs.InProgress != nil {
			for id := range rs.InProgress.Done {
				done[path.String()+" "+id] = true
			}
		}
	}
	return done
}

// TestCrashAtEveryEventResumesToTheSameEnd stops a durable run after its
// n-th event for every n, throwing away everything in memory (the saver
// refuses writes from then on, as a killed process makes none), resumes it
// from the saver with a new agent, and checks that the end is the
// uninterrupted run's and that no finished call ran twice.
func TestCrashAtEveryEventResumesToTheSameEnd(t *testing.T) {
	crashAtEveryEvent(t, 1, func(t *testing.T) checkpoint.Saver { return checkpoint.NewMemory(0) })
}

// The same on SQLite (every third crash point, a fresh database file each),
// with snapshots every 2 steps so that resuming reads snapshot chains.
func TestCrashAtEveryEventResumesToTheSameEndSQLite(t *testing.T) {
	crashAtEveryEvent(t, 3, func(t *testing.T) checkpoint.Saver {
		s, err := sqlite.Open(filepath.Join(t.TempDir(), "state.db"), sqlite.Options{Synchronous: "OFF", SnapshotEvery: 2})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

func crashAtEveryEvent(t *testing.T, every int, open func(t *testing.T) checkpoint.Saver) {
	ctx := context.Background()
	var ref *agent.Result
	var refEvents int
	{
		c := &counter{}
		a := durableAgent(t, durableScript, deepagents.Config{Tools: []tool.Tool{c}})
		saver := open(t)
		res, err := agent.Drain(a.Run(ctx, agent.Prompt("go"), runner.Checkpoints(saver, "ref")), func(agent.Event) { refEvents++ })
		if err != nil {
			t.Fatal(err)
		}
		ref = res
		for k, n := range c.snapshot() {
			if n != 1 {
				t.Fatalf("uncrashed run: %s ran %d times", k, n)
			}
		}
		if res.SavedSteps == 0 || res.Thread != "ref" {
			t.Fatalf("checkpoints %d, thread %q", res.SavedSteps, res.Thread)
		}
	}
	if refEvents < 20 {
		t.Fatalf("only %d events; the test wants at least 20 crash points", refEvents)
	}
	for n := 1; n < refEvents; n += every {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			inBubble(t, func(t *testing.T) {
				c := &counter{}
				base := open(t)
				saver := &crashable{Saver: base}
				a := durableAgent(t, durableScript, deepagents.Config{Tools: []tool.Tool{c}})
				seen := 0
				for range a.Run(ctx, agent.Prompt("go"), runner.Checkpoints(saver, "th", runner.Lease("first", time.Millisecond))) {
					seen++
					if seen == n {
						saver.dead.Store(true)
						break
					}
				}
				// What was saved before the crash is all that survives it. The
				// dead process's lease runs out (1 ms, in the bubble's time)
				// before the new one starts.
				finished := finishedCalls(t, base, "th")
				before := c.snapshot()
				time.Sleep(2 * time.Millisecond)

				a2 := durableAgent(t, durableScript, deepagents.Config{Tools: []tool.Tool{c}})
				res, err := a2.Invoke(ctx, agent.Input{}, runner.Checkpoints(base, "th", runner.Lease("second", time.Minute)))
				if err != nil && strings.Contains(err.Error(), "has no run to resume") {
					// The crash came before the input was saved: start again.
					res, err = a2.Invoke(ctx, agent.Prompt("go"), runner.Checkpoints(base, "th", runner.Lease("second", time.Minute)))
				}
				if err != nil {
					var msgs []string
					if res != nil {
						msgs = append(msgs, res.Error)
					}
					if strings.Contains(fmt.Sprint(err), "has no unfinished run") {
						// The crash came after the run's end was saved.
						res, err = nil, nil
						rs, lerr := runner.LoadRunState(ctx, base, "th", agent.RootPath("parent"), false)
						if lerr != nil {
							t.Fatal(lerr)
						}
						compareEnd(t, ref, rs.Messages, rs.Files)
						return
					}
					t.Fatalf("resume: %v %v", err, msgs)
				}
				compareEnd(t, ref, res.State.Messages, res.State.Files)
				if !slices.Equal(res.Changed, ref.Changed) {
					t.Errorf("changed paths %v, want %v", res.Changed, ref.Changed)
				}
				after := c.snapshot()
				for k := range finished {
					if after[k] != before[k] {
						t.Errorf("call %s had finished before the crash but ran again (%d → %d)", k, before[k], after[k])
					}
				}
				for k, v := range after {
					if v == 0 {
						t.Errorf("call %s never ran", k)
					}
				}
			})
		})
	}
}

func compareEnd(t *testing.T, ref *agent.Result, msgs []llm.Message, files map[string]vfs.File) {
	t.Helper()
	got, _ := json.Marshal(stripTimes(msgs))
	want, _ := json.Marshal(stripTimes(ref.State.Messages))
	if string(got) != string(want) {
		t.Errorf("messages differ from the uncrashed run:\n got %s\nwant %s", got, want)
	}
	if len(files) != len(ref.State.Files) {
		t.Errorf("files: got %d, want %d", len(files), len(ref.State.Files))
	}
	for p, f := range ref.State.Files {
		if files[p].Content != f.Content {
			t.Errorf("file %s = %q, want %q", p, files[p].Content, f.Content)
		}
	}
}

func stripTimes(msgs []llm.Message) []llm.Message { return slices.Clone(msgs) }

const approvalScript = `{
  "parent": [
    {"tool_calls": [
      {"id": "w1", "name": "write_file", "args": {"file_path": "/one.md", "content": "1"}},
      {"id": "b1", "name": "bump", "args": {"n": 1}},
      {"id": "w2", "name": "write_file", "args": {"file_path": "/two.md", "content": "2"}}]},
    {"content": "done"}]
}`

func gated() map[string]approve.Policy {
	return map[string]approve.Policy{"write_file": {}}
}

func toolResult(msgs []llm.Message, id string) string {
	for _, m := range msgs {
		if m.Role == llm.RoleTool && m.ToolCallID == id {
			return m.Content
		}
	}
	return "<none>"
}

// TestApprovalsPartialThenAll: two gated calls and one free one in a step.
// The free one runs at once; one decision releases one call; the other keeps
// waiting; the model call that asked is never repeated.
func TestApprovalsPartialThenAll(t *testing.T) {
	ctx := context.Background()
	c := &counter{}
	saver := checkpoint.NewMemory(0)
	var s scripted.Script
	if err := json.Unmarshal([]byte(approvalScript), &s); err != nil {
		t.Fatal(err)
	}
	model := scripted.New(s, scripted.Options{})
	a, err := deepagents.New(deepagents.Config{Model: model, Tools: []tool.Tool{c}, InterruptOn: gated()})
	if err != nil {
		t.Fatal(err)
	}
	var interruptEvents int
	res, err := agent.Drain(a.Run(ctx, agent.Prompt("go"), runner.Checkpoints(saver, "ap")), func(ev agent.Event) {
		if ev.Type == agent.InterruptEvent {
			interruptEvents++
		}
	})
	if !errors.Is(err, agent.ErrInterrupted) || res.Status != agent.StatusInterrupted {
		t.Fatalf("first stop: status %v err %v", res.Status, err)
	}
	if len(res.Interrupts) != 2 || res.Interrupts[0].CallID != "w1" || res.Interrupts[1].CallID != "w2" || interruptEvents != 2 {
		t.Fatalf("interrupts %+v (events %d)", res.Interrupts, interruptEvents)
	}
	in := res.Interrupts[0]
	if in.Path.String() != "parent" || in.Tool != "write_file" || !slices.Equal(in.Allowed, []agent.DecisionType{"approve", "edit", "reject"}) {
		t.Fatalf("interrupt %+v", in)
	}
	if c.snapshot()["parent b1"] != 1 {
		t.Fatalf("the free call did not run once: %v", c.snapshot())
	}
	hitl, _ := json.Marshal(hitl.RequestFor(res.Interrupts))
	if !strings.Contains(string(hitl), `"action_requests":[{"name":"write_file","args":{"file_path":"/one.md","content":"1"}`) ||
		!strings.Contains(string(hitl), `"review_configs":[{"action_name":"write_file","allowed_decisions":["approve","edit","reject"]}`) {
		t.Fatalf("HITL payload %s", hitl)
	}

	// A decision for a call that is not waiting changes nothing.
	res, err = a.Invoke(ctx, agent.Input{}, runner.Checkpoints(saver, "ap"), agent.WithDecisions(agent.Decision{Type: agent.Approve, CallID: "nope"}))
	var de *agent.DecisionError
	if !errors.As(err, &de) || res.Status != agent.StatusInterrupted || len(res.Interrupts) != 2 {
		t.Fatalf("bad decision: %v status %v", err, res.Status)
	}

	res, err = a.Invoke(ctx, agent.Input{}, runner.Checkpoints(saver, "ap"), agent.WithDecisions(agent.Decision{Type: agent.Approve, CallID: "w1"}))
	if res.Status != agent.StatusInterrupted || len(res.Interrupts) != 1 || res.Interrupts[0].CallID != "w2" {
		t.Fatalf("after one decision: %v %+v", err, res.Interrupts)
	}
	res, err = a.Invoke(ctx, agent.Input{}, runner.Checkpoints(saver, "ap"),
		agent.WithDecisions(agent.Decision{Type: agent.Reject, CallID: "w2", Message: "not that file"}))
	if err != nil {
		t.Fatal(err)
	}
	if res.State.Files["/one.md"].Content != "1" {
		t.Errorf("approved write missing: %v", res.State.Files)
	}
	if _, ok := res.State.Files["/two.md"]; ok {
		t.Errorf("rejected write ran")
	}
	if got := toolResult(res.State.Messages, "w2"); !strings.Contains(got, "rejected") || !strings.Contains(got, "not that file") {
		t.Errorf("rejection result %q", got)
	}
	if c.snapshot()["parent b1"] != 1 {
		t.Errorf("the free call ran again: %v", c.snapshot())
	}
	rounds := 0
	for _, r := range model.Records() {
		if r.Who == "parent" && r.Round == 0 {
			rounds++
		}
	}
	if rounds != 1 {
		t.Errorf("the model call that asked ran %d times", rounds)
	}
}

// TestApprovalEditRunsNewArgs: an edit runs the call with the person's
// arguments and tells the model so.
func TestApprovalEditRunsNewArgs(t *testing.T) {
	ctx := context.Background()
	saver := checkpoint.NewMemory(0)
	a := durableAgent(t, approvalScript, deepagents.Config{Tools: []tool.Tool{&counter{}}, InterruptOn: gated()})
	if _, err := a.Invoke(ctx, agent.Prompt("go"), runner.Checkpoints(saver, "ed")); !errors.Is(err, agent.ErrInterrupted) {
		t.Fatal(err)
	}
	ds, err := hitl.ParseDecisions([]byte(`{"decisions": [
		{"type": "edit", "call_id": "w1", "edited_action": {"name": "write_file", "args": {"file_path": "/edited.md", "content": "E"}}},
		{"type": "approve", "call_id": "w2"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Invoke(ctx, agent.Input{}, runner.Checkpoints(saver, "ed"), agent.WithDecisions(ds...))
	if err != nil {
		t.Fatal(err)
	}
	if res.State.Files["/edited.md"].Content != "E" || res.State.Files["/two.md"].Content != "2" {
		t.Fatalf("files %v", res.State.Files)
	}
	if _, ok := res.State.Files["/one.md"]; ok {
		t.Fatal("the original arguments ran")
	}
	if got := toolResult(res.State.Messages, "w1"); !strings.Contains(got, `changed the arguments`) || !strings.Contains(got, `/edited.md`) {
		t.Fatalf("edit result %q", got)
	}
}

// TestRejectedCallIsAnsweredWithoutAsking: the model repeats a rejected call word
// for word; it is answered without asking.
func TestRejectedCallIsAnsweredWithoutAsking(t *testing.T) {
	ctx := context.Background()
	saver := checkpoint.NewMemory(0)
	const script = `{"parent": [
	  {"tool_calls": [{"id": "x1", "name": "write_file", "args": {"file_path": "/x.md", "content": "x"}}]},
	  {"tool_calls": [{"id": "x2", "name": "write_file", "args": {"content": "x", "file_path": "/x.md"}}]},
	  {"content": "gave up"}]}`
	a := durableAgent(t, script, deepagents.Config{InterruptOn: gated()})
	if _, err := a.Invoke(ctx, agent.Prompt("go"), runner.Checkpoints(saver, "rj")); !errors.Is(err, agent.ErrInterrupted) {
		t.Fatal(err)
	}
	res, err := a.Invoke(ctx, agent.Input{}, runner.Checkpoints(saver, "rj"), agent.WithDecisions(agent.Decision{Type: agent.Reject, CallID: "x1", Message: "no"}))
	if err != nil {
		t.Fatalf("the repeated call was put to the person again: %v %+v", err, res.Interrupts)
	}
	if got := toolResult(res.State.Messages, "x2"); !strings.Contains(got, "already rejected") || !strings.Contains(got, "no") {
		t.Fatalf("repeat result %q", got)
	}
	if len(res.State.Files) != 0 {
		t.Fatalf("files %v", res.State.Files)
	}
}

// TestSubagentInterruptResumesInsideTheChild: a gated call inside a
// subagent stops the whole run with the child's path; after a "restart"
// (new agent, new model) an approval resumes the child where it stopped.
func TestSubagentInterruptResumesInsideTheChild(t *testing.T) {
	ctx := context.Background()
	const script = `{
	  "parent": [
	    {"tool_calls": [{"id": "t1", "name": "task", "args": {"description": "do it", "subagent_type": "general-purpose"}}]},
	    {"content": "parent done"}],
	  "general-purpose": [
	    {"tool_calls": [{"id": "cb", "name": "bump", "args": {"n": 1}}]},
	    {"tool_calls": [{"id": "cw", "name": "write_file", "args": {"file_path": "/child.md", "content": "c"}}]},
	    {"content": "child report"}]}`
	c := &counter{}
	saver := checkpoint.NewMemory(0)
	a := durableAgent(t, script, deepagents.Config{Tools: []tool.Tool{c}, InterruptOn: gated()})
	res, err := a.Invoke(ctx, agent.Prompt("go"), runner.Checkpoints(saver, "sub"))
	if !errors.Is(err, agent.ErrInterrupted) || len(res.Interrupts) != 1 {
		t.Fatalf("%v %+v", err, res)
	}
	if got := res.Interrupts[0].Path.String(); got != "parent / general-purpose#t1" || res.Interrupts[0].CallID != "cw" {
		t.Fatalf("interrupt %+v", res.Interrupts[0])
	}

	var s scripted.Script
	if err := json.Unmarshal([]byte(script), &s); err != nil {
		t.Fatal(err)
	}
	model := scripted.New(s, scripted.Options{})
	a2, err := deepagents.New(deepagents.Config{Model: model, Tools: []tool.Tool{c}, InterruptOn: gated()})
	if err != nil {
		t.Fatal(err)
	}
	res, err = a2.Invoke(ctx, agent.Input{}, runner.Checkpoints(saver, "sub"),
		agent.WithDecisions(agent.Decision{Type: agent.Approve, CallID: "cw", Path: agent.RootPath("parent").Child("general-purpose", "t1")}))
	if err != nil {
		t.Fatal(err)
	}
	if res.FinalText() != "parent done" || toolResult(res.State.Messages, "t1") != "child report" {
		t.Fatalf("final %q, receipt %q", res.FinalText(), toolResult(res.State.Messages, "t1"))
	}
	if res.State.Files["/child.md"].Content != "c" {
		t.Fatalf("files %v", res.State.Files)
	}
	if n := c.snapshot()["parent / general-purpose#t1 cb"]; n != 1 {
		t.Fatalf("the child's first call ran %d times", n)
	}
	var childRounds []int
	for _, r := range model.Records() {
		if r.Who == "general-purpose" {
			childRounds = append(childRounds, r.Round)
		}
	}
	if !slices.Equal(childRounds, []int{2}) {
		t.Fatalf("after the restart the child made model calls %v; want only round 2", childRounds)
	}
	if ch, ok := res.Child("t1"); !ok || ch.Status != agent.StatusOK || ch.Rounds != 3 {
		t.Fatalf("child result %+v", ch)
	}
}

// TestTurnsContinueAThread: a second input on a finished thread sees the
// first's messages and files.
func TestTurnsContinueAThread(t *testing.T) {
	ctx := context.Background()
	saver := checkpoint.NewMemory(0)
	const script = `{"parent": [
	  {"tool_calls": [{"id": "w", "name": "write_file", "args": {"file_path": "/n.md", "content": "kept"}}]},
	  {"content": "first answer"},
	  {"tool_calls": [{"id": "r", "name": "read_file", "args": {"file_path": "/n.md"}}]},
	  {"content": "second answer"}]}`
	a := durableAgent(t, script, deepagents.Config{})
	if _, err := a.Invoke(ctx, agent.Prompt("one"), runner.Checkpoints(saver, "turns")); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Invoke(ctx, agent.Input{}, runner.Checkpoints(saver, "turns")); err == nil || !strings.Contains(err.Error(), "no unfinished run") {
		t.Fatalf("resuming a finished thread: %v", err)
	}
	res, err := a.Invoke(ctx, agent.Prompt("two"), runner.Checkpoints(saver, "turns"))
	if err != nil {
		t.Fatal(err)
	}
	if res.FinalText() != "second answer" || len(res.State.Messages) != 8 || !strings.Contains(toolResult(res.State.Messages, "r"), "kept") {
		t.Fatalf("second turn: %q, %d messages, read %q", res.FinalText(), len(res.State.Messages), toolResult(res.State.Messages, "r"))
	}
	if res.Rounds != 2 {
		t.Fatalf("the second turn made %d model calls, not 2", res.Rounds)
	}
	// Each turn has its own step budget.
	b := durableAgent(t, `{"parent": [{"content": "a"}, {"content": "b"}, {"content": "c"}]}`, deepagents.Config{MaxSteps: 1})
	for _, q := range []string{"1", "2", "3"} {
		if _, err := b.Invoke(ctx, agent.Prompt(q), runner.Checkpoints(saver, "budget")); err != nil {
			t.Fatalf("turn %s: %v", q, err)
		}
	}
}

// blocker is a tool that waits until released.
type blocker struct{ started, release chan struct{} }

func (b *blocker) Spec() llm.ToolSpec {
	return llm.ToolSpec{Name: "block", Description: "Wait.", Parameters: json.RawMessage(`{"type":"object"}`)}
}

func (b *blocker) Run(ctx context.Context, _ *tool.Env, _ json.RawMessage) (tool.Result, error) {
	close(b.started)
	select {
	case <-b.release:
		return tool.Text("released"), nil
	case <-ctx.Done():
		return tool.Result{}, context.Cause(ctx)
	}
}

// TestLeaseRefusesASecondRun: while one run holds a thread another is
// refused; different threads run side by side.
func TestLeaseRefusesASecondRun(t *testing.T) {
	ctx := context.Background()
	saver := checkpoint.NewMemory(0)
	b := &blocker{started: make(chan struct{}), release: make(chan struct{})}
	const script = `{"parent": [{"tool_calls": [{"id": "k", "name": "block"}]}, {"content": "ok"}]}`
	a := durableAgent(t, script, deepagents.Config{Tools: []tool.Tool{b}})
	done := make(chan error, 1)
	go func() {
		_, err := a.Invoke(ctx, agent.Prompt("hold"), runner.Checkpoints(saver, "busy"))
		done <- err
	}()
	<-b.started
	_, err := a.Invoke(ctx, agent.Prompt("me too"), runner.Checkpoints(saver, "busy"))
	if err == nil || !strings.Contains(err.Error(), "is being run by another run of this process") || !errors.Is(err, checkpoint.ErrLeased) {
		t.Fatalf("second run on a held thread: %v", err)
	}
	other := durableAgent(t, `{"parent": [{"content": "free"}]}`, deepagents.Config{})
	if res, err := other.Invoke(ctx, agent.Prompt("x"), runner.Checkpoints(saver, "other")); err != nil || res.FinalText() != "free" {
		t.Fatalf("another thread: %v", err)
	}
	close(b.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestLostLeaseStopsTheRun: when another process takes the thread over (the
// lease ran out while this run was stalled), the run stops instead of writing
// over the new holder's steps.
func TestLostLeaseStopsTheRun(t *testing.T) {
	ctx := context.Background()
	saver := checkpoint.NewMemory(0)
	b := &blocker{started: make(chan struct{}), release: make(chan struct{})}
	a := durableAgent(t, `{"parent": [{"tool_calls": [{"id": "k", "name": "block"}]}, {"content": "ok"}]}`, deepagents.Config{Tools: []tool.Tool{b}})
	done := make(chan error, 1)
	go func() {
		_, err := a.Invoke(ctx, agent.Prompt("hold"), runner.Checkpoints(saver, "lost", runner.Lease("first", 30*time.Millisecond)))
		done <- err
	}()
	<-b.started
	if err := saver.Release(ctx, "lost", "first"); err != nil {
		t.Fatal(err)
	}
	if _, err := saver.Acquire(ctx, "lost", "second", time.Now(), time.Minute); err != nil {
		t.Fatal(err)
	}
	err := <-done
	if !errors.Is(err, agent.ErrCancelled) || !strings.Contains(err.Error(), "lost thread") {
		t.Fatalf("run after losing its lease: %v", err)
	}
	cp, gerr := saver.Get(ctx, checkpoint.Ref{ThreadID: "lost"})
	if gerr != nil || cp.Status != checkpoint.StatusRunning {
		t.Fatalf("the run wrote after losing the thread: %v %v", cp.Status, gerr)
	}
}

// TestResumeFromAnEarlierStep: a thread copied at any checkpoint of a
// finished run continues from there to the same end (time travel), and the
// original thread is left as it was.
func TestResumeFromAnEarlierStep(t *testing.T) {
	ctx := context.Background()
	saver := checkpoint.NewMemory(0)
	a := durableAgent(t, durableScript, deepagents.Config{Tools: []tool.Tool{&counter{}}})
	ref, err := a.Invoke(ctx, agent.Prompt("go"), runner.Checkpoints(saver, "orig"))
	if err != nil {
		t.Fatal(err)
	}
	cps, err := saver.List(ctx, checkpoint.ListOptions{ThreadID: "orig"})
	if err != nil {
		t.Fatal(err)
	}
	if len(cps) < 3 {
		t.Fatalf("%d top-level checkpoints", len(cps))
	}
	for _, cp := range cps[1:] { // every checkpoint but the end
		dst := "fork-" + cp.ID
		if err := saver.CopyThread(ctx, cp.Ref(), dst); err != nil {
			t.Fatal(err)
		}
		a2 := durableAgent(t, durableScript, deepagents.Config{Tools: []tool.Tool{&counter{}}})
		res, err := a2.Invoke(ctx, agent.Input{}, runner.Checkpoints(saver, dst))
		if err != nil {
			t.Fatalf("resuming at %s (%s): %v", cp.ID, cp.Metadata["source"], err)
		}
		compareEnd(t, ref, res.State.Messages, res.State.Files)
	}
	rs, err := runner.LoadRunState(ctx, saver, "orig", agent.RootPath("parent"), false)
	if err != nil || rs.Status != agent.StatusOK || len(rs.Messages) != len(ref.State.Messages) {
		t.Fatalf("the original thread changed: %v %v", rs.Status, err)
	}
}

// TestNewInputClosesAnUnfinishedStep: a person who sends a new message
// instead of deciding moves the thread on: finished calls keep their
// results, the waiting call is told it did not run, and the new turn runs.
func TestNewInputClosesAnUnfinishedStep(t *testing.T) {
	ctx := context.Background()
	saver := checkpoint.NewMemory(0)
	const script = `{"parent": [
	  {"tool_calls": [
	    {"id": "w", "name": "write_file", "args": {"file_path": "/w.md", "content": "w"}},
	    {"id": "b", "name": "bump", "args": {"n": 1}}]},
	  {"content": "moved on"}]}`
	c := &counter{}
	a := durableAgent(t, script, deepagents.Config{Tools: []tool.Tool{c}, InterruptOn: gated()})
	if _, err := a.Invoke(ctx, agent.Prompt("first"), runner.Checkpoints(saver, "moveon")); !errors.Is(err, agent.ErrInterrupted) {
		t.Fatal(err)
	}
	res, err := a.Invoke(ctx, agent.Prompt("never mind, do something else"), runner.Checkpoints(saver, "moveon"))
	if err != nil {
		t.Fatal(err)
	}
	if got := toolResult(res.State.Messages, "w"); !strings.Contains(got, "sent a new message instead") {
		t.Fatalf("waiting call's result %q", got)
	}
	if got := toolResult(res.State.Messages, "b"); got != "bumped 1" || c.snapshot()["parent b"] != 1 {
		t.Fatalf("finished call's result %q, runs %v", got, c.snapshot())
	}
	roles := ""
	for _, m := range res.State.Messages {
		roles += string(m.Role)[:1]
	}
	if roles != "uattua" || res.FinalText() != "moved on" {
		t.Fatalf("history %s, final %q", roles, res.FinalText())
	}
}

// TestReusedTaskCallIDRunsANewSubagent: a later turn whose task call has
// the same id as an earlier one runs a new subagent, not the old one's
// saved result.
func TestReusedTaskCallIDRunsANewSubagent(t *testing.T) {
	ctx := context.Background()
	saver := checkpoint.NewMemory(0)
	const script = `{
	  "parent": [
	    {"tool_calls": [{"id": "t1", "name": "task", "args": {"description": "first job", "subagent_type": "general-purpose"}}]},
	    {"content": "one"},
	    {"tool_calls": [{"id": "t1", "name": "task", "args": {"description": "second job", "subagent_type": "general-purpose"}}]},
	    {"content": "two"}],
	  "general-purpose": {"cases": [
	    {"match": "first", "steps": [{"content": "first report"}]},
	    {"match": "second", "steps": [{"content": "second report"}]}]}}`
	a := durableAgent(t, script, deepagents.Config{})
	if _, err := a.Invoke(ctx, agent.Prompt("a"), runner.Checkpoints(saver, "reuse")); err != nil {
		t.Fatal(err)
	}
	b := durableAgent(t, script, deepagents.Config{}) // a fresh model: its cases match anew
	res, err := b.Invoke(ctx, agent.Prompt("b"), runner.Checkpoints(saver, "reuse"))
	if err != nil {
		t.Fatal(err)
	}
	var receipts []string
	for _, m := range res.State.Messages {
		if m.Role == llm.RoleTool {
			receipts = append(receipts, m.Content)
		}
	}
	if !slices.Equal(receipts, []string{"first report", "second report"}) {
		t.Fatalf("receipts %q", receipts)
	}
}

// TestWaitingCallStaysGatedWithoutThePolicy: a call that waited keeps
// waiting under its saved policy even when the resuming agent has no
// approval policy, so a rejection is never run.
func TestWaitingCallStaysGatedWithoutThePolicy(t *testing.T) {
	ctx := context.Background()
	saver := checkpoint.NewMemory(0)
	gatedAgent := durableAgent(t, approvalScript, deepagents.Config{Tools: []tool.Tool{&counter{}}, InterruptOn: gated()})
	if _, err := gatedAgent.Invoke(ctx, agent.Prompt("go"), runner.Checkpoints(saver, "g")); !errors.Is(err, agent.ErrInterrupted) {
		t.Fatal(err)
	}
	plain := durableAgent(t, approvalScript, deepagents.Config{Tools: []tool.Tool{&counter{}}})
	res, err := plain.Invoke(ctx, agent.Input{}, runner.Checkpoints(saver, "g"), agent.WithDecisions(agent.Decision{Type: agent.Reject, CallID: "w1"}))
	if res == nil || res.Status != agent.StatusInterrupted || len(res.Interrupts) != 1 || res.Interrupts[0].CallID != "w2" {
		t.Fatalf("w2 must keep waiting: %v %+v", err, res)
	}
	res, err = plain.Invoke(ctx, agent.Input{}, runner.Checkpoints(saver, "g"), agent.WithDecisions(agent.Decision{Type: agent.Approve, CallID: "w2"}))
	if err != nil {
		t.Fatal(err)
	}
	if _, ran := res.State.Files["/one.md"]; ran || res.State.Files["/two.md"].Content != "2" {
		t.Fatalf("files %v", res.State.Files)
	}
}

// TestTwoCrashesKeepFinishedChildren: a subagent that finished before the
// first crash is still among the run's children after a second crash.
func TestTwoCrashesKeepFinishedChildren(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		ctx := context.Background()
		ref, err := durableAgent(t, durableScript, deepagents.Config{Tools: []tool.Tool{&counter{}}}).
			Invoke(ctx, agent.Prompt("go"), runner.Checkpoints(checkpoint.NewMemory(0), "ref"))
		if err != nil || len(ref.Children) != 2 {
			t.Fatalf("%v, %d children", err, len(ref.Children))
		}
		crashAfter := func(saver checkpoint.Saver, in agent.Input, holder string, n int) bool {
			dying := &crashable{Saver: saver}
			a := durableAgent(t, durableScript, deepagents.Config{Tools: []tool.Tool{&counter{}}})
			seen := 0
			for ev := range a.Run(ctx, in, runner.Checkpoints(dying, "th", runner.Lease(holder, time.Millisecond))) {
				seen++
				if seen == n {
					dying.dead.Store(true)
					return true
				}
				if ev.Type == agent.RunEnd && ev.Agent.String() == "parent" {
					return false
				}
			}
			return false
		}
		for first := 20; first < 48; first++ {
			for _, second := range []int{3, 6, 9} {
				saver := checkpoint.NewMemory(0)
				if !crashAfter(saver, agent.Prompt("go"), "one", first) {
					continue
				}
				time.Sleep(2 * time.Millisecond) // the crashed holder's 1 ms lease runs out (bubble time)
				crashAfter(saver, agent.Input{}, "two", second)
				time.Sleep(2 * time.Millisecond) // and so does the second one's
				res, err := durableAgent(t, durableScript, deepagents.Config{Tools: []tool.Tool{&counter{}}}).
					Invoke(ctx, agent.Input{}, runner.Checkpoints(saver, "th"))
				if err != nil && strings.Contains(err.Error(), "no unfinished run") {
					continue // the second crash came after the end was saved
				}
				if err != nil {
					t.Fatalf("crashes at %d and %d: %v", first, second, err)
				}
				compareEnd(t, ref, res.State.Messages, res.State.Files)
				if len(res.Children) != 2 || res.Children["t1"] == nil || res.Children["t2"] == nil {
					t.Errorf("crashes at %d and %d: children %v", first, second, slices.Sorted(maps.Keys(res.Children)))
				}
			}
		}
	})
}

// A subagent's input is not a checkpoint of its own: the parent's step holds
// the call that starts it. The child's first checkpoint is its first step,
// numbered 1, saved before its tools run, with its brief and the files as
// they were when it started; the top-level run still saves its input.
func TestSubagentInputIsItsFirstStep(t *testing.T) {
	ctx := context.Background()
	saver := checkpoint.NewMemory(0)
	a := durableAgent(t, `{
	  "parent": [
	    {"tool_calls": [{"id": "t1", "name": "task", "args": {"description": "note it", "subagent_type": "general-purpose"}}]},
	    {"content": "done"}],
	  "general-purpose": [
	    {"tool_calls": [{"id": "w1", "name": "write_file", "args": {"file_path": "/n.md", "content": "n"}}]},
	    {"content": "noted"}]}`, deepagents.Config{})
	if _, err := a.Invoke(ctx, agent.Prompt("go"), runner.Checkpoints(saver, "inputs")); err != nil {
		t.Fatal(err)
	}
	all, err := saver.List(ctx, checkpoint.ListOptions{ThreadID: "inputs", AllNamespaces: true})
	if err != nil {
		t.Fatal(err)
	}
	var top, child []checkpoint.Checkpoint
	for _, c := range all {
		if c.NS == "" {
			top = append(top, c)
		} else {
			child = append(child, c)
		}
	}
	if len(top) == 0 || top[len(top)-1].Metadata["source"] != "input" || top[len(top)-1].Step != 0 {
		t.Fatalf("the top-level run's first checkpoint: %+v", top[len(top)-1])
	}
	if len(child) == 0 {
		t.Fatal("the child saved nothing")
	}
	first := child[len(child)-1] // newest first
	for _, c := range child {
		if c.Metadata["source"] == "input" {
			t.Errorf("the child saved its input on its own: %s step %d", c.ID, c.Step)
		}
	}
	if first.Step != 1 || first.ParentID != "" {
		t.Errorf("the child's first checkpoint is step %d (parent %q), want step 1 with none", first.Step, first.ParentID)
	}
	cp, err := saver.Get(ctx, first.Ref())
	if err != nil {
		t.Fatal(err)
	}
	if msgs := cp.State.Messages; len(msgs) != 2 || msgs[0].Role != llm.RoleUser || msgs[0].Content != "note it" || len(msgs[1].ToolCalls) != 1 {
		t.Errorf("the child's first step holds %+v", msgs)
	}
	if _, ok := cp.State.Files["/n.md"]; ok {
		t.Error("the child's first step holds a file its tool had not written yet")
	}
}

// valuesLog keeps the names of the values each put sets (null: removes).
type valuesLog struct {
	checkpoint.Saver
	mu   sync.Mutex
	puts []map[string]bool // name → set (false: removed)
	// legacy rewrites each put the way earlier builds wrote finished
	// subagents: all of the turn's under one value, with each checkpoint
	// after one finished, and their usage in the loop's value.
	legacy bool
	kids   map[string]json.RawMessage
}

func (l *valuesLog) Put(ctx context.Context, st checkpoint.Step) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.legacy && st.NS == "" {
		vals := map[string]json.RawMessage{}
		added := false
		for k, v := range st.Values {
			if id, ok := strings.CutPrefix(k, "agent.child/"); ok {
				if v == nil || string(v) == "null" {
					delete(l.kids, id) // a new turn
					continue
				}
				if l.kids == nil {
					l.kids = map[string]json.RawMessage{}
				}
				l.kids[id], added = v, true
				continue
			}
			vals[k] = v
		}
		if added {
			vals["agent.children"], _ = json.Marshal(l.kids)
		}
		if raw, ok := vals["agent.loop"]; ok && len(l.kids) > 0 {
			var loop map[string]json.RawMessage
			if err := json.Unmarshal(raw, &loop); err != nil {
				return err
			}
			tree := map[string]llm.Usage{}
			for _, k := range l.kids {
				var kid agent.Result
				if err := json.Unmarshal(k, &kid); err != nil {
					return err
				}
				for p, u := range kid.UsageByAgent {
					tree[p] = tree[p].Add(u)
				}
			}
			loop["tree"], _ = json.Marshal(tree)
			vals["agent.loop"], _ = json.Marshal(loop)
		}
		st.Values = vals
	}
	names := map[string]bool{}
	for k, v := range st.Values {
		names[k] = v != nil && string(v) != "null"
	}
	if st.NS == "" {
		l.puts = append(l.puts, names)
	}
	return l.Saver.Put(ctx, st)
}

const threeHelpers = `{
  "parent": [
    {"tool_calls": [{"id": "t1", "name": "task", "args": {"description": "one", "subagent_type": "general-purpose"}}]},
    {"tool_calls": [{"id": "t2", "name": "task", "args": {"description": "two", "subagent_type": "general-purpose"}}]},
    {"tool_calls": [{"id": "t3", "name": "task", "args": {"description": "three", "subagent_type": "general-purpose"}}]},
    {"tool_calls": [{"id": "w0", "name": "write_file", "args": {"file_path": "/r.md", "content": "r"}}]},
    {"content": "three done"},
    {"tool_calls": [{"id": "w9", "name": "write_file", "args": {"file_path": "/s.md", "content": "s"}}]},
    {"content": "signed"}],
  "general-purpose": [{"content": "did one"}, {"content": "did two"}, {"content": "did three"}]
}`

// TestFinishedSubagentsSavedOnce: each finished subagent run is saved with
// one checkpoint only, so a checkpoint does not grow with the number of
// subagents before it; a run resumed after a stop for approval still
// reports all of its turn's subagents and their usage, and a later turn
// none of them (its resumed run once counted the earlier turn's subagents
// into its usage).
func TestFinishedSubagentsSavedOnce(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		t.Run(fmt.Sprintf("legacy=%v", legacy), func(t *testing.T) {
			ctx := context.Background()
			saver := &valuesLog{Saver: checkpoint.NewMemory(0), legacy: legacy}
			a := durableAgent(t, threeHelpers, deepagents.Config{InterruptOn: gated()})
			if _, err := a.Invoke(ctx, agent.Prompt("go"), runner.Checkpoints(saver, "kids")); !errors.Is(err, agent.ErrInterrupted) {
				t.Fatalf("turn 1: %v", err)
			}
			res, err := a.Invoke(ctx, agent.Input{}, runner.Checkpoints(saver, "kids"), agent.WithDecisions(agent.Decision{Type: agent.Approve, CallID: "w0"}))
			if err != nil {
				t.Fatal(err)
			}
			if got := slices.Sorted(maps.Keys(res.Children)); !slices.Equal(got, []string{"t1", "t2", "t3"}) {
				t.Fatalf("turn 1 reports subagents %v", got)
			}
			var kids llm.Usage
			for p, u := range res.UsageByAgent {
				if p != "parent" {
					kids = kids.Add(u)
				}
			}
			if len(res.UsageByAgent) != 4 || kids.InputTokens == 0 || res.Usage != res.UsageByAgent["parent"].Add(kids) {
				t.Errorf("turn 1 usage %+v by agent %+v", res.Usage, res.UsageByAgent)
			}
			saved := map[string]int{}
			for _, p := range saver.puts {
				for k, set := range p {
					if id, ok := strings.CutPrefix(k, "agent.child/"); ok && set {
						saved[id]++
					}
					if k == "agent.children" && !legacy {
						t.Errorf("a put wrote the old all-children value")
					}
				}
			}
			if !legacy && !maps.Equal(saved, map[string]int{"t1": 1, "t2": 1, "t3": 1}) {
				t.Errorf("finished subagents saved %v times; want each once", saved)
			}
			rs, err := runner.LoadRunState(ctx, saver, "kids", agent.RootPath("parent"), false)
			if err != nil {
				t.Fatal(err)
			}
			if got := slices.Sorted(maps.Keys(rs.Finished)); !slices.Equal(got, []string{"t1", "t2", "t3"}) || rs.Finished["t2"].Status != agent.StatusOK {
				t.Errorf("read back: finished %v", got)
			}
			if (rs.Loop.Tree != nil) != legacy {
				t.Errorf("the loop's value holds the usage tree %v", rs.Loop.Tree)
			}
			for k := range rs.Values {
				if strings.HasPrefix(k, "agent.child") {
					t.Errorf("the loop's value %q is among the middleware values", k)
				}
			}

			// A second turn stops for approval; resumed, it reports only
			// its own work.
			if _, err = a.Invoke(ctx, agent.Prompt("sign it"), runner.Checkpoints(saver, "kids")); !errors.Is(err, agent.ErrInterrupted) {
				t.Fatalf("turn 2: %v", err)
			}
			res, err = a.Invoke(ctx, agent.Input{}, runner.Checkpoints(saver, "kids"), agent.WithDecisions(agent.Decision{Type: agent.Approve, CallID: "w9"}))
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Children) != 0 {
				t.Errorf("turn 2 reports the subagents of turn 1: %v", slices.Sorted(maps.Keys(res.Children)))
			}
			var own llm.Usage
			for p, u := range res.UsageByAgent {
				if p != "parent" {
					t.Errorf("turn 2 has usage of %s", p)
				}
				own = own.Add(u)
			}
			if res.Usage != own || res.Usage.InputTokens == 0 {
				t.Errorf("turn 2 usage %+v; its agents used %+v", res.Usage, own)
			}
			rs, err = runner.LoadRunState(ctx, saver, "kids", agent.RootPath("parent"), false)
			if err != nil {
				t.Fatal(err)
			}
			if len(rs.Finished) != 0 {
				t.Errorf("after turn 2 the thread still holds finished subagents %v", slices.Sorted(maps.Keys(rs.Finished)))
			}
		})
	}
}

// TestStaleLegacyChildren: in databases written before, a new turn left the
// turn before's children in place with an empty usage tree; they are not
// this turn's.
func TestStaleLegacyChildren(t *testing.T) {
	ctx := context.Background()
	saver := checkpoint.NewMemory(0)
	kid := `{"t1": {"agent": "parent / general-purpose#t1", "status": "ok", "rounds": 1, "usage": {"input_tokens": 5, "output_tokens": 1},
	  "usage_by_agent": {"parent / general-purpose#t1": {"input_tokens": 5, "output_tokens": 1}}}}`
	steps := []checkpoint.Step{
		{ID: "00000000", Messages: []llm.Message{llm.User("go")}, Values: map[string]json.RawMessage{"agent.loop": json.RawMessage(`{"rounds": 0, "usage": {"input_tokens": 0, "output_tokens": 0}}`)}},
		{ID: "00000001", ParentID: "00000000", Step: 1, Messages: []llm.Message{{Role: llm.RoleAssistant, Content: "done"}}, Status: checkpoint.StatusDone,
			Values: map[string]json.RawMessage{"agent.children": json.RawMessage(kid),
				"agent.loop": json.RawMessage(`{"status": "ok", "rounds": 1, "usage": {"input_tokens": 9, "output_tokens": 2},
				  "tree": {"parent / general-purpose#t1": {"input_tokens": 5, "output_tokens": 1}}}`)}},
		{ID: "00000002", ParentID: "00000001", Step: 2, Messages: []llm.Message{llm.User("again")},
			Values: map[string]json.RawMessage{"agent.loop": json.RawMessage(`{"rounds": 1, "turn_start": 1, "usage": {"input_tokens": 0, "output_tokens": 0}}`)}},
	}
	for i, st := range steps {
		st.ThreadID = "old"
		if err := saver.Put(ctx, st); err != nil {
			t.Fatal(err)
		}
		rs, err := runner.LoadRunState(ctx, saver, "old", agent.RootPath("parent"), false)
		if err != nil {
			t.Fatal(err)
		}
		want := i == 1
		if _, got := rs.Finished["t1"]; got != want {
			t.Errorf("after step %d: finished %v, want t1 %v", i, rs.Finished, want)
		}
	}
}

// TestAnsweredCallNoLongerWaits: a resume that took a decision and was
// cut off before the run's next checkpoint leaves the call answered. The
// thread no longer reports it as waiting, a second decision for it is
// refused, and resuming without one goes on without running it again.
func TestAnsweredCallNoLongerWaits(t *testing.T) {
	ctx := context.Background()
	saver := checkpoint.NewMemory(0)
	a, rs := approveThenCut(t, saver, "ans", func(ci llm.CallInfo, cutNow func() bool) (scripted.Step, error) {
		switch {
		case ci.Round == 0:
			return scripted.Step{ToolCalls: []scripted.StepCall{{ID: "w1", Name: "write_file", Args: json.RawMessage(`{"file_path": "/a.md", "content": "a"}`)}}}, nil
		case cutNow():
			return scripted.Step{}, context.Canceled
		}
		return scripted.Step{Content: "done"}, nil
	})
	if _, ok := rs.InProgress.Done["w1"]; !ok {
		t.Fatalf("the approved call's result is not kept: %+v", rs.InProgress)
	}
	// Read under another root name (as the CLI and the server read a
	// thread's top-level run), the same.
	if other, err := runner.LoadRunState(ctx, saver, "ans", agent.RootPath("agent"), false); err != nil || other.Status != "" || len(other.Loop.Interrupts) != 0 {
		t.Fatalf("read as agent: %v, status %q, waiting %+v", err, other.Status, other.Loop.Interrupts)
	}
	var de *agent.DecisionError
	_, err := a.Invoke(ctx, agent.Input{}, runner.Checkpoints(saver, "ans"), agent.WithDecisions(agent.Decision{Type: agent.Reject, CallID: "w1", Message: "changed my mind"}))
	if !errors.As(err, &de) || !strings.Contains(err.Error(), "no call is waiting") {
		t.Fatalf("a decision for the answered call: %v", err)
	}
	res, err := a.Invoke(ctx, agent.Input{}, runner.Checkpoints(saver, "ans"))
	if err != nil || res.FinalText() != "done" {
		t.Fatalf("resume: %v %q", err, res.FinalText())
	}
	writes := 0
	for _, m := range res.State.Messages {
		if m.Role == llm.RoleTool && m.ToolCallID == "w1" {
			writes++
		}
	}
	if writes != 1 || res.State.Files["/a.md"].Content != "a" {
		t.Errorf("the approved call has %d results; files %v", writes, res.State.Files)
	}
}

// TestAnsweredSubagentCallNoLongerWaits is TestAnsweredCallNoLongerWaits
// for a call a subagent made.
func TestAnsweredSubagentCallNoLongerWaits(t *testing.T) {
	ctx := context.Background()
	saver := checkpoint.NewMemory(0)
	a, _ := approveThenCut(t, saver, "sub", func(ci llm.CallInfo, cutNow func() bool) (scripted.Step, error) {
		switch {
		case ci.Agent == "parent" && ci.Round == 0:
			return scripted.Step{ToolCalls: []scripted.StepCall{{ID: "t1", Name: "task", Args: json.RawMessage(`{"description": "write it", "subagent_type": "general-purpose"}`)}}}, nil
		case ci.Agent == "parent":
			return scripted.Step{Content: "done"}, nil
		case ci.Round == 0:
			return scripted.Step{ToolCalls: []scripted.StepCall{{ID: "w1", Name: "write_file", Args: json.RawMessage(`{"file_path": "/a.md", "content": "a"}`)}}}, nil
		case cutNow():
			return scripted.Step{}, context.Canceled
		}
		return scripted.Step{Content: "written"}, nil
	})
	var de *agent.DecisionError
	if _, err := a.Invoke(ctx, agent.Input{}, runner.Checkpoints(saver, "sub"), agent.WithDecisions(agent.Decision{Type: agent.Reject, CallID: "w1"})); !errors.As(err, &de) {
		t.Fatalf("a decision for the answered call: %v", err)
	}
	res, err := a.Invoke(ctx, agent.Input{}, runner.Checkpoints(saver, "sub"))
	if err != nil || res.FinalText() != "done" || res.State.Files["/a.md"].Content != "a" {
		t.Fatalf("resume: %v %q %v", err, res.FinalText(), res.State.Files)
	}
}

// TestRunMetadata: runner.WithMetadata goes with the checkpoint of each turn's
// input only, never replaces its source, and is not given to subagents.
func TestRunMetadata(t *testing.T) {
	ctx := context.Background()
	saver := checkpoint.NewMemory(0)
	a := durableAgent(t, `{
	  "parent": [
	    {"tool_calls": [{"id": "t1", "name": "task", "args": {"description": "x", "subagent_type": "general-purpose"}}]},
	    {"content": "one"}, {"content": "two"}],
	  "general-purpose": [{"content": "did"}]}`, deepagents.Config{})
	md := map[string]string{"flags": "--root /tmp/x", "source": "mine"}
	if _, err := a.Invoke(ctx, agent.Prompt("go"), runner.Checkpoints(saver, "md", runner.WithMetadata(md))); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Invoke(ctx, agent.Prompt("again"), runner.Checkpoints(saver, "md", runner.WithMetadata(map[string]string{"flags": "--root /tmp/y"}))); err != nil {
		t.Fatal(err)
	}
	all, err := saver.List(ctx, checkpoint.ListOptions{ThreadID: "md", AllNamespaces: true})
	if err != nil {
		t.Fatal(err)
	}
	var inputs []string
	for _, c := range all {
		if c.Metadata["source"] == "input" {
			if c.NS != "" {
				t.Errorf("a subagent saved an input checkpoint")
			}
			inputs = append(inputs, c.Metadata["flags"])
			continue
		}
		if _, ok := c.Metadata["flags"]; ok {
			t.Errorf("checkpoint %s %q (%s) carries the run's metadata", c.NS, c.ID, c.Metadata["source"])
		}
	}
	if !slices.Equal(inputs, []string{"--root /tmp/y", "--root /tmp/x"}) { // newest first
		t.Errorf("inputs carry %q", inputs)
	}
	got, err := saver.List(ctx, checkpoint.ListOptions{ThreadID: "md", Metadata: map[string]string{"flags": "--root /tmp/x"}})
	if err != nil || len(got) != 1 || got[0].Step != 0 {
		t.Errorf("listing by metadata: %v %+v", err, got)
	}
}

// TestInterruptedResultCountsWaitingSubagents: a run that stops because a
// subagent waits for a person reports that subagent and the model calls
// it made, as a finished one would be; the resumed run reports the turn
// whole, counting them once.
func TestInterruptedResultCountsWaitingSubagents(t *testing.T) {
	ctx := context.Background()
	saver := checkpoint.NewMemory(0)
	a := durableAgent(t, `{
	  "parent": [
	    {"tool_calls": [{"id": "t1", "name": "task", "args": {"description": "write it", "subagent_type": "general-purpose"}}]},
	    {"content": "done"}],
	  "general-purpose": [
	    {"tool_calls": [{"id": "l1", "name": "ls", "args": {}}]},
	    {"tool_calls": [{"id": "w1", "name": "write_file", "args": {"file_path": "/a.md", "content": "a"}}]},
	    {"content": "written"}]}`, deepagents.Config{InterruptOn: gated()})
	sum := func(res *agent.Result) llm.Usage {
		var u llm.Usage
		for _, v := range res.UsageByAgent {
			u = u.Add(v)
		}
		return u
	}
	res, err := a.Invoke(ctx, agent.Prompt("go"), runner.Checkpoints(saver, "held"))
	if !errors.Is(err, agent.ErrInterrupted) {
		t.Fatal(err)
	}
	kid := res.Children["t1"]
	if kid == nil || kid.Status != agent.StatusInterrupted || kid.Rounds != 2 {
		t.Fatalf("the waiting subagent is not reported: %+v", kid)
	}
	before := res.UsageByAgent[kid.Agent.String()]
	if before.InputTokens == 0 || res.Usage != sum(res) || res.Usage == res.UsageByAgent["parent"] {
		t.Errorf("interrupted usage %+v, by agent %+v", res.Usage, res.UsageByAgent)
	}
	res, err = a.Invoke(ctx, agent.Input{}, runner.Checkpoints(saver, "held"), agent.WithDecisions(agent.Decision{Type: agent.Approve, CallID: "w1"}))
	if err != nil {
		t.Fatal(err)
	}
	after := res.UsageByAgent[kid.Agent.String()]
	if res.Usage != sum(res) || after.InputTokens <= before.InputTokens || res.Children["t1"].Status != agent.StatusOK {
		t.Errorf("resumed usage %+v by agent %+v (the subagent had %+v)", res.Usage, res.UsageByAgent, before)
	}
}

// TestEditThatDoesNotFitIsRefused: an edit whose arguments do not fit the
// tool is refused before anything runs, and the call still waits.
func TestEditThatDoesNotFitIsRefused(t *testing.T) {
	ctx := context.Background()
	saver := checkpoint.NewMemory(0)
	c := &counter{}
	a := durableAgent(t, approvalScript, deepagents.Config{Tools: []tool.Tool{c}, InterruptOn: gated()})
	if _, err := a.Invoke(ctx, agent.Prompt("go"), runner.Checkpoints(saver, "fit")); !errors.Is(err, agent.ErrInterrupted) {
		t.Fatal(err)
	}
	runs := c.snapshot()["parent b1"]
	for _, args := range []string{`{"file_path": 5, "content": "x"}`, `{"content": "x"}`, `{"file_path": "/x.md", "content": "x", "mode": "append"}`} {
		res, err := a.Invoke(ctx, agent.Input{}, runner.Checkpoints(saver, "fit"),
			agent.WithDecisions(agent.Decision{Type: agent.Edit, CallID: "w1", Args: json.RawMessage(args)}, agent.Decision{Type: agent.Approve, CallID: "w2"}))
		var de *agent.DecisionError
		if !errors.As(err, &de) || !strings.Contains(err.Error(), "do not fit write_file") || res.Status != agent.StatusInterrupted || len(res.Interrupts) != 2 {
			t.Fatalf("edit %s: %v (status %v, %d waiting)", args, err, res.Status, len(res.Interrupts))
		}
	}
	rs, err := runner.LoadRunState(ctx, saver, "fit", agent.RootPath("parent"), false)
	if err != nil || rs.Status != agent.StatusInterrupted || len(rs.Loop.Interrupts) != 2 || len(rs.InProgress.Decided) != 0 {
		t.Fatalf("the thread changed: %v %+v", err, rs)
	}
	if _, ok := rs.Files["/two.md"]; ok || c.snapshot()["parent b1"] != runs {
		t.Error("something ran")
	}
}

// TestNewInputClosesACutOffCall: a call that was running when its run
// stopped, closed by a new message instead of a resume, is told it was cut
// off (it may have done part of its work), not that it never ran.
func TestNewInputClosesACutOffCall(t *testing.T) {
	ctx := context.Background()
	saver := checkpoint.NewMemory(0)
	var cut context.CancelFunc
	hang, err := tool.Func("hang", "Waits.", func(ctx context.Context, _ *tool.Env, in struct{}) (string, error) {
		cut() // the process dies while this call runs
		<-ctx.Done()
		return "", ctx.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	a := durableAgent(t, `{"parent": [{"tool_calls": [{"id": "h", "name": "hang", "args": {}}]}, {"content": "moved on"}]}`,
		deepagents.Config{Tools: []tool.Tool{hang}})
	cctx, cancel := context.WithCancel(ctx)
	cut = cancel
	if _, err := a.Invoke(cctx, agent.Prompt("first"), runner.Checkpoints(saver, "cut")); err == nil {
		t.Fatal("the cut-off run ended well")
	}
	res, err := a.Invoke(ctx, agent.Prompt("something else"), runner.Checkpoints(saver, "cut"))
	if err != nil {
		t.Fatal(err)
	}
	if got := toolResult(res.State.Messages, "h"); !strings.Contains(got, "was cut off") || !strings.Contains(got, "file changes were not kept") || strings.Contains(got, "never ran") {
		t.Fatalf("the cut-off call's result %q", got)
	}

	// The same for a call a person approved, cut off while it ran.
	gated := durableAgent(t, `{"parent": [{"tool_calls": [{"id": "h", "name": "hang", "args": {}}]}, {"content": "moved on"}]}`,
		deepagents.Config{Tools: []tool.Tool{hang}, InterruptOn: map[string]approve.Policy{"hang": {}}})
	if _, err := gated.Invoke(ctx, agent.Prompt("first"), runner.Checkpoints(saver, "cut2")); !errors.Is(err, agent.ErrInterrupted) {
		t.Fatal(err)
	}
	cctx, cancel = context.WithCancel(ctx)
	cut = cancel
	if _, err := gated.Invoke(cctx, agent.Input{}, runner.Checkpoints(saver, "cut2"), agent.WithDecisions(agent.Decision{Type: agent.Approve, CallID: "h"})); err == nil {
		t.Fatal("the cut-off resume ended well")
	}
	res, err = gated.Invoke(ctx, agent.Prompt("something else"), runner.Checkpoints(saver, "cut2"))
	if err != nil {
		t.Fatal(err)
	}
	if got := toolResult(res.State.Messages, "h"); !strings.Contains(got, "was cut off") || strings.Contains(got, "did not run") {
		t.Fatalf("the approved, cut-off call's result %q", got)
	}
}

// cancelOnPut cancels the run as its nth put starts, so that the put sees
// a cancelled context.
type cancelOnPut struct {
	checkpoint.Saver
	mu     sync.Mutex
	n, at  int
	cancel context.CancelFunc
}

func (c *cancelOnPut) Put(ctx context.Context, st checkpoint.Step) error {
	c.mu.Lock()
	c.n++
	if c.n == c.at && c.cancel != nil {
		c.cancel()
	}
	c.mu.Unlock()
	return c.Saver.Put(ctx, st)
}

const cancelScript = `{
  "parent": [
    {"tool_calls": [{"id": "b1", "name": "bump", "args": {"n": 1}},
                    {"id": "t1", "name": "task", "args": {"description": "count", "subagent_type": "general-purpose"}}]},
    {"content": "done"}],
  "general-purpose": [
    {"tool_calls": [{"id": "c1", "name": "bump", "args": {"n": 2}}]},
    {"content": "counted"}]}`

// checkCancelThenResume cancels a run with cancel (set up by arm), then
// resumes it: the cancelled run ends cancelled, never as an error, the
// resume finishes, and no call whose end the cancelled run reported (so
// saved) runs again.
func checkCancelThenResume(t *testing.T, name string, arm func(saver *cancelOnPut, cancel context.CancelFunc) func(agent.Event)) {
	t.Helper()
	ctx := context.Background()
	c := &counter{}
	saver := &cancelOnPut{Saver: checkpoint.NewMemory(0)}
	a := durableAgent(t, cancelScript, deepagents.Config{Tools: []tool.Tool{c}})
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	each := arm(saver, cancel)
	ended := map[string]bool{}
	res, err := agent.Drain(a.Run(cctx, agent.Prompt("go"), runner.Checkpoints(saver, "cx")), func(ev agent.Event) {
		if ev.Type == agent.ToolEnd && ev.Tool.Name == "bump" {
			ended[ev.Agent.String()+" "+ev.Tool.CallID] = true
		}
		if each != nil {
			each(ev)
		}
	})
	if err != nil && res.Status != agent.StatusCancelled {
		t.Fatalf("%s: the cancelled run ended %s: %v", name, res.Status, err)
	}
	saver.cancel = nil
	if err != nil {
		in := agent.Input{}
		if _, lerr := runner.LoadRunState(ctx, saver, "cx", agent.RootPath("parent"), false); errors.Is(lerr, checkpoint.ErrNotFound) {
			in = agent.Prompt("go") // cancelled before its input was saved
		}
		if res, err = a.Invoke(ctx, in, runner.Checkpoints(saver, "cx")); err != nil {
			t.Fatalf("%s: resume: %v", name, err)
		}
	}
	if res.FinalText() != "done" {
		t.Fatalf("%s: final %q", name, res.FinalText())
	}
	runs := c.snapshot()
	if len(runs) != 2 {
		t.Fatalf("%s: calls ran %v", name, runs)
	}
	for k := range ended {
		if runs[k] != 1 {
			t.Errorf("%s: call %s, whose end was reported before the cancellation, ran %d times", name, k, runs[k])
		}
	}
}

// TestCancelledRunResumes cancels a run with delegation at each of its
// saves and at each of its events, then resumes it. A cancellation that
// cut a save short once ended the run as an error no resume could
// continue; one that came while finished calls' ends waited to be read
// dropped them, so the resume ran them again.
func TestCancelledRunResumes(t *testing.T) {
	for at := 1; at <= 8; at++ {
		checkCancelThenResume(t, fmt.Sprintf("put %d", at), func(s *cancelOnPut, cancel context.CancelFunc) func(agent.Event) {
			s.at, s.cancel = at, cancel
			return nil
		})
	}
	for rep := range 5 {
		for at := 1; at <= 30; at++ {
			checkCancelThenResume(t, fmt.Sprintf("event %d (%d)", at, rep), func(_ *cancelOnPut, cancel context.CancelFunc) func(agent.Event) {
				n := 0
				return func(agent.Event) {
					if n++; n == at {
						cancel()
					}
				}
			})
		}
	}
}

// TestCancelKeepsEndedCalls: a call that ended while the run was busy with
// other events, and is cancelled before it reads that end, keeps its
// result; resuming does not run it again.
func TestCancelKeepsEndedCalls(t *testing.T) {
	for i := range 20 {
		inBubble(t, func(t *testing.T) {
			ctx := context.Background()
			release := make(chan struct{})
			var ran atomic.Int32
			gate, err := tool.Func("gate", "Waits to be let go.", func(ctx context.Context, _ *tool.Env, in struct{}) (string, error) {
				select {
				case <-release:
				case <-ctx.Done():
					return "", ctx.Err()
				}
				ran.Add(1)
				return "let go", nil
			})
			if err != nil {
				t.Fatal(err)
			}
			a := durableAgent(t, `{
		  "parent": [
		    {"tool_calls": [{"id": "g1", "name": "gate", "args": {}},
		                    {"id": "t1", "name": "task", "args": {"description": "count", "subagent_type": "general-purpose"}}]},
		    {"content": "done"}],
		  "general-purpose": [{"tool_calls": [{"id": "c1", "name": "ls", "args": {}}]}, {"content": "listed"}]}`,
				deepagents.Config{Tools: []tool.Tool{gate}})
			saver := checkpoint.NewMemory(0)
			cctx, cancel := context.WithCancel(ctx)
			_, err = agent.Drain(a.Run(cctx, agent.Prompt("go"), runner.Checkpoints(saver, "keep")), func(ev agent.Event) {
				if ev.Type == agent.ToolEnd && ev.Tool.CallID == "c1" {
					// The gate ends while the run is in this event; once every
					// other goroutine of the bubble waits, its end has reached
					// the run: cancel.
					close(release)
					synctest.Wait()
					if ran.Load() == 0 {
						t.Error("the gate did not end when let go")
					}
					cancel()
				}
			})
			cancel()
			if err == nil {
				t.Fatal("the run was not cancelled")
			}
			res, err := a.Invoke(ctx, agent.Input{}, runner.Checkpoints(saver, "keep"))
			if err != nil || res.FinalText() != "done" {
				t.Fatalf("resume: %v %q", err, res.FinalText())
			}
			if n := ran.Load(); n != 1 {
				t.Fatalf("iteration %d: the gate call ran %d times", i, n)
			}
		})
	}
}

// TestMisuseGetsClearErrors: runs given what they cannot use say so, and
// change nothing.
func TestMisuseGetsClearErrors(t *testing.T) {
	ctx := context.Background()
	a := durableAgent(t, approvalScript, deepagents.Config{Tools: []tool.Tool{&counter{}}, InterruptOn: gated()})
	var de *agent.DecisionError
	if _, err := a.Invoke(ctx, agent.Prompt("go"), runner.Checkpoints(nil, "t")); err == nil || !strings.Contains(err.Error(), "no saver") {
		t.Errorf("nil saver: %v", err)
	}
	if _, err := a.Invoke(ctx, agent.Input{}); err == nil || !strings.Contains(err.Error(), "no input") {
		t.Errorf("no input, no thread: %v", err)
	}
	if _, err := a.Invoke(ctx, agent.Prompt("go"), agent.WithDecisions(agent.Decision{Type: agent.Approve, CallID: "w1"})); !errors.As(err, &de) {
		t.Errorf("decisions without a thread: %v", err)
	}
	saver := checkpoint.NewMemory(0)
	if _, err := a.Invoke(ctx, agent.Input{}, runner.Checkpoints(saver, "nope")); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("resuming a thread that does not exist: %v", err)
	}
	if _, err := a.Invoke(ctx, agent.Prompt("go"), runner.Checkpoints(saver, "w")); !errors.Is(err, agent.ErrInterrupted) {
		t.Fatal(err)
	}
	_, err := a.Invoke(ctx, agent.Prompt("other"), runner.Checkpoints(saver, "w"), agent.WithDecisions(agent.Decision{Type: agent.Approve, CallID: "w1"}))
	if !errors.As(err, &de) || !strings.Contains(err.Error(), "one or the other") {
		t.Errorf("input and decisions together: %v", err)
	}
	rs, err := runner.LoadRunState(ctx, saver, "w", agent.RootPath("parent"), false)
	if err != nil || rs.Status != agent.StatusInterrupted || len(rs.Loop.Interrupts) != 2 {
		t.Fatalf("the refused run changed the thread: %v %+v", err, rs.Loop)
	}
	if _, err := a.Invoke(ctx, agent.Input{}, runner.Checkpoints(saver, "w"),
		agent.WithDecisions(agent.Decision{Type: agent.Approve, CallID: "w1"}, agent.Decision{Type: agent.Approve, CallID: "w2"})); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Invoke(ctx, agent.Input{}, runner.Checkpoints(saver, "w"), agent.WithDecisions(agent.Decision{Type: agent.Approve, CallID: "w1"})); !errors.As(err, &de) {
		t.Errorf("decisions on a finished thread: %v", err)
	}
}

// TestSubagentResultCountsItsOwnCheckpoints: parallel subagents each report
// the checkpoints they saved, the parent those of the whole run; a deep
// read of a top-level run finds its subagents whatever the root is named.
func TestSubagentResultCountsItsOwnCheckpoints(t *testing.T) {
	ctx := context.Background()
	saver := checkpoint.NewMemory(0)
	a := durableAgent(t, `{
	  "parent": [
	    {"tool_calls": [{"id": "t1", "name": "task", "args": {"description": "one", "subagent_type": "general-purpose"}},
	                    {"id": "t2", "name": "task", "args": {"description": "two", "subagent_type": "general-purpose"}}]},
	    {"content": "done"}],
	  "general-purpose": {"cases": [
	    {"match": "one", "steps": [{"tool_calls": [{"id": "l1", "name": "ls", "args": {}}]}, {"tool_calls": [{"id": "l2", "name": "ls", "args": {}}]}, {"content": "1"}]},
	    {"match": "two", "steps": [{"content": "2"}]}]}}`, deepagents.Config{})
	res, err := a.Invoke(ctx, agent.Prompt("go"), runner.Checkpoints(saver, "cc"))
	if err != nil {
		t.Fatal(err)
	}
	all, err := saver.List(ctx, checkpoint.ListOptions{ThreadID: "cc", AllNamespaces: true})
	if err != nil {
		t.Fatal(err)
	}
	per := map[string]int{}
	for _, c := range all {
		per[c.NS]++
	}
	if res.SavedSteps != len(all) {
		t.Errorf("the parent reports %d checkpoints; %d are stored", res.SavedSteps, len(all))
	}
	for id, kid := range res.Children {
		if kid.SavedSteps != per[kid.Agent.String()] || kid.SavedSteps == 0 {
			t.Errorf("subagent %s reports %d checkpoints; its namespace holds %d", id, kid.SavedSteps, per[kid.Agent.String()])
		}
	}
}

// TestDecisionErrorsNameWhatIsWrong: an edit naming another tool than its
// call's is refused; a decision that fits no waiting call lists them with
// their agents when an id waits in two.
func TestDecisionErrorsNameWhatIsWrong(t *testing.T) {
	waiting := []agent.Interrupt{
		{Path: agent.RootPath("parent"), CallID: "c", Tool: "write_file", Allowed: agent.AllDecisions},
		{Path: agent.RootPath("parent").Child("general-purpose", "t1"), CallID: "c", Tool: "edit_file", Allowed: agent.AllDecisions},
	}
	ds, err := hitl.ParseDecisions([]byte(`[{"type": "edit", "call_id": "c", "path": "parent", "edited_action": {"name": "delete", "args": {"file_path": "/a"}}}]`))
	if err != nil {
		t.Fatal(err)
	}
	if err := agent.CheckDecisions(ds, waiting); err == nil || !strings.Contains(err.Error(), "names tool delete, but the call is a write_file call") {
		t.Errorf("an edit naming another tool: %v", err)
	}
	err = agent.CheckDecisions([]agent.Decision{{Type: agent.Approve, CallID: "c", Path: agent.RootPath("elsewhere")}}, waiting)
	if err == nil || !strings.Contains(err.Error(), "waiting: c (in parent), c (in parent / general-purpose#t1)") {
		t.Errorf("no match: %v", err)
	}
	ds[0].Tool = "write_file"
	if err := agent.CheckDecisions(ds, waiting); err != nil {
		t.Errorf("an edit naming its own tool: %v", err)
	}
}

// approveThenCut builds an agent on a scripted model that gates write_file,
// runs thread until call w1 waits, and approves it in a resume that dies
// (is cancelled) when the model function's cutNow first says so; the
// thread must then be an unfinished run waiting for nothing, whose state
// it returns.
func approveThenCut(t *testing.T, saver checkpoint.Saver, thread string, answer func(ci llm.CallInfo, cutNow func() bool) (scripted.Step, error)) (*agent.Agent, *agent.RunState) {
	t.Helper()
	ctx := context.Background()
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var asked atomic.Int32
	cutNow := func() bool {
		if asked.Add(1) == 1 {
			cancel() // the process dies while the model is asked again
			return true
		}
		return false
	}
	model := scripted.New(nil, scripted.Options{Func: func(ci llm.CallInfo, req *llm.Request) (scripted.Step, error) { return answer(ci, cutNow) }})
	a, err := deepagents.New(deepagents.Config{Model: model, InterruptOn: gated()})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Invoke(ctx, agent.Prompt("go"), runner.Checkpoints(saver, thread))
	if !errors.Is(err, agent.ErrInterrupted) || len(res.Interrupts) != 1 || res.Interrupts[0].CallID != "w1" {
		t.Fatalf("first run: %v %+v", err, res.Interrupts)
	}
	if _, err := a.Invoke(cctx, agent.Input{}, runner.Checkpoints(saver, thread), agent.WithDecisions(agent.Decision{Type: agent.Approve, CallID: "w1"})); err == nil {
		t.Fatal("the cut-off resume ended well")
	}
	rs, err := runner.LoadRunState(ctx, saver, thread, agent.RootPath("parent"), false)
	if err != nil {
		t.Fatal(err)
	}
	if rs.Status != "" || len(rs.Loop.Interrupts) != 0 {
		t.Fatalf("after the cut: status %q, waiting %+v; want an unfinished run waiting for nothing", rs.Status, rs.Loop.Interrupts)
	}
	return a, rs
}

// remover is a tool that deletes a file through the run's files.
type remover struct{}

func (remover) Spec() llm.ToolSpec {
	return llm.ToolSpec{Name: "rm", Description: "Delete a file.", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}
}

func (remover) Run(ctx context.Context, env *tool.Env, args json.RawMessage) (tool.Result, error) {
	var in struct{ Path string }
	_ = json.Unmarshal(args, &in)
	if _, err := env.Files.Delete(ctx, in.Path); err != nil {
		return tool.Errorf("Error: %v", err), nil
	}
	return tool.Text("deleted " + in.Path), nil
}

// dirScript: every parent step changes files, a subagent writes one too,
// and a step deletes a file an earlier one wrote.
const dirScript = `{
  "parent": [
    {"tool_calls": [
      {"id": "w1", "name": "write_file", "args": {"file_path": "/a.md", "content": "alpha"}},
      {"id": "b1", "name": "bump", "args": {"n": 1}}]},
    {"tool_calls": [{"id": "w2", "name": "write_file", "args": {"file_path": "/b.md", "content": "beta"}}]},
    {"tool_calls": [{"id": "w3", "name": "write_file", "args": {"file_path": "/gone.md", "content": "brief"}}]},
    {"tool_calls": [
      {"id": "t1", "name": "task", "args": {"description": "first job", "subagent_type": "general-purpose"}},
      {"id": "e1", "name": "edit_file", "args": {"file_path": "/b.md", "old_string": "beta", "new_string": "BETA"}}]},
    {"tool_calls": [
      {"id": "d1", "name": "rm", "args": {"path": "/gone.md"}},
      {"id": "w4", "name": "write_file", "args": {"file_path": "/c.md", "content": "gamma"}}]},
    {"content": "all done"}],
  "general-purpose": {"cases": [
    {"match": "first", "steps": [
      {"tool_calls": [{"id": "cb", "name": "bump", "args": {"n": 10}}]},
      {"tool_calls": [{"id": "cw", "name": "write_file", "args": {"file_path": "/first.md", "content": "one"}}]},
      {"content": "first report"}]}]}
}`

// dirCallPaths: the path each call of dirScript's parent changes.
var dirCallPaths = map[string]string{"w1": "/a.md", "w2": "/b.md", "w3": "/gone.md", "t1": "/first.md",
	"e1": "/b.md", "d1": "/gone.md", "w4": "/c.md"}

// TestCrashOnADirectoryKeepsChangedFiles: a run whose files are on a real
// directory (not in its state, as with the CLI's --root) is cut off after
// each of its events in turn and resumed: its Result lists the paths the
// uncrashed run changed, those the steps finished before the crash changed
// included. Read back, the state of the run cut off lists those of its
// finished steps (ChangedByFinishedSteps).
func TestCrashOnADirectoryKeepsChangedFiles(t *testing.T) {
	for _, layered := range []bool{false, true} {
		t.Run(fmt.Sprintf("layered=%v", layered), func(t *testing.T) {
			crashOnADirectory(t, layered)
		})
	}
}

func crashOnADirectory(t *testing.T, layered bool) {
	ctx := context.Background()
	// dirAgent is a new process's agent on the directory dir.
	dirAgent := func(t *testing.T, c *counter, dir string) *agent.Agent {
		f, err := osfs.New(dir, osfs.NoSweep(), osfs.NoSync())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		var b vfs.Backend = f
		if layered {
			// Calls write to layers, merged when the step ends.
			if b, err = vfs.NewComposite(f, vfs.Route{Prefix: "/memories/", Backend: vfs.NewMemory(nil)}); err != nil {
				t.Fatal(err)
			}
		}
		return durableAgent(t, dirScript, deepagents.Config{Tools: []tool.Tool{c, remover{}}, Backend: b})
	}
	var ref *agent.Result
	refEvents := 0
	{
		a := dirAgent(t, &counter{}, t.TempDir())
		res, err := agent.Drain(a.Run(ctx, agent.Prompt("go"), runner.Checkpoints(checkpoint.NewMemory(0), "ref")), func(agent.Event) { refEvents++ })
		if err != nil {
			t.Fatal(err)
		}
		ref = res
	}
	if want := []string{"/a.md", "/b.md", "/c.md", "/first.md", "/gone.md"}; ref.Status != agent.StatusOK || !slices.Equal(ref.Changed, want) {
		t.Fatalf("uncrashed run: %s %s, changed %v, want %v", ref.Status, ref.Error, ref.Changed, want)
	}
	for n := 1; n < refEvents; n++ {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			inBubble(t, func(t *testing.T) {
				c := &counter{}
				base := checkpoint.NewMemory(0)
				saver := &crashable{Saver: base}
				dir := t.TempDir()
				a := dirAgent(t, c, dir)
				seen := 0
				for range a.Run(ctx, agent.Prompt("go"), runner.Checkpoints(saver, "th", runner.Lease("first", time.Millisecond))) {
					seen++
					if seen == n {
						saver.dead.Store(true)
						break
					}
				}
				time.Sleep(2 * time.Millisecond) // the crashed holder's 1 ms lease runs out (bubble time)
				rs, err := runner.LoadRunState(ctx, base, "th", agent.RootPath("parent"), false)
				if errors.Is(err, checkpoint.ErrNotFound) {
					return // cut off before its input was saved
				}
				if err != nil {
					t.Fatal(err)
				}
				if rs.Status != "" {
					if !slices.Equal(rs.Loop.Changed, ref.Changed) {
						t.Errorf("saved changed paths %v, want %v", rs.Loop.Changed, ref.Changed)
					}
					return
				}
				// The steps whose results are in the conversation finished.
				got, err := runner.ChangedByFinishedSteps(ctx, base, rs)
				if err != nil {
					t.Fatal(err)
				}
				var want []string
				for _, m := range rs.Messages {
					if p, ok := dirCallPaths[m.ToolCallID]; ok && m.Role == llm.RoleTool && !slices.Contains(want, p) {
						want = append(want, p)
					}
				}
				slices.Sort(want)
				if !slices.Equal(got, want) {
					t.Errorf("the finished steps changed %v, want %v", got, want)
				}

				res, err := dirAgent(t, c, dir).Invoke(ctx, agent.Input{}, runner.Checkpoints(base, "th", runner.Lease("second", time.Minute)))
				if err != nil {
					t.Fatalf("resume: %v", err)
				}
				if res.Status != agent.StatusOK || !slices.Equal(res.Changed, ref.Changed) {
					t.Errorf("resumed run: %s, changed %v, want %v", res.Status, res.Changed, ref.Changed)
				}
			})
		})
	}
}

// TestCheckpointsOnARunStore: a store with only the four methods of
// checkpoint.RunStore is enough for a durable run and its resumption; it
// takes no lease, so a thread another holder leases in the same saver is
// not refused, while the whole saver (a Leaser too) refuses it.
func TestCheckpointsOnARunStore(t *testing.T) {
	ctx := context.Background()
	saver := checkpoint.NewMemory(0)
	store := struct{ checkpoint.RunStore }{saver}
	if _, err := saver.Acquire(ctx, "th", "someone else", time.Now(), time.Hour); err != nil {
		t.Fatal(err)
	}
	a := durableAgent(t, `{"parent": [{"tool_calls": [{"id": "w", "name": "write_file", "args": {"file_path": "/a.md", "content": "x"}}]}, {"content": "done"}]}`,
		deepagents.Config{InterruptOn: map[string]approve.Policy{"write_file": {}}})
	res, err := a.Invoke(ctx, agent.Prompt("go"), runner.Checkpoints(store, "th"))
	if !errors.Is(err, agent.ErrInterrupted) || len(res.Interrupts) != 1 {
		t.Fatalf("first run: %v, %d waiting", err, len(res.Interrupts))
	}
	res, err = a.Invoke(ctx, agent.Input{}, runner.Checkpoints(store, "th"), agent.WithDecisions(agent.Decision{Type: agent.Approve, CallID: "w"}))
	if err != nil || res.FinalText() != "done" {
		t.Fatalf("resumed run: %v %+v", err, res)
	}
	if _, err := a.Invoke(ctx, agent.Prompt("again"), runner.Checkpoints(saver, "th")); !errors.Is(err, checkpoint.ErrLeased) {
		t.Fatalf("the whole saver leases the thread: %v", err)
	}
}

// TestDecisionAnswersOnlyTheWaitingCall: an approval answers the call that
// was put to the person, not a later call that reuses its id. The model
// chooses call ids: after "approve c1" for a write of /safe.md, its next step
// writes /danger.md under the same id c1, and that write must wait for a
// person again instead of running on the old approval.
func TestDecisionAnswersOnlyTheWaitingCall(t *testing.T) {
	ctx := context.Background()
	saver := checkpoint.NewMemory(0)
	const script = `{"parent": [
		{"tool_calls": [{"id": "c1", "name": "write_file", "args": {"file_path": "/safe.md", "content": "ok"}}]},
		{"tool_calls": [{"id": "c1", "name": "write_file", "args": {"file_path": "/danger.md", "content": "bad"}}]},
		{"content": "done"}]}`
	a := durableAgent(t, script, deepagents.Config{InterruptOn: map[string]approve.Policy{"write_file": {}}})
	if _, err := a.Invoke(ctx, agent.Prompt("go"), runner.Checkpoints(saver, "reuse")); !errors.Is(err, agent.ErrInterrupted) {
		t.Fatalf("first run: %v", err)
	}
	res, err := a.Invoke(ctx, agent.Input{}, runner.Checkpoints(saver, "reuse"), agent.WithDecisions(agent.Decision{Type: agent.Approve, CallID: "c1"}))
	if !errors.Is(err, agent.ErrInterrupted) || len(res.Interrupts) != 1 || !strings.Contains(string(res.Interrupts[0].Args), "/danger.md") {
		t.Fatalf("the second write under the approved call's id did not wait: %v, %+v", err, res.Interrupts)
	}
	if _, ok := res.State.Files["/danger.md"]; ok {
		t.Fatal("/danger.md was written on the approval of another call")
	}
	if _, ok := res.State.Files["/safe.md"]; !ok {
		t.Fatal("the approved write of /safe.md did not run")
	}
}
