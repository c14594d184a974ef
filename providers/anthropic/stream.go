package anthropic

import (
	"context"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/deepagents-go/deepagents/llm"
)

// streamOnce runs one streaming attempt: it maps SSE events to stream events
// as they arrive and assembles the final message with the SDK's accumulator,
// so a streamed response is built exactly like a non-streamed one.
func (m *Model) streamOnce(ctx context.Context, b *built, yield func(llm.StreamEvent, error) bool) {
	stream := m.client.Messages.NewStreaming(ctx, b.params, b.opts...)
	defer stream.Close()

	var msg anthropic.Message
	calls := map[int64]int{}   // content-block index → tool-call index
	answer := map[int64]bool{} // blocks of the forced answer tool, streamed as text
	n := 0
	started := false
	hasUsage := false // whether message_start or message_delta reported usage
	emit := func(ev llm.StreamEvent) bool { return yield(ev, nil) }

	for stream.Next() {
		ev := stream.Current()
		if err := msg.Accumulate(ev); err != nil {
			yield(llm.StreamEvent{}, &llm.APIError{Kind: llm.ErrKindNetwork, Provider: ProviderName,
				Message: "malformed event stream: " + err.Error(), Err: err})
			return
		}
		switch ev.Type {
		case "message_start":
			started = true
			hasUsage = hasUsage || ev.Message.JSON.Usage.Valid()
		case "message_delta":
			hasUsage = hasUsage || ev.JSON.Usage.Valid()
		case "content_block_start":
			cb := ev.ContentBlock
			switch cb.Type {
			case "text":
				if cb.Text != "" && !emit(llm.StreamEvent{Type: llm.EventTextDelta, Text: cb.Text}) {
					return
				}
			case "thinking":
				if cb.Thinking != "" && !emit(llm.StreamEvent{Type: llm.EventReasoningDelta, Text: cb.Thinking}) {
					return
				}
			case "tool_use":
				if b.answerTool != "" && cb.Name == b.answerTool {
					answer[ev.Index] = true
					continue
				}
				calls[ev.Index] = n
				n++
				if !emit(llm.StreamEvent{Type: llm.EventToolCallStart, Index: calls[ev.Index], ToolCall: &llm.ToolCall{ID: cb.ID, Name: cb.Name}}) {
					return
				}
			}
		case "content_block_delta":
			d := ev.Delta
			var out llm.StreamEvent
			switch d.Type {
			case "text_delta":
				out = llm.StreamEvent{Type: llm.EventTextDelta, Text: d.Text}
			case "thinking_delta":
				out = llm.StreamEvent{Type: llm.EventReasoningDelta, Text: d.Thinking}
			case "input_json_delta":
				if answer[ev.Index] {
					out = llm.StreamEvent{Type: llm.EventTextDelta, Text: d.PartialJSON}
				} else if k, ok := calls[ev.Index]; ok {
					out = llm.StreamEvent{Type: llm.EventToolCallDelta, Index: k, ArgsDelta: d.PartialJSON}
				}
			}
			if out.Type != "" && (out.Text != "" || out.ArgsDelta != "") && !emit(out) {
				return
			}
		case "message_stop":
			if !started {
				yield(llm.StreamEvent{}, &llm.APIError{Kind: llm.ErrKindNetwork, Provider: ProviderName,
					Message: "malformed event stream: message_stop without message_start"})
				return
			}
			emit(llm.StreamEvent{Type: llm.EventDone, Response: b.response(&msg, hasUsage)})
			return
		}
	}
	err := stream.Err()
	if err == nil {
		err = &llm.APIError{Kind: llm.ErrKindNetwork, Provider: ProviderName,
			Message: "the event stream ended before message_stop"}
	}
	yield(llm.StreamEvent{}, toAPIError(ctx, err))
}
