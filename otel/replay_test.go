package daotel_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	daotel "github.com/deepagents-go/deepagents/otel"
	"github.com/deepagents-go/deepagents/tool"
)

// replayClock is a test runtime that says it replays the run until its
// model is called for the (until+1)th time (a durable engine replays a
// run's start from its history, the first until model calls and what
// follows from them, then goes on live).
type replayClock struct {
	*clock
	calls atomic.Int32
	until int32
}

func (c *replayClock) Replaying() bool { return c.calls.Load() <= c.until }

// counting counts the calls of its model on c.
type counting struct {
	llm.Model
	c *replayClock
}

func (m counting) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	m.c.calls.Add(1)
	return m.Model.Generate(ctx, req)
}

func replayAgent(t *testing.T, c *replayClock) *agent.Agent {
	t.Helper()
	echo := tool.MustFunc("echo", "Echo.", func(context.Context, *tool.Env, struct{}) (string, error) { return "echo", nil })
	m := scripted.New(scripted.Script{"agent": {Steps: []scripted.Step{
		{ToolCalls: []scripted.StepCall{{Name: "echo", Args: json.RawMessage(`{}`)}}},
		{Content: "done"},
	}}}, scripted.Options{})
	a, err := agent.New(agent.Config{Name: "agent", Model: counting{Model: m, c: c}, Tools: []tool.Tool{echo}, Middleware: []agent.Middleware{daotel.Middleware()}})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// spanNames runs a's run with a recorder told of the runtime's replay when
// tell is set, and returns the names of the spans exported.
func spanNames(t *testing.T, c *replayClock, tell bool) []string {
	t.Helper()
	h := newHarness(t)
	cfg := daotel.Config{TracerProvider: h.tp, Model: "m"}
	if tell {
		cfg.Replaying = c.Replaying
	}
	rec := daotel.NewRecorder(context.Background(), cfg)
	ctx := daotel.WithRecorder(context.Background(), rec)
	if _, err := agent.Drain(rec.Observe(replayAgent(t, c).Run(ctx, agent.Prompt("go"), agent.WithRuntime(c))), nil); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range h.exp.GetSpans() {
		names = append(names, s.Name)
	}
	slices.Sort(names)
	return names
}

func TestNoSpansWhileTheRuntimeReplays(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// Live: every span once.
	live := spanNames(t, &replayClock{clock: newClock(start)}, true)
	if want := []string{"chat m", "chat m", "execute_tool echo", "invoke_agent agent"}; !slices.Equal(live, want) {
		t.Fatalf("live spans %v, want %v", live, want)
	}
	// A replay of the whole run: no span at all.
	if got := spanNames(t, &replayClock{clock: newClock(start), until: 2}, true); len(got) != 0 {
		t.Errorf("a replayed run exported %v", got)
	}
	// The middleware alone, without the recorder told: no chat span.
	if got := spanNames(t, &replayClock{clock: newClock(start), until: 2}, false); slices.Contains(got, "chat m") {
		t.Errorf("the middleware traced replayed model calls: %v", got)
	}
	// A replay of the first step, then live: the first model call and its
	// tool call were exported by the first execution; the agent's span,
	// started in the replay, ends live and is exported once.
	if got, want := spanNames(t, &replayClock{clock: newClock(start), until: 1}, true), []string{"chat m", "invoke_agent agent"}; !slices.Equal(got, want) {
		t.Errorf("spans %v, want %v", got, want)
	}
}
