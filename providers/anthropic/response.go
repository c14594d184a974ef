package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/deepagents-go/deepagents/llm"
)

// response maps an API message to our response. hasUsage says whether the
// API reported usage at all.
func (b *built) response(msg *anthropic.Message, hasUsage bool) *llm.Response {
	var parts []llm.Part
	var answer string
	var calls []llm.ToolCall
	for _, cb := range msg.Content {
		switch cb.Type {
		case "text":
			if cb.Text != "" {
				parts = append(parts, llm.TextPart(cb.Text))
			}
		case "thinking":
			parts = append(parts, llm.ReasoningPart(cb.Thinking, &llm.Reasoning{
				Provider: ProviderName, Signature: cb.Signature, Extra: callsExtra(len(calls))}))
		case "redacted_thinking":
			parts = append(parts, llm.ReasoningPart("", &llm.Reasoning{
				Provider: ProviderName, Encrypted: cb.Data, Extra: callsExtra(len(calls))}))
		case "tool_use":
			args := responseArgs(cb.Input)
			if b.answerTool != "" && cb.Name == b.answerTool {
				answer = string(args)
				continue
			}
			calls = append(calls, llm.ToolCall{ID: cb.ID, Name: cb.Name, Args: args})
		}
	}
	if b.answerTool != "" && answer != "" {
		// The forced tool's input is the structured answer.
		kept := parts[:0]
		for _, p := range parts {
			if p.Type != llm.PartText {
				kept = append(kept, p)
			}
		}
		parts = append(kept, llm.TextPart(answer))
	}
	out := llm.NewMessage(llm.RoleAssistant, parts...)
	out.ToolCalls = calls
	resp := &llm.Response{
		Message:    out,
		Usage:      usage(msg.Usage, hasUsage),
		StopReason: stopReason(msg.StopReason, len(calls) > 0),
		Model:      string(msg.Model),
	}
	if resp.StopReason == llm.StopRefusal {
		resp.Refusal = refusal(msg)
	}
	return resp
}

// refusal explains a refusal in the API's words when it gave some, else in
// the text the model wrote, else in a sentence of ours.
func refusal(msg *anthropic.Message) string {
	if e := strings.TrimSpace(msg.StopDetails.Explanation); e != "" {
		return e
	}
	var text strings.Builder
	for _, cb := range msg.Content {
		if cb.Type == "text" {
			text.WriteString(cb.Text)
		}
	}
	if t := strings.TrimSpace(text.String()); t != "" {
		return t
	}
	if c := msg.StopDetails.Category; c != "" {
		return fmt.Sprintf("The model declined to answer (the provider's policy category %q).", c)
	}
	return "The model declined to answer."
}

// responseArgs returns a call's input compacted, or as received when it is
// not valid JSON, so the tool reports the problem instead of running with
// made-up arguments.
func responseArgs(in json.RawMessage) json.RawMessage {
	in = bytes.TrimSpace(in)
	if len(in) == 0 {
		return json.RawMessage(`{}`)
	}
	var buf bytes.Buffer
	if json.Compact(&buf, in) == nil {
		return buf.Bytes()
	}
	return append(json.RawMessage(nil), in...)
}

// usage reports the whole prompt as InputTokens (the API counts cache reads
// and writes separately from input_tokens) and the thinking tokens as
// ReasoningTokens (part of OutputTokens, as the API counts them). Without
// any usage from the API it is marked Unknown, not zero.
func usage(u anthropic.Usage, reported bool) llm.Usage {
	if !reported {
		return llm.Usage{Unknown: true}
	}
	return llm.Usage{
		InputTokens:       int(u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens),
		OutputTokens:      int(u.OutputTokens),
		CachedInputTokens: int(u.CacheReadInputTokens),
		CacheWriteTokens:  int(u.CacheCreationInputTokens),
		ReasoningTokens:   int(u.OutputTokensDetails.ThinkingTokens),
	}
}

func stopReason(r anthropic.StopReason, hasCalls bool) llm.StopReason {
	switch r {
	case anthropic.StopReasonEndTurn, anthropic.StopReasonStopSequence:
		return llm.StopEnd
	case anthropic.StopReasonToolUse:
		if !hasCalls {
			// Only the forced structured-output tool was called.
			return llm.StopEnd
		}
		return llm.StopToolCalls
	case anthropic.StopReasonMaxTokens, anthropic.StopReasonModelContextWindowExceeded:
		return llm.StopMaxTokens
	case anthropic.StopReasonRefusal:
		return llm.StopRefusal
	}
	return llm.StopOther
}
