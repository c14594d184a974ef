package agent_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/tool"
)

// namingRuntime is a Sequential runtime that names calls its own way.
type namingRuntime struct{ agent.Runtime }

func (namingRuntime) CallID(round, index int) string { return fmt.Sprintf("rt-%d-%d", round, index) }

// The runtime names the calls a model sent without ids, and its clock
// stamps every event.
func TestRuntimeNamesCallsAndStampsEvents(t *testing.T) {
	m := scripted.New(scripted.Script{"parent": steps(
		scripted.Step{ToolCalls: []scripted.StepCall{call("noop", `{}`), call("noop", `{}`)}},
		scripted.Step{Content: "done"},
	)}, scripted.Options{})
	clock := time.Date(2030, 5, 6, 7, 8, 9, 0, time.UTC)
	rt := namingRuntime{agent.Sequential(clock)}
	// A provider that sends calls without ids: the middleware drops them.
	noIDs := agent.Middleware{Name: "no-ids", WrapModel: func(ctx context.Context, req *llm.Request, next agent.ModelFunc) (*llm.Response, error) {
		resp, err := next(ctx, req)
		if err == nil {
			for i := range resp.Message.ToolCalls {
				resp.Message.ToolCalls[i].ID = ""
			}
		}
		return resp, err
	}}
	var stamps []time.Time
	var ids []string
	res, err := agent.Drain(newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{noopTool}, Middleware: []agent.Middleware{noIDs}}).Run(t.Context(), agent.Prompt("go"), agent.WithRuntime(rt)),
		func(ev agent.Event) {
			stamps = append(stamps, ev.Time)
			if ev.Type == agent.ToolStart {
				ids = append(ids, ev.Tool.CallID)
			}
		})
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 2 || ids[0] != "rt-0-0" || ids[1] != "rt-0-1" {
		t.Errorf("call ids %v, want rt-0-0, rt-0-1", ids)
	}
	var results []string
	for _, msg := range res.State.Messages {
		if msg.Role == llm.RoleTool {
			results = append(results, msg.ToolCallID)
		}
	}
	if len(results) != 2 || results[0] != "rt-0-0" || results[1] != "rt-0-1" {
		t.Errorf("tool results answer %v", results)
	}
	for i, s := range stamps {
		if !s.Equal(clock) {
			t.Errorf("event %d stamped %v, want the runtime's %v", i, s, clock)
		}
	}
}

// instantTimers is a runtime whose timers are done at once, as if their
// time had passed: a run whose budget is on the runtime's timers ends at
// once, while one on the wall clock would wait for it.
type instantTimers struct {
	agent.Runtime
	asked []time.Duration
}

func (r *instantTimers) Timeout(ctx context.Context, d time.Duration, cause error) (context.Context, context.CancelFunc) {
	r.asked = append(r.asked, d)
	if cause == nil {
		cause = context.DeadlineExceeded
	}
	tctx, cancel := context.WithCancelCause(ctx)
	cancel(cause)
	return tctx, func() {}
}

// A run's time budget (WithTimeout) runs on the runtime's timers: an hour
// that passes at once on them ends the run at its limit at once.
func TestTimeoutRunsOnTheRuntimesTimers(t *testing.T) {
	rt := &instantTimers{Runtime: agent.Sequential(time.Time{})}
	m := scripted.New(scripted.Script{"parent": scripted.AgentScript{Steps: []scripted.Step{{Content: "done"}}}}, scripted.Options{})
	a, err := agent.New(agent.Config{Model: m})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Invoke(t.Context(), agent.Prompt("go"), agent.WithRuntime(rt), agent.WithTimeout(time.Hour))
	if res == nil || res.Status != agent.StatusLimit || !strings.Contains(res.Error, "timed out after 1h0m0s") {
		t.Fatalf("result %+v, err %v: want the run's limit", res, err)
	}
	if len(rt.asked) == 0 || rt.asked[0] != time.Hour {
		t.Errorf("timers asked for %v, want the hour first", rt.asked)
	}
}
