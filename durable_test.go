package deepagents_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/tool"
	"github.com/deepagents-go/deepagents/vfs"
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
// delegates two tasks in parallel (each child bumps and writes), then
// answers.
const durableScript = `{
  "parent": [
    {"tool_calls": [
      {"id": "w1", "name": "write_file", "args": {"file_path": "/a.md", "content": "alpha"}},
      {"id": "b1", "name": "bump", "args": {"n": 1}},
      {"id": "b2", "name": "bump", "args": {"n": 2}}]},
    {"tool_calls": [
      {"id": "t1", "name": "task", "args": {"description": "first job", "subagent_type": "general-purpose"}},
      {"id": "t2", "name": "task", "args": {"description": "second job", "subagent_type": "general-purpose"}}]},
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
		rs, err := agent.LoadRunState(ctx, s, thread, path, false)
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
	ctx := context.Background()
	var ref *agent.Result
	var refEvents int
	{
		c := &counter{}
		a := durableAgent(t, durableScript, deepagents.Config{Tools: []tool.Tool{c}})
		saver := checkpoint.NewMemory(0)
		res, err := agent.Drain(a.Run(ctx, agent.Prompt("go"), agent.WithCheckpoints(saver, "ref")), func(agent.Event) { refEvents++ })
		if err != nil {
			t.Fatal(err)
		}
		ref = res
		for k, n := range c.snapshot() {
			if n != 1 {
				t.Fatalf("uncrashed run: %s ran %d times", k, n)
			}
		}
		if res.Checkpoints == 0 || res.Thread != "ref" {
			t.Fatalf("checkpoints %d, thread %q", res.Checkpoints, res.Thread)
		}
	}
	if refEvents < 20 {
		t.Fatalf("only %d events; the test wants at least 20 crash points", refEvents)
	}
	for n := 1; n < refEvents; n++ {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			c := &counter{}
			base := checkpoint.NewMemory(0)
			saver := &crashable{Saver: base}
			a := durableAgent(t, durableScript, deepagents.Config{Tools: []tool.Tool{c}})
			seen := 0
			for range a.Run(ctx, agent.Prompt("go"), agent.WithCheckpoints(saver, "th"), agent.WithLease("first", time.Millisecond)) {
				seen++
				if seen == n {
					saver.dead.Store(true)
					break
				}
			}
			// What was saved before the crash is all that survives it. The
			// dead process's lease runs out (1 ms) before the new one starts.
			finished := finishedCalls(t, base, "th")
			before := c.snapshot()
			time.Sleep(2 * time.Millisecond)

			a2 := durableAgent(t, durableScript, deepagents.Config{Tools: []tool.Tool{c}})
			res, err := a2.Invoke(ctx, agent.Input{}, agent.WithCheckpoints(base, "th"), agent.WithLease("second", time.Minute))
			if err != nil && strings.Contains(err.Error(), "has no run to resume") {
				// The crash came before the input was saved: start again.
				res, err = a2.Invoke(ctx, agent.Prompt("go"), agent.WithCheckpoints(base, "th"), agent.WithLease("second", time.Minute))
			}
			if err != nil {
				var msgs []string
				if res != nil {
					msgs = append(msgs, res.Error)
				}
				if strings.Contains(fmt.Sprint(err), "has no unfinished run") {
					// The crash came after the run's end was saved.
					res, err = nil, nil
					rs, lerr := agent.LoadRunState(ctx, base, "th", agent.RootPath("parent"), false)
					if lerr != nil {
						t.Fatal(lerr)
					}
					compareEnd(t, ref, rs.Messages, rs.Files)
					return
				}
				t.Fatalf("resume: %v %v", err, msgs)
			}
			compareEnd(t, ref, res.State.Messages, res.State.Files)
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

func gated() map[string]agent.Approval {
	return map[string]agent.Approval{"write_file": {}}
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
	res, err := agent.Drain(a.Run(ctx, agent.Prompt("go"), agent.WithCheckpoints(saver, "ap")), func(ev agent.Event) {
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
	if in.Path != "parent" || in.Tool != "write_file" || !slices.Equal(in.Allowed, []agent.DecisionType{"approve", "edit", "reject"}) {
		t.Fatalf("interrupt %+v", in)
	}
	if c.snapshot()["parent b1"] != 1 {
		t.Fatalf("the free call did not run once: %v", c.snapshot())
	}
	hitl, _ := json.Marshal(agent.HITL(res.Interrupts))
	if !strings.Contains(string(hitl), `"action_requests":[{"name":"write_file","args":{"file_path":"/one.md","content":"1"}`) ||
		!strings.Contains(string(hitl), `"review_configs":[{"action_name":"write_file","allowed_decisions":["approve","edit","reject"]}`) {
		t.Fatalf("HITL payload %s", hitl)
	}

	// A decision for a call that is not waiting changes nothing.
	res, err = a.Invoke(ctx, agent.Input{}, agent.WithCheckpoints(saver, "ap"), agent.WithDecisions(agent.Decision{Type: agent.Approve, CallID: "nope"}))
	var de *agent.DecisionError
	if !errors.As(err, &de) || res.Status != agent.StatusInterrupted || len(res.Interrupts) != 2 {
		t.Fatalf("bad decision: %v status %v", err, res.Status)
	}

	res, err = a.Invoke(ctx, agent.Input{}, agent.WithCheckpoints(saver, "ap"), agent.WithDecisions(agent.Decision{Type: agent.Approve, CallID: "w1"}))
	if res.Status != agent.StatusInterrupted || len(res.Interrupts) != 1 || res.Interrupts[0].CallID != "w2" {
		t.Fatalf("after one decision: %v %+v", err, res.Interrupts)
	}
	res, err = a.Invoke(ctx, agent.Input{}, agent.WithCheckpoints(saver, "ap"),
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
	if _, err := a.Invoke(ctx, agent.Prompt("go"), agent.WithCheckpoints(saver, "ed")); !errors.Is(err, agent.ErrInterrupted) {
		t.Fatal(err)
	}
	ds, err := agent.ParseDecisions([]byte(`{"decisions": [
		{"type": "edit", "call_id": "w1", "edited_action": {"name": "write_file", "args": {"file_path": "/edited.md", "content": "E"}}},
		{"type": "approve", "call_id": "w2"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Invoke(ctx, agent.Input{}, agent.WithCheckpoints(saver, "ed"), agent.WithDecisions(ds...))
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

// TestRejectedCallIsNotAskedAgain: the model repeats a rejected call word
// for word; it is answered without asking.
func TestRejectedCallIsNotAskedAgain(t *testing.T) {
	ctx := context.Background()
	saver := checkpoint.NewMemory(0)
	const script = `{"parent": [
	  {"tool_calls": [{"id": "x1", "name": "write_file", "args": {"file_path": "/x.md", "content": "x"}}]},
	  {"tool_calls": [{"id": "x2", "name": "write_file", "args": {"content": "x", "file_path": "/x.md"}}]},
	  {"content": "gave up"}]}`
	a := durableAgent(t, script, deepagents.Config{InterruptOn: gated()})
	if _, err := a.Invoke(ctx, agent.Prompt("go"), agent.WithCheckpoints(saver, "rj")); !errors.Is(err, agent.ErrInterrupted) {
		t.Fatal(err)
	}
	res, err := a.Invoke(ctx, agent.Input{}, agent.WithCheckpoints(saver, "rj"), agent.WithDecisions(agent.Decision{Type: agent.Reject, CallID: "x1", Message: "no"}))
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
	res, err := a.Invoke(ctx, agent.Prompt("go"), agent.WithCheckpoints(saver, "sub"))
	if !errors.Is(err, agent.ErrInterrupted) || len(res.Interrupts) != 1 {
		t.Fatalf("%v %+v", err, res)
	}
	if got := res.Interrupts[0].Path; got != "parent / general-purpose#t1" || res.Interrupts[0].CallID != "cw" {
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
	res, err = a2.Invoke(ctx, agent.Input{}, agent.WithCheckpoints(saver, "sub"),
		agent.WithDecisions(agent.Decision{Type: agent.Approve, CallID: "cw", Path: "parent / general-purpose#t1"}))
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
	if _, err := a.Invoke(ctx, agent.Prompt("one"), agent.WithCheckpoints(saver, "turns")); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Invoke(ctx, agent.Input{}, agent.WithCheckpoints(saver, "turns")); err == nil || !strings.Contains(err.Error(), "no unfinished run") {
		t.Fatalf("resuming a finished thread: %v", err)
	}
	res, err := a.Invoke(ctx, agent.Prompt("two"), agent.WithCheckpoints(saver, "turns"))
	if err != nil {
		t.Fatal(err)
	}
	if res.FinalText() != "second answer" || len(res.State.Messages) != 8 || !strings.Contains(toolResult(res.State.Messages, "r"), "kept") {
		t.Fatalf("second turn: %q, %d messages, read %q", res.FinalText(), len(res.State.Messages), toolResult(res.State.Messages, "r"))
	}
	if res.Rounds != 4 {
		t.Fatalf("rounds %d", res.Rounds)
	}
}

// blocker is a tool that waits until released.
type blocker struct{ started, release chan struct{} }

func (b *blocker) Spec() llm.ToolSpec {
	return llm.ToolSpec{Name: "block", Description: "Wait.", Parameters: json.RawMessage(`{"type":"object"}`)}
}

func (b *blocker) Run(ctx context.Context, _ *tool.Env, _ json.RawMessage) (tool.Result, error) {
	close(b.started)
	<-b.release
	return tool.Text("released"), nil
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
		_, err := a.Invoke(ctx, agent.Prompt("hold"), agent.WithCheckpoints(saver, "busy"))
		done <- err
	}()
	<-b.started
	_, err := a.Invoke(ctx, agent.Prompt("me too"), agent.WithCheckpoints(saver, "busy"))
	if err == nil || !strings.Contains(err.Error(), "is being run by another process") {
		t.Fatalf("second run on a held thread: %v", err)
	}
	other := durableAgent(t, `{"parent": [{"content": "free"}]}`, deepagents.Config{})
	if res, err := other.Invoke(ctx, agent.Prompt("x"), agent.WithCheckpoints(saver, "other")); err != nil || res.FinalText() != "free" {
		t.Fatalf("another thread: %v", err)
	}
	close(b.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
