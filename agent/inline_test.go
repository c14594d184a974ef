package agent_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/tool"
)

// chatty reports n progress lines; seen counts the ones the run's consumer
// has received, and lagged counts the lines whose event had not reached the
// consumer when Progress returned.
func chatty(inline bool, n int, seen *atomic.Int64, lagged *atomic.Int64) tool.Tool {
	var opts []tool.Option
	if inline {
		opts = append(opts, tool.WithInline())
	}
	name := "slow"
	if inline {
		name = "inline"
	}
	return tool.MustFunc(name, "Reports progress.", func(ctx context.Context, env *tool.Env, _ struct{}) (string, error) {
		for i := range n {
			env.Report(fmt.Sprint("line ", i))
			if seen.Load() != int64(i+1) {
				lagged.Add(1)
			}
		}
		return "reported", nil
	}, opts...)
}

// A step's lone call of an Inline tool runs on the loop's goroutine: each of
// its progress events reaches the consumer before Progress returns, in
// order, and many more of them than the loop buffers do not block it. A
// tool that is not Inline runs on a worker as before.
func TestLoneInlineCallRunsOnTheLoop(t *testing.T) {
	const lines = 200 // far above the loop's event buffer
	for _, inline := range []bool{true, false} {
		var seen, lagged atomic.Int64
		tl := chatty(inline, lines, &seen, &lagged)
		m := scripted.New(scripted.Script{"parent": steps(
			scripted.Step{ToolCalls: []scripted.StepCall{call(tl.Spec().Name, `{}`)}},
			scripted.Step{Content: "done"},
		)}, scripted.Options{NoUsage: true})
		a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{tl}})
		var order []string
		res, err := agent.Drain(a.Run(t.Context(), agent.Prompt("go")), func(e agent.Event) {
			if e.Type == agent.ToolProgress {
				seen.Add(1)
				order = append(order, e.Tool.Text)
			}
		})
		if err != nil || res.Status != agent.StatusOK {
			t.Fatalf("inline=%v: %v %s", inline, err, res.Status)
		}
		if len(order) != lines || order[0] != "line 0" || order[lines-1] != fmt.Sprint("line ", lines-1) {
			t.Errorf("inline=%v: %d progress events, first %q", inline, len(order), order[0])
		}
		if inline && lagged.Load() != 0 {
			t.Errorf("inline tool: %d progress events reached the consumer after Progress returned", lagged.Load())
		}
	}
}

// An Inline call still ends the run promptly when the run is cancelled: the
// context it watches is the run's.
func TestInlineCallSeesCancellation(t *testing.T) {
	started := make(chan struct{})
	tl := tool.MustFunc("inlinewait", "Waits for its context.", func(ctx context.Context, _ *tool.Env, _ struct{}) (string, error) {
		close(started)
		<-ctx.Done()
		return "", ctx.Err()
	}, tool.WithInline())
	m := scripted.New(scripted.Script{"parent": steps(
		scripted.Step{ToolCalls: []scripted.StepCall{call("inlinewait", `{}`)}},
		scripted.Step{Content: "never"},
	)}, scripted.Options{NoUsage: true})
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{tl}})
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-started
		cancel()
	}()
	done := make(chan *agent.Result, 1)
	go func() {
		res, _ := agent.Drain(a.Run(ctx, agent.Prompt("go")), nil)
		done <- res
	}()
	select {
	case res := <-done:
		if res.Status != agent.StatusCancelled || !errors.Is(res.Err(), context.Canceled) {
			t.Fatalf("status %s err %v, want cancelled", res.Status, res.Err())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not stop after cancellation")
	}
}
