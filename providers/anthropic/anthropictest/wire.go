// Package anthropictest is a fake Anthropic Messages API for tests: an
// httptest server that decodes POST /v1/messages, checks the request the
// way the real API does (alternation, tool_result pairing, cache_control
// limits, image sources, ...), and answers from a script, as a JSON message
// or as a server-sent event stream, with optional faults (HTTP errors,
// in-stream error events, dropped connections, hangs), refusals and replies
// without usage.
//
// Like the real API, the server fails a request (400) that sends back a
// thinking block it did not sign as is, redacted thinking it never handed
// out, or, while thinking is on, an assistant message of the tool loop in
// progress without the thinking blocks its reply carried before a tool
// call, or a loop that does not start with a thinking block.
//
// It speaks only the wire format and does not import the adapter, so any
// client can be pointed at it:
//
//	srv := anthropictest.New(t, anthropictest.Conversation(
//		anthropictest.Calls(anthropictest.Call("write_file", map[string]any{"path": "/a.txt"})),
//		anthropictest.Text("Done."),
//	))
//	model, _ := anthropic.New(anthropic.Config{Model: "claude-test", APIKey: "test", BaseURL: srv.URL})
//
// To drive several agents (a parent and its subagents) from one server, a
// Router picks a script per request, e.g. by the first user message (a
// subagent's brief) or by whether a tool named "task" is offered.
package anthropictest

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// MessagesRequest is the body of POST /v1/messages as the server decodes it.
type MessagesRequest struct {
	Model         string          `json:"model"`
	MaxTokens     *int            `json:"max_tokens"`
	System        Blocks          `json:"system,omitempty"`
	Messages      []Message       `json:"messages"`
	Tools         []Tool          `json:"tools,omitempty"`
	ToolChoice    *ToolChoice     `json:"tool_choice,omitempty"`
	Stream        bool            `json:"stream,omitempty"`
	StopSequences []string        `json:"stop_sequences,omitempty"`
	Thinking      json.RawMessage `json:"thinking,omitempty"`
	OutputConfig  *OutputConfig   `json:"output_config,omitempty"`
	// Removed sampling parameters, decoded so Validate can reject them as
	// API version 2026-10-21 does.
	Temperature json.RawMessage `json:"temperature,omitempty"`
	TopP        json.RawMessage `json:"top_p,omitempty"`
	TopK        json.RawMessage `json:"top_k,omitempty"`
}

// Message is one turn.
type Message struct {
	Role    string `json:"role"`
	Content Blocks `json:"content"`
}

// Blocks is a content array. It also accepts the string shorthand, which
// decodes as one text block.
type Blocks []Block

// UnmarshalJSON accepts a string or an array of blocks.
func (b *Blocks) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '"' {
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		*b = Blocks{{Type: "text", Text: s}}
		return nil
	}
	var arr []Block
	if err := json.Unmarshal(data, &arr); err != nil {
		return err
	}
	*b = arr
	return nil
}

// Text joins the text of the text blocks.
func (b Blocks) Text() string {
	var sb strings.Builder
	for _, x := range b {
		if x.Type == "text" {
			sb.WriteString(x.Text)
		}
	}
	return sb.String()
}

// Block is a content block of any type; only the fields of its type are set.
type Block struct {
	Type string `json:"type"`
	// text
	Text string `json:"text,omitempty"`
	// tool_use
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	// tool_result
	ToolUseID string `json:"tool_use_id,omitempty"`
	Content   Blocks `json:"content,omitempty"`
	IsError   bool   `json:"is_error,omitempty"`
	// thinking, redacted_thinking
	Thinking  string `json:"thinking,omitempty"`
	Signature string `json:"signature,omitempty"`
	Data      string `json:"data,omitempty"`
	// image
	Source *ImageSource `json:"source,omitempty"`

	CacheControl *CacheControl `json:"cache_control,omitempty"`
}

// ImageSource is an image block's source: base64 data of a media type, or
// a URL.
type ImageSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

// Tool is a tool definition.
type Tool struct {
	Type         string          `json:"type,omitempty"`
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema"`
	CacheControl *CacheControl   `json:"cache_control,omitempty"`
}

