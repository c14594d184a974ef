package llm

import (
	"context"
	"errors"
	"fmt"
	"iter"
)

// Default caps of one model response (see ResponseLimits).
const (
	DefaultMaxResponseBytes = 16 << 20
	DefaultMaxToolCalls     = 1000
)

// The names of the two response limits, as the config file spells them;
// ResponseTooLargeError.Limit is one of them.
const (
	LimitBytes     = "max_response_bytes"
	LimitToolCalls = "max_tool_calls"
)

// ResponseLimits cap one model response, so that a provider whose stream
// never ends, or a model that calls tools without end, fails the call with a
// *ResponseTooLargeError instead of filling memory. The zero value holds the
// defaults. The agent loop applies them to every model it calls and passes
// them in the call's context (WithResponseLimits), where the provider
// adapters read them too.
type ResponseLimits struct {
	// MaxBytes bounds the text, reasoning and tool-call arguments (with the
	// calls' ids and names, and what a provider keeps without streaming it,
	// such as signatures and refusals) of one response. 0 means
	// DefaultMaxResponseBytes (16 MiB); negative means no limit. Providers
	// on HTTP also cap what they read from the server in proportion to it
	// (see package providers/kit).
	MaxBytes int64
	// MaxToolCalls bounds the tool calls of one response. 0 means
	// DefaultMaxToolCalls (1,000); negative means no limit.
	MaxToolCalls int
}

// Norm returns l with its zero fields replaced by the defaults; a negative
// field (no limit) stays negative.
func (l ResponseLimits) Norm() ResponseLimits {
	if l.MaxBytes == 0 {
		l.MaxBytes = DefaultMaxResponseBytes
	}
	if l.MaxToolCalls == 0 {
		l.MaxToolCalls = DefaultMaxToolCalls
	}
	return l
}

// ErrResponseTooLarge is matched by errors.Is against the error of a
// response cut off at one of its limits. It is never retried.
var ErrResponseTooLarge = errors.New("the model's response is too large")

// ResponseTooLargeError is a model response cut off at a limit.
type ResponseTooLargeError struct {
	// Limit is the limit passed: LimitBytes or LimitToolCalls.
	Limit string
	// Max is the cap that was passed, Got how much had arrived when the
	// response was cut off (more than Max): bytes, or tool calls.
	Max, Got int64
	// Wire, when set, says the cap was on what the server sent, framing
	// included, and on which part of it ("the answer", "one event of the
	// stream", "the stream"): a cap that follows from MaxBytes; or
	// WireLine, the longest line the provider's client library reads.
	Wire string
}

// WireLine is the Wire of a response cut off at a line of its event stream
// longer than the provider's client library reads (32 MiB for the OpenAI
// and Anthropic libraries), whatever MaxBytes is.
const WireLine = "one line of the stream"

func (e *ResponseTooLargeError) Error() string {
	switch {
	case e.Limit == LimitToolCalls:
		return fmt.Sprintf("the model's response was cut off after %d tool calls: its limit is %d (%s)", e.Got, e.Max, LimitToolCalls)
	case e.Wire == WireLine:
		return fmt.Sprintf("the model's response was cut off: %s read from the server passed %s, the longest line the provider's client library reads (%s does not raise it)", e.Wire, sizeText(e.Max), LimitBytes)
	case e.Wire != "":
		return fmt.Sprintf("the model's response was cut off: %s read from the server passed %s, a cap that follows from the response limit (%s)", e.Wire, sizeText(e.Max), LimitBytes)
	}
	return fmt.Sprintf("the model's response was cut off after %s of text, reasoning and tool-call arguments: its limit is %s (%s)", sizeText(e.Got), sizeText(e.Max), LimitBytes)
}

// Is matches ErrResponseTooLarge.
func (e *ResponseTooLargeError) Is(target error) bool { return target == ErrResponseTooLarge }

// sizeText writes n bytes the way a person reads them.
func sizeText(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	case n == 1:
		return "1 byte"
	}
	return fmt.Sprintf("%d bytes", n)
}

// Meter counts one response against its limits as it arrives.
type Meter struct {
	lim   ResponseLimits
	bytes int64
	calls int
}

// NewMeter returns a meter of one response under l.
func NewMeter(l ResponseLimits) *Meter { return &Meter{lim: l.Norm()} }

