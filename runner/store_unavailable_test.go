package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/runner"
	"github.com/deepagents-go/deepagents/subagent"
	"github.com/deepagents-go/deepagents/tool"
)

// flakyStore is an in-memory saver whose puts and writes fail as an
// unreachable database's do (checkpoint.ErrUnavailable) while down is set,
// or for the next fails of them; other errors can be given instead.
type flakyStore struct {
	checkpoint.Saver
	mu    sync.Mutex
	down  bool
	fails int   // the next saves that fail, then it is up
	err   error // what a failing save returns (default: unavailable)
	tries int   // saves tried, failed or not
}

func (s *flakyStore) failing() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tries++
	if !s.down && s.fails == 0 {
		return nil
	}
	if s.fails > 0 {
		s.fails--
	}
	if s.err != nil {
		return s.err
	}
	return fmt.Errorf("%w: dial tcp 127.0.0.1:5432: connect: connection refused", checkpoint.ErrUnavailable)
}

func (s *flakyStore) set(f func(s *flakyStore)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s)
}

func (s *flakyStore) Put(ctx context.Context, st checkpoint.Step) error {
	if err := s.failing(); err != nil {
		return err
	}
	return s.Saver.Put(ctx, st)
}

func (s *flakyStore) PutWrite(ctx context.Context, ref checkpoint.Ref, w checkpoint.Write) error {
	if err := s.failing(); err != nil {
		return err
	}
	return s.Saver.PutWrite(ctx, ref, w)
}

// threeSteps is a parent that writes two files, one step each, then answers.
func threeSteps() *scripted.Model {
	return scripted.New(scripted.Script{"parent": steps(
		scripted.Step{ToolCalls: []scripted.StepCall{call("write", `{"path":"/a.md","content":"a"}`)}},
		scripted.Step{ToolCalls: []scripted.StepCall{call("write", `{"path":"/b.md","content":"b"}`)}},
		scripted.Step{Content: "both written"},
	)}, scripted.Options{})
}

// runCollecting runs a with opts and returns its result and the texts of
// its checkpoint warnings.
func runCollecting(t *testing.T, a *agent.Agent, in agent.Input, opts ...agent.RunOption) (*agent.Result, []string, error) {
	t.Helper()
	var warnings []string
	res, err := agent.Drain(a.Run(t.Context(), in, opts...), func(ev agent.Event) {
		if ev.Type == agent.Warning && ev.Warning.Source == "checkpoint" {
			warnings = append(warnings, ev.Warning.Text)
		}
	})
	return res, warnings, err
}

// A store that is down for a moment (a database restarting) costs the run
// a pause and a warning per try, not the run: every save is made once it
// is back, and nothing is asked of the model twice.
func TestSaveIsTriedAgainWhileTheStoreIsUnavailable(t *testing.T) {
	store := &flakyStore{Saver: checkpoint.NewMemory(0)}
	m := threeSteps()
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{writeTool}})
	// Down from the second save on (the first step's response), for three
	// tries.
	var res *agent.Result
	var warnings []string
	var err error
	res, warnings, err = runCollecting(t, a, agent.Prompt("go"), runner.Checkpoints(onSecondSave(store, 3), "T"))
	if err != nil || res.Status != agent.StatusOK || res.FinalText() != "both written" {
		t.Fatalf("run: %v %v %q", err, res.Status, res.FinalText())
	}
	if len(warnings) != 3 || !strings.Contains(warnings[0], "connection refused") || !strings.Contains(warnings[0], "trying again in") {
		t.Errorf("warnings: %q; want one per failed try, saying why and when it tries again", warnings)
	}
	if n := len(m.Records()); n != 3 {
		t.Errorf("the model was called %d times; want 3", n)
	}
	rs, err := runner.LoadRunState(t.Context(), store, "T", agent.RootPath("parent"), false)
	if err != nil || rs.Status != agent.StatusOK || len(rs.Messages) != len(res.State.Messages) {
		t.Fatalf("saved state: %v, status %q, %d messages; want ok and %d", err, rs.Status, len(rs.Messages), len(res.State.Messages))
	}
}

// onSecondSave lets the first save through and fails the next n.
func onSecondSave(s *flakyStore, n int) *hook {
	saves := 0
	return &hook{flakyStore: s, before: func() {
		if saves++; saves == 2 {
			s.set(func(s *flakyStore) { s.fails = n })
		}
	}}
}

// A store down for longer than the run tries fails the run, but saves no
// end for it: the thread stays unfinished and is resumed once the store is
// back, without asking the model again for what was saved.
func TestRunFailedByTheStoreCanBeResumed(t *testing.T) {
	store := &flakyStore{Saver: checkpoint.NewMemory(0)}
	m := threeSteps()
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{writeTool}})
	ck := runner.Checkpoints(store, "T")
	// Up for the input and the first step (its response and its call's
	// result), then down for good.
	saves := 0
	down := &hook{flakyStore: store, before: func() {
		if saves++; saves == 4 {
			store.set(func(s *flakyStore) { s.down = true })
		}
	}}
	res, warnings, err := runCollecting(t, a, agent.Prompt("go"), runner.Checkpoints(down, "T", runner.WithSaveRetry(300*time.Millisecond)))
	if res.Status != agent.StatusError || !errors.Is(err, checkpoint.ErrUnavailable) {
		t.Fatalf("run: %v %v; want an error that says the store is unavailable", res.Status, err)
	}
	if len(warnings) == 0 {
		t.Error("no warning said the save was tried again")
	}
	rs, lerr := runner.LoadRunState(t.Context(), store, "T", agent.RootPath("parent"), false)
	if lerr != nil || rs.Status != "" {
		t.Fatalf("saved state: %v, status %q; want the run unfinished (no end saved)", lerr, rs.Status)
	}
	calls := len(m.Records())
	store.set(func(s *flakyStore) { s.down = false })
	res, _, err = runCollecting(t, a, agent.Input{}, ck)
	if err != nil || res.Status != agent.StatusOK || res.FinalText() != "both written" {
		t.Fatalf("resume: %v %v %q", err, res.Status, res.FinalText())
	}
	// Two model calls before the store went down; the second one's
	// response was not saved, so the resume asks for it again, then for
	// the answer.
	if calls != 2 || len(m.Records()) != 4 {
		t.Errorf("model calls: %d before the resume, %d in all; want 2 and 4 (only the unsaved response asked for again)", calls, len(m.Records()))
	}
}

