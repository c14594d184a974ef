package anthropictest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
)

// Reply is what the server answers to one request: an assistant message
// (thinking, then text, then tool calls) or, with Error, an API error.
type Reply struct {
	Thinking  []Thinking
	Text      string
	ToolCalls []ToolCall
	// StopReason defaults to "tool_use" with tool calls, else "end_turn".
	StopReason string
	// Usage defaults to a size-based estimate.
	Usage *Usage
	// NoUsage leaves usage out of the reply altogether (as some proxies
	// do), streamed or not.
	NoUsage bool
	// Refusal ends the reply with stop_reason "refusal" and these
	// stop_details.
	Refusal *Refusal
	// Model defaults to the requested model.
	Model string
	// Chunk is the size in runes of the text, thinking and input_json
	// deltas of a streamed reply (default 4), so even short replies arrive
	// in many pieces.
	Chunk int

	// Error answers with this HTTP error instead of a message.
	Error *Error
	// Fault ends the reply abnormally.
	Fault *Fault
}

// Thinking is a thinking block, or with Redacted set a redacted_thinking
// block carrying that data. An empty Signature is filled with Sign(Text).
// The server remembers every signature and redacted block it hands out and
// rejects requests that send one back altered.
type Thinking struct {
	Text      string
	Signature string
	Redacted  string
}

// Refusal is the stop_details of a refusal. Category and Explanation may be
// empty (sent as null).
type Refusal struct {
	Category    string
	Explanation string
}

// ToolCall is a tool_use block. An empty ID is filled with a unique one.
type ToolCall struct {
	ID    string
	Name  string
	Input json.RawMessage
}

// Usage is the usage the reply reports.
type Usage struct {
	InputTokens              int
	OutputTokens             int
	CacheReadInputTokens     int
	CacheCreationInputTokens int
	// ThinkingTokens is output_tokens_details.thinking_tokens, the part of
	// OutputTokens spent thinking.
	ThinkingTokens int
}

// Error is an API error: an HTTP status with the error body's type and
// message. Either Status or Type may be left out; each is derived from the
// other. Header adds response headers, e.g. retry-after.
type Error struct {
	Status  int
	Type    string
	Message string
	Header  http.Header
}

// Fault interrupts a reply.
//
// With Drop the connection is closed, with Hang the server waits until the
// client goes away, and with Error (streams only) an SSE `error` event ends
// the stream. After is the number of SSE events written first; with
// After == 0, Drop and Hang happen before the status line, so the client
// gets no response at all. Non-streamed replies are dropped or hung before
// any byte is written, whatever After says.
type Fault struct {
	After int
	Drop  bool
	Hang  bool
	Error *Error
}

// Text is a reply with only text.
func Text(s string) Reply { return Reply{Text: s} }

// Calls is a reply with only tool calls.
func Calls(calls ...ToolCall) Reply { return Reply{ToolCalls: calls} }

// Call builds a tool call whose input is v encoded as JSON; it panics if v
// cannot be encoded.
func Call(name string, v any) ToolCall {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("anthropictest.Call(%s): %v", name, err))
	}
	return ToolCall{Name: name, Input: b}
}

// Fail is a reply that is an API error.
func Fail(status int, errType, message string) Reply {
	return Reply{Error: &Error{Status: status, Type: errType, Message: message}}
}

// Handler chooses the reply to a request. The server calls it from the
// request's goroutine, so it must be safe for concurrent use.
type Handler interface {
	Reply(req *Request) Reply
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(req *Request) Reply

// Reply calls f.
func (f HandlerFunc) Reply(req *Request) Reply { return f(req) }

// Sequence answers the requests in arrival order: the n-th request the
// handler sees gets replies[n]. Use it for one conversation whose requests
// include failures and retries.
func Sequence(replies ...Reply) Handler {
	var mu sync.Mutex
	n := 0
	return HandlerFunc(func(req *Request) Reply {
		mu.Lock()
		i := n
		n++
		mu.Unlock()
		if i < len(replies) {
			return replies[i]
		}
		return exhausted(req, fmt.Sprintf("the sequence has %d replies and this is request %d of it", len(replies), i+1))
	})
}

// Conversation answers by the number of assistant turns already in the
// request: replies[0] to a conversation's first request, replies[1] once
// one reply is in its history, and so on. It keeps no state, so parallel
// conversations (subagent instances) and retried requests get consistent
// answers.
func Conversation(replies ...Reply) Handler {
	return HandlerFunc(func(req *Request) Reply {
		i := req.AssistantTurns()
		if i < len(replies) {
			return replies[i]
		}
		return exhausted(req, fmt.Sprintf("the conversation has %d replies and this request has %d assistant turns", len(replies), i))
	})
}

// Matcher selects requests for a Router route.
type Matcher func(req *Request) bool

// FirstUserContains matches conversations whose first user turn contains s,
// e.g. a subagent's brief.
func FirstUserContains(s string) Matcher {
	return func(req *Request) bool { return strings.Contains(req.FirstUserText(), s) }
}

// SystemContains matches requests whose system prompt contains s.
func SystemContains(s string) Matcher {
	return func(req *Request) bool { return strings.Contains(req.SystemText(), s) }
}

// OffersTool matches requests that define a tool of this name, e.g. "task"
// to tell a parent agent from its subagents.
func OffersTool(name string) Matcher {
	return func(req *Request) bool { return req.OffersTool(name) }
}

// Not inverts m.
func Not(m Matcher) Matcher { return func(req *Request) bool { return !m(req) } }

// All matches requests every one of ms matches.
func All(ms ...Matcher) Matcher {
	return func(req *Request) bool {
		for _, m := range ms {
			if !m(req) {
				return false
			}
		}
		return true
	}
}

// Router hands each request to the handler of the first route whose
// matcher accepts it. Routes are added before the server starts serving.
type Router struct {
	routes []route
}

type route struct {
	match Matcher
	h     Handler
}

// NewRouter returns an empty router.
func NewRouter() *Router { return &Router{} }

// On adds a route and returns r.
func (r *Router) On(m Matcher, h Handler) *Router {
	r.routes = append(r.routes, route{m, h})
	return r
}

// Reply implements Handler. A request no route matches is answered with a
// 400 error naming it.
func (r *Router) Reply(req *Request) Reply {
	for _, rt := range r.routes {
		if rt.match(req) {
			return rt.h.Reply(req)
		}
	}
	return exhausted(req, "no route matches")
}

func exhausted(req *Request, why string) Reply {
	first := req.FirstUserText()
	if len(first) > 80 {
		first = first[:80] + "..."
	}
	return Fail(http.StatusBadRequest, "invalid_request_error",
		fmt.Sprintf("anthropictest: no scripted reply for request #%d (%s; first user text %q)", req.N, why, first))
}
