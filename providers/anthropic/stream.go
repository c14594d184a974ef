package anthropic

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/deepagents-go/deepagents/internal/textbuf"
	"github.com/deepagents-go/deepagents/llm"
)

// streamOnce runs one streaming attempt: it maps SSE events to stream events
// as they arrive and assembles the final message like the SDK's accumulator
// does, so a streamed response is built exactly like a non-streamed one. The
// deltas of a block are gathered in buffers and joined once, when the
// message stops (the SDK's accumulator adds each delta to a string, which
// copies the whole block every time). What is kept but not streamed — a
// thinking block's signature, citations, blocks of server tools — counts
// against the response's limits (llm.ResponseLimitsFrom) like the streamed
// text does.
func (m *Model) streamOnce(ctx context.Context, b *built, yield func(llm.StreamEvent, error) bool) {
	stream := m.client.Messages.NewStreaming(ctx, b.params, b.opts...)
	defer stream.Close()

	var msg anthropic.Message
	var bufs []blockBuf // the deltas of each content block
	hidden := llm.NewMeter(llm.ResponseLimitsFrom(ctx))
	calls := map[int64]int{}   // content-block index → tool-call index
	answer := map[int64]bool{} // blocks of the forced answer tool, streamed as text
	n := 0
	started := false
	hasUsage := false // whether message_start or message_delta reported usage
	emit := func(ev llm.StreamEvent) bool { return yield(ev, nil) }
	malformed := func(err error) {
		yield(llm.StreamEvent{}, &llm.APIError{Kind: llm.ErrKindNetwork, Provider: ProviderName,
			Message: "malformed event stream: " + err.Error(), Err: err})
	}
	keep := func(n int) bool {
		if err := hidden.Count(n); err != nil {
			yield(llm.StreamEvent{}, err)
			return false
		}
		return true
	}

	for stream.Next() {
		ev := stream.Current()
		switch ev.Type {
		case "message_start", "message_delta", "content_block_start":
			if err := msg.Accumulate(ev); err != nil {
				malformed(err)
				return
			}
		}
		switch ev.Type {
		case "message_start":
			started = true
			hasUsage = hasUsage || ev.Message.JSON.Usage.Valid()
		case "message_delta":
			hasUsage = hasUsage || ev.JSON.Usage.Valid()
		case "content_block_start":
			bufs = append(bufs, blockBuf{})
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
			default:
				if !keep(len(cb.RawJSON())) {
					return
				}
			}
		case "content_block_delta":
			if ev.Index < 0 || ev.Index >= int64(len(bufs)) {
				malformed(fmt.Errorf("a delta for content block %d of %d", ev.Index, len(bufs)))
				return
			}
			d := ev.Delta
			buf := &bufs[ev.Index]
			var out llm.StreamEvent
			switch d.Type {
			case "text_delta":
				buf.text.WriteString(d.Text)
				out = llm.StreamEvent{Type: llm.EventTextDelta, Text: d.Text}
			case "thinking_delta":
				buf.thinking.WriteString(d.Thinking)
				out = llm.StreamEvent{Type: llm.EventReasoningDelta, Text: d.Thinking}
			case "input_json_delta":
				buf.input.WriteString(d.PartialJSON)
				if answer[ev.Index] {
					out = llm.StreamEvent{Type: llm.EventTextDelta, Text: d.PartialJSON}
				} else if k, ok := calls[ev.Index]; ok {
					out = llm.StreamEvent{Type: llm.EventToolCallDelta, Index: k, ArgsDelta: d.PartialJSON}
				} else if !keep(len(d.PartialJSON)) { // a server tool's input
					return
				}
			case "signature_delta":
				if !keep(len(d.Signature)) {
					return
				}
				buf.signature.WriteString(d.Signature)
			case "citations_delta":
				if !keep(len(d.Citation.RawJSON())) {
					return
				}
				if err := msg.Accumulate(ev); err != nil {
					malformed(err)
					return
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
			for i := range bufs {
				bufs[i].into(&msg.Content[i])
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

// blockBuf gathers the deltas of one content block.
type blockBuf struct {
	text, thinking, signature, input textbuf.Buffer
}

// into adds the gathered deltas to cb as the SDK's accumulator would have:
// text, thinking and signature appended, input replacing the empty object a
// tool_use block starts with.
func (b *blockBuf) into(cb *anthropic.ContentBlockUnion) {
	if b.text.Len() > 0 {
		cb.Text += b.text.String()
	}
	if b.thinking.Len() > 0 {
		cb.Thinking += b.thinking.String()
	}
	if b.signature.Len() > 0 {
		cb.Signature += b.signature.String()
	}
	if b.input.Len() > 0 {
		if string(cb.Input) == "{}" {
			cb.Input = json.RawMessage(b.input.String())
		} else {
			cb.Input = append(cb.Input, b.input.String()...)
		}
	}
}
