package compact_test

import (
	"context"
	"iter"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/compact"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/tool"
)

// overflowing answers the parent's third call with an overflow error, after
// the start of an answer when partial is set; every other call is the
// scripted model's.
type overflowing struct {
	*scripted.Model
	partial bool
	parent  atomic.Int64
}

func (m *overflowing) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.StreamEvent, error] {
	if ci, _ := llm.CallInfoFrom(ctx); ci.Agent == "parent" && m.parent.Add(1) == 3 {
		return func(yield func(llm.StreamEvent, error) bool) {
			if m.partial && !yield(llm.StreamEvent{Type: llm.EventTextDelta, Text: "the start of an answer "}, nil) {
				return
			}
			yield(llm.StreamEvent{}, &llm.APIError{Kind: llm.ErrKindContextLength, Message: "prompt is too long"})
		}
	}
	return m.Model.Stream(ctx, req)
}

// A streamed call the provider refuses as too long is compacted and sent
// again, and the run shows one answer to it: the retry's. When the refusal
// comes after part of an answer was shown, the call is not sent again, so
// that the run never shows two answers to one request.
func TestOverflowRetryShowsOneAttempt(t *testing.T) {
	for _, tc := range []struct {
		name    string
		partial bool
		text    string
		calls   int
	}{
		{"refused before answering", false, "done", 4},
		{"refused after part of an answer", true, "the start of an answer ", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sm := scripted.New(scripted.Script{
				"parent": steps(batch(0, 2), batch(1, 2), scripted.Step{Content: "the refused call's step, never read"},
					scripted.Step{Content: "done"}),
				"summarizer": steps(scripted.Step{Content: "summary with src/a.go and 30 s"}),
			}, scripted.Options{})
			m := &overflowing{Model: sm, partial: tc.partial}
			mw, err := compact.New(compact.Config{KeepMessages: 2, Model: sm})
			if err != nil {
				t.Fatal(err)
			}
			a, err := agent.New(agent.Config{Model: m, Stream: true, Tools: []tool.Tool{echo}, Middleware: []agent.Middleware{mw}})
			if err != nil {
				t.Fatal(err)
			}
			var text strings.Builder
			res, err := agent.Drain(a.Run(t.Context(), agent.Prompt("Please edit src/a.go and keep the limit at 30 s.")), func(e agent.Event) {
				if e.Type == agent.ModelDelta {
					text.WriteString(e.Delta.Text)
				}
			})
			if text.String() != tc.text {
				t.Errorf("the run showed %q, want %q", text.String(), tc.text)
			}
			if n := int(m.parent.Load()); n != tc.calls {
				t.Errorf("%d parent calls, want %d", n, tc.calls)
			}
			if tc.partial {
				if !compact.IsOverflow(err) || res.Status != agent.StatusError {
					t.Errorf("a refusal after part of an answer: %v (status %s), want the overflow", err, res.Status)
				}
				return
			}
			if err != nil || res.FinalText() != "done" {
				t.Fatalf("%v, final text %q", err, res.FinalText())
			}
		})
	}
}

// A summary written by the agent's own model (no summariser model set) is
// compaction's, not the agent's answer: none of it is shown as model.delta
// events of a streaming agent.
func TestOwnModelSummaryIsNotShownAsTheAnswer(t *testing.T) {
	m := scripted.New(scripted.Script{
		"parent":     steps(batch(0, 2), batch(1, 2), batch(2, 2), scripted.Step{Content: "done"}),
		"summarizer": steps(scripted.Step{Content: "SUMMARY: src/a.go, 30 s"}),
	}, scripted.Options{})
	mw, err := compact.New(compact.Config{TriggerTokens: 250, KeepMessages: 2})
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{Model: m, Stream: true, Tools: []tool.Tool{echo}, Middleware: []agent.Middleware{mw}})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	compacted := 0
	res, err := agent.Drain(a.Run(t.Context(), agent.Prompt("Please edit src/a.go and keep the limit at 30 s.")), func(e agent.Event) {
		switch e.Type {
		case agent.ModelDelta:
			text.WriteString(e.Delta.Text)
		case compact.EventEnd:
			compacted++
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if compacted == 0 {
		t.Fatal("no compaction happened")
	}
	if text.String() != "done" || res.FinalText() != "done" {
		t.Errorf("the run showed %q, want only the agent's answer", text.String())
	}
}