// Add counts the content of one stream event: text, reasoning, a tool
// call's id, name and arguments, and the tool calls (by their index, so a
// call is counted once however many events it takes). It returns a
// *ResponseTooLargeError once the response passes a limit, and an error for
// an event that names a negative tool-call index. EventDone is not counted:
// check its response with ResponseLimits.Check.
func (m *Meter) Add(ev StreamEvent) error {
	switch ev.Type {
	case EventTextDelta, EventReasoningDelta:
		return m.Count(len(ev.Text))
	case EventToolCallStart, EventToolCallDelta:
		if ev.Index < 0 {
			return fmt.Errorf("the model's stream named tool call %d", ev.Index)
		}
		if ev.Index >= m.calls {
			m.calls = ev.Index + 1
			if m.lim.MaxToolCalls >= 0 && m.calls > m.lim.MaxToolCalls {
				return &ResponseTooLargeError{Limit: LimitToolCalls, Max: int64(m.lim.MaxToolCalls), Got: int64(m.calls)}
			}
		}
		n := len(ev.ArgsDelta)
		if ev.ToolCall != nil {
			n += len(ev.ToolCall.ID) + len(ev.ToolCall.Name)
		}
		return m.Count(n)
	}
	return nil
}

// Count adds n bytes of the response, such as content a provider adapter
// keeps without streaming it (a signature, a refusal), and returns a
// *ResponseTooLargeError once the response passes MaxBytes.
func (m *Meter) Count(n int) error {
	m.bytes += int64(n)
	if m.lim.MaxBytes >= 0 && m.bytes > m.lim.MaxBytes {
		return &ResponseTooLargeError{Limit: LimitBytes, Max: m.lim.MaxBytes, Got: m.bytes}
	}
	return nil
}

// Check measures a complete response (a Generate answer, or the response
// of a stream's EventDone) against l: its text, parts (reasoning with its
// signatures and encrypted content, images), tool calls and refusal.
func (l ResponseLimits) Check(resp *Response) error {
	if resp == nil {
		return nil
	}
	l = l.Norm()
	msg := &resp.Message
	if l.MaxToolCalls >= 0 && len(msg.ToolCalls) > l.MaxToolCalls {
		return &ResponseTooLargeError{Limit: LimitToolCalls, Max: int64(l.MaxToolCalls), Got: int64(len(msg.ToolCalls))}
	}
	if l.MaxBytes < 0 {
		return nil
	}
	n := int64(len(msg.Content) + len(resp.Refusal))
	for _, p := range msg.Parts {
		n += int64(len(p.Text))
		if p.Image != nil {
			n += int64(len(p.Image.Data) + len(p.Image.URL))
		}
		if r := p.Reasoning; r != nil {
			n += int64(len(r.Signature) + len(r.Encrypted) + len(r.ID) + len(r.Extra))
		}
	}
	for _, c := range msg.ToolCalls {
		n += int64(len(c.ID) + len(c.Name) + len(c.Args))
	}
	for _, v := range msg.Extra {
		n += int64(len(v))
	}
	if n > l.MaxBytes {
		return &ResponseTooLargeError{Limit: LimitBytes, Max: l.MaxBytes, Got: n}
	}
	return nil
}

type limitsKey struct{}

// WithResponseLimits returns ctx carrying l, for the model called with it.
func WithResponseLimits(ctx context.Context, l ResponseLimits) context.Context {
	return context.WithValue(ctx, limitsKey{}, l)
}

// ResponseLimitsFrom returns the limits ctx carries, or the zero value (the
// defaults) when it carries none.
func ResponseLimitsFrom(ctx context.Context) ResponseLimits {
	l, _ := ctx.Value(limitsKey{}).(ResponseLimits)
	return l
}

// CollectLimited is Collect under l: a stream that passes a limit is cut
// off there with a *ResponseTooLargeError and no response.
func CollectLimited(stream iter.Seq2[StreamEvent, error], l ResponseLimits) (*Response, error) {
	var acc Accumulator
	for ev, err := range Limited(stream, l) {
		if err != nil {
			return nil, err
		}
		if resp := acc.Add(ev); resp != nil {
			return resp, nil
		}
	}
	return acc.Partial(), ErrStreamIncomplete
}
