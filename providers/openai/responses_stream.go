package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"sort"

	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/deepagents-go/deepagents/llm"
)

// rEvent is one server-sent event of a streamed Responses API answer; each
// type uses some of the fields.
type rEvent struct {
	Type         string          `json:"type"`
	OutputIndex  int             `json:"output_index"`
	SummaryIndex int             `json:"summary_index"`
	Delta        string          `json:"delta"`
	Item         *rItem          `json:"item"`
	Response     *rResponse      `json:"response"`
	Code         json.RawMessage `json:"code"`
	Message      string          `json:"message"`
}

// rStream assembles a streamed Responses API answer.
type rStream struct {
	callAt   map[int]int // output index of a function call -> its position
	calls    int
	items    map[int]rItem // finished output items by output index
	final    *rResponse    // the response of the terminal event
	terminal bool          // response.completed, .incomplete or .failed arrived
	buf      []llm.StreamEvent
	// hidden counts the finished items kept but not streamed against the
	// response's limits.
	hidden *llm.Meter
}

// add folds one event in and returns the stream events it produced (valid
// until the next call) or the error a failed response or error event carries.
func (s *rStream) add(m *Model, data []byte) ([]llm.StreamEvent, error) {
	s.buf = s.buf[:0]
	var ev rEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return nil, &llm.APIError{Kind: llm.ErrKindServer, Provider: m.provider, Message: "malformed stream event: " + err.Error(), Err: err}
	}
	switch ev.Type {
	case "response.output_item.added":
		if ev.Item != nil && ev.Item.Type == "function_call" {
			if s.callAt == nil {
				s.callAt = map[int]int{}
			}
			if _, seen := s.callAt[ev.OutputIndex]; !seen {
				pos := s.calls
				s.calls++
				s.callAt[ev.OutputIndex] = pos
				s.buf = append(s.buf, llm.StreamEvent{Type: llm.EventToolCallStart, Index: pos,
					ToolCall: &llm.ToolCall{ID: ev.Item.CallID, Name: ev.Item.Name}})
			}
		}
	case "response.function_call_arguments.delta":
		if pos, ok := s.callAt[ev.OutputIndex]; ok && ev.Delta != "" {
			s.buf = append(s.buf, llm.StreamEvent{Type: llm.EventToolCallDelta, Index: pos, ArgsDelta: ev.Delta})
		}
	case "response.reasoning_summary_part.added":
		if ev.SummaryIndex > 0 {
			// Summaries are joined by a blank line in the final text.
			s.buf = append(s.buf, llm.StreamEvent{Type: llm.EventReasoningDelta, Text: "\n\n"})
		}
	case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
		if ev.Delta != "" {
			s.buf = append(s.buf, llm.StreamEvent{Type: llm.EventReasoningDelta, Text: ev.Delta})
		}
	case "response.output_text.delta":
		if ev.Delta != "" {
			s.buf = append(s.buf, llm.StreamEvent{Type: llm.EventTextDelta, Text: ev.Delta})
		}
	case "response.output_item.done":
		if s.hidden != nil {
			if err := s.hidden.Count(len(data)); err != nil {
				return nil, err
			}
		}
		if ev.Item != nil {
			if s.items == nil {
				s.items = map[int]rItem{}
			}
			s.items[ev.OutputIndex] = *ev.Item
		}
	case "response.completed", "response.incomplete":
		s.terminal = true
		s.final = ev.Response
	case "response.failed":
		s.terminal = true
		var errObj json.RawMessage
		if ev.Response != nil {
			errObj = ev.Response.Error
		}
		return nil, m.failed(errObj)
	case "error":
		return nil, m.streamError(&ssestream.StreamError{Message: "received error while streaming: " + ev.Message,
			Event: ssestream.Event{Data: data}})
	}
	return s.buf, nil
}

// response is the complete response: the terminal event's, with the
// finished items filling in an output it left out.
func (s *rStream) response(m *Model) (*llm.Response, error) {
	r := s.final
	if r == nil {
		r = &rResponse{Status: "completed"}
	}
	if len(r.Output) == 0 && len(s.items) > 0 {
		idx := make([]int, 0, len(s.items))
		for i := range s.items {
			idx = append(idx, i)
		}
		sort.Ints(idx)
		for _, i := range idx {
			r.Output = append(r.Output, s.items[i])
		}
	}
	return m.fromResponses(r)
}

// streamResponses is one streaming attempt on the Responses API. Like the
// Chat Completions stream, a stream that ends without a terminal event is a
// broken connection, never a short answer.
func (m *Model) streamResponses(ctx context.Context, body []byte) iter.Seq2[llm.StreamEvent, error] {
	return func(yield func(llm.StreamEvent, error) bool) {
		var raw *http.Response
		err := m.client.Post(ctx, "responses", body, nil,
			option.WithHeader("Accept", "text/event-stream"),
			option.WithResponseBodyInto(&raw))
		if !m.openedStream(ctx, raw, err, m.decodeResponses, yield) {
			return
		}
		defer raw.Body.Close()
		dec := ssestream.NewDecoder(raw)
		defer dec.Close()
		st := rStream{hidden: llm.NewMeter(llm.ResponseLimitsFrom(ctx))}
		for !st.terminal && dec.Next() {
			data := bytes.TrimSpace(dec.Event().Data)
			if len(data) == 0 || string(data) == "[DONE]" {
				continue
			}
			evs, err := st.add(m, data)
			if err != nil {
				yield(llm.StreamEvent{}, err)
				return
			}
			for _, e := range evs {
				if !yield(e, nil) {
					return
				}
			}
		}
		if err := dec.Err(); err != nil && !st.terminal {
			yield(llm.StreamEvent{}, m.mapError(ctx, err, nil))
			return
		}
		if ctx.Err() != nil {
			yield(llm.StreamEvent{}, context.Cause(ctx))
			return
		}
		if !st.terminal {
			yield(llm.StreamEvent{}, &llm.APIError{Kind: llm.ErrKindNetwork, Provider: m.provider,
				Message: errStreamCut.Error(), Err: errStreamCut})
			return
		}
		resp, err := st.response(m)
		if err != nil {
			yield(llm.StreamEvent{}, err)
			return
		}
		yield(llm.StreamEvent{Type: llm.EventDone, Response: resp}, nil)
	}
}
