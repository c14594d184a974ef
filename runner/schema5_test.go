package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint/sqlite"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/runner"
	"github.com/deepagents-go/deepagents/tool"
)

// schema5Thread is an SQLite database written by this package's runner on
// schema 5 of the SQLite saver (made by TestWriteSchema5Thread with
// DEEPAGENTS_WRITE_SCHEMA5=1 before schema 6 existed): thread "old" stopped
// waiting for an approval of w1, after a free call (b1) and a subagent run
// (t1, two steps of its own and a report) had finished, saved every 2 steps.
const schema5Thread = "testdata/schema5/approval.db"

const schema5Script = `{
  "parent": [
    {"tool_calls": [
      {"id": "t1", "name": "task", "args": {"description": "count twice", "subagent_type": "general-purpose"}},
      {"id": "w1", "name": "write_file", "args": {"file_path": "/one.md", "content": "1"}},
      {"id": "b1", "name": "bump", "args": {"n": 1}}]},
    {"content": "done"}
  ],
  "general-purpose": [
    {"tool_calls": [{"id": "cb1", "name": "bump", "args": {"n": 10}}]},
    {"tool_calls": [{"id": "cb2", "name": "bump", "args": {"n": 11}}]},
    {"content": "counted"}
  ]
}`

func schema5Agent(t *testing.T, c *counter) (*agent.Agent, *scripted.Model) {
	t.Helper()
	var s scripted.Script
	if err := json.Unmarshal([]byte(schema5Script), &s); err != nil {
		t.Fatal(err)
	}
	model := scripted.New(s, scripted.Options{})
	a, err := deepagents.New(deepagents.Config{Model: model, Tools: []tool.Tool{c}, InterruptOn: gated()})
	if err != nil {
		t.Fatal(err)
	}
	return a, model
}

// TestWriteSchema5Thread writes the fixture; it ran once, on schema 5.
func TestWriteSchema5Thread(t *testing.T) {
	if os.Getenv("DEEPAGENTS_WRITE_SCHEMA5") == "" {
		t.Skip("set DEEPAGENTS_WRITE_SCHEMA5=1 to write " + schema5Thread)
	}
	if sqlite.SchemaVersion != 5 {
		t.Fatalf("this build writes schema %d; the fixture is of schema 5", sqlite.SchemaVersion)
	}
	if err := os.MkdirAll(filepath.Dir(schema5Thread), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Remove(schema5Thread)
	saver, err := sqlite.Open(schema5Thread, sqlite.Options{SnapshotEvery: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer saver.Close()
	a, _ := schema5Agent(t, &counter{})
	res, err := a.Invoke(context.Background(), agent.Prompt("go"), runner.Checkpoints(saver, "old"))
	if !errors.Is(err, agent.ErrInterrupted) || len(res.Interrupts) != 1 || res.Interrupts[0].CallID != "w1" {
		t.Fatalf("the run did not stop waiting for w1: %v %+v", err, res.Interrupts)
	}
}

// A thread saved on schema 5 resumes with this build: the approved call
// runs, the finished ones (the free call, the subagent's calls) do not run
// again, the model is not asked again for what it answered, and the end
// holds the subagent's report.
func TestSchema5ThreadResumes(t *testing.T) {
	ctx := context.Background()
	data, err := os.ReadFile(schema5Thread)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "state.db")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	saver, err := sqlite.Open(path, sqlite.Options{SnapshotEvery: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer saver.Close()
	c := &counter{}
	a, model := schema5Agent(t, c)
	res, err := a.Invoke(ctx, agent.Input{}, runner.Checkpoints(saver, "old"), agent.WithDecisions(agent.Decision{Type: agent.Approve, CallID: "w1"}))
	if err != nil || res.Status != agent.StatusOK {
		t.Fatalf("resume: %v, status %v", err, res.Status)
	}
	if got := res.State.Files["/one.md"].Content; got != "1" {
		t.Errorf("/one.md = %q, want 1", got)
	}
	if runs := c.snapshot(); len(runs) != 0 {
		t.Errorf("finished calls ran again: %v", runs)
	}
	if got := toolResult(res.State.Messages, "t1"); !strings.Contains(got, "counted") {
		t.Errorf("the subagent's result is %q, want its report", got)
	}
	if got := toolResult(res.State.Messages, "b1"); got != "bumped 1" {
		t.Errorf("the free call's result is %q", got)
	}
	var asked []string
	for _, r := range model.Records() {
		asked = append(asked, r.Who)
	}
	if len(asked) != 1 || asked[0] != "parent" {
		t.Errorf("model calls on resume: %v, want the parent's last one only", asked)
	}
	if last := res.State.Messages[len(res.State.Messages)-1]; last.Content != "done" {
		t.Errorf("last message %+v", last)
	}
}
