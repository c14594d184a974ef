package agent_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/tool"
)

// A BeforeModel hook that returns an error wrapping ErrLimit stops the run
// before that call with StatusLimit, the hook's error as its reason; any
// other hook error is a failure. RunFrom gives every hook, WrapTool
// included, the run's state.
func TestHookStopsRunAtALimit(t *testing.T) {
	echo := tool.MustFunc("echo", "Echo.", func(context.Context, *tool.Env, struct{}) (string, error) { return "ok", nil })
	script := func() *scripted.Model {
		return scripted.New(scripted.Script{"parent": steps(
			scripted.Step{ToolCalls: []scripted.StepCall{{ID: "e1", Name: "echo"}}},
			scripted.Step{Content: "never"})}, scripted.Options{})
	}
	var seenByTool *agent.State
	for _, c := range []struct {
		err    error
		status agent.Status
	}{
		{fmt.Errorf("%w: the quota is used up", agent.ErrLimit), agent.StatusLimit},
		{errors.New("broken"), agent.StatusError},
	} {
		mw := agent.Middleware{Name: "quota",
			BeforeModel: func(ctx context.Context, st agent.StepInfo, _ *llm.Request) error {
				if s, ok := agent.RunFrom(ctx); !ok || s != st.State {
					t.Errorf("RunFrom in BeforeModel: %p, want %p", s, st.State)
				}
				if st.Round == 1 {
					return c.err
				}
				return nil
			},
			WrapTool: func(ctx context.Context, call *agent.ToolCall, next agent.ToolFunc) (tool.Result, error) {
				seenByTool, _ = agent.RunFrom(ctx)
				return next(ctx, call)
			}}
		a := newAgent(t, agent.Config{Model: script(), Tools: []tool.Tool{echo}, Middleware: []agent.Middleware{mw}})
		res, err := a.Invoke(t.Context(), agent.Prompt("go"))
		if res.Status != c.status || !errors.Is(err, c.err) {
			t.Fatalf("hook error %v: status %s, err %v", c.err, res.Status, err)
		}
		if c.status == agent.StatusLimit && (err.Error() != c.err.Error() || !errors.Is(err, agent.ErrLimit) || errors.Is(err, agent.ErrFailed)) {
			t.Errorf("limit error %q", err)
		}
		if res.Rounds != 1 || len(res.State.Messages) != 3 {
			t.Errorf("rounds %d, %d messages: want the first step and its result kept", res.Rounds, len(res.State.Messages))
		}
		if seenByTool == nil {
			t.Error("RunFrom in WrapTool found no run")
		}
	}
	if _, ok := agent.RunFrom(context.Background()); ok {
		t.Error("RunFrom outside a run")
	}
}
