package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"

	"github.com/deepagents-go/deepagents/llm"
)

// emptyParameters is the schema sent for a tool that declares none: the API
// wants an object schema, and an empty one means "no arguments".
const emptyParameters = `{"type":"object","properties":{}}`

// params maps an llm.Request onto the SDK's request type. It never mutates
// req.
func (m *Model) params(req *llm.Request, stream bool) (sdk.ChatCompletionNewParams, error) {
	p := sdk.ChatCompletionNewParams{Model: shared.ChatModel(m.cfg.Model)}
	if req == nil {
		return p, m.requestError("nil request")
	}

	if sys := systemText(req); sys != "" {
		p.Messages = append(p.Messages, sdk.SystemMessage(sys))
	}
	msgs, err := m.chatMessages(req.Messages)
	if err != nil {
		return p, err
	}
	p.Messages = append(p.Messages, msgs...)

	for _, t := range req.Tools {
		tp, err := toolParam(t)
		if err != nil {
			return p, m.requestError(err.Error())
		}
		p.Tools = append(p.Tools, tp)
	}
	if key := m.promptCacheKey(req); key != "" {
		p.PromptCacheKey = param.NewOpt(key)
	}
	if len(p.Tools) > 0 {
		// The API rejects tool_choice and parallel_tool_calls without tools.
		switch req.ToolChoice.Mode {
		case llm.ToolChoiceAuto:
		case llm.ToolChoiceNone:
			p.ToolChoice.OfAuto = param.NewOpt("none")
		case llm.ToolChoiceRequired:
			p.ToolChoice.OfAuto = param.NewOpt("required")
		case llm.ToolChoiceTool:
			if req.ToolChoice.Name == "" {
				return p, m.requestError("tool choice \"tool\" needs a tool name")
			}
			p.ToolChoice.OfFunctionToolChoice = &sdk.ChatCompletionNamedToolChoiceParam{
				Function: sdk.ChatCompletionNamedToolChoiceFunctionParam{Name: req.ToolChoice.Name},
			}
		default:
			return p, m.requestError(fmt.Sprintf("unknown tool choice mode %q", req.ToolChoice.Mode))
		}
		switch {
		case m.cfg.NoParallelToolCalls:
			p.ParallelToolCalls = param.NewOpt(false)
		case req.Settings.ParallelToolCalls != nil:
			p.ParallelToolCalls = param.NewOpt(*req.Settings.ParallelToolCalls)
		}
	}

	s := req.Settings
	maxTokens := s.MaxTokens
	if maxTokens <= 0 {
		maxTokens = m.cfg.MaxTokens
	}
	if maxTokens > 0 {
		if m.cfg.LegacyMaxTokens {
			p.MaxTokens = param.NewOpt(int64(maxTokens))
		} else {
			p.MaxCompletionTokens = param.NewOpt(int64(maxTokens))
		}
	}
	dropped := m.dropped(s)
	if s.Temperature != nil && !slices.Contains(dropped, "temperature") {
		p.Temperature = param.NewOpt(*s.Temperature)
	}
	if s.TopP != nil && !slices.Contains(dropped, "top_p") {
		p.TopP = param.NewOpt(*s.TopP)
	}
	e, err := m.reasoningEffort(s)
	if err != nil {
		return p, err
	}
	if e != "" {
		p.ReasoningEffort = shared.ReasoningEffort(e)
	}
	if len(s.Stop) > 0 {
		p.Stop.OfStringArray = append([]string(nil), s.Stop...)
	}

	if rs := req.Response; rs != nil {
		schema, err := StrictSchema(rs.Schema)
		if err != nil {
			return p, m.requestError(fmt.Sprintf("response schema %q: %v", rs.Name, err))
		}
		js := shared.ResponseFormatJSONSchemaJSONSchemaParam{
			Name:   schemaName(rs.Name),
			Strict: param.NewOpt(true),
			Schema: json.RawMessage(schema),
		}
		if rs.Description != "" {
			js.Description = param.NewOpt(rs.Description)
		}
		p.ResponseFormat.OfJSONSchema = &shared.ResponseFormatJSONSchemaParam{JSONSchema: js}
	}

	if stream && !m.cfg.NoStreamUsage {
		p.StreamOptions.IncludeUsage = param.NewOpt(true)
	}
	return p, nil
}

func (m *Model) requestError(msg string) error {
	return &llm.APIError{Kind: llm.ErrKindBadRequest, Provider: m.provider, Message: "invalid request: " + msg}
}

// chatMessages maps the conversation. Chat Completions has no field for
// reasoning: only what a compatible server returned in its own field goes
// back, in that field, with a message that calls tools (see
// assistantReasoning). Images of a run of tool results follow
// it in one user message, since tool messages hold text only.
func (m *Model) chatMessages(msgs []llm.Message) ([]sdk.ChatCompletionMessageParamUnion, error) {
	var out []sdk.ChatCompletionMessageParamUnion
	var toolImages []sdk.ChatCompletionContentPartUnionParam
	flush := func() {
		if len(toolImages) > 0 {
			out = append(out, sdk.UserMessage(toolImages))
			toolImages = nil
		}
	}
	for i, msg := range msgs {
		if msg.Role != llm.RoleTool {
			flush()
		}
		mp, imgs, err := m.message(msg)
		if err != nil {
			return nil, m.requestError(fmt.Sprintf("message %d: %v", i, err))
		}
		out = append(out, mp)
		toolImages = append(toolImages, imgs...)
	}
	flush()
	return out, nil
}

