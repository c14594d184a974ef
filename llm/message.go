// Package llm defines the provider-neutral conversation types every part of
// deepagents speaks: messages, model requests and responses, streaming
// events, usage, and the Model interface that providers implement.
//
// Everything here is plain data that round-trips through encoding/json, so a
// conversation can be checkpointed, replayed or shipped over the wire without
// a provider in sight.
package llm

import (
	"encoding/json"
	"strings"
)

// Role says who authored a message.
type Role string

// The four roles of a conversation. System messages are rare in Messages: the
// system prompt normally travels in Request.System.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one turn of a conversation. The same type carries every role:
//   - user and system messages use Content;
//   - assistant messages use Content and/or ToolCalls;
//   - tool messages answer one tool call: ToolCallID, Name (the tool's name),
//     Content (the result text) and IsError.
//
// Content beyond text — images, a model's reasoning — is in Parts.
type Message struct {
	Role       Role       `json:"role"`
	Content    string     `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	Name       string     `json:"name,omitempty"`
	IsError    bool       `json:"is_error,omitempty"`
	// Parts is the ordered content of a message that carries more than text
	// (images, a model's reasoning); nil for plain text. When set, Content is
	// the text of its text parts (see SetParts).
	Parts []Part `json:"parts,omitempty"`
	// Extra holds provider-specific data that must be sent back unchanged on
	// the next request (for example signed thinking blocks), keyed by provider.
	Extra map[string]json.RawMessage `json:"extra,omitempty"`
}

// ToolCall is a model's request to run one tool. Args are the arguments as
// the model sent them. They may not be valid JSON (a stream cut off
// mid-call); such a call still encodes, with its arguments as a string and
// "args_invalid": true, and decodes back to the same text (see EncodeArgs).
type ToolCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

// User returns a user message.
func User(text string) Message { return Message{Role: RoleUser, Content: text} }

// System returns a system message.
func System(text string) Message { return Message{Role: RoleSystem, Content: text} }

// Assistant returns an assistant message with text and optional tool calls.
func Assistant(text string, calls ...ToolCall) Message {
	return Message{Role: RoleAssistant, Content: text, ToolCalls: calls}
}

// ToolResult returns the tool message that answers call.
func ToolResult(call ToolCall, content string, isError bool) Message {
	return Message{Role: RoleTool, ToolCallID: call.ID, Name: call.Name, Content: content, IsError: isError}
}

// HasText reports whether the message carries non-blank text.
func (m Message) HasText() bool { return strings.TrimSpace(m.Content) != "" }

// Clone returns a deep copy of msgs (tool-call arguments included), so the
// copy can be changed without touching the original.
func Clone(msgs []Message) []Message {
	if msgs == nil {
		return nil
	}
	out := make([]Message, len(msgs))
	for i, m := range msgs {
		out[i] = m
		if m.ToolCalls != nil {
			out[i].ToolCalls = make([]ToolCall, len(m.ToolCalls))
			for j, c := range m.ToolCalls {
				c.Args = append(json.RawMessage(nil), c.Args...)
				out[i].ToolCalls[j] = c
			}
		}
		if m.Parts != nil {
			out[i].Parts = clonedParts(m.Parts)
		}
		if m.Extra != nil {
			out[i].Extra = make(map[string]json.RawMessage, len(m.Extra))
			for k, v := range m.Extra {
				out[i].Extra[k] = append(json.RawMessage(nil), v...)
			}
		}
	}
	return out
}

func clonedParts(parts []Part) []Part {
	out := make([]Part, len(parts))
	for i, p := range parts {
		if p.Image != nil {
			img := *p.Image
			img.Data = append([]byte(nil), img.Data...)
			p.Image = &img
		}
		if p.Reasoning != nil {
			r := *p.Reasoning
			r.Extra = append(json.RawMessage(nil), r.Extra...)
			p.Reasoning = &r
		}
		out[i] = p
	}
	return out
}
