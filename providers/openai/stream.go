package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"iter"
	"mime"
	"net/http"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/deepagents-go/deepagents/internal/textbuf"
	"github.com/deepagents-go/deepagents/llm"
)

// streamOnce is one streaming attempt. It reads the server-sent events
// itself (rather than through the SDK's Stream) so that it can tell a stream
// that ended with "data: [DONE]" from one whose connection was closed early:
// the latter is a network error, never a short answer.
func (m *Model) streamOnce(ctx context.Context, params sdk.ChatCompletionNewParams) iter.Seq2[llm.StreamEvent, error] {
	return func(yield func(llm.StreamEvent, error) bool) {
		var raw *http.Response
		_, err := m.client.Chat.Completions.New(ctx, params,
			option.WithJSONSet("stream", true),
			option.WithHeader("Accept", "text/event-stream"),
			option.WithResponseBodyInto(&raw))
		if !m.openedStream(ctx, raw, err, m.decodeChat, yield) {
			return
		}
		defer raw.Body.Close()

		dec := ssestream.NewDecoder(raw)
		defer dec.Close()
		st := streamState{provider: m.provider, hidden: llm.NewMeter(llm.ResponseLimitsFrom(ctx))}
		for dec.Next() {
			ev := dec.Event()
			data := bytes.TrimSpace(ev.Data)
			if len(data) == 0 {
				continue
			}
			if string(data) == "[DONE]" {
				st.done = true
				break
			}
			var probe struct {
				Error json.RawMessage `json:"error"`
			}
			if json.Unmarshal(data, &probe) == nil && len(probe.Error) > 0 && string(probe.Error) != "null" {
				yield(llm.StreamEvent{}, m.streamError(&ssestream.StreamError{
					Message: "received error while streaming: " + string(probe.Error), Event: ev}))
				return
			}
			var chunk sdk.ChatCompletionChunk
			if err := json.Unmarshal(data, &chunk); err != nil {
				yield(llm.StreamEvent{}, &llm.APIError{Kind: llm.ErrKindServer, Provider: m.provider,
					Message: "malformed stream chunk: " + err.Error(), Err: err})
				return
			}
			evs := st.add(&chunk)
			if st.err != nil {
				yield(llm.StreamEvent{}, st.err)
				return
			}
			for _, e := range evs {
				if !yield(e, nil) {
					return
				}
			}
		}
		if err := dec.Err(); err != nil && !(st.finished && ctx.Err() == nil && isNetwork(err)) {
			// A connection lost after the finish_reason has only cost us the
			// usage chunk; anything earlier is a broken answer.
			yield(llm.StreamEvent{}, m.mapError(ctx, err, nil))
			return
		}
		if ctx.Err() != nil {
			yield(llm.StreamEvent{}, context.Cause(ctx))
			return
		}
		if !st.done && !st.finished {
			yield(llm.StreamEvent{}, &llm.APIError{Kind: llm.ErrKindNetwork, Provider: m.provider,
				Message: errStreamCut.Error(), Err: errStreamCut})
			return
		}
		if !st.choice {
			// Like a non-streamed answer without choices: the server failed,
			// and another attempt may well succeed.
			yield(llm.StreamEvent{}, &llm.APIError{Kind: llm.ErrKindServer, Provider: m.provider, Message: errNoChoices})
			return
		}
		yield(llm.StreamEvent{Type: llm.EventDone, Response: st.response()}, nil)
	}
}

// openedStream checks the answer to a streaming request and reports
// whether its body is an event stream to read (the caller then closes it).
// Otherwise it has already yielded what there was to yield: the mapped
// error, or — when the server ignored stream:true and answered in one JSON
// piece — that answer, decoded by decode, as synthesised events.
func (m *Model) openedStream(ctx context.Context, raw *http.Response, err error,
	decode func([]byte) (*llm.Response, error), yield func(llm.StreamEvent, error) bool) bool {
	if err != nil {
		yield(llm.StreamEvent{}, m.mapError(ctx, err, raw))
		return false
	}
	if raw == nil || raw.Body == nil {
		yield(llm.StreamEvent{}, &llm.APIError{Kind: llm.ErrKindServer, Provider: m.provider, Message: "the server sent no response body"})
		return false
	}
	if mt, _, _ := mime.ParseMediaType(raw.Header.Get("Content-Type")); mt != "application/json" {
		return true
	}
	defer raw.Body.Close()
	b, err := readCapped(raw.Body)
	if err != nil {
		yield(llm.StreamEvent{}, m.mapError(ctx, err, nil))
		return false
	}
	resp, err := decode(b)
	if err != nil {
		yield(llm.StreamEvent{}, err)
		return false
	}
	for ev, err := range llm.StreamOf(ctx, nil, func(context.Context, *llm.Request) (*llm.Response, error) { return resp, nil }) {
		if !yield(ev, err) {
			break
		}
	}
	return false
}

// decodeChat decodes a complete Chat Completions answer.
func (m *Model) decodeChat(b []byte) (*llm.Response, error) {
	var c sdk.ChatCompletion
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, &llm.APIError{Kind: llm.ErrKindServer, Provider: m.provider,
			Message: "malformed response: " + err.Error(), Err: err}
	}
	return m.response(&c)
}

