package llm

import (
	"context"
	"errors"
	"iter"
	"time"

	"github.com/deepagents-go/deepagents/internal/textbuf"
)

// StreamEventType tags a StreamEvent.
type StreamEventType string

// Stream event types, in the order a stream produces them: any number of text,
// reasoning and tool-call events, then one EventDone.
const (
	EventTextDelta      StreamEventType = "text_delta"
	EventReasoningDelta StreamEventType = "reasoning_delta"
	EventToolCallStart  StreamEventType = "tool_call_start" // ToolCall holds ID and Name
	EventToolCallDelta  StreamEventType = "tool_call_delta" // ArgsDelta extends call Index
	EventDone           StreamEventType = "done"            // Response is complete
)

// StreamEvent is one increment of a streamed response.
type StreamEvent struct {
	Type StreamEventType `json:"type"`
	// Index is the tool call's position within the message (tool-call events).
	Index     int       `json:"index,omitempty"`
	Text      string    `json:"text,omitempty"`
	ToolCall  *ToolCall `json:"tool_call,omitempty"`
	ArgsDelta string    `json:"args_delta,omitempty"`
	Response  *Response `json:"response,omitempty"`
}

// ErrStreamIncomplete is returned when a stream ends without EventDone.
var ErrStreamIncomplete = errors.New("llm: stream ended before the response was complete")

// Collect drains a stream and returns its complete response. If the stream
// ends without EventDone, Collect assembles what arrived and returns
// ErrStreamIncomplete alongside it. The stream is cut off at the default
// response limits (see CollectLimited).
func Collect(stream iter.Seq2[StreamEvent, error]) (*Response, error) {
	return CollectLimited(stream, ResponseLimits{})
}

// Accumulator assembles stream events into a response, for providers whose
// final event lacks the full message and for callers that want the partial
// message of an interrupted stream.
type Accumulator struct {
	text, reasoning textbuf.Buffer
	calls           []ToolCall
	args            []textbuf.Buffer
}

// Add folds ev in. It returns the complete response when ev is EventDone; the
// response's message is filled from the deltas when the event left it empty.
func (a *Accumulator) Add(ev StreamEvent) *Response {
	switch ev.Type {
	case EventTextDelta:
		a.text.WriteString(ev.Text)
	case EventReasoningDelta:
		a.reasoning.WriteString(ev.Text)
	case EventToolCallStart:
		a.grow(ev.Index)
		if ev.ToolCall != nil {
			a.calls[ev.Index].ID = ev.ToolCall.ID
			a.calls[ev.Index].Name = ev.ToolCall.Name
		}
	case EventToolCallDelta:
		a.grow(ev.Index)
		a.args[ev.Index].WriteString(ev.ArgsDelta)
	case EventDone:
		resp := Response{}
		if ev.Response != nil {
			resp = *ev.Response
		}
		if resp.Message.Role == "" {
			resp.Message = a.Partial().Message
		}
		return &resp
	}
	return nil
}

func (a *Accumulator) grow(i int) {
	for len(a.calls) <= i {
		a.calls = append(a.calls, ToolCall{})
		a.args = append(a.args, textbuf.Buffer{})
	}
}

// Partial returns the response assembled so far.
func (a *Accumulator) Partial() *Response {
	msg := Message{Role: RoleAssistant, Content: a.text.String()}
	if r := a.reasoning.String(); r != "" {
		msg.SetParts(ReasoningThenText(r, msg.Content))
	}
	for i, c := range a.calls {
		if s := a.args[i].String(); s != "" {
			c.Args = []byte(s)
		} else {
			c.Args = []byte("{}")
		}
		msg.ToolCalls = append(msg.ToolCalls, c)
	}
	stop := StopEnd
	if len(msg.ToolCalls) > 0 {
		stop = StopToolCalls
	}
	return &Response{Message: msg, StopReason: stop}
}

