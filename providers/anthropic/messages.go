package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/deepagents-go/deepagents/llm"
)

// Text used where the wire format needs content the conversation lacks.
const (
	// openingText starts a conversation whose first turn is the assistant's:
	// the API wants a user turn first.
	openingText = "(The conversation continues.)"
	// missingResultText answers a tool call that has no result message, so
	// the assistant's tool_use blocks are always answered in the next turn.
	missingResultText = "Error: no result was recorded for this tool call."
)

// convertMessages turns our conversation into Messages API turns that the
// API accepts:
//
//   - leading system messages are returned as lead, for the system
//     parameter; later ones become user text (hoisting them would change the
//     cached system prompt as the conversation grows);
//   - user/assistant turns strictly alternate and the first is a user turn;
//   - the tool messages answering one assistant turn become tool_result
//     blocks of the next user turn, first and in call order, followed by any
//     user text; calls without a result get an error result, and results
//     that answer no call of the preceding assistant turn become plain text;
//   - tool_use ids are made valid and unique; empty and whitespace-only text
//     is dropped (the API rejects it).
func convertMessages(msgs []llm.Message) (lead []string, out []anthropic.MessageParam) {
	i := 0
	for ; i < len(msgs) && msgs[i].Role == llm.RoleSystem; i++ {
		if msgs[i].HasText() {
			lead = append(lead, msgs[i].Content)
		}
	}
	c := &converter{used: map[string]bool{}}
	for _, m := range msgs[i:] {
		switch m.Role {
		case llm.RoleAssistant:
			c.assistant(m)
		case llm.RoleTool:
			c.toolResult(m)
		default: // user, mid-conversation system, unknown roles
			c.userText(m.Content)
		}
	}
	return lead, c.finish()
}

// call is one tool_use block of an assistant turn awaiting its result.
type call struct {
	id     string // ours
	wire   string // as sent
	name   string
	result *anthropic.ContentBlockParamUnion
}

// turn is one wire message under construction.
type turn struct {
	user    bool
	blocks  []anthropic.ContentBlockParamUnion // assistant blocks, or user blocks other than results
	calls   []*call                            // assistant turns: tool_use blocks in order
	answers *turn                              // user turns: the assistant turn whose calls it answers
}

type converter struct {
	turns []*turn
	used  map[string]bool // wire tool_use ids so far
	n     int             // generated ids
}

func (c *converter) last() *turn {
	if len(c.turns) == 0 {
		return nil
	}
	return c.turns[len(c.turns)-1]
}

// userTurn returns the user turn being built, starting one if needed.
func (c *converter) userTurn() *turn {
	t := c.last()
	if t != nil && t.user {
		return t
	}
	u := &turn{user: true}
	if t != nil && len(t.calls) > 0 {
		u.answers = t
	}
	c.turns = append(c.turns, u)
	return u
}

func (c *converter) userText(text string) {
	if strings.TrimSpace(text) == "" {
		return
	}
	u := c.userTurn()
	u.blocks = append(u.blocks, textBlock(text))
}

func (c *converter) toolResult(m llm.Message) {
	u := c.userTurn()
	if a := u.answers; a != nil {
		if k := findCall(a.calls, m); k >= 0 {
			b := toolResultBlock(a.calls[k].wire, m.Content, m.IsError)
			a.calls[k].result = &b
			return
		}
	}
	// A result that answers no pending call of the preceding assistant turn
	// (history was trimmed, or it is a duplicate): keep it as text.
	text := strings.TrimSpace(m.Content)
	if text == "" {
		text = "(empty)"
	}
	label := "Tool result"
	if m.Name != "" {
		label += " of " + m.Name
	}
	if m.ToolCallID != "" {
		label += " (call " + m.ToolCallID + ")"
	}
	if m.IsError {
		label += ", an error"
	}
	u.blocks = append(u.blocks, textBlock(label+":\n"+text))
}

// findCall picks the unanswered call that m answers: by id, or for a result
// without an id the first unanswered call of that name, then any.
func findCall(calls []*call, m llm.Message) int {
	if m.ToolCallID != "" {
		for k, cl := range calls {
			if cl.result == nil && cl.id == m.ToolCallID {
				return k
			}
		}
		return -1
	}
	for k, cl := range calls {
		if cl.result == nil && m.Name != "" && cl.name == m.Name {
			return k
		}
	}
	for k, cl := range calls {
		if cl.result == nil {
			return k
		}
	}
	return -1
}

func (c *converter) assistant(m llm.Message) {
	t := &turn{}
	c.assistantBlocks(t, m)
	if len(t.blocks) == 0 {
		return
	}
	if prev := c.last(); prev != nil && !prev.user {
		if len(prev.calls) == 0 {
			// Two assistant messages in a row: one turn, as the API would
			// merge them anyway.
			prev.blocks = append(prev.blocks, t.blocks...)
			prev.calls = t.calls
			return
		}
		// Its calls need an answer before the assistant speaks again.
		c.userTurn()
	}
	c.turns = append(c.turns, t)
}

