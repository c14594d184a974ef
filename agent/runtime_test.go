package agent_test

import (
	"context"
	"fmt"
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