// hook calls before ahead of every save.
type hook struct {
	*flakyStore
	before func()
}

func (h *hook) Put(ctx context.Context, st checkpoint.Step) error {
	h.before()
	return h.flakyStore.Put(ctx, st)
}

func (h *hook) PutWrite(ctx context.Context, ref checkpoint.Ref, w checkpoint.Write) error {
	h.before()
	return h.flakyStore.PutWrite(ctx, ref, w)
}

// Only the store's own failures are tried again: any other failure of a
// save, and any failure when retrying is turned off, ends the run at once.
func TestOnlyUnavailableSavesAreTriedAgain(t *testing.T) {
	for _, c := range []struct {
		name  string
		err   error
		retry time.Duration
		tries int // the input, the failing save, and the end for a run the store did not fail
	}{
		{"another error", errors.New("disk says no"), 0, 3},
		{"retry off", fmt.Errorf("%w: down", checkpoint.ErrUnavailable), -1, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			store := &flakyStore{Saver: checkpoint.NewMemory(0), err: c.err}
			a := newAgent(t, agent.Config{Model: threeSteps(), Tools: []tool.Tool{writeTool}})
			start := time.Now()
			res, warnings, err := runCollecting(t, a, agent.Prompt("go"), runner.Checkpoints(onSecondSave(store, 100), "T", runner.WithSaveRetry(c.retry)))
			if res.Status != agent.StatusError || err == nil || len(warnings) != 0 || store.tries != c.tries {
				t.Fatalf("status %v, err %v, %d warnings, %d tries; want an error after one try of the failing save, no warning, %d tries", res.Status, err, len(warnings), store.tries, c.tries)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("the run took %s to fail", d)
			}
		})
	}
}

// A subagent whose saves the store fails stops the whole run, unfinished,
// rather than handing its parent's model a failed task: resumed once the
// store is back, the subagent continues from its own last save.
func TestStoreFailingASubagentStopsTheRunUnfinished(t *testing.T) {
	store := &flakyStore{Saver: checkpoint.NewMemory(0)}
	task := scripted.StepCall{ID: "c1", Name: "task", Args: json.RawMessage(`{"description":"write it","subagent_type":"worker"}`)}
	m := scripted.New(scripted.Script{
		"parent": steps(scripted.Step{ToolCalls: []scripted.StepCall{task}}, scripted.Step{Content: "parent done"}),
		"worker": steps(scripted.Step{ToolCalls: []scripted.StepCall{call("write", `{"path":"/w.md","content":"w"}`)}}, scripted.Step{Content: "worker done"}),
	}, scripted.Options{})
	tk, err := subagent.NewTask(subagent.Config{Model: m, Subagents: []subagent.Spec{{Name: "worker", Description: "Works.", Tools: []tool.Tool{writeTool}}}})
	if err != nil {
		t.Fatal(err)
	}
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{tk}})
	// Saves: the parent's input and first step, the child's first step,
	// then the child's write, which fails: the store is back at once, so
	// only the child sees it down.
	saves := 0
	down := &hook{flakyStore: store, before: func() {
		if saves++; saves == 4 {
			store.set(func(s *flakyStore) { s.fails = 1 })
		}
	}}
	res, _, err := runCollecting(t, a, agent.Prompt("go"), runner.Checkpoints(down, "T", runner.WithSaveRetry(-1)))
	if res.Status != agent.StatusError || !errors.Is(err, checkpoint.ErrUnavailable) {
		t.Fatalf("run: %v %v; want an error that says the store is unavailable", res.Status, err)
	}
	if rs, err := runner.LoadRunState(t.Context(), store, "T", agent.RootPath("parent"), false); err != nil || rs.Status != "" {
		t.Fatalf("saved state: %v, status %q; want the run unfinished", err, rs.Status)
	}
	res, _, err = runCollecting(t, a, agent.Input{}, runner.Checkpoints(store, "T"))
	if err != nil || res.Status != agent.StatusOK || res.FinalText() != "parent done" {
		t.Fatalf("resume: %v %v %q", err, res.Status, res.FinalText())
	}
	// parent 1, worker 1 before; worker 1 and parent 1 after: the worker's
	// first response was saved and is not asked for again.
	byWho := map[string]int{}
	for _, r := range m.Records() {
		byWho[r.Who]++
	}
	if byWho["parent"] != 2 || byWho["worker"] != 2 {
		t.Errorf("model calls %v; want 2 each (none asked for twice)", byWho)
	}
}

type writeIn struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

var writeTool = tool.MustFunc("write", "Write a file.", func(ctx context.Context, env *tool.Env, in writeIn) (string, error) {
	return "wrote " + in.Path, env.Files.Write(ctx, in.Path, in.Content)
})

func call(name, args string) scripted.StepCall {
	return scripted.StepCall{Name: name, Args: json.RawMessage(args)}
}

func steps(s ...scripted.Step) scripted.AgentScript { return scripted.AgentScript{Steps: s} }

func newAgent(t *testing.T, cfg agent.Config) *agent.Agent {
	t.Helper()
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
