package anthropic

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/deepagents-go/deepagents/llm"
)

// savedBlock is one entry of the content skeleton kept in
// Message.Extra["anthropic"]: thinking and redacted_thinking blocks in full
// (their signatures must go back unchanged), text and tool_use blocks as
// placeholders that mark where they stood, so the next request rebuilds
// the assistant turn in its original block order.
type savedBlock struct {
	Type      string `json:"type"`
	Thinking  string `json:"thinking,omitempty"`
	Signature string `json:"signature,omitempty"`
	Data      string `json:"data,omitempty"`
	ID        string `json:"id,omitempty"` // tool_use placeholders
}

// savedContent is the value of Message.Extra["anthropic"].
type savedContent struct {
	Content []savedBlock `json:"content"`
}

// savedBlocks returns the skeleton saved in m, or nil.
func savedBlocks(m llm.Message) []savedBlock {
	raw, ok := m.Extra[ProviderName]
	if !ok {
		return nil
	}
	var sc savedContent
	if json.Unmarshal(raw, &sc) != nil {
		return nil
	}
	return sc.Content
}

// response maps an API message to our response.
func (b *built) response(msg *anthropic.Message) *llm.Response {
	var text, reasoning strings.Builder
	var answer string
	var calls []llm.ToolCall
	var skel []savedBlock
	thinking := false
	for _, cb := range msg.Content {
		switch cb.Type {
		case "text":
			text.WriteString(cb.Text)
			skel = append(skel, savedBlock{Type: "text"})
		case "thinking":
			reasoning.WriteString(cb.Thinking)
			skel = append(skel, savedBlock{Type: "thinking", Thinking: cb.Thinking, Signature: cb.Signature})
			thinking = true
		case "redacted_thinking":
			skel = append(skel, savedBlock{Type: "redacted_thinking", Data: cb.Data})
			thinking = true
		case "tool_use":
			args := responseArgs(cb.Input)
			if b.answerTool != "" && cb.Name == b.answerTool {
				answer = string(args)
				continue
			}
			calls = append(calls, llm.ToolCall{ID: cb.ID, Name: cb.Name, Args: args})
			skel = append(skel, savedBlock{Type: "tool_use", ID: cb.ID})
		}
	}
	out := llm.Message{Role: llm.RoleAssistant, Content: text.String(), ToolCalls: calls}
	if r := reasoning.String(); r != "" {
		out.SetParts(llm.ReasoningThenText(r, out.Content))
	}
	if b.answerTool != "" && answer != "" {
		// The forced tool's input is the structured answer.
		out.Content = answer
	}
	if thinking {
		raw, _ := json.Marshal(savedContent{Content: skel})
		out.Extra = map[string]json.RawMessage{ProviderName: raw}
	}
	return &llm.Response{
		Message:    out,
		Usage:      usage(msg.Usage.InputTokens, msg.Usage.OutputTokens, msg.Usage.CacheReadInputTokens, msg.Usage.CacheCreationInputTokens),
		StopReason: stopReason(msg.StopReason, len(calls) > 0),
		Model:      msg.Model,
	}
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

// usage reports the whole prompt as InputTokens: the API counts cache reads
// and writes separately from input_tokens.
func usage(input, output, cacheRead, cacheWrite int64) llm.Usage {
	return llm.Usage{
		InputTokens:       int(input + cacheRead + cacheWrite),
		OutputTokens:      int(output),
		CachedInputTokens: int(cacheRead),
		CacheWriteTokens:  int(cacheWrite),
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
		return llm.StopFiltered
	}
	return llm.StopOther
}
