package agent_test

import (
	"context"
	"errors"
	"iter"
	"strings"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
)

// upper is a stream wrapper that changes what the model said: every text
// delta and the final text in capitals.
func upper(ctx context.Context, req *llm.Request, next agent.StreamFunc) iter.Seq2[llm.StreamEvent, error] {
	return func(yield func(llm.StreamEvent, error) bool) {
		for ev, err := range next(ctx, req) {
			if err == nil {
				ev.Text = strings.ToUpper(ev.Text)
				if ev.Type == llm.EventDone && ev.Response != nil {
					resp := *ev.Response
					resp.Message.Content = strings.ToUpper(resp.Message.Content)
					ev.Response = &resp
				}
			}
			if !yield(ev, err) || err != nil {
				return
			}
		}
	}
}

// What a stream wrapper yields is what the run reports and keeps: the
// deltas users see and the message in the thread are the wrapper's.
func TestWrapStreamTransformsWhatUsersSee(t *testing.T) {
	m := scripted.New(scripted.Script{"parent": steps(scripted.Step{Content: "a rather long answer that arrives in several chunks"})}, scripted.Options{})
	a := newAgent(t, agent.Config{Model: m, Stream: true, Middleware: []agent.Middleware{{Name: "upper", WrapStream: upper}}})
	var text strings.Builder
	deltas := 0
	res, err := agent.Drain(a.Run(t.Context(), agent.Prompt("go")), func(e agent.Event) {
		if e.Type == agent.ModelDelta {
			deltas++
			text.WriteString(e.Delta.Text)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "A RATHER LONG ANSWER THAT ARRIVES IN SEVERAL CHUNKS"
	if deltas < 2 || text.String() != want {
		t.Errorf("%d deltas, text %q; want the wrapper's %q", deltas, text.String(), want)
	}
	if got := res.FinalText(); got != want {
		t.Errorf("final text %q, want %q", got, want)
	}
}

// A model read through Generate (the agent does not stream) is seen by
// stream wrappers as a stream too; no delta is reported.
func TestWrapStreamSeesAModelThatDoesNotStream(t *testing.T) {
	m := scripted.New(scripted.Script{"parent": steps(scripted.Step{Content: "plain answer"})}, scripted.Options{})
	var seen []llm.StreamEventType
	spy := func(ctx context.Context, req *llm.Request, next agent.StreamFunc) iter.Seq2[llm.StreamEvent, error] {
		return func(yield func(llm.StreamEvent, error) bool) {
			for ev, err := range next(ctx, req) {
				seen = append(seen, ev.Type)
				if !yield(ev, err) || err != nil {
					return
				}
			}
		}
	}
	a := newAgent(t, agent.Config{Model: m, Middleware: []agent.Middleware{{Name: "spy", WrapStream: spy}, {Name: "upper", WrapStream: upper}}})
	deltas := 0
	res, err := agent.Drain(a.Run(t.Context(), agent.Prompt("go")), func(e agent.Event) {
		if e.Type == agent.ModelDelta {
			deltas++
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if deltas != 0 {
		t.Errorf("%d deltas reported for an agent that does not stream", deltas)
	}
	if len(seen) != 2 || seen[0] != llm.EventTextDelta || seen[1] != llm.EventDone {
		t.Errorf("the outer wrapper saw %v, want a text delta and done", seen)
	}
	if got := res.FinalText(); got != "PLAIN ANSWER" {
		t.Errorf("final text %q: the inner wrapper's change is lost", got)
	}
}

// A response-level hook keeps working on the stream chain: it sees the
// response, the deltas pass on as they come, and what it returns is the
// step's response.
func TestWrapModelOnTheStreamChain(t *testing.T) {
	m := scripted.New(scripted.Script{"parent": steps(scripted.Step{Content: "streamed through a response hook"})}, scripted.Options{})
	var saw string
	hook := func(ctx context.Context, req *llm.Request, next agent.ModelFunc) (*llm.Response, error) {
		resp, err := next(ctx, req)
		if err != nil {
			return nil, err
		}
		saw = resp.Message.Content
		out := *resp
		out.Message.Content += "!"
		return &out, nil
	}
	a := newAgent(t, agent.Config{Model: m, Stream: true, Middleware: []agent.Middleware{{Name: "hook", WrapModel: hook}, {Name: "upper", WrapStream: upper}}})
	var text strings.Builder
	res, err := agent.Drain(a.Run(t.Context(), agent.Prompt("go")), func(e agent.Event) {
		if e.Type == agent.ModelDelta {
			text.WriteString(e.Delta.Text)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if saw != "STREAMED THROUGH A RESPONSE HOOK" {
		t.Errorf("WrapModel saw %q, want the inner stream wrapper's response", saw)
	}
	if text.String() != "STREAMED THROUGH A RESPONSE HOOK" {
		t.Errorf("deltas %q", text.String())
	}
	if got := res.FinalText(); got != "STREAMED THROUGH A RESPONSE HOOK!" {
		t.Errorf("final text %q, want the hook's response", got)
	}
}

// The response limits hold whatever the wrappers do: a wrapper that holds
// back the whole stream does not keep an endless model going, and one that
// adds more than the limits allow fails the call.
func TestWrapStreamUnderTheResponseLimits(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	hold := func(ctx context.Context, req *llm.Request, next agent.StreamFunc) iter.Seq2[llm.StreamEvent, error] {
		return func(yield func(llm.StreamEvent, error) bool) {
			var held []llm.StreamEvent
			for ev, err := range next(ctx, req) {
				if err != nil {
					yield(ev, err)
					return
				}
				held = append(held, ev)
			}
			for _, ev := range held {
				if !yield(ev, nil) {
					return
				}
			}
		}
	}
	m := &endlessModel{shape: "text"}
	a := newAgent(t, agent.Config{Model: m, Stream: true, ResponseLimits: llm.ResponseLimits{MaxBytes: 1 << 20},
		Middleware: []agent.Middleware{{Name: "hold", WrapStream: hold}}})
	res, err := a.Invoke(ctx, agent.Prompt("go"))
	if !errors.Is(err, llm.ErrResponseTooLarge) || res.Status != agent.StatusError || !m.stopped.Load() {
		t.Errorf("held-back endless stream: %v (status %s, stopped %v)", err, res.Status, m.stopped.Load())
	}

	pad := func(ctx context.Context, req *llm.Request, next agent.StreamFunc) iter.Seq2[llm.StreamEvent, error] {
		return func(yield func(llm.StreamEvent, error) bool) {
			if !yield(llm.StreamEvent{Type: llm.EventTextDelta, Text: strings.Repeat("x", 2048)}, nil) {
				return
			}
			for ev, err := range next(ctx, req) {
				if !yield(ev, err) || err != nil {
					return
				}
			}
		}
	}
	sm := scripted.New(scripted.Script{"parent": steps(scripted.Step{Content: "short"})}, scripted.Options{})
	a = newAgent(t, agent.Config{Model: sm, Stream: true, ResponseLimits: llm.ResponseLimits{MaxBytes: 1024},
		Middleware: []agent.Middleware{{Name: "pad", WrapStream: pad}}})
	res, err = a.Invoke(ctx, agent.Prompt("go"))
	if !errors.Is(err, llm.ErrResponseTooLarge) || res.Status != agent.StatusError {
		t.Errorf("a wrapper that adds past the limit: %v (status %s)", err, res.Status)
	}
}

// failsOnce streams the start of an answer and then fails on its first
// call; later calls are the scripted model's.
type failsOnce struct {
	*scripted.Model
	calls int
}

func (m *failsOnce) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.StreamEvent, error] {
	m.calls++
	if m.calls == 1 {
		return func(yield func(llm.StreamEvent, error) bool) {
			if yield(llm.StreamEvent{Type: llm.EventTextDelta, Text: "lost "}, nil) {
				yield(llm.StreamEvent{}, errors.New("connection reset"))
			}
		}
	}
	return m.Model.Stream(ctx, req)
}

// A stream wrapper that retries a failed attempt decides what of it the
// run shows: one that holds each attempt back until it ends shows only the
// attempt that answered, since the run reports what the outermost wrapper
// yields and not what the model sent.
func TestRetryingWrapperShowsOnlyTheLastAttempt(t *testing.T) {
	retry := func(ctx context.Context, req *llm.Request, next agent.StreamFunc) iter.Seq2[llm.StreamEvent, error] {
		return func(yield func(llm.StreamEvent, error) bool) {
			var err error
			for range 2 {
				var held []llm.StreamEvent
				err = nil
				for ev, e := range next(ctx, req) {
					if e != nil {
						err = e
						break
					}
					held = append(held, ev)
				}
				if err == nil {
					for _, ev := range held {
						if !yield(ev, nil) {
							return
						}
					}
					return
				}
			}
			yield(llm.StreamEvent{}, err)
		}
	}
	m := &failsOnce{Model: scripted.New(scripted.Script{"parent": steps(scripted.Step{Content: "the answer"})}, scripted.Options{})}
	a := newAgent(t, agent.Config{Model: m, Stream: true, Middleware: []agent.Middleware{{Name: "retry", WrapStream: retry}}})
	var text strings.Builder
	res, err := agent.Drain(a.Run(t.Context(), agent.Prompt("go")), func(e agent.Event) {
		if e.Type == agent.ModelDelta {
			text.WriteString(e.Delta.Text)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if text.String() != "the answer" || res.FinalText() != "the answer" || m.calls != 2 {
		t.Errorf("the run showed %q and ended with %q after %d calls; want only the second attempt", text.String(), res.FinalText(), m.calls)
	}
}

// nothingModel answers with neither a response nor an error.
type nothingModel struct{}

func (nothingModel) Generate(context.Context, *llm.Request) (*llm.Response, error) { return nil, nil }

func (nothingModel) Stream(context.Context, *llm.Request) iter.Seq2[llm.StreamEvent, error] {
	return func(func(llm.StreamEvent, error) bool) {}
}

// A model that answers with nothing fails the run; it does not bring the
// loop down.
func TestAModelThatAnswersNothingFailsTheRun(t *testing.T) {
	for _, stream := range []bool{false, true} {
		res, err := newAgent(t, agent.Config{Model: nothingModel{}, Stream: stream}).Invoke(t.Context(), agent.Prompt("go"))
		if err == nil || res.Status != agent.StatusError {
			t.Errorf("stream %v: %v (status %s), want a failed run", stream, err, res.Status)
		}
	}
}

// A response hook that answers by itself (a cache) with a message that has
// no role keeps its answer: the run takes it as the assistant's, as it takes
// a model's Generate answer without a role.
func TestWrapModelAnswerWithoutRoleIsKept(t *testing.T) {
	m := scripted.New(scripted.Script{"parent": steps(scripted.Step{Content: "from the model"})}, scripted.Options{})
	cache := func(ctx context.Context, req *llm.Request, next agent.ModelFunc) (*llm.Response, error) {
		return &llm.Response{Message: llm.Message{Content: "from the cache"}}, nil
	}
	for _, stream := range []bool{false, true} {
		a := newAgent(t, agent.Config{Model: m, Stream: stream, Middleware: []agent.Middleware{{Name: "cache", WrapModel: cache}}})
		res, err := a.Invoke(t.Context(), agent.Prompt("go"))
		if err != nil {
			t.Fatal(err)
		}
		if got := res.FinalText(); got != "from the cache" {
			t.Errorf("stream %v: final text %q, want the hook's answer", stream, got)
		}
	}
}