// message maps one llm.Message. Tool results carry no error flag on the wire:
// their content is sent as is. For a tool result holding images it also
// returns the parts of the user message that carries them.
func (m *Model) message(msg llm.Message) (sdk.ChatCompletionMessageParamUnion, []sdk.ChatCompletionContentPartUnionParam, error) {
	switch msg.Role {
	case llm.RoleSystem:
		if msg.HasParts(llm.PartImage) {
			return sdk.ChatCompletionMessageParamUnion{}, nil, fmt.Errorf("a system message cannot hold an image")
		}
		return sdk.SystemMessage(msg.Content), nil, nil
	case llm.RoleUser:
		if !msg.HasParts(llm.PartImage) {
			return sdk.UserMessage(msg.Content), nil, nil
		}
		var parts []sdk.ChatCompletionContentPartUnionParam
		for _, p := range msg.Parts {
			switch p.Type {
			case llm.PartText:
				if p.Text != "" {
					parts = append(parts, sdk.TextContentPart(p.Text))
				}
			case llm.PartImage:
				u, err := m.imageURL(p.Image)
				if err != nil {
					return sdk.ChatCompletionMessageParamUnion{}, nil, err
				}
				parts = append(parts, sdk.ImageContentPart(sdk.ChatCompletionContentPartImageImageURLParam{URL: u}))
			}
		}
		return sdk.UserMessage(parts), nil, nil
	case llm.RoleTool:
		if msg.ToolCallID == "" {
			return sdk.ChatCompletionMessageParamUnion{}, nil, fmt.Errorf("tool message for %q has no tool call id", msg.Name)
		}
		if !msg.HasParts(llm.PartImage) {
			return sdk.ToolMessage(msg.Content, msg.ToolCallID), nil, nil
		}
		var imgs []sdk.ChatCompletionContentPartUnionParam
		n := 0
		for _, p := range msg.Parts {
			if p.Type != llm.PartImage {
				continue
			}
			u, err := m.imageURL(p.Image)
			if err != nil {
				return sdk.ChatCompletionMessageParamUnion{}, nil, err
			}
			imgs = append(imgs, sdk.ImageContentPart(sdk.ChatCompletionContentPartImageImageURLParam{URL: u}))
			n++
		}
		call := msg.ToolCallID
		if msg.Name != "" {
			call += " (" + msg.Name + ")"
		}
		label := fmt.Sprintf("The result of tool call %s includes %s, attached here.", call, plural(n, "image"))
		text := msg.Content
		if text != "" {
			text += "\n\n"
		}
		text += fmt.Sprintf("[%s: sent in the next user message]", plural(n, "image"))
		return sdk.ToolMessage(text, msg.ToolCallID), append([]sdk.ChatCompletionContentPartUnionParam{sdk.TextContentPart(label)}, imgs...), nil
	case llm.RoleAssistant:
		if msg.HasParts(llm.PartImage) {
			return sdk.ChatCompletionMessageParamUnion{}, nil, fmt.Errorf("an assistant message cannot hold an image")
		}
		var a sdk.ChatCompletionAssistantMessageParam
		// Content is required unless there are tool calls.
		if msg.Content != "" || len(msg.ToolCalls) == 0 {
			a.Content.OfString = param.NewOpt(msg.Content)
		}
		for _, c := range msg.ToolCalls {
			a.ToolCalls = append(a.ToolCalls, sdk.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
					ID: c.ID,
					Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{
						Name:      c.Name,
						Arguments: argsString(c.Args),
					},
				},
			})
		}
		if field, text := m.assistantReasoning(msg); text != "" {
			a.SetExtraFields(map[string]any{field: text})
		}
		return sdk.ChatCompletionMessageParamUnion{OfAssistant: &a}, nil, nil
	}
	return sdk.ChatCompletionMessageParamUnion{}, nil, fmt.Errorf("unknown role %q", msg.Role)
}

// plural renders "1 image" / "2 images".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// argsString is a tool call's arguments as the API wants them: the JSON text
// itself, "{}" when there is none.
func argsString(args json.RawMessage) string {
	if len(bytes.TrimSpace(args)) == 0 {
		return "{}"
	}
	return string(args)
}

// toolParam maps a tool definition, sending its parameter schema byte for
// byte (compacted) rather than through a map, so property order survives.
func toolParam(t llm.ToolSpec) (sdk.ChatCompletionToolUnionParam, error) {
	if t.Name == "" {
		return sdk.ChatCompletionToolUnionParam{}, fmt.Errorf("a tool has no name")
	}
	params := bytes.TrimSpace(t.Parameters)
	if len(params) == 0 || string(params) == "null" {
		params = []byte(emptyParameters)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, params); err != nil {
		return sdk.ChatCompletionToolUnionParam{}, fmt.Errorf("tool %s: parameters are not valid JSON: %v", t.Name, err)
	}
	fn := struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters"`
	}{t.Name, t.Description, compact.Bytes()}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(fn); err != nil {
		return sdk.ChatCompletionToolUnionParam{}, fmt.Errorf("tool %s: %v", t.Name, err)
	}
	def := param.Override[shared.FunctionDefinitionParam](json.RawMessage(bytes.TrimSpace(buf.Bytes())))
	return sdk.ChatCompletionFunctionTool(def), nil
}

// schemaName makes a response schema name acceptable to the API: letters,
// digits, '_' and '-', at most 64 characters.
func schemaName(name string) string {
	var b strings.Builder
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
		if b.Len() >= 64 {
			break
		}
	}
	if b.Len() == 0 {
		return "response"
	}
	return b.String()
}
