package agent_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/runner"
)

// endlessModel is a model of one's own (not a provider adapter) whose
// answers never end: shape "text" streams text deltas, "calls" one tool
// call after another, "bad index" a tool call with a negative index. Its
// Generate answers with want instead. It counts its calls and whether a
// stream was stopped by its consumer.
type endlessModel struct {
	shape   string
	want    *llm.Response
	calls   atomic.Int64
	stopped atomic.Bool
}

func (m *endlessModel) Generate(context.Context, *llm.Request) (*llm.Response, error) {
	m.calls.Add(1)
	return m.want, nil
}

func (m *endlessModel) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.StreamEvent, error] {
	m.calls.Add(1)
	chunk := strings.Repeat("x", 4096)
	return func(yield func(llm.StreamEvent, error) bool) {
		for i := 0; ctx.Err() == nil; i++ {
			var ev llm.StreamEvent
			switch m.shape {
			case "text":
				ev = llm.StreamEvent{Type: llm.EventTextDelta, Text: chunk}
			case "calls":
				ev = llm.StreamEvent{Type: llm.EventToolCallStart, Index: i, ToolCall: &llm.ToolCall{ID: fmt.Sprint("c", i), Name: "t"}}
			case "bad index":
				ev = llm.StreamEvent{Type: llm.EventToolCallDelta, Index: -1, ArgsDelta: "{}"}
			}
			if !yield(ev, nil) {
				m.stopped.Store(true)
				return
			}
		}
	}
}

// A model of one's own whose stream never ends is cut off by the loop: at
// 16 MiB of text or at the 1,001st tool call by default, at the configured
// limits otherwise. The run ends with status error and an error matching
// llm.ErrResponseTooLarge, the model is asked once, its stream is stopped,
// and the thread keeps the prompt but not the cut-off answer.
func TestEndlessStreamOfAnyModelIsCutOff(t *testing.T) {
	cases := []struct {
		name, shape string
		limits      llm.ResponseLimits
		limit       string
		got         int64
	}{
		{"text, default", "text", llm.ResponseLimits{}, llm.LimitBytes, 16<<20 + 4096},
		{"text, 1 MiB", "text", llm.ResponseLimits{MaxBytes: 1 << 20}, llm.LimitBytes, 1<<20 + 4096},
		{"calls, default", "calls", llm.ResponseLimits{}, llm.LimitToolCalls, 1001},
		{"calls, 3", "calls", llm.ResponseLimits{MaxToolCalls: 3}, llm.LimitToolCalls, 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			m := &endlessModel{shape: c.shape}
			a, err := agent.New(agent.Config{Model: m, Stream: true, ResponseLimits: c.limits})
			if err != nil {
				t.Fatal(err)
			}
			saver := checkpoint.NewMemory(0)
			res, err := a.Invoke(ctx, agent.Prompt("go"), runner.Checkpoints(saver, "t1"))
			var tl *llm.ResponseTooLargeError
			if !errors.Is(err, llm.ErrResponseTooLarge) || !errors.Is(err, agent.ErrFailed) || !errors.As(err, &tl) {
				t.Fatalf("err = %v, want a response cut off, failing the run", err)
			}
			if tl.Limit != c.limit || tl.Got != c.got {
				t.Errorf("cut off at %d (%s), want %d (%s)", tl.Got, tl.Limit, c.got, c.limit)
			}
			if res == nil || res.Status != agent.StatusError || len(res.State.Messages) != 1 || res.State.Messages[0].Content != "go" {
				t.Fatalf("result %+v, want status error and only the prompt", res)
			}
			if n := m.calls.Load(); n != 1 || !m.stopped.Load() {
				t.Errorf("the model was called %d times (stream stopped: %v), want once and stopped", n, m.stopped.Load())
			}
			cp, err := saver.Get(ctx, checkpoint.Ref{ThreadID: "t1"})
			if err != nil || cp.Status != checkpoint.StatusError || len(cp.State.Messages) != 1 {
				t.Errorf("saved %v: %+v", err, cp)
			}
		})
	}
}

// A Generate answer past the limits fails the run the same way; negative
// limits mean none; a stream that names a negative tool call fails the
// run instead of crashing it.
func TestGeneratedResponseIsChecked(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var calls []llm.ToolCall
	for i := range 1001 {
		calls = append(calls, llm.ToolCall{ID: fmt.Sprint("c", i), Name: "t", Args: []byte("{}")})
	}
	many := &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: calls}}
	long := &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: strings.Repeat("y", 2000)}}
	for _, c := range []struct {
		name   string
		want   *llm.Response
		limits llm.ResponseLimits
		limit  string
	}{
		{"1,001 calls", many, llm.ResponseLimits{}, llm.LimitToolCalls},
		{"2,000 bytes over 1,000", long, llm.ResponseLimits{MaxBytes: 1000}, llm.LimitBytes},
		{"no limit", long, llm.ResponseLimits{MaxBytes: -1}, ""},
	} {
		a, err := agent.New(agent.Config{Model: &endlessModel{want: c.want}, ResponseLimits: c.limits})
		if err != nil {
			t.Fatal(err)
		}
		res, err := a.Invoke(ctx, agent.Prompt("go"))
		var tl *llm.ResponseTooLargeError
		switch {
		case c.limit == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.limit != "" && (!errors.As(err, &tl) || tl.Limit != c.limit || res.Status != agent.StatusError):
			t.Errorf("%s: %v (status %s), want the %s limit", c.name, err, res.Status, c.limit)
		}
	}
	a, err := agent.New(agent.Config{Model: &endlessModel{shape: "bad index"}, Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Invoke(ctx, agent.Prompt("go"))
	if err == nil || !strings.Contains(err.Error(), "named tool call -1") || res.Status != agent.StatusError {
		t.Errorf("a negative tool-call index: %v (status %s)", err, res.Status)
	}
}