// streamState assembles chunks into events and the final response.
type streamState struct {
	text, reasoning textbuf.Buffer
	refusal         textbuf.Buffer
	provider        string // who the reasoning is marked as coming from
	reasoningField  string // the message field the reasoning came in
	calls           []llm.ToolCall
	args            []textbuf.Buffer
	byIndex         map[int64]int // the wire's tool-call index -> position in calls
	finish          string
	finished        bool // a finish_reason arrived
	done            bool // data: [DONE] arrived
	choice          bool // some chunk carried choice 0
	usage           llm.Usage
	hasUsage        bool // some chunk carried usage
	model           string
	buf             []llm.StreamEvent
	// hidden counts what is kept but not streamed (the refusal) against
	// the response's limits; err is set once it passes them.
	hidden *llm.Meter
	err    error
}

// add folds one chunk in and returns the events it produced (valid until the
// next call).
func (s *streamState) add(c *sdk.ChatCompletionChunk) []llm.StreamEvent {
	s.buf = s.buf[:0]
	if c.Model != "" {
		s.model = c.Model
	}
	if c.JSON.Usage.Valid() {
		s.usage = usage(c.Usage)
		s.hasUsage = true
	}
	for i := range c.Choices {
		ch := &c.Choices[i]
		if ch.Index != 0 {
			continue // we never ask for more than one choice
		}
		s.choice = true
		d := &ch.Delta
		if field, r := extraString(d.JSON.ExtraFields); r != "" {
			if s.reasoningField == "" {
				s.reasoningField = field
			}
			s.reasoning.WriteString(r)
			s.buf = append(s.buf, llm.StreamEvent{Type: llm.EventReasoningDelta, Text: r})
		}
		if d.Content != "" {
			s.text.WriteString(d.Content)
			s.buf = append(s.buf, llm.StreamEvent{Type: llm.EventTextDelta, Text: d.Content})
		}
		if d.Refusal != "" {
			// The refusal is not answer text: it is reported only in the
			// final response.
			if s.hidden != nil && s.err == nil {
				s.err = s.hidden.Count(len(d.Refusal))
			}
			s.refusal.WriteString(d.Refusal)
		}
		for j := range d.ToolCalls {
			s.toolDelta(&d.ToolCalls[j])
		}
		if ch.FinishReason != "" {
			s.finish = ch.FinishReason
			s.finished = true
		}
	}
	return s.buf
}

// toolDelta handles one tool-call fragment. The first fragment of a call
// carries its id and name; later ones extend its arguments. A fragment whose
// id differs from the call already at its index starts a new call, for
// servers that number every call 0.
func (s *streamState) toolDelta(tc *sdk.ChatCompletionChunkChoiceDeltaToolCall) {
	if s.byIndex == nil {
		s.byIndex = map[int64]int{}
	}
	pos, ok := s.byIndex[tc.Index]
	if ok && tc.ID != "" && s.calls[pos].ID != "" && tc.ID != s.calls[pos].ID {
		ok = false
	}
	if !ok {
		pos = len(s.calls)
		s.byIndex[tc.Index] = pos
		s.calls = append(s.calls, llm.ToolCall{ID: tc.ID, Name: tc.Function.Name})
		s.args = append(s.args, textbuf.Buffer{})
		s.buf = append(s.buf, llm.StreamEvent{Type: llm.EventToolCallStart, Index: pos,
			ToolCall: &llm.ToolCall{ID: tc.ID, Name: tc.Function.Name}})
	} else {
		if s.calls[pos].ID == "" {
			s.calls[pos].ID = tc.ID
		}
		if s.calls[pos].Name == "" {
			s.calls[pos].Name = tc.Function.Name
		}
	}
	if a := arguments(tc.Function.Arguments, tc.Function.JSON.Arguments); a != "" {
		s.args[pos].WriteString(a)
		s.buf = append(s.buf, llm.StreamEvent{Type: llm.EventToolCallDelta, Index: pos, ArgsDelta: a})
	}
}

// response is the complete response the stream described.
func (s *streamState) response() *llm.Response {
	msg := llm.Message{Role: llm.RoleAssistant, Content: s.text.String()}
	if r := s.reasoning.String(); r != "" {
		msg.SetParts(reasoningThenText(s.provider, s.reasoningField, r, msg.Content))
	}
	for i, c := range s.calls {
		c.Args = json.RawMessage(argsString(json.RawMessage(s.args[i].String())))
		msg.ToolCalls = append(msg.ToolCalls, c)
	}
	resp := &llm.Response{Message: msg, Usage: s.usage, StopReason: stopReason(s.finish, len(msg.ToolCalls) > 0), Model: s.model}
	if !s.hasUsage {
		resp.Usage = llm.Usage{Unknown: true}
	}
	if r := s.refusal.String(); r != "" {
		resp.Refusal = r
		resp.StopReason = llm.StopRefusal
	}
	return resp
}
