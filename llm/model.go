package llm

import (
	"context"
	"encoding/json"
	"iter"
)

// Model is a chat model. Implementations must be safe for concurrent use:
// one Model serves a parent agent and all its parallel subagents. The request
// is read-only to the model.
type Model interface {
	// Generate returns the complete response to req.
	Generate(ctx context.Context, req *Request) (*Response, error)
	// Stream yields text and tool-call deltas as they arrive, then exactly one
	// EventDone carrying the complete response. A non-nil error ends the stream.
	Stream(ctx context.Context, req *Request) iter.Seq2[StreamEvent, error]
}

// ToolSpec describes a tool to the model: its name, what it does, and the JSON
// schema of its arguments, kept as the exact bytes that are sent.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// ToolChoiceMode says whether and which tools the model must call.
type ToolChoiceMode string

// Tool choice modes. The zero value leaves the choice to the model.
const (
	ToolChoiceAuto     ToolChoiceMode = ""
	ToolChoiceNone     ToolChoiceMode = "none"
	ToolChoiceRequired ToolChoiceMode = "required" // some tool must be called
	ToolChoiceTool     ToolChoiceMode = "tool"     // the tool named in ToolChoice.Name
)

// ToolChoice constrains tool calling for one request.
type ToolChoice struct {
	Mode ToolChoiceMode `json:"mode,omitempty"`
	Name string         `json:"name,omitempty"`
}

// ResponseSchema asks for native structured output: the final answer must be
// JSON matching Schema.
type ResponseSchema struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema"`
}

// Settings are sampling and length knobs. Zero values mean "provider default".
type Settings struct {
	MaxTokens         int      `json:"max_tokens,omitempty"`
	Temperature       *float64 `json:"temperature,omitempty"`
	TopP              *float64 `json:"top_p,omitempty"`
	Stop              []string `json:"stop,omitempty"`
	ParallelToolCalls *bool    `json:"parallel_tool_calls,omitempty"`
	// Reasoning asks the model to think first; nil leaves its default.
	Reasoning *ReasoningConfig `json:"reasoning,omitempty"`
}

// Request is one model call.
type Request struct {
	System string `json:"system,omitempty"`
	// SystemTail is the part of the system prompt that changes from call
	// to call (the todo list, memory). It is sent after System, and
	// providers that cache prompts put a cache breakpoint between the two,
	// so a change in the tail does not invalidate the cached System and
	// tools. Providers without that notion send System and SystemTail
	// joined by a blank line.
	SystemTail string          `json:"system_tail,omitempty"`
	Messages   []Message       `json:"messages"`
	Tools      []ToolSpec      `json:"tools,omitempty"`
	ToolChoice ToolChoice      `json:"tool_choice,omitzero"`
	Response   *ResponseSchema `json:"response_schema,omitempty"`
	Settings   Settings        `json:"settings,omitzero"`
}

// StopReason says why a model stopped generating.
type StopReason string

// Normalised stop reasons.
const (
	StopEnd       StopReason = "end"        // a natural end of turn
	StopToolCalls StopReason = "tool_calls" // the model asked for tools
	StopMaxTokens StopReason = "max_tokens" // the output limit cut the answer
	StopFiltered  StopReason = "filtered"   // a content filter stopped it
	StopRefusal   StopReason = "refusal"    // the model declined to answer (Response.Refusal)
	StopOther     StopReason = "other"
)

// Usage counts tokens for one or more model calls. InputTokens includes the
// cached ones; CachedInputTokens and CacheWriteTokens break it down when the
// provider reports them.
type Usage struct {
	InputTokens       int `json:"input_tokens"`
	OutputTokens      int `json:"output_tokens"`
	CachedInputTokens int `json:"cached_input_tokens,omitempty"`
	CacheWriteTokens  int `json:"cache_write_tokens,omitempty"`
	// ReasoningTokens is the part of OutputTokens the model spent thinking.
	ReasoningTokens int `json:"reasoning_tokens,omitempty"`
	// Unknown is set when a provider reported no usage for a call (or, on a
	// sum, for at least one of its calls): the counts are then a lower bound,
	// not a measurement of zero.
	Unknown bool `json:"unknown,omitempty"`
}

// Add returns u + v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		InputTokens:       u.InputTokens + v.InputTokens,
		OutputTokens:      u.OutputTokens + v.OutputTokens,
		CachedInputTokens: u.CachedInputTokens + v.CachedInputTokens,
		CacheWriteTokens:  u.CacheWriteTokens + v.CacheWriteTokens,
		ReasoningTokens:   u.ReasoningTokens + v.ReasoningTokens,
		Unknown:           u.Unknown || v.Unknown,
	}
}

// Total is input plus output tokens.
func (u Usage) Total() int { return u.InputTokens + u.OutputTokens }

// Response is a model's complete answer to one request.
type Response struct {
	Message    Message    `json:"message"`
	Usage      Usage      `json:"usage"`
	StopReason StopReason `json:"stop_reason,omitempty"`
	Model      string     `json:"model,omitempty"`
	// Refusal is the model's explanation when it declined to answer
	// (StopReason StopRefusal); empty otherwise.
	Refusal string `json:"refusal,omitempty"`
}
