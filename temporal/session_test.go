package temporal_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/temporal"
	"github.com/deepagents-go/deepagents/tool"
)

// stack is a stateful tool's state in one worker's process: what it was
// pushed, in order.
type stack struct {
	mu    sync.Mutex
	items []string
}

// sessionCase registers, on a fresh registry, an agent that pushes six
// items onto a stack, two at a time, through a tool pinned to one worker.
func sessionCase(t *testing.T, st *stack) *temporal.Registry {
	t.Helper()
	var steps []scripted.Step
	for i := 0; i < 6; i += 2 {
		steps = append(steps, step("", tc("push", fmt.Sprintf(`{"item":"i%d"}`, i)), tc("push", fmt.Sprintf(`{"item":"i%d"}`, i+1))))
	}
	steps = append(steps, step("pushed"))
	reg := temporal.NewRegistry()
	m := reg.Model("scripted", scripted.New(scripted.Script{"stacker": {Steps: steps}}, scripted.Options{}))
	push := reg.SessionTool("stacker", tool.MustFunc("push", "Pushes an item.", func(_ context.Context, _ *tool.Env, in struct {
		Item string `json:"item"`
	}) (string, error) {
		st.mu.Lock()
		defer st.mu.Unlock()
		st.items = append(st.items, in.Item)
		return fmt.Sprintf("%d items", len(st.items)), nil
	}))
	a := mustAgent(t, agent.Config{Name: "stacker", Model: m, Tools: []tool.Tool{push}})
	if err := reg.Agent("stacker", a); err != nil {
		t.Fatal(err)
	}
	return reg
}

// In the test environment a pinned tool's calls run in a session, and the
// run ends with the session closed.
func TestSessionToolRunsInASession(t *testing.T) {
	st := &stack{}
	reg := sessionCase(t, st)
	env := newEnv(t, reg)
	env.SetWorkerOptions(worker.Options{EnableSessionWorker: true})
	env.ExecuteWorkflow(temporal.RunAgentWorkflow, temporal.RunInput{Agent: "stacker", Input: "push"})
	if s := summary(t, env); s.Status != agent.StatusOK || s.Text != "pushed" {
		t.Fatalf("summary %+v", s)
	}
	if len(st.items) != 6 {
		t.Errorf("pushed %v", st.items)
	}
}

// On a real server with two workers, each with a stack of its own, every
// call of a run goes to the worker whose session the run opened: one stack
// holds all six items.
func TestSessionToolIsPinnedToOneWorkerOnADevServer(t *testing.T) {
	c := devClient(t)
	stacks := []*stack{{}, {}}
	for _, st := range stacks {
		reg := sessionCase(t, st)
		// Activities are not run eagerly by the worker that schedules
		// them, so that only the session keeps them on one worker.
		w := worker.New(c, "deepagents-session", worker.Options{EnableSessionWorker: true, DisableEagerActivities: true})
		reg.Register(w)
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for i := range 3 {
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: fmt.Sprintf("session-%d", i), TaskQueue: "deepagents-session"},
			temporal.RunAgentWorkflow, temporal.RunInput{Agent: "stacker", Input: "push"})
		if err != nil {
			t.Fatal(err)
		}
		var s temporal.Summary
		if err := run.Get(ctx, &s); err != nil {
			t.Fatal(err)
		}
		if s.Status != agent.StatusOK {
			t.Fatalf("summary %+v", s)
		}
		if i == 0 {
			h := history(ctx, t, c, run)
			if err := replayerOf(t, sessionCase(t, &stack{})).ReplayWorkflowHistory(nil, h); err != nil {
				t.Fatalf("the history does not replay: %v", err)
			}
			record(t, sessionHistory, h)
		}
		a, b := len(stacks[0].items), len(stacks[1].items)
		if a+b != 6 || (a != 0 && b != 0) {
			t.Fatalf("run %d: the two workers' stacks hold %v and %v; want one to hold all six", i, stacks[0].items, stacks[1].items)
		}
		stacks[0].items, stacks[1].items = nil, nil
	}
}

// sessionHistory is a run of TestSessionToolIsPinnedToOneWorkerOnADevServer.
const sessionHistory = "testdata/session.history.json"

// The committed history of a run whose tool calls went through a session
// replays: the session's opening, its activities and its completion take
// the same steps.
func TestSessionHistoryReplays(t *testing.T) {
	if err := replayerOf(t, sessionCase(t, &stack{})).ReplayWorkflowHistoryFromJSONFile(nil, sessionHistory); err != nil {
		t.Fatalf("%s does not replay: %v", sessionHistory, err)
	}
}
