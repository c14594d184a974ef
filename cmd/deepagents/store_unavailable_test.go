package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/runner"
)

// downAfterInput is a saver that takes a run's input, then fails every
// save as an unreachable database does.
type downAfterInput struct {
	checkpoint.Saver
	puts int
}

func (d *downAfterInput) Put(ctx context.Context, st checkpoint.Step) error {
	if d.puts++; d.puts > 1 {
		return fmt.Errorf("%w: dial tcp: connection refused", checkpoint.ErrUnavailable)
	}
	return d.Saver.Put(ctx, st)
}

// A run the database failed ends with its reason, then says that its
// thread is unfinished and how to resume it, naming the database without
// its password.
func TestRunTheDatabaseFailedSaysHowToResume(t *testing.T) {
	m := scripted.New(scripted.Script{"parent": {Steps: []scripted.Step{{Content: "done"}}}}, scripted.Options{})
	a, err := agent.New(agent.Config{Model: m})
	if err != nil {
		t.Fatal(err)
	}
	res, runErr := a.Invoke(t.Context(), agent.Prompt("go"), runner.Checkpoints(&downAfterInput{Saver: checkpoint.NewMemory(0)}, "T 1", runner.WithSaveRetry(-1)))
	if res.Status != agent.StatusError || runErr == nil {
		t.Fatalf("run: %v %v", res.Status, runErr)
	}
	var stderr bytes.Buffer
	s := &session{stdout: &bytes.Buffer{}, stderr: &stderr, thread: "T 1",
		flags: runFlags{output: "text", db: "postgres://me:hunter2@db/x", set: map[string]bool{"db": true}}}
	if code := s.report(res, runErr.Error(), "", nil); code != exitFailed {
		t.Errorf("exit %d, want %d", code, exitFailed)
	}
	got := stderr.String()
	for _, want := range []string{
		"the run ended with status error",
		"Thread T 1 is unfinished",
		"deepagents resume --thread 'T 1' --db postgres://me@db/x\n",
		"runs again",
		"PGPASSWORD",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("stderr lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "hunter2") {
		t.Errorf("stderr shows the password:\n%s", got)
	}
	// Any other failure says nothing of resuming.
	stderr.Reset()
	other := &agent.Result{Status: agent.StatusError, Error: "boom"}
	s.report(other, "boom", "", nil)
	if strings.Contains(stderr.String(), "unfinished") {
		t.Errorf("a failure of the run itself is said to be resumable:\n%s", stderr.String())
	}
}

func TestSaveRetryFlag(t *testing.T) {
	if code, _, errs := runCLI(t, "run", "-p", "x", "--save-retry", "-1s"); code != 2 || !strings.Contains(errs, "--save-retry must not be negative") {
		t.Errorf("negative --save-retry: exit %d: %s", code, errs)
	}
	if saveRetry(0) >= 0 || saveRetry(runner.DefaultSaveRetry) != runner.DefaultSaveRetry {
		t.Error("--save-retry 0 must turn retries off, and a duration keep its value")
	}
}
