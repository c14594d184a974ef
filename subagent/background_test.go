package subagent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/approve"
	"github.com/deepagents-go/deepagents/budget"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/subagent"
	"github.com/deepagents-go/deepagents/tool"
	"github.com/deepagents-go/deepagents/vfs"
)

// gates is a tool whose calls wait until the test opens their gate (by the
// "name" argument), so a test decides when a background child goes on.
type gates struct {
	mu    sync.Mutex
	open  map[string]chan struct{}
	calls map[string]int
}

func newGates() *gates { return &gates{open: map[string]chan struct{}{}, calls: map[string]int{}} }

func (g *gates) ch(name string) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	c, ok := g.open[name]
	if !ok {
		c = make(chan struct{})
		g.open[name] = c
	}
	return c
}

func (g *gates) release(name string) {
	c := g.ch(name)
	select {
	case <-c:
	default:
		close(c)
	}
}

func (g *gates) count(name string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.calls[name]
}

func (g *gates) Spec() llm.ToolSpec {
	return llm.ToolSpec{Name: "gate", Description: "Wait at a gate.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)}
}

func (g *gates) Run(ctx context.Context, _ *tool.Env, args json.RawMessage) (tool.Result, error) {
	var in struct{ Name string }
	_ = json.Unmarshal(args, &in)
	g.mu.Lock()
	g.calls[in.Name]++
	g.mu.Unlock()
	select {
	case <-g.ch(in.Name):
		return tool.Text("through " + in.Name), nil
	case <-ctx.Done():
		return tool.Result{}, context.Cause(ctx)
	}
}

func bgAgent(t *testing.T, script string, g *gates, cfg deepagents.Config) (*agent.Agent, *scripted.Model) {
	t.Helper()
	var s scripted.Script
	if err := json.Unmarshal([]byte(script), &s); err != nil {
		t.Fatal(err)
	}
	m := scripted.New(s, scripted.Options{})
	cfg.Model = m
	cfg.Tools = append(cfg.Tools, g)
	a, err := deepagents.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a, m
}

// The parent starts a child in the background, gets a task id at once,
// ends its turn while the child still runs; the run waits, appends the
// child's receipt as a notification and calls the model again: one run.
func TestBackgroundChildNotifiesAFollowUpStep(t *testing.T) {
	const script = `{
  "parent": [
    {"tool_calls": [{"id": "t1", "name": "task", "args": {"description": "dig", "subagent_type": "general-purpose", "run_in_background": true}}]},
    {"content": "started it"},
    {"content": "it reported"}],
  "general-purpose": [
    {"tool_calls": [{"id": "g", "name": "gate", "args": {"name": "dig"}}]},
    {"tool_calls": [{"id": "w", "name": "write_file", "args": {"file_path": "/dug.md", "content": "deep"}}]},
    {"content": "found gold"}]
}`
	g := newGates()
	a, _ := bgAgent(t, script, g, deepagents.Config{})
	var events []agent.Event
	var order []string
	res, err := agent.Drain(a.Run(t.Context(), agent.Prompt("go")), func(ev agent.Event) {
		events = append(events, ev)
		if ev.Type == agent.Notice && ev.Notice.Source == "background" {
			// The parent ended its turn and waits: only now may the child
			// finish.
			if ev.Notice.Count != 1 || !strings.Contains(ev.Notice.Text, "waiting for 1 background task") {
				t.Errorf("notice %+v", ev.Notice)
			}
			g.release("dig")
		}
		switch ev.Type {
		case agent.SubagentStart, agent.SubagentEnd, agent.SubagentNotify, agent.Notice:
			order = append(order, string(ev.Type))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	msgs := res.State.Messages
	// user, assistant(task), tool(started), assistant(started it), user(notification), assistant
	if len(msgs) != 6 {
		t.Fatalf("%d messages: %+v", len(msgs), msgs)
	}
	if got := msgs[2].Content; !strings.HasPrefix(got, "Started subagent general-purpose in the background as task t1.") {
		t.Errorf("task result %q", got)
	}
	note := msgs[4]
	if note.Role != llm.RoleUser || !strings.Contains(note.Content, "Background task t1 (subagent general-purpose) has ended: ok") ||
		!strings.HasSuffix(note.Content, "found gold") {
		t.Errorf("notification %+v", note)
	}
	if res.FinalText() != "it reported" {
		t.Errorf("final %q", res.FinalText())
	}
	if res.State.Files["/dug.md"].Content != "deep" {
		t.Errorf("the child's file was not merged: %v", res.State.Files)
	}
	if res.Children["t1"] == nil || res.Children["t1"].Status != agent.StatusOK {
		t.Errorf("children %v", res.Children)
	}
	kid := res.Children["t1"]
	if u := res.UsageByAgent[kid.Agent.String()]; u.InputTokens == 0 {
		t.Errorf("the child's usage is not in the roll-up: %v", res.UsageByAgent)
	}
	want := "subagent.start notice subagent.end subagent.notification"
	if got := strings.Join(order, " "); got != want {
		t.Errorf("events %s, want %s", got, want)
	}
	for _, ev := range events {
		if ev.Type == agent.SubagentStart && !ev.Subagent.Background {
			t.Errorf("start event not marked background: %+v", ev.Subagent)
		}
	}
}

// A spec can make a subagent background by default; the call can still
// ask for the foreground.
func TestSpecBackgroundByDefault(t *testing.T) {
	const script = `{
  "parent": [
    {"tool_calls": [{"id": "t1", "name": "task", "args": {"description": "bg", "subagent_type": "runner"}}]},
    {"tool_calls": [{"id": "t2", "name": "task", "args": {"description": "fg", "subagent_type": "runner", "run_in_background": false}}]},
    {"content": "done"},
    {"content": "done again"}],
  "runner": {"cases": [
    {"match": "bg", "steps": [{"tool_calls": [{"id": "g", "name": "gate", "args": {"name": "bg"}}]}, {"content": "bg report"}]},
    {"match": "fg", "steps": [{"content": "fg report"}]}]}
}`
	g := newGates()
	a, _ := bgAgent(t, script, g, deepagents.Config{Subagents: []subagent.Spec{{Name: "runner", Description: "runs", Background: true}}})
	res, err := agent.Drain(a.Run(t.Context(), agent.Prompt("go")), func(ev agent.Event) {
		if ev.Type == agent.ToolEnd && ev.Tool.CallID == "t2" {
			g.release("bg")
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	msgs := res.State.Messages
	if !strings.HasPrefix(msgs[2].Content, "Started subagent runner in the background as task t1.") {
		t.Errorf("t1 result %q", msgs[2].Content)
	}
	if msgs[4].Content != "fg report" {
		t.Errorf("t2 result %q", msgs[4].Content)
	}
	var notes int
	for _, m := range msgs {
		if m.Role == llm.RoleUser && strings.Contains(m.Content, "has ended: ok") && strings.HasSuffix(m.Content, "bg report") {
			notes++
		}
	}
	if notes != 1 {
		t.Errorf("%d notifications in %+v", notes, msgs)
	}
}

// At most four run at once: a fifth start is an error result saying so,
// and the steering tools see, wait for and cancel them.
func TestBackgroundCapAndSteering(t *testing.T) {
	const script = `{
  "parent": [
    {"tool_calls": [
      {"id": "t1", "name": "task", "args": {"description": "job 1", "subagent_type": "general-purpose", "run_in_background": true}},
      {"id": "t2", "name": "task", "args": {"description": "job 2", "subagent_type": "general-purpose", "run_in_background": true}},
      {"id": "t3", "name": "task", "args": {"description": "job 3", "subagent_type": "general-purpose", "run_in_background": true}},
      {"id": "t4", "name": "task", "args": {"description": "job 4", "subagent_type": "general-purpose", "run_in_background": true}}]},
    {"tool_calls": [{"id": "t5", "name": "task", "args": {"description": "job 5", "subagent_type": "general-purpose", "run_in_background": true}}]},
    {"tool_calls": [{"id": "s1", "name": "task_status", "args": {}}]},
    {"tool_calls": [{"id": "c1", "name": "task_cancel", "args": {"task_id": "t2"}}]},
    {"tool_calls": [{"id": "w1", "name": "task_wait", "args": {"task_id": "t1", "timeout_seconds": 60}}]},
    {"content": "waiting"},
    {"content": "a"}, {"content": "b"}, {"content": "c"}, {"content": "d"}],
  "general-purpose": {"cases": [
    {"match": "job 1", "steps": [{"tool_calls": [{"id": "g", "name": "gate", "args": {"name": "1"}}]}, {"content": "one"}]},
    {"match": "job 2", "steps": [{"tool_calls": [{"id": "g", "name": "gate", "args": {"name": "2"}}]}, {"content": "two"}]},
    {"match": "job 3", "steps": [{"tool_calls": [{"id": "g", "name": "gate", "args": {"name": "3"}}]}, {"content": "three"}]},
    {"match": "job 4", "steps": [{"tool_calls": [{"id": "g", "name": "gate", "args": {"name": "4"}}]}, {"content": "four"}]},
    {"match": "job 5", "steps": [{"content": "five"}]}]}
}`
	g := newGates()
	a, model := bgAgent(t, script, g, deepagents.Config{})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	res, err := agent.Drain(a.Run(ctx, agent.Prompt("go")), func(ev agent.Event) {
		if ev.Type == agent.ToolStart && ev.Tool.Name == "task_wait" {
			g.release("1")
		}
		if ev.Type == agent.Notice && ev.Notice.Source == "background" {
			g.release("3")
			g.release("4")
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	result := func(id string) string {
		for _, m := range res.State.Messages {
			if m.Role == llm.RoleTool && m.ToolCallID == id {
				return m.Content
			}
		}
		return ""
	}
	if got := result("t5"); !strings.Contains(got, "4 background tasks are running already") {
		t.Errorf("fifth start: %q", got)
	}
	if got := result("s1"); !strings.Contains(got, "Task t1 (subagent general-purpose): running") || !strings.Contains(got, "Task t4") {
		t.Errorf("status: %q", got)
	}
	if got := result("c1"); !strings.Contains(got, "Task t2 (subagent general-purpose) is being cancelled") {
		t.Errorf("cancel: %q", got)
	}
	if got := result("w1"); !strings.Contains(got, "Task t1 (subagent general-purpose) has ended (ok)") {
		t.Errorf("wait: %q", got)
	}
	notes := map[string]string{}
	for _, m := range res.State.Messages {
		if m.Role == llm.RoleUser && strings.HasPrefix(m.Content, "[Background task ") {
			notes[strings.Fields(m.Content)[2]] = m.Content
		}
	}
	if len(notes) != 4 || !strings.Contains(notes["t2"], "cancelled by you") || !strings.HasSuffix(notes["t1"], "one") {
		t.Errorf("notifications %v", notes)
	}
	if g.count("2") > 1 {
		t.Errorf("gate 2 ran %d times", g.count("2"))
	}
	// The steering tools are offered only once a task was started.
	recs := model.Records()
	if len(recs) == 0 {
		t.Fatal("no records")
	}
	for _, r := range recs {
		if r.Who != "parent" {
			continue
		}
		has := false
		for _, spec := range r.Request.Tools {
			if spec.Name == agent.TaskStatusTool {
				has = true
			}
		}
		if has != (r.Round > 0) {
			t.Errorf("round %d: steering tools offered %v", r.Round, has)
		}
	}
}

// deepagents.Config.Background caps every background run: here one at a
// time and one model call each, so the second start is refused and the
// first child's receipt says it hit its step limit.
func TestBackgroundCapsFromConfig(t *testing.T) {
	const script = `{
  "parent": [
    {"tool_calls": [{"id": "t1", "name": "task", "args": {"description": "one", "subagent_type": "general-purpose", "run_in_background": true}}]},
    {"tool_calls": [{"id": "t2", "name": "task", "args": {"description": "two", "subagent_type": "general-purpose", "run_in_background": true}}]},
    {"content": "waiting"},
    {"content": "done"}],
  "general-purpose": {"cases": [
    {"match": "one", "steps": [{"tool_calls": [{"id": "g", "name": "gate", "args": {"name": "one"}}]}, {"content": "never"}]},
    {"match": "two", "steps": [{"content": "never either"}]}]}
}`
	g := newGates()
	a, _ := bgAgent(t, script, g, deepagents.Config{Background: subagent.BackgroundLimits{MaxRunning: 1, MaxSteps: 1}})
	res, err := agent.Drain(a.Run(t.Context(), agent.Prompt("go")), func(ev agent.Event) {
		if ev.Type == agent.Notice && ev.Notice.Source == "background" {
			g.release("one")
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	var t2, note string
	for _, m := range res.State.Messages {
		if m.Role == llm.RoleTool && m.ToolCallID == "t2" {
			t2 = m.Content
		}
		if m.Role == llm.RoleUser && strings.HasPrefix(m.Content, "[Background task t1") {
			note = m.Content
		}
	}
	if !strings.Contains(t2, "1 background task is running already") {
		t.Errorf("second start: %q", t2)
	}
	if !strings.Contains(note, "has ended: limit") || !strings.Contains(note, "Subagent general-purpose did not finish (status: limit; stopped after 1 model call (the step limit))") {
		t.Errorf("notification %q", note)
	}
	if res.Children["t1"] == nil || res.Children["t1"].Status != agent.StatusLimit {
		t.Errorf("children %v", res.Children)
	}
}

// A background run stops at its token cap with status limit, and its
// receipt says which budget it used up.
func TestBackgroundTokenCap(t *testing.T) {
	const script = `{
  "parent": [
    {"tool_calls": [{"id": "t1", "name": "task", "args": {"description": "spend", "subagent_type": "spender", "run_in_background": true}}]},
    {"content": "waiting"},
    {"content": "done"}],
  "spender": [
    {"tool_calls": [{"id": "g", "name": "gate", "args": {"name": "open"}}]},
    {"tool_calls": [{"id": "g2", "name": "gate", "args": {"name": "open"}}]},
    {"content": "never"}]
}`
	g := newGates()
	g.release("open")
	a, model := bgAgent(t, script, g, deepagents.Config{Subagents: []subagent.Spec{{Name: "spender", Description: "spends",
		BackgroundLimits: subagent.BackgroundLimits{MaxTokens: 50}}}})
	res, err := a.Invoke(t.Context(), agent.Prompt("go"))
	if err != nil {
		t.Fatal(err)
	}
	kid := res.Children["t1"]
	if kid == nil || kid.Status != agent.StatusLimit || !strings.Contains(kid.Error, "token") {
		t.Fatalf("child %+v", kid)
	}
	calls := 0
	for _, r := range model.Records() {
		if r.Who == "spender" {
			calls++
		}
	}
	if calls != 1 {
		t.Errorf("the child made %d model calls; the cap should stop it after the first", calls)
	}
	var note string
	for _, m := range res.State.Messages {
		if m.Role == llm.RoleUser && strings.HasPrefix(m.Content, "[Background task t1") {
			note = m.Content
		}
	}
	if !strings.Contains(note, "has ended: limit") || !strings.Contains(note, "status: limit") {
		t.Errorf("notification %q", note)
	}
}

// A path that the parent changed after a background child started, and
// that the child changed too, is a conflict when the child's files merge:
// the child's version is kept, the parent's saved beside it, the receipt
// says so and a file.conflict event records it.
func TestBackgroundFilesConflictWithTheParent(t *testing.T) {
	const script = `{
  "parent": [
    {"tool_calls": [{"id": "t1", "name": "task", "args": {"description": "edit", "subagent_type": "general-purpose", "run_in_background": true}}]},
    {"tool_calls": [{"id": "pw", "name": "write_file", "args": {"file_path": "/shared.md", "content": "parent"}}]},
    {"content": "waiting"},
    {"content": "done"}],
  "general-purpose": [
    {"tool_calls": [{"id": "g", "name": "gate", "args": {"name": "go"}}]},
    {"tool_calls": [{"id": "cw", "name": "write_file", "args": {"file_path": "/shared.md", "content": "child"}}]},
    {"tool_calls": [{"id": "cx", "name": "write_file", "args": {"file_path": "/own.md", "content": "mine"}}]},
    {"content": "edited"}]
}`
	g := newGates()
	a, _ := bgAgent(t, script, g, deepagents.Config{})
	var conflicts []string
	res, err := agent.Drain(a.Run(t.Context(), agent.Prompt("go")), func(ev agent.Event) {
		if ev.Type == agent.Notice && ev.Notice.Source == "background" {
			g.release("go")
		}
		if ev.Type == agent.FileConflict {
			conflicts = append(conflicts, ev.Conflict.String())
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	files := res.State.Files
	if files["/shared.md"].Content != "child" || files["/shared.md.conflict-pw"].Content != "parent" || files["/own.md"].Content != "mine" {
		t.Errorf("files %v", files)
	}
	if len(conflicts) != 1 {
		t.Fatalf("conflicts %v", conflicts)
	}
	var note string
	for _, m := range res.State.Messages {
		if m.Role == llm.RoleUser && strings.HasPrefix(m.Content, "[Background task t1") {
			note = m.Content
		}
	}
	if !strings.Contains(note, "[Note: "+conflicts[0]+".]") {
		t.Errorf("notification %q lacks the conflict %q", note, conflicts[0])
	}
}

// The same conflict is found when the files are a backend of the
// configuration's (here a memory one), not the run's state.
func TestBackgroundFilesConflictOnABackend(t *testing.T) {
	const script = `{
  "parent": [
    {"tool_calls": [{"id": "t1", "name": "task", "args": {"description": "edit", "subagent_type": "general-purpose", "run_in_background": true}}]},
    {"tool_calls": [{"id": "pw", "name": "write_file", "args": {"file_path": "/shared.md", "content": "parent"}}]},
    {"content": "waiting"},
    {"content": "done"}],
  "general-purpose": [
    {"tool_calls": [{"id": "g", "name": "gate", "args": {"name": "go"}}]},
    {"tool_calls": [{"id": "cw", "name": "write_file", "args": {"file_path": "/shared.md", "content": "child"}}]},
    {"tool_calls": [{"id": "cx", "name": "write_file", "args": {"file_path": "/own.md", "content": "mine"}}]},
    {"content": "edited"}]
}`
	g := newGates()
	mem := vfs.NewMemory(nil)
	a, _ := bgAgent(t, script, g, deepagents.Config{Backend: mem})
	var conflicts []string
	res, err := agent.Drain(a.Run(t.Context(), agent.Prompt("go")), func(ev agent.Event) {
		if ev.Type == agent.Notice && ev.Notice.Source == "background" {
			g.release("go")
		}
		if ev.Type == agent.FileConflict {
			conflicts = append(conflicts, ev.Conflict.String())
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	files := mem.Files()
	if files["/shared.md"].Content != "child" || files["/shared.md.conflict-pw"].Content != "parent" || files["/own.md"].Content != "mine" {
		t.Errorf("files %v", files)
	}
	if len(conflicts) != 1 {
		t.Fatalf("conflicts %v", conflicts)
	}
	var note string
	for _, m := range res.State.Messages {
		if m.Role == llm.RoleUser && strings.HasPrefix(m.Content, "[Background task t1") {
			note = m.Content
		}
	}
	if !strings.Contains(note, "[Note: "+conflicts[0]+".]") {
		t.Errorf("notification %q lacks the conflict %q", note, conflicts[0])
	}
}

// And under a mount of a composite (/memories/), where the parent's write
// is not in the run's state files.
func TestBackgroundFilesConflictUnderAMount(t *testing.T) {
	const script = `{
  "parent": [
    {"tool_calls": [{"id": "t1", "name": "task", "args": {"description": "edit", "subagent_type": "general-purpose", "run_in_background": true}}]},
    {"tool_calls": [{"id": "pw", "name": "write_file", "args": {"file_path": "/memories/shared.md", "content": "parent"}}]},
    {"content": "waiting"},
    {"content": "done"}],
  "general-purpose": [
    {"tool_calls": [{"id": "g", "name": "gate", "args": {"name": "go"}}]},
    {"tool_calls": [{"id": "cw", "name": "write_file", "args": {"file_path": "/memories/shared.md", "content": "child"}}]},
    {"tool_calls": [{"id": "cx", "name": "write_file", "args": {"file_path": "/own.md", "content": "mine"}}]},
    {"content": "edited"}]
}`
	g := newGates()
	mem := vfs.NewMemory(nil)
	files, err := vfs.NewComposite(nil, vfs.Route{Prefix: "/memories/", Backend: mem})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := bgAgent(t, script, g, deepagents.Config{Backend: files})
	var conflicts []string
	res, err := agent.Drain(a.Run(t.Context(), agent.Prompt("go")), func(ev agent.Event) {
		if ev.Type == agent.Notice && ev.Notice.Source == "background" {
			g.release("go")
		}
		if ev.Type == agent.FileConflict {
			conflicts = append(conflicts, ev.Conflict.String())
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := mem.Files(); got["/shared.md"].Content != "child" || got["/shared.md.conflict-pw"].Content != "parent" {
		t.Errorf("files under the mount %v", got)
	}
	if len(conflicts) != 1 {
		t.Fatalf("conflicts %v", conflicts)
	}
	var note string
	for _, m := range res.State.Messages {
		if m.Role == llm.RoleUser && strings.HasPrefix(m.Content, "[Background task t1") {
			note = m.Content
		}
	}
	if !strings.Contains(note, "[Note: "+conflicts[0]+".]") {
		t.Errorf("notification %q lacks the conflict %q", note, conflicts[0])
	}
}

// A background child's call that needs a person's approval is not put to
// anyone: the child ends there, the stream gets a notice instead of an
// interrupt, its receipt says it did not finish, and the parent's run ends
// ok.
func TestBackgroundChildCannotAsk(t *testing.T) {
	const script = `{
  "parent": [
    {"tool_calls": [{"id": "t1", "name": "task", "args": {"description": "write", "subagent_type": "general-purpose", "run_in_background": true}}]},
    {"content": "waiting"},
    {"content": "noted"},
    {"content": "noted again"}],
  "general-purpose": [
    {"tool_calls": [{"id": "w", "name": "write_file", "args": {"file_path": "/x.md", "content": "x"}}]},
    {"content": "never"}]
}`
	g := newGates()
	a, _ := bgAgent(t, script, g, deepagents.Config{InterruptOn: map[string]approve.Policy{"write_file": {}}})
	var notice string
	res, err := agent.Drain(a.Run(t.Context(), agent.Prompt("go")), func(ev agent.Event) {
		if ev.Type == agent.InterruptEvent {
			t.Errorf("interrupt event %+v", ev.Interrupt)
		}
		if ev.Type == agent.Notice && strings.Contains(ev.Notice.Text, "approval") {
			notice = ev.Notice.Text
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(notice, "background task t1 stopped: its write_file call needs a person's approval") {
		t.Errorf("notice %q", notice)
	}
	kid := res.Children["t1"]
	if kid == nil || kid.Status != agent.StatusInterrupted || len(res.Interrupts) != 0 {
		t.Errorf("child %+v, parent's interrupts %v", kid, res.Interrupts)
	}
	if _, ok := res.State.Files["/x.md"]; ok {
		t.Error("the call that waited ran")
	}
}

// A background subagent runs on the cooperative runtime too: its run is a
// task of the runtime, the parent's wait for it parks on the runtime's
// queue, and its receipt reaches the parent, the same on every run.
func TestCooperativeRuntimeRunsABackgroundSubagent(t *testing.T) {
	run := func() ([]byte, *agent.Result) {
		m := scripted.New(scripted.Script{
			"parent": {Steps: []scripted.Step{
				step("", scripted.StepCall{ID: "t1", Name: "task", Args: json.RawMessage(`{"description":"write a","subagent_type":"general-purpose","run_in_background":true}`)}),
				step("waiting"),
				step("heard"),
				step("heard again"),
			}},
			"general-purpose": {Steps: []scripted.Step{
				step("", tc("write", `{"path":"/a.txt","content":"a"}`)),
				step("wrote a"),
			}},
		}, scripted.Options{})
		task := newTask(t, subagent.Config{Model: m, Subagents: []subagent.Spec{subagent.GeneralPurpose()}, BaseTools: []tool.Tool{writeTool}})
		a, err := agent.New(agent.Config{Model: m, Tools: []tool.Tool{writeTool, task}})
		if err != nil {
			t.Fatal(err)
		}
		c := newCoop(t)
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		var res *agent.Result
		c.run(func() {
			res, err = agent.Drain(a.Run(t.Context(), agent.Prompt("delegate"), agent.WithRuntime(c)), func(ev agent.Event) {
				if err := enc.Encode(ev); err != nil {
					t.Error(err)
				}
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		return buf.Bytes(), res
	}
	first, res := run()
	if kid := res.Children["t1"]; kid == nil || kid.FinalText() != "wrote a" || res.State.Files["/a.txt"].Content != "a" {
		t.Fatalf("child %+v, files %v", res.Children["t1"], res.State.Files)
	}
	notes := 0
	for _, m := range res.State.Messages {
		if m.Role == llm.RoleUser && strings.HasPrefix(m.Content, "[Background task t1") {
			notes++
		}
	}
	if notes != 1 {
		t.Errorf("%d notifications", notes)
	}
	if again, _ := run(); !bytes.Equal(first, again) {
		t.Errorf("two runs on the cooperative runtime streamed differently")
	}
}

// What a background child spends counts against its parent's budget: the
// parent stops at its token budget (before its next model call), and
// the budget's error counts the child's tokens (live, or from its receipt).
func TestBackgroundChildCountsTowardsTheParentsBudget(t *testing.T) {
	const script = `{
  "parent": [
    {"tool_calls": [{"id": "t1", "name": "task", "args": {"description": "spend", "subagent_type": "general-purpose", "run_in_background": true}}],
     "usage": {"input_tokens": 10, "output_tokens": 10}},
    {"content": "waiting", "usage": {"input_tokens": 10, "output_tokens": 10}},
    {"content": "done", "usage": {"input_tokens": 10, "output_tokens": 10}}],
  "general-purpose": [
    {"content": "spent a lot", "usage": {"input_tokens": 1500, "output_tokens": 500}}]
}`
	g := newGates()
	a, _ := bgAgent(t, script, g, deepagents.Config{Budget: budget.New(budget.Options{Limits: budget.Limits{Tokens: 500}})})
	res, err := a.Invoke(t.Context(), agent.Prompt("go"))
	if res == nil || res.Status != agent.StatusLimit {
		t.Fatalf("the parent ended %v (%v); its budget should stop it", res, err)
	}
	if res.FinalText() == "done" {
		t.Errorf("the parent made its third model call past its budget")
	}
	var be *budget.Error
	if !errors.As(err, &be) || be.Spent.Tokens < 2020 {
		t.Errorf("error %v, want the parent's tree with the child's 2000 tokens", err)
	}
}

// flatPrice prices every model call at one dollar.
type flatPrice struct{}

func (flatPrice) Price(string, llm.Usage) (float64, bool) { return 1, true }

// A background run stops at its cost cap, priced by the budget middleware.
func TestBackgroundCostCap(t *testing.T) {
	const script = `{
  "parent": [
    {"tool_calls": [{"id": "t1", "name": "task", "args": {"description": "spend", "subagent_type": "spender", "run_in_background": true}}]},
    {"content": "waiting"},
    {"content": "done"}],
  "spender": [
    {"tool_calls": [{"id": "g", "name": "gate", "args": {"name": "open"}}]},
    {"content": "never"}]
}`
	g := newGates()
	g.release("open")
	a, _ := bgAgent(t, script, g, deepagents.Config{Budget: budget.New(budget.Options{Pricer: flatPrice{}}),
		Subagents: []subagent.Spec{{Name: "spender", Description: "spends", BackgroundLimits: subagent.BackgroundLimits{MaxCost: 0.5}}}})
	res, err := a.Invoke(t.Context(), agent.Prompt("go"))
	if err != nil {
		t.Fatal(err)
	}
	kid := res.Children["t1"]
	if kid == nil || kid.Status != agent.StatusLimit || !strings.Contains(kid.Error, "cost budget") {
		t.Fatalf("child %+v", kid)
	}
}

// stopTool ends its run (tool.Result.Stop), as a structured response does.
type stopTool struct{}

func (stopTool) Spec() llm.ToolSpec {
	return llm.ToolSpec{Name: "finish", Description: "End.", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)}
}

func (stopTool) Run(context.Context, *tool.Env, json.RawMessage) (tool.Result, error) {
	return tool.Result{Content: "final", Stop: true}, nil
}

// A result that ends the run while a background child still runs waits
// for the child: its receipt and files are not lost.
func TestStopWaitsForBackgroundChildren(t *testing.T) {
	const script = `{
  "parent": [
    {"tool_calls": [{"id": "t1", "name": "task", "args": {"description": "dig", "subagent_type": "general-purpose", "run_in_background": true}}]},
    {"tool_calls": [{"id": "f", "name": "finish", "args": {}}]},
    {"content": "never"}],
  "general-purpose": [
    {"tool_calls": [{"id": "g", "name": "gate", "args": {"name": "dig"}}]},
    {"tool_calls": [{"id": "w", "name": "write_file", "args": {"file_path": "/dug.md", "content": "deep"}}]},
    {"content": "found gold"}]
}`
	g := newGates()
	a, _ := bgAgent(t, script, g, deepagents.Config{Tools: []tool.Tool{stopTool{}}})
	res, err := agent.Drain(a.Run(t.Context(), agent.Prompt("go")), func(ev agent.Event) {
		if ev.Type == agent.Notice && ev.Notice.Source == "background" {
			g.release("dig")
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != agent.StatusOK || res.Children["t1"] == nil || res.Children["t1"].Status != agent.StatusOK {
		t.Fatalf("status %s, children %v", res.Status, res.Children)
	}
	if res.State.Files["/dug.md"].Content != "deep" {
		t.Errorf("the child's file was lost: %v", res.State.Files)
	}
	last := res.State.Messages[len(res.State.Messages)-1]
	if last.Role != llm.RoleUser || !strings.Contains(last.Content, "Background task t1 (subagent general-purpose) has ended: ok") {
		t.Errorf("last message %+v", last)
	}
}

// A model that gives a second task call the id of an earlier one still
// starts a second background task: the repeated id is replaced.
func TestRepeatedTaskCallIDStartsASecondTask(t *testing.T) {
	const script = `{
  "parent": [
    {"tool_calls": [{"id": "t1", "name": "task", "args": {"description": "first job", "subagent_type": "general-purpose", "run_in_background": true}}]},
    {"tool_calls": [{"id": "t1", "name": "task", "args": {"description": "second job", "subagent_type": "general-purpose", "run_in_background": true}}]},
    {"content": "waiting"},
    {"content": "heard one"},
    {"content": "heard both"}],
  "general-purpose": {"cases": [
    {"match": "first", "steps": [{"content": "first report"}]},
    {"match": "second", "steps": [{"content": "second report"}]}]}
}`
	g := newGates()
	a, _ := bgAgent(t, script, g, deepagents.Config{})
	res, err := a.Invoke(t.Context(), agent.Prompt("go"))
	if err != nil {
		t.Fatal(err)
	}
	var reports []string
	for _, m := range res.State.Messages {
		if m.Role == llm.RoleTool && strings.HasPrefix(m.Content, "Error") {
			t.Errorf("a task call was refused: %q", m.Content)
		}
		if m.Role == llm.RoleUser && strings.HasPrefix(m.Content, "[Background task ") {
			reports = append(reports, m.Content[strings.LastIndex(m.Content, "\n")+1:])
		}
	}
	if len(reports) != 2 || len(res.Children) != 2 {
		t.Errorf("reports %q, children %v", reports, res.Children)
	}
}
