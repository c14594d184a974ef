package server

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/deepagents-go/deepagents/llm"
)

// LCMessage is a message in LangChain's dict shape, as LangGraph clients
// send and read them.
type LCMessage struct {
	Type       string       `json:"type" jsonschema:"human, ai, tool or system"`
	Content    any          `json:"content"`
	ID         string       `json:"id,omitempty"`
	Name       string       `json:"name,omitempty"`
	ToolCalls  []LCToolCall `json:"tool_calls,omitempty"`
	ToolCallID string       `json:"tool_call_id,omitempty"`
	Status     string       `json:"status,omitempty"`
	// AdditionalKwargs carries what LangChain's fields do not say: on a
	// tool message, that a person rejected the call (its status stays
	// "error", as the model was told).
	AdditionalKwargs *MessageKwargs `json:"additional_kwargs,omitempty"`
}

// MessageKwargs are a message's extra facts.
type MessageKwargs struct {
	// Rejected: the call was not run, a person reviewing it rejected it.
	Rejected bool `json:"rejected,omitempty"`
}

// LCToolCall is a tool call in LangChain's shape.
type LCToolCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
	Type string          `json:"type"`
}

// toLC converts a stored message; id is stable for the message's position.
func toLC(m llm.Message, id string) LCMessage {
	out := LCMessage{Content: m.Content, ID: id, Name: m.Name}
	switch m.Role {
	case llm.RoleUser:
		out.Type = "human"
	case llm.RoleAssistant:
		out.Type = "ai"
		for _, c := range m.ToolCalls {
			args := c.Args
			if !json.Valid(args) || len(args) == 0 {
				args, _ = json.Marshal(map[string]string{"_raw": string(c.Args)})
			}
			out.ToolCalls = append(out.ToolCalls, LCToolCall{ID: c.ID, Name: c.Name, Args: args, Type: "tool_call"})
		}
	case llm.RoleTool:
		out.Type = "tool"
		out.ToolCallID = m.ToolCallID
		if m.IsError {
			out.Status = "error"
		} else {
			out.Status = "success"
		}
	case llm.RoleSystem:
		out.Type = "system"
	default:
		out.Type = string(m.Role)
	}
	return out
}

// fromLC reads one input message: LangChain's dict ({"type": "human"} or
// {"role": "user"}, content a string or a list of text blocks).
func fromLC(raw json.RawMessage) (llm.Message, error) {
	var m struct {
		Type       string          `json:"type"`
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
		Name       string          `json:"name"`
		ToolCalls  []LCToolCall    `json:"tool_calls"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return llm.Message{}, fmt.Errorf("a message is not an object: %v", err)
	}
	text, err := contentText(m.Content)
	if err != nil {
		return llm.Message{}, err
	}
	kind := m.Type
	if kind == "" {
		kind = m.Role
	}
	switch kind {
	case "human", "user":
		return llm.User(text), nil
	case "ai", "assistant":
		msg := llm.Message{Role: llm.RoleAssistant, Content: text}
		for _, c := range m.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: c.ID, Name: c.Name, Args: c.Args})
		}
		return msg, nil
	case "tool":
		if m.ToolCallID == "" {
			return llm.Message{}, fmt.Errorf("a tool message has no tool_call_id")
		}
		return llm.Message{Role: llm.RoleTool, Content: text, ToolCallID: m.ToolCallID, Name: m.Name}, nil
	case "system":
		return llm.Message{}, fmt.Errorf("system messages are not accepted as input; the agent has its own system prompt")
	case "":
		return llm.Message{}, fmt.Errorf(`a message has neither "type" nor "role"`)
	default:
		return llm.Message{}, fmt.Errorf("message type %q is not one of human, user, ai, assistant, tool", kind)
	}
}

func contentText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return "", fmt.Errorf("a message's content is neither text nor a list of content blocks")
	}
	var b strings.Builder
	for _, bl := range blocks {
		if bl.Type != "text" && bl.Type != "" {
			return "", fmt.Errorf("content blocks of type %q are not accepted; send text", bl.Type)
		}
		b.WriteString(bl.Text)
	}
	return b.String(), nil
}

// parseInput reads a run's input: {"messages": [...]} (null or {} is no input).
func parseInput(raw json.RawMessage) ([]llm.Message, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var in struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, fmt.Errorf(`input must be an object like {"messages": [...]}: %v`, err)
	}
	var out []llm.Message
	for i, m := range in.Messages {
		msg, err := fromLC(m)
		if err != nil {
			return nil, fmt.Errorf("input message %d: %w", i+1, err)
		}
		out = append(out, msg)
	}
	return out, nil
}