// assistantBlocks appends m's blocks to t: thinking blocks saved in Extra in
// their original positions, the text, and the tool calls.
func (c *converter) assistantBlocks(t *turn, m llm.Message) {
	text := m.Content
	if strings.TrimSpace(text) == "" {
		text = ""
	}
	done := make([]bool, len(m.ToolCalls))
	addText := func() {
		if text != "" {
			t.blocks = append(t.blocks, textBlock(text))
			text = ""
		}
	}
	addCall := func(k int) {
		done[k] = true
		tc := m.ToolCalls[k]
		name := tc.Name
		if name == "" {
			name = "unknown_tool"
		}
		cl := &call{id: tc.ID, wire: c.wireID(tc.ID), name: tc.Name}
		t.calls = append(t.calls, cl)
		t.blocks = append(t.blocks, anthropic.ContentBlockParamUnion{OfToolUse: &anthropic.ToolUseBlockParam{
			ID: cl.wire, Name: name, Input: toolInput(tc.Args),
		}})
	}
	for _, sb := range savedBlocks(m) {
		switch sb.Type {
		case "thinking":
			if sb.Signature != "" {
				t.blocks = append(t.blocks, anthropic.ContentBlockParamUnion{OfThinking: &anthropic.ThinkingBlockParam{
					Thinking: sb.Thinking, Signature: sb.Signature,
				}})
			}
		case "redacted_thinking":
			if sb.Data != "" {
				t.blocks = append(t.blocks, anthropic.ContentBlockParamUnion{OfRedactedThinking: &anthropic.RedactedThinkingBlockParam{Data: sb.Data}})
			}
		case "text":
			addText()
		case "tool_use":
			for k, tc := range m.ToolCalls {
				if !done[k] && tc.ID == sb.ID {
					addCall(k)
					break
				}
			}
		}
	}
	addText()
	for k := range m.ToolCalls {
		if !done[k] {
			addCall(k)
		}
	}
}

// wireID returns a valid tool_use id for ours, unique within the request.
func (c *converter) wireID(id string) string {
	w := sanitizeName(id, 128)
	if w == "" {
		c.n++
		w = fmt.Sprintf("toolu_%d", c.n)
	}
	for base, i := w, 2; c.used[w]; i++ {
		w = fmt.Sprintf("%s_%d", base, i)
	}
	c.used[w] = true
	return w
}

// finish closes the last turn and renders all turns.
func (c *converter) finish() []anthropic.MessageParam {
	if len(c.turns) == 0 {
		return nil
	}
	if !c.turns[0].user {
		c.turns = append([]*turn{{user: true, blocks: []anthropic.ContentBlockParamUnion{textBlock(openingText)}}}, c.turns...)
	}
	out := make([]anthropic.MessageParam, 0, len(c.turns))
	for i, t := range c.turns {
		if !t.user {
			blocks := t.blocks
			if i == len(c.turns)-1 {
				// A final assistant turn is a prefill, which must not end in
				// whitespace.
				if b := blocks[len(blocks)-1].OfText; b != nil {
					b.Text = strings.TrimRightFunc(b.Text, isSpace)
				}
			}
			out = append(out, anthropic.MessageParam{OfAssistant: &anthropic.AssistantMessageParam{Content: blocks}})
			continue
		}
		var blocks []anthropic.ContentBlockParamUnion
		if t.answers != nil {
			for _, cl := range t.answers.calls {
				if cl.result != nil {
					blocks = append(blocks, *cl.result)
				} else {
					blocks = append(blocks, toolResultBlock(cl.wire, missingResultText, true))
				}
			}
		}
		blocks = append(blocks, t.blocks...)
		out = append(out, anthropic.MessageParam{OfUser: &anthropic.UserMessageParam{Content: blocks}})
	}
	return out
}

func isSpace(r rune) bool {
	return r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\v' || r == '\f'
}

func textBlock(s string) anthropic.ContentBlockParamUnion {
	return anthropic.ContentBlockParamUnion{OfText: &anthropic.TextBlockParam{Text: s}}
}

func toolResultBlock(id, content string, isError bool) anthropic.ContentBlockParamUnion {
	b := &anthropic.ToolResultBlockParam{ToolUseID: id}
	if strings.TrimSpace(content) != "" {
		b.Content = []anthropic.ToolResultBlockParamContentUnion{{OfText: &anthropic.TextBlockParam{Text: content}}}
	}
	if isError {
		b.IsError = param.NewOpt(true)
	}
	return anthropic.ContentBlockParamUnion{OfToolResult: b}
}

// toolInput returns a call's arguments as the JSON object the API wants.
// Arguments that are not an object (a model's broken JSON kept in history)
// are wrapped so the model still sees what it sent.
func toolInput(args json.RawMessage) json.RawMessage {
	a := bytes.TrimSpace(args)
	if len(a) == 0 {
		return json.RawMessage(`{}`)
	}
	if a[0] == '{' && json.Valid(a) {
		var buf bytes.Buffer
		if json.Compact(&buf, a) == nil {
			return buf.Bytes()
		}
	}
	wrapped, _ := json.Marshal(map[string]string{"invalid_arguments": string(args)})
	return wrapped
}
