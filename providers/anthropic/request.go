package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/deepagents-go/deepagents/llm"
)

// built is one request translated to the SDK's parameters, plus what the
// response mapping needs to know about it.
type built struct {
	params anthropic.MessageNewParams
	// answerTool names the forced structured-output tool whose input is
	// returned as the answer text (StructuredTool mode), else "".
	answerTool string
	// opts are per-request SDK options (the interleaved-thinking beta).
	opts []option.RequestOption
}

// emptySchema is the input schema of a tool whose Parameters are empty.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// build translates req. It fails only on requests that cannot be sent at
// all (no messages, a tool schema that is not JSON) or that the API would
// refuse for their settings (see CheckSettings).
func (m *Model) build(req *llm.Request) (*built, error) {
	if req == nil {
		return nil, badRequest("nil request")
	}
	if err := checkReasoning(req.Settings.Reasoning); err != nil {
		return nil, badRequest(err.Error())
	}
	lead, msgs := convertMessages(req.Messages)
	if len(msgs) == 0 {
		return nil, badRequest("the request has no user or assistant messages")
	}
	th := m.thinkingFor(req.Settings)
	if th.on() {
		if s := samplingSet(req.Settings); len(s) > 0 {
			return nil, badRequest(samplingError(s).Error())
		}
	}
	if th.budget > 0 && turnStartedWithoutThinking(msgs) {
		// The API keeps one thinking configuration per assistant turn and
		// wants a turn that thinks to start with a thinking block; a tool
		// loop begun without one (on another provider, or before thinking
		// was turned on) goes on without thinking until the next user turn.
		th = thinking{}
	}
	cache := !m.cfg.NoPromptCache
	p := anthropic.MessageNewParams{
		Model:     m.cfg.Model,
		MaxTokens: int64(m.maxTokens(req.Settings, th.budget)),
		Messages:  msgs,
	}

	// The system prompt is one block for its static part and, when the
	// request has one, a second for its changing tail (todos, memory), each
	// with a cache breakpoint: the first caches the tools and the static
	// prompt, which a change in the tail leaves intact.
	var sys []string
	if strings.TrimSpace(req.System) != "" {
		sys = append(sys, req.System)
	}
	sys = append(sys, lead...)
	static, tail := len(sys) > 0, strings.TrimSpace(req.SystemTail) != ""
	structured := req.Response != nil && m.cfg.StructuredOutput == StructuredTool
	if static {
		p.System = append(p.System, anthropic.TextBlockParam{Text: strings.Join(sys, "\n\n")})
	}
	if tail {
		p.System = append(p.System, anthropic.TextBlockParam{Text: req.SystemTail})
	}
	if cache {
		for i := range p.System {
			p.System[i].CacheControl = anthropic.NewCacheControlEphemeralParam()
		}
	}

	names := map[string]bool{}
	for i, t := range req.Tools {
		schema, err := toolSchema(t.Parameters)
		if err != nil {
			return nil, badRequest(fmt.Sprintf("tool %q: parameters are not a JSON object: %v", t.Name, err))
		}
		tp := &anthropic.ToolParam{
			Name:        t.Name,
			InputSchema: param.Override[anthropic.ToolInputSchemaParam](schema),
		}
		if t.Description != "" {
			tp.Description = param.NewOpt(t.Description)
		}
		// The API's prefix is tools, system, messages, so the static system
		// block's breakpoint caches the tools too; the last caller tool gets
		// its own only when there is no static block, or when a
		// structured-output tool follows it and there is no tail (requests
		// with and without a response schema then share the tools). Whether
		// the tail is there or not never moves it: the prefix stays the same
		// bytes from the first round on.
		if cache && i == len(req.Tools)-1 && (!static || structured && !tail) {
			tp.CacheControl = anthropic.NewCacheControlEphemeralParam()
		}
		names[t.Name] = true
		p.Tools = append(p.Tools, anthropic.ToolUnionParam{OfTool: tp})
	}

	b := &built{}
	choice := req.ToolChoice
	if rs := req.Response; rs != nil {
		schema, err := toolSchema(rs.Schema)
		if err != nil {
			return nil, badRequest(fmt.Sprintf("response schema %q is not a JSON object: %v", rs.Name, err))
		}
		if m.cfg.StructuredOutput == StructuredTool {
			name := answerToolName(rs.Name, names)
			tp := &anthropic.ToolParam{
				Name:        name,
				InputSchema: param.Override[anthropic.ToolInputSchemaParam](schema),
				Description: param.NewOpt(answerToolDescription(rs)),
			}
			p.Tools = append(p.Tools, anthropic.ToolUnionParam{OfTool: tp})
			b.answerTool = name
			choice = llm.ToolChoice{Mode: llm.ToolChoiceTool, Name: name}
		} else {
			var doc map[string]any
			if err := json.Unmarshal(schema, &doc); err != nil {
				return nil, badRequest(fmt.Sprintf("response schema %q: %v", rs.Name, err))
			}
			// The SDK's transformer adapts a schema to what structured outputs
			// accept; it only has a Beta-typed entry point, whose map we reuse.
			if adapted, ok := anthropic.BetaJSONSchemaOutputFormat(doc).Schema.(map[string]any); ok && adapted != nil {
				doc = adapted
			}
			p.OutputConfig.Format = anthropic.JSONOutputFormatParam{Schema: doc}
		}
	}
	if len(p.Tools) > 0 {
		if th.budget > 0 && (choice.Mode == llm.ToolChoiceRequired || choice.Mode == llm.ToolChoiceTool) {
			what := "a required tool choice"
			if b.answerTool != "" {
				what = "structured output in StructuredTool mode"
			}
			return nil, badRequest(what + " forces tool use, which the API does not allow while the model thinks with a token budget; turn reasoning off or use adaptive thinking")
		}
		p.ToolChoice = toolChoice(choice, req.Settings.ParallelToolCalls)
	}

	// Settings.Temperature and TopP are not sent: API version 2026-10-21,
	// which this SDK speaks, removed the sampling parameters and answers 400
	// to any of them, even at their defaults. CheckSettings reports them.
	if s := req.Settings; len(s.Stop) > 0 {
		p.StopSequences = append([]string(nil), s.Stop...)
	}
	switch {
	case th.budget > 0:
		p.Thinking = anthropic.ThinkingConfigParamUnion{OfEnabled: &anthropic.ThinkingConfigEnabledParam{BudgetTokens: int64(th.budget)}}
		if len(p.Tools) > 0 {
			b.opts = append(b.opts, option.WithHeaderAdd("anthropic-beta", interleavedBeta))
		}
	case th.adaptive:
		p.Thinking = anthropic.ThinkingConfigParamUnion{OfAdaptive: &anthropic.ThinkingConfigAdaptiveParam{}}
		p.OutputConfig.Effort = th.effort
	}
	if cache {
		markConversation(p.Messages)
	}
	b.params = p
	return b, nil
}

