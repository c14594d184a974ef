package openai

import (
	"encoding/json"
	"slices"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/respjson"

	"github.com/deepagents-go/deepagents/llm"
)

// reasoningFields are the non-standard message fields in which
// OpenAI-compatible servers return visible reasoning: vLLM, DeepSeek and
// llama.cpp use reasoning_content, Ollama and OpenRouter use reasoning.
var reasoningFields = []string{"reasoning_content", "reasoning"}

// errNoChoices is the message of an answer, streamed or not, that carries no
// choice at all.
const errNoChoices = "the response has no choices"

// response maps a complete Chat Completions response.
func (m *Model) response(c *sdk.ChatCompletion) (*llm.Response, error) {
	if c == nil || len(c.Choices) == 0 {
		return nil, &llm.APIError{Kind: llm.ErrKindServer, Provider: m.provider, Message: errNoChoices}
	}
	ch := c.Choices[0]
	msg := llm.Message{Role: llm.RoleAssistant, Content: ch.Message.Content}
	if field, r := extraString(ch.Message.JSON.ExtraFields); r != "" {
		msg.SetParts(reasoningThenText(m.provider, field, r, msg.Content))
	}
	for _, tc := range ch.Message.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			continue // we never offer custom tools
		}
		msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{
			ID:   tc.ID,
			Name: tc.Function.Name,
			Args: json.RawMessage(argsString(json.RawMessage(arguments(tc.Function.Arguments, tc.Function.JSON.Arguments)))),
		})
	}
	resp := &llm.Response{Message: msg, StopReason: stopReason(ch.FinishReason, len(msg.ToolCalls) > 0), Model: c.Model}
	if ch.Message.Refusal != "" {
		resp.Refusal = ch.Message.Refusal
		resp.StopReason = llm.StopRefusal
	}
	if c.JSON.Usage.Valid() {
		resp.Usage = usage(c.Usage)
	} else {
		resp.Usage = llm.Usage{Unknown: true}
	}
	return resp, nil
}

// reasoningThenText returns the parts of an answer whose readable reasoning
// came in a compatible server's reasoning field (field): it is marked as
// provider's, with the field's name, so that it can go back in that field
// (see assistantReasoning).
func reasoningThenText(provider, field, reasoning, text string) []llm.Part {
	r := &llm.Reasoning{Provider: provider}
	if field != "" {
		r.Extra, _ = json.Marshal(chatReasoning{Field: field})
	}
	parts := []llm.Part{llm.ReasoningPart(reasoning, r)}
	if text != "" {
		parts = append(parts, llm.TextPart(text))
	}
	return parts
}

// chatReasoning is the Extra of a reasoning part that came in a Chat
// Completions message field: the field's name.
type chatReasoning struct {
	Field string `json:"chat_field"`
}

// assistantReasoning returns the field and the text of the reasoning to
// send back with an assistant message that calls tools: the readable
// reasoning this provider returned in a message field, joined. Servers that
// think between tool calls (DeepSeek's thinking mode) answer 400 when a
// tool-calling message comes back without it; the others take it or ignore
// it. Reasoning of other providers, or not from such a field, is left out.
func (m *Model) assistantReasoning(msg llm.Message) (field, text string) {
	if m.cfg.NoReasoningBack || len(msg.ToolCalls) == 0 {
		return "", ""
	}
	var b strings.Builder
	for _, p := range msg.ReasoningFor(m.provider) {
		var cr chatReasoning
		if len(p.Reasoning.Extra) == 0 || json.Unmarshal(p.Reasoning.Extra, &cr) != nil || !slices.Contains(reasoningFields, cr.Field) {
			continue
		}
		if field != "" && cr.Field != field {
			continue
		}
		field = cr.Field
		b.WriteString(p.Text)
	}
	if b.Len() == 0 {
		return "", ""
	}
	return field, b.String()
}

// stopReason normalises finish_reason. Some compatible servers answer "stop"
// even when the message calls tools, so tool calls win.
func stopReason(finish string, hasCalls bool) llm.StopReason {
	switch finish {
	case "tool_calls", "function_call":
		return llm.StopToolCalls
	case "length":
		return llm.StopMaxTokens
	case "content_filter":
		return llm.StopFiltered
	case "stop", "":
		if hasCalls {
			return llm.StopToolCalls
		}
		return llm.StopEnd
	}
	if hasCalls {
		return llm.StopToolCalls
	}
	return llm.StopOther
}

// usage maps the usage object. Reasoning tokens are part of the completion
// tokens on the wire as in llm.Usage.
func usage(u sdk.CompletionUsage) llm.Usage {
	return llm.Usage{
		InputTokens:       int(u.PromptTokens),
		OutputTokens:      int(u.CompletionTokens),
		CachedInputTokens: int(u.PromptTokensDetails.CachedTokens),
		CacheWriteTokens:  int(u.PromptTokensDetails.CacheWriteTokens),
		ReasoningTokens:   int(u.CompletionTokensDetails.ReasoningTokens),
	}
}

// arguments returns a tool call's arguments text. Some compatible servers
// send the arguments as a JSON object instead of a string holding one; the
// SDK cannot decode that into its string field, so the raw object is used.
func arguments(s string, f respjson.Field) string {
	if s != "" {
		return s
	}
	raw := strings.TrimSpace(f.Raw())
	if strings.HasPrefix(raw, "{") {
		return raw
	}
	return ""
}

// extraString returns the first reasoning field present as a string, and
// its name.
func extraString(extra map[string]respjson.Field) (field, text string) {
	for _, k := range reasoningFields {
		f, ok := extra[k]
		if !ok {
			continue
		}
		var s string
		if json.Unmarshal([]byte(f.Raw()), &s) == nil && s != "" {
			return k, s
		}
	}
	return "", ""
}