// ToolChoice is the tool_choice parameter.
type ToolChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name,omitempty"`
	DisableParallelToolUse *bool  `json:"disable_parallel_tool_use,omitempty"`
}

// CacheControl is a prompt-cache breakpoint.
type CacheControl struct {
	Type string `json:"type"`
	TTL  string `json:"ttl,omitempty"`
}

// OutputConfig is the output_config parameter (structured outputs).
type OutputConfig struct {
	Effort string `json:"effort,omitempty"`
	Format *struct {
		Type   string          `json:"type"`
		Schema json.RawMessage `json:"schema"`
	} `json:"format,omitempty"`
}

// ThinkingType is the thinking parameter's type ("enabled", "adaptive",
// "disabled"), or "" when thinking was not sent.
func (r *MessagesRequest) ThinkingType() string {
	var th struct {
		Type   string `json:"type"`
		Budget int    `json:"budget_tokens"`
	}
	if len(r.Thinking) == 0 || json.Unmarshal(r.Thinking, &th) != nil {
		return ""
	}
	return th.Type
}

// Images returns the image blocks of the request's user turns, those inside
// tool results included, in order.
func (r *MessagesRequest) Images() []Block {
	var out []Block
	for _, m := range r.Messages {
		for _, b := range m.Content {
			if b.Type == "image" {
				out = append(out, b)
			}
			for _, c := range b.Content {
				if c.Type == "image" {
					out = append(out, c)
				}
			}
		}
	}
	return out
}

// TurnStart is the index of the first assistant message of the assistant
// turn in progress (after the last user message that is more than tool
// results), or -1 when the request ends a user turn.
func (r *MessagesRequest) TurnStart() int {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		m := r.Messages[i]
		if m.Role != "user" {
			continue
		}
		for _, b := range m.Content {
			if b.Type != "tool_result" {
				if i+1 < len(r.Messages) {
					return i + 1
				}
				return -1
			}
		}
	}
	return -1
}

// SystemText joins the system prompt's text blocks.
func (r *MessagesRequest) SystemText() string { return r.System.Text() }

// FirstUserText is the text of the first user turn: the task a conversation
// was started with, and a stable key for routing one agent's requests.
func (r *MessagesRequest) FirstUserText() string {
	for _, m := range r.Messages {
		if m.Role == "user" {
			return m.Content.Text()
		}
	}
	return ""
}

// LastUserText is the text of the last user turn (tool results excluded).
func (r *MessagesRequest) LastUserText() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i].Content.Text()
		}
	}
	return ""
}

// OffersTool reports whether a tool of this name is defined.
func (r *MessagesRequest) OffersTool(name string) bool {
	for _, t := range r.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// ToolNames lists the defined tools in order.
func (r *MessagesRequest) ToolNames() []string {
	names := make([]string, len(r.Tools))
	for i, t := range r.Tools {
		names[i] = t.Name
	}
	return names
}

// AssistantTurns counts the assistant turns: how many replies this
// conversation already had.
func (r *MessagesRequest) AssistantTurns() int {
	n := 0
	for _, m := range r.Messages {
		if m.Role == "assistant" {
			n++
		}
	}
	return n
}

// LastToolResults returns the tool_result blocks of the last user turn.
func (r *MessagesRequest) LastToolResults() []Block {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role != "user" {
			continue
		}
		var out []Block
		for _, b := range r.Messages[i].Content {
			if b.Type == "tool_result" {
				out = append(out, b)
			}
		}
		return out
	}
	return nil
}

// CacheBreakpoints lists where cache_control is set, as paths such as
// "tools[2]", "system[0]" and "messages[3].content[1]".
func (r *MessagesRequest) CacheBreakpoints() []string {
	var out []string
	for i, t := range r.Tools {
		if t.CacheControl != nil {
			out = append(out, "tools["+strconv.Itoa(i)+"]")
		}
	}
	for i, b := range r.System {
		if b.CacheControl != nil {
			out = append(out, "system["+strconv.Itoa(i)+"]")
		}
	}
	for i, m := range r.Messages {
		for j, b := range m.Content {
			if b.CacheControl != nil {
				out = append(out, "messages["+strconv.Itoa(i)+"].content["+strconv.Itoa(j)+"]")
			}
		}
	}
	return out
}