// maxTokens is the output limit of a request: the Settings', else the
// Config's, else DefaultMaxTokens. Thinking with a budget counts towards
// max_tokens, which the API wants above the budget: a limit at or below the
// budget is raised by the budget, so the answer keeps the room asked for.
func (m *Model) maxTokens(s llm.Settings, budget int) int {
	n := DefaultMaxTokens
	switch {
	case s.MaxTokens > 0:
		n = s.MaxTokens
	case m.cfg.MaxTokens > 0:
		n = m.cfg.MaxTokens
	}
	if budget > 0 && n <= budget {
		n += budget
	}
	return n
}

// turnStartedWithoutThinking reports whether the assistant turn in progress
// (the assistant messages after the last user message that is more than
// tool results) starts with something other than a thinking block.
func turnStartedWithoutThinking(msgs []anthropic.MessageParam) bool {
	start := -1
	for i := len(msgs) - 1; i >= 0; i-- {
		u := msgs[i].OfUser
		if u == nil {
			continue
		}
		genuine := false
		for _, b := range u.Content {
			if b.OfToolResult == nil {
				genuine = true
				break
			}
		}
		if genuine {
			start = i + 1
			break
		}
	}
	if start < 0 || start >= len(msgs) {
		return false
	}
	a := msgs[start].OfAssistant
	if a == nil || len(a.Content) == 0 {
		return false
	}
	first := a.Content[0]
	return first.OfThinking == nil && first.OfRedactedThinking == nil
}