// Limited passes stream on, cut off at l: once the events carry more than
// the limits allow, or the response of EventDone does, it yields a
// *ResponseTooLargeError and stops. Code that passes a provider's stream to
// others (the agent loop, to its middleware) uses it so that a stream that
// never ends is stopped where it is read, whatever reads it.
func Limited(stream iter.Seq2[StreamEvent, error], l ResponseLimits) iter.Seq2[StreamEvent, error] {
	return func(yield func(StreamEvent, error) bool) {
		m := NewMeter(l)
		for ev, err := range stream {
			if err == nil {
				err = m.Add(ev)
			}
			if err == nil && ev.Type == EventDone {
				err = l.Check(ev.Response)
			}
			if err != nil {
				yield(StreamEvent{}, err)
				return
			}
			if !yield(ev, nil) {
				return
			}
		}
	}
}

// StreamOf turns a Generate-style function into a stream that yields the
// response's text and tool calls as single deltas, then EventDone. Models that
// cannot stream use it to implement Stream.
func StreamOf(ctx context.Context, req *Request, generate func(context.Context, *Request) (*Response, error)) iter.Seq2[StreamEvent, error] {
	return func(yield func(StreamEvent, error) bool) {
		resp, err := generate(ctx, req)
		if err != nil {
			yield(StreamEvent{}, err)
			return
		}
		if resp.Message.Content != "" {
			if !yield(StreamEvent{Type: EventTextDelta, Text: resp.Message.Content}, nil) {
				return
			}
		}
		for i, c := range resp.Message.ToolCalls {
			if !yield(StreamEvent{Type: EventToolCallStart, Index: i, ToolCall: &ToolCall{ID: c.ID, Name: c.Name}}, nil) {
				return
			}
			if !yield(StreamEvent{Type: EventToolCallDelta, Index: i, ArgsDelta: string(c.Args)}, nil) {
				return
			}
		}
		yield(StreamEvent{Type: EventDone, Response: resp}, nil)
	}
}

// CallInfo tells a model who is calling it. The agent loop attaches it to the
// context of every model call; real providers ignore it, the scripted model
// uses it to pick the reply of the right agent instance.
type CallInfo struct {
	// Agent is the agent's name: "parent" for the top level, else the
	// subagent's name.
	Agent string
	// Instance identifies one run of a subagent: the parent's tool-call id.
	// Empty for the top level.
	Instance string
	// Path is the full agent path, e.g. "parent / general-purpose#call_1".
	Path string
	// Task is the text the instance was started with (a subagent's brief, or
	// the first user message).
	Task string
	// Round is the number of model calls this run made before this one.
	Round int
	// Attempt counts the earlier sends of this round's request: 0 for the
	// first. A middleware that sends the round again (compaction, after the
	// provider said the request was too long, sends a smaller one) raises
	// it, so logs can tell a resend apart and a scripted model answers it
	// with a step of its own.
	Attempt int
	// OnRetry, when set, is told about every failed attempt of this call that
	// will be tried again, before the wait. Providers report through
	// NotifyRetry; the agent loop turns each notice into an event.
	OnRetry func(Retry)
}

// Retry describes a failed attempt of a model call that is about to be
// retried.
type Retry struct {
	Attempt int           // the retry about to happen: 1 for the first
	Wait    time.Duration // how long until it starts
	Err     error         // why the previous attempt failed
}

// NotifyRetry tells the caller in ctx, if it asked (CallInfo.OnRetry), that
// an attempt failed and another follows after r.Wait.
func NotifyRetry(ctx context.Context, r Retry) {
	if ci, ok := CallInfoFrom(ctx); ok && ci.OnRetry != nil {
		ci.OnRetry(r)
	}
}

type callInfoKey struct{}

// WithCallInfo returns ctx carrying ci.
func WithCallInfo(ctx context.Context, ci CallInfo) context.Context {
	return context.WithValue(ctx, callInfoKey{}, ci)
}

// CallInfoFrom returns the CallInfo attached to ctx, if any.
func CallInfoFrom(ctx context.Context) (CallInfo, bool) {
	ci, ok := ctx.Value(callInfoKey{}).(CallInfo)
	return ci, ok
}
