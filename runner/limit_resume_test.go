package runner_test

import (
	"errors"
	"testing"

	"github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/runner"
)

// A run stopped at its step limit is resumed in the same turn: with the
// same limit it stops again at once, with a higher one it goes on where
// it stopped, no model call made twice.
func TestResumeAfterTheStepLimit(t *testing.T) {
	const script = `{"parent": [
	  {"tool_calls": [{"id": "w1", "name": "write_file", "args": {"file_path": "/a.md", "content": "a"}}]},
	  {"tool_calls": [{"id": "w2", "name": "write_file", "args": {"file_path": "/b.md", "content": "b"}}]},
	  {"content": "both written"}]}`
	saver := checkpoint.NewMemory(0)
	a := durableAgent(t, script, deepagents.Config{MaxSteps: 1})
	if _, err := a.Invoke(t.Context(), agent.Prompt("write"), runner.Checkpoints(saver, "steps")); !errors.Is(err, agent.ErrLimit) {
		t.Fatalf("first run: %v", err)
	}
	res, err := a.Invoke(t.Context(), agent.Input{}, runner.Checkpoints(saver, "steps"))
	if !errors.Is(err, agent.ErrLimit) || res.Rounds != 1 {
		t.Fatalf("resume at the same limit: %v, %d rounds", err, res.Rounds)
	}
	a = durableAgent(t, script, deepagents.Config{MaxSteps: 10})
	res, err = a.Invoke(t.Context(), agent.Input{}, runner.Checkpoints(saver, "steps"))
	if err != nil || res.FinalText() != "both written" || res.Rounds != 3 || len(res.State.Files) != 2 {
		t.Fatalf("resume with a higher limit: %v, %q after %d rounds", err, res.FinalText(), res.Rounds)
	}
}