// toolSchema returns raw as a compact JSON object, or the empty object
// schema when raw is empty.
func toolSchema(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return emptySchema, nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, err
	}
	if buf.Bytes()[0] != '{' {
		return nil, fmt.Errorf("got %.20s", buf.Bytes())
	}
	return buf.Bytes(), nil
}

// toolChoice maps our choice; parallel == false disables parallel tool use
// for the modes that allow it.
func toolChoice(c llm.ToolChoice, parallel *bool) anthropic.ToolChoiceUnionParam {
	var disable param.Opt[bool]
	if parallel != nil && !*parallel {
		disable = param.NewOpt(true)
	}
	switch c.Mode {
	case llm.ToolChoiceNone:
		return anthropic.ToolChoiceUnionParam{OfNone: &anthropic.ToolChoiceNoneParam{}}
	case llm.ToolChoiceRequired:
		return anthropic.ToolChoiceUnionParam{OfAny: &anthropic.ToolChoiceAnyParam{DisableParallelToolUse: disable}}
	case llm.ToolChoiceTool:
		if c.Name != "" {
			return anthropic.ToolChoiceUnionParam{OfTool: &anthropic.ToolChoiceToolParam{Name: c.Name, DisableParallelToolUse: disable}}
		}
		return anthropic.ToolChoiceUnionParam{OfAny: &anthropic.ToolChoiceAnyParam{DisableParallelToolUse: disable}}
	}
	if disable.Valid() {
		return anthropic.ToolChoiceUnionParam{OfAuto: &anthropic.ToolChoiceAutoParam{DisableParallelToolUse: disable}}
	}
	// Auto with default parallelism is the API's default: send nothing.
	return anthropic.ToolChoiceUnionParam{}
}

// answerToolName derives a valid, unused tool name from a schema name.
func answerToolName(name string, taken map[string]bool) string {
	n := sanitizeName(name, 64)
	if n == "" {
		n = "final_answer"
	}
	for base, i := n, 2; taken[n]; i++ {
		n = fmt.Sprintf("%s_%d", base, i)
	}
	return n
}

func answerToolDescription(rs *llm.ResponseSchema) string {
	d := "Give your final answer by calling this tool; its input is the answer."
	if rs.Description != "" {
		d = rs.Description + "\n\n" + d
	}
	return d
}

// sanitizeName keeps [A-Za-z0-9_-], replaces anything else with '_' and
// cuts the result to max bytes.
func sanitizeName(s string, max int) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= max {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// markConversation puts cache breakpoints on the last block of the last two
// user turns: the newest one caches the whole conversation for the next
// round, the one before it is where the previous round wrote its cache, so
// the lookup hits even when a round added many blocks. With the two of the
// tools and the system blocks that makes the API's maximum of four.
func markConversation(msgs []anthropic.MessageParam) {
	marked := 0
	for i := len(msgs) - 1; i >= 0 && marked < 2; i-- {
		u := msgs[i].OfUser
		if u == nil || len(u.Content) == 0 {
			continue
		}
		if setCacheControl(&u.Content[len(u.Content)-1]) {
			marked++
		}
	}
}

func setCacheControl(b *anthropic.ContentBlockParamUnion) bool {
	cc := anthropic.NewCacheControlEphemeralParam()
	switch {
	case b.OfText != nil:
		b.OfText.CacheControl = cc
	case b.OfToolResult != nil:
		b.OfToolResult.CacheControl = cc
	case b.OfToolUse != nil:
		b.OfToolUse.CacheControl = cc
	case b.OfImage != nil:
		b.OfImage.CacheControl = cc
	default:
		return false
	}
	return true
}
