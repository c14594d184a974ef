package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"

	"github.com/openai/openai-go/v3/option"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/providers/kit"
)

// The Responses API is used statelessly (store: false): every request
// carries the whole conversation, and the reasoning items of earlier replies
// travel in it with their encrypted content, which the API decrypts and
// verifies. Its wire types are ours rather than the SDK's (whose request
// unions are large); the SDK still does the HTTP, authentication and errors.

// maxResponseBody bounds a non-streamed Responses API answer.
const maxResponseBody = 64 << 20

// includeEncrypted asks the API to return reasoning items' encrypted content.
const includeEncrypted = "reasoning.encrypted_content"

type rParams struct {
	Model             string      `json:"model"`
	Instructions      string      `json:"instructions,omitempty"`
	Input             []rInput    `json:"input"`
	Tools             []rTool     `json:"tools,omitempty"`
	ToolChoice        any         `json:"tool_choice,omitempty"`
	ParallelToolCalls *bool       `json:"parallel_tool_calls,omitempty"`
	MaxOutputTokens   int         `json:"max_output_tokens,omitempty"`
	Temperature       *float64    `json:"temperature,omitempty"`
	TopP              *float64    `json:"top_p,omitempty"`
	Reasoning         *rReasoning `json:"reasoning,omitempty"`
	Include           []string    `json:"include,omitempty"`
	Store             bool        `json:"store"`
	Stream            bool        `json:"stream,omitempty"`
	Text              *rText      `json:"text,omitempty"`
	PromptCacheKey    string      `json:"prompt_cache_key,omitempty"`
}

type rReasoning struct {
	Effort  string `json:"effort,omitempty"`
	Summary string `json:"summary,omitempty"`
}

type rText struct {
	Format rFormat `json:"format"`
}

type rFormat struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema"`
	Strict      bool            `json:"strict"`
}

type rTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      bool            `json:"strict"`
}

// rInput is one input item: a message (Role set), a reasoning item, a
// function call or a function call's output.
type rInput struct {
	Type             string   `json:"type,omitempty"`
	Role             string   `json:"role,omitempty"`
	Content          any      `json:"content,omitempty"` // string or []rPart
	ID               string   `json:"id,omitempty"`
	Summary          *[]rPart `json:"summary,omitempty"`
	EncryptedContent string   `json:"encrypted_content,omitempty"`
	CallID           string   `json:"call_id,omitempty"`
	Name             string   `json:"name,omitempty"`
	Arguments        string   `json:"arguments,omitempty"`
	Output           any      `json:"output,omitempty"` // string or []rPart
}

// rPart is a content part of an input message, a tool output or a reasoning
// summary.
type rPart struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	ImageURL string `json:"image_url,omitempty"`
	Detail   string `json:"detail,omitempty"`
}

// responsesParams maps an llm.Request onto a Responses API request body.
func (m *Model) responsesParams(req *llm.Request, stream bool) ([]byte, error) {
	if req == nil {
		return nil, m.requestError("nil request")
	}
	p := rParams{Model: m.cfg.Model, Instructions: systemText(req), Stream: stream, Input: []rInput{}}
	for i, msg := range req.Messages {
		items, err := m.inputItems(msg)
		if err != nil {
			return nil, m.requestError(fmt.Sprintf("message %d: %v", i, err))
		}
		p.Input = append(p.Input, items...)
	}
	for _, t := range req.Tools {
		if t.Name == "" {
			return nil, m.requestError("a tool has no name")
		}
		params := bytes.TrimSpace(t.Parameters)
		if len(params) == 0 || string(params) == "null" {
			params = []byte(emptyParameters)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, params); err != nil {
			return nil, m.requestError(fmt.Sprintf("tool %s: parameters are not valid JSON: %v", t.Name, err))
		}
		p.Tools = append(p.Tools, rTool{Type: "function", Name: t.Name, Description: t.Description, Parameters: compact.Bytes()})
	}
	p.PromptCacheKey = m.promptCacheKey(req)
	if len(p.Tools) > 0 {
		switch req.ToolChoice.Mode {
		case llm.ToolChoiceAuto:
		case llm.ToolChoiceNone, llm.ToolChoiceRequired:
			p.ToolChoice = string(req.ToolChoice.Mode)
		case llm.ToolChoiceTool:
			if req.ToolChoice.Name == "" {
				return nil, m.requestError("tool choice \"tool\" needs a tool name")
			}
			p.ToolChoice = map[string]string{"type": "function", "name": req.ToolChoice.Name}
		default:
			return nil, m.requestError(fmt.Sprintf("unknown tool choice mode %q", req.ToolChoice.Mode))
		}
		switch {
		case m.cfg.NoParallelToolCalls:
			p.ParallelToolCalls = new(false)
		case req.Settings.ParallelToolCalls != nil:
			p.ParallelToolCalls = new(*req.Settings.ParallelToolCalls)
		}
	}
	s := req.Settings
	p.MaxOutputTokens = s.MaxTokens
	if p.MaxOutputTokens <= 0 {
		p.MaxOutputTokens = m.cfg.MaxTokens
	}
	dropped := m.dropped(s)
	if s.Temperature != nil && !slices.Contains(dropped, "temperature") {
		p.Temperature = s.Temperature
	}
	if s.TopP != nil && !slices.Contains(dropped, "top_p") {
		p.TopP = s.TopP
	}
	e, err := m.reasoningEffort(s)
	if err != nil {
		return nil, err
	}
	if e != "" {
		// A readable summary of the thinking is asked for only when thinking
		// was asked for.
		p.Reasoning = &rReasoning{Effort: e, Summary: "auto"}
	}
	if !plainModel(m.cfg.Model) {
		p.Include = []string{includeEncrypted}
	}
	if rs := req.Response; rs != nil {
		schema, err := StrictSchema(rs.Schema)
		if err != nil {
			return nil, m.requestError(fmt.Sprintf("response schema %q: %v", rs.Name, err))
		}
		p.Text = &rText{Format: rFormat{Type: "json_schema", Name: schemaName(rs.Name), Description: rs.Description, Schema: schema, Strict: true}}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(p); err != nil {
		return nil, m.requestError(err.Error())
	}
	return bytes.TrimSpace(buf.Bytes()), nil
}

// inputItems maps one message onto input items. An assistant turn becomes
// its own reasoning items (with their encrypted content), its text, and its
// function calls, in that order; reasoning from any other provider, or
// without encrypted content, is left out. Function calls are sent without
// their output item ids: the API insists on a call's reasoning item only
// when the call names its own item, so a turn that came from another
// provider (whose reasoning was dropped) is accepted as it is.
func (m *Model) inputItems(msg llm.Message) ([]rInput, error) {
	switch msg.Role {
	case llm.RoleSystem:
		if msg.HasParts(llm.PartImage) {
			return nil, fmt.Errorf("a system message cannot hold an image")
		}
		return []rInput{{Role: "system", Content: msg.Content}}, nil
	case llm.RoleUser:
		if !msg.HasParts(llm.PartImage) {
			return []rInput{{Role: "user", Content: msg.Content}}, nil
		}
		parts, err := m.inputParts(msg.Parts)
		if err != nil {
			return nil, err
		}
		return []rInput{{Role: "user", Content: parts}}, nil
	case llm.RoleTool:
		if msg.ToolCallID == "" {
			return nil, fmt.Errorf("tool message for %q has no tool call id", msg.Name)
		}
		if !msg.HasParts(llm.PartImage) {
			return []rInput{{Type: "function_call_output", CallID: msg.ToolCallID, Output: msg.Content}}, nil
		}
		parts, err := m.inputParts(msg.Parts)
		if err != nil {
			return nil, err
		}
		return []rInput{{Type: "function_call_output", CallID: msg.ToolCallID, Output: parts}}, nil
	case llm.RoleAssistant:
		if msg.HasParts(llm.PartImage) {
			return nil, fmt.Errorf("an assistant message cannot hold an image")
		}
		var out []rInput
		var text bytes.Buffer
		flush := func() {
			if text.Len() > 0 {
				out = append(out, rInput{Role: "assistant", Content: text.String()})
				text.Reset()
			}
		}
		for _, p := range msg.AllParts() {
			switch p.Type {
			case llm.PartText:
				text.WriteString(p.Text)
			case llm.PartReasoning:
				r := p.Reasoning
				if r == nil || r.Provider != m.provider || r.Encrypted == "" {
					continue
				}
				flush()
				summary := []rPart{}
				if p.Text != "" {
					summary = append(summary, rPart{Type: "summary_text", Text: p.Text})
				}
				out = append(out, rInput{Type: "reasoning", ID: r.ID, Summary: &summary, EncryptedContent: r.Encrypted})
			}
		}
		flush()
		for _, c := range msg.ToolCalls {
			out = append(out, rInput{Type: "function_call", CallID: c.ID, Name: c.Name, Arguments: argsString(c.Args)})
		}
		if len(out) == 0 {
			out = append(out, rInput{Role: "assistant", Content: ""})
		}
		return out, nil
	}
	return nil, fmt.Errorf("unknown role %q", msg.Role)
}

// inputParts maps the text and image parts of a user message or tool result.
func (m *Model) inputParts(parts []llm.Part) ([]rPart, error) {
	var out []rPart
	for _, p := range parts {
		switch p.Type {
		case llm.PartText:
			if p.Text != "" {
				out = append(out, rPart{Type: "input_text", Text: p.Text})
			}
		case llm.PartImage:
			u, err := m.imageURL(p.Image)
			if err != nil {
				return nil, err
			}
			out = append(out, rPart{Type: "input_image", ImageURL: u, Detail: "auto"})
		}
	}
	return out, nil
}

// rResponse is a Responses API response object.
type rResponse struct {
	ID                string `json:"id"`
	Model             string `json:"model"`
	Status            string `json:"status"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Error  json.RawMessage `json:"error"`
	Output []rItem         `json:"output"`
	Usage  *rUsage         `json:"usage"`
}

// rItem is an output item.
type rItem struct {
	Type             string          `json:"type"`
	ID               string          `json:"id"`
	Role             string          `json:"role"`
	Content          []rContent      `json:"content"`
	Summary          []rContent      `json:"summary"`
	EncryptedContent *string         `json:"encrypted_content"`
	CallID           string          `json:"call_id"`
	Name             string          `json:"name"`
	Arguments        json.RawMessage `json:"arguments"`
}

type rContent struct {
	Type    string `json:"type"`
	Text    string `json:"text"`
	Refusal string `json:"refusal"`
}

type rUsage struct {
	InputTokens        int `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
}

// rArguments is a function call's arguments text: the API sends a string
// holding JSON; a compatible server may send the object itself.
func rArguments(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	if len(raw) > 0 && raw[0] == '{' {
		return string(raw)
	}
	return ""
}

// reasoningText is the readable text of a reasoning item: its summaries, or
// else its full reasoning text (open-weight models send that), joined by
// blank lines.
func reasoningText(it *rItem) string {
	var parts []string
	for _, c := range it.Summary {
		if c.Text != "" {
			parts = append(parts, c.Text)
		}
	}
	if len(parts) == 0 {
		for _, c := range it.Content {
			if c.Type == "reasoning_text" && c.Text != "" {
				parts = append(parts, c.Text)
			}
		}
	}
	var b bytes.Buffer
	for i, p := range parts {
		if i > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(p)
	}
	return b.String()
}

// fromResponses maps a Responses API response object. A failed response is
// an error; an incomplete one keeps what was produced.
func (m *Model) fromResponses(r *rResponse) (*llm.Response, error) {
	if r.Status == "failed" {
		return nil, m.failed(r.Error)
	}
	var parts []llm.Part
	var calls []llm.ToolCall
	var refusal bytes.Buffer
	for i := range r.Output {
		it := &r.Output[i]
		switch it.Type {
		case "reasoning":
			rs := &llm.Reasoning{Provider: m.provider, ID: it.ID}
			if it.EncryptedContent != nil {
				rs.Encrypted = *it.EncryptedContent
			}
			parts = append(parts, llm.ReasoningPart(reasoningText(it), rs))
		case "message":
			for _, c := range it.Content {
				switch c.Type {
				case "output_text":
					if c.Text != "" {
						parts = append(parts, llm.TextPart(c.Text))
					}
				case "refusal":
					refusal.WriteString(c.Refusal)
				}
			}
		case "function_call":
			calls = append(calls, llm.ToolCall{ID: it.CallID, Name: it.Name,
				Args: json.RawMessage(argsString(json.RawMessage(rArguments(it.Arguments))))})
		}
	}
	msg := llm.NewMessage(llm.RoleAssistant, parts...)
	msg.ToolCalls = calls
	resp := &llm.Response{Message: msg, Model: r.Model}
	switch {
	case refusal.Len() > 0:
		resp.Refusal = refusal.String()
		resp.StopReason = llm.StopRefusal
	case r.Status == "incomplete" && r.IncompleteDetails != nil && r.IncompleteDetails.Reason == "max_output_tokens":
		resp.StopReason = llm.StopMaxTokens
	case r.Status == "incomplete" && r.IncompleteDetails != nil && r.IncompleteDetails.Reason == "content_filter":
		resp.StopReason = llm.StopFiltered
	case len(calls) > 0:
		resp.StopReason = llm.StopToolCalls
	case r.Status == "completed" || r.Status == "":
		resp.StopReason = llm.StopEnd
	default:
		resp.StopReason = llm.StopOther
	}
	if u := r.Usage; u != nil {
		resp.Usage = llm.Usage{
			InputTokens:       u.InputTokens,
			OutputTokens:      u.OutputTokens,
			CachedInputTokens: u.InputTokensDetails.CachedTokens,
			ReasoningTokens:   u.OutputTokensDetails.ReasoningTokens,
		}
	} else {
		resp.Usage = llm.Usage{Unknown: true}
	}
	return resp, nil
}

// failed turns the error object of a failed response into an error.
func (m *Model) failed(errObj json.RawMessage) error {
	body, _ := json.Marshal(map[string]json.RawMessage{"error": errObj})
	msg, code, typ := parseErrorBody(body)
	if msg == "" {
		msg = "the response failed without saying why"
	}
	return &llm.APIError{Provider: m.provider, Message: msg,
		Kind: kit.Classify(kit.Failure{Tags: []string{typ, code}, Message: msg})}
}

func (m *Model) generateResponses(ctx context.Context, body []byte) (*llm.Response, error) {
	var raw *http.Response
	err := m.client.Post(ctx, "responses", body, nil, option.WithResponseBodyInto(&raw))
	if err != nil {
		return nil, m.mapError(ctx, err, raw)
	}
	if raw == nil || raw.Body == nil {
		return nil, &llm.APIError{Kind: llm.ErrKindServer, Provider: m.provider, Message: "the server sent no response body"}
	}
	defer raw.Body.Close()
	b, err := readCapped(raw.Body)
	if err != nil {
		return nil, m.mapError(ctx, err, nil)
	}
	return m.decodeResponses(b)
}

// errTooLarge is the error of an answer larger than maxResponseBody.
var errTooLarge = fmt.Errorf("the response is larger than %d MiB", maxResponseBody>>20)

// readCapped reads a complete answer body of at most maxResponseBody bytes.
func readCapped(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxResponseBody+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxResponseBody {
		return nil, errTooLarge
	}
	return b, nil
}

// decodeResponses decodes a complete Responses API answer.
func (m *Model) decodeResponses(b []byte) (*llm.Response, error) {
	var r rResponse
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, &llm.APIError{Kind: llm.ErrKindServer, Provider: m.provider, Message: "malformed response: " + err.Error(), Err: err}
	}
	return m.fromResponses(&r)
}
