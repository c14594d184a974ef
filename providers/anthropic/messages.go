package anthropic

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/deepagents-go/deepagents/internal/safefile"
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
			c.userContent(m)
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

// userContent adds a user message's text and images; reasoning parts (which
// only assistant messages should carry) are left out.
func (c *converter) userContent(m llm.Message) {
	if len(m.Parts) == 0 {
		c.userText(m.Content)
		return
	}
	for _, p := range m.Parts {
		switch p.Type {
		case llm.PartText:
			c.userText(p.Text)
		case llm.PartImage:
			u := c.userTurn()
			u.blocks = append(u.blocks, imageBlock(p.Image))
		}
	}
}

func (c *converter) toolResult(m llm.Message) {
	u := c.userTurn()
	if a := u.answers; a != nil {
		if k := findCall(a.calls, m); k >= 0 {
			b := toolResultBlock(a.calls[k].wire, m.AllParts(), m.IsError)
			a.calls[k].result = &b
			return
		}
	}
	// A result that answers no pending call of the preceding assistant turn
	// (history was trimmed, or it is a duplicate): keep it as text.
	text := strings.TrimSpace(m.Content)
	switch {
	case text == "" && m.HasParts(llm.PartImage):
		text = "(the image below)"
	case text == "":
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
	for _, p := range m.Parts {
		if p.Type == llm.PartImage {
			u.blocks = append(u.blocks, imageBlock(p.Image))
		}
	}
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

// assistantBlocks appends m's blocks to t in their original order: this
// provider's signed thinking and redacted thinking (unaltered; reasoning of
// other providers is dropped, its readable text too), the text, and the
// tool calls, each thinking block after the calls that preceded it.
func (c *converter) assistantBlocks(t *turn, m llm.Message) {
	calls := 0
	addCalls := func(upTo int) {
		for ; calls < min(upTo, len(m.ToolCalls)); calls++ {
			tc := m.ToolCalls[calls]
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
	}
	for _, p := range replayParts(m) {
		switch p.Type {
		case llm.PartText:
			if strings.TrimSpace(p.Text) != "" {
				t.blocks = append(t.blocks, textBlock(p.Text))
			}
		case llm.PartReasoning:
			addCalls(callsBefore(p.Reasoning))
			if b, ok := thinkingBlock(p); ok {
				t.blocks = append(t.blocks, b)
			}
		}
	}
	addCalls(len(m.ToolCalls))
}

// thinkingBlock renders one of this provider's reasoning parts, or reports
// false for one that cannot be sent back (unsigned, or empty).
func thinkingBlock(p llm.Part) (anthropic.ContentBlockParamUnion, bool) {
	r := p.Reasoning
	switch {
	case r == nil || r.Provider != ProviderName:
		return anthropic.ContentBlockParamUnion{}, false
	case r.Encrypted != "":
		return anthropic.ContentBlockParamUnion{OfRedactedThinking: &anthropic.RedactedThinkingBlockParam{Data: r.Encrypted}}, true
	case r.Signature != "":
		return anthropic.ContentBlockParamUnion{OfThinking: &anthropic.ThinkingBlockParam{Thinking: p.Text, Signature: r.Signature}}, true
	}
	return anthropic.ContentBlockParamUnion{}, false
}

// replayParts returns the parts of assistant message m to send back: its
// text and this provider's reasoning, in order. A message whose Content was
// edited after its parts were set gets the edited text in place of its text
// parts. Messages saved before reasoning parts existed carry their thinking
// in Extra["anthropic"]; it is read from there.
func replayParts(m llm.Message) []llm.Part {
	parts := m.Parts
	if len(m.ReasoningFor(ProviderName)) == 0 {
		parts = legacyParts(m)
	}
	if len(parts) == 0 {
		return []llm.Part{llm.TextPart(m.Content)}
	}
	var out []llm.Part
	var text strings.Builder
	for _, p := range parts {
		switch {
		case p.Type == llm.PartText:
			text.WriteString(p.Text)
			out = append(out, p)
		case p.Type == llm.PartReasoning && p.Reasoning != nil && p.Reasoning.Provider == ProviderName:
			out = append(out, p)
		}
	}
	if text.String() == m.Content {
		return out
	}
	edited := make([]llm.Part, 0, len(out)+1)
	placed := false
	for _, p := range out {
		if p.Type != llm.PartText {
			edited = append(edited, p)
		} else if !placed {
			edited = append(edited, llm.TextPart(m.Content))
			placed = true
		}
	}
	if !placed {
		edited = append(edited, llm.TextPart(m.Content))
	}
	return edited
}

// callsMeta is the Reasoning.Extra of a thinking block that came after
// tool_use blocks in its turn: how many, so it goes back in its place.
type callsMeta struct {
	CallsBefore int `json:"calls_before,omitempty"`
}

func callsBefore(r *llm.Reasoning) int {
	if r == nil || len(r.Extra) == 0 {
		return 0
	}
	var cm callsMeta
	if json.Unmarshal(r.Extra, &cm) != nil || cm.CallsBefore < 0 {
		return 0
	}
	return cm.CallsBefore
}

func callsExtra(n int) json.RawMessage {
	if n <= 0 {
		return nil
	}
	raw, _ := json.Marshal(callsMeta{CallsBefore: n})
	return raw
}

// legacyParts converts the block skeleton that older versions kept in
// Message.Extra["anthropic"] (before reasoning parts) into parts, or
// returns nil when m has none.
func legacyParts(m llm.Message) []llm.Part {
	raw, ok := m.Extra[ProviderName]
	if !ok {
		return nil
	}
	var sc struct {
		Content []struct {
			Type      string `json:"type"`
			Thinking  string `json:"thinking"`
			Signature string `json:"signature"`
			Data      string `json:"data"`
		} `json:"content"`
	}
	if json.Unmarshal(raw, &sc) != nil {
		return nil
	}
	var out []llm.Part
	calls, text := 0, false
	for _, b := range sc.Content {
		switch b.Type {
		case "thinking":
			out = append(out, llm.ReasoningPart(b.Thinking, &llm.Reasoning{Provider: ProviderName, Signature: b.Signature, Extra: callsExtra(calls)}))
		case "redacted_thinking":
			out = append(out, llm.ReasoningPart("", &llm.Reasoning{Provider: ProviderName, Encrypted: b.Data, Extra: callsExtra(calls)}))
		case "text":
			if !text {
				out = append(out, llm.TextPart(m.Content))
				text = true
			}
		case "tool_use":
			calls++
		}
	}
	if !text && len(out) > 0 {
		out = append(out, llm.TextPart(m.Content))
	}
	return out
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
					blocks = append(blocks, toolResultBlock(cl.wire, []llm.Part{llm.TextPart(missingResultText)}, true))
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

// toolResultBlock answers tool_use id with the text and images of parts
// (reasoning parts are left out).
func toolResultBlock(id string, parts []llm.Part, isError bool) anthropic.ContentBlockParamUnion {
	b := &anthropic.ToolResultBlockParam{ToolUseID: id}
	for _, p := range parts {
		switch p.Type {
		case llm.PartText:
			if strings.TrimSpace(p.Text) != "" {
				b.Content = append(b.Content, anthropic.ToolResultBlockParamContentUnion{OfText: &anthropic.TextBlockParam{Text: p.Text}})
			}
		case llm.PartImage:
			img := imageBlock(p.Image)
			if img.OfImage != nil {
				b.Content = append(b.Content, anthropic.ToolResultBlockParamContentUnion{OfImage: img.OfImage})
			} else {
				b.Content = append(b.Content, anthropic.ToolResultBlockParamContentUnion{OfText: img.OfText})
			}
		}
	}
	if isError {
		b.IsError = param.NewOpt(true)
	}
	return anthropic.ContentBlockParamUnion{OfToolResult: b}
}

// maxImageBytes is the largest image the API takes.
const maxImageBytes = 5 << 20

// imageMediaTypes are the image types the API reads.
var imageMediaTypes = map[string]bool{"image/jpeg": true, "image/png": true, "image/gif": true, "image/webp": true}

// imageBlock renders an image part as an image block: its bytes base64
// encoded, or its URL. An image the API cannot take (no data, an
// unsupported type) becomes a short text note instead, so the model learns
// it was there and the request is not refused.
func imageBlock(img *llm.Image) anthropic.ContentBlockParamUnion {
	switch {
	case img == nil || (len(img.Data) == 0 && img.URL == ""):
		return textBlock("[An image was here, but it had no data.]")
	case len(img.Data) == 0:
		if u, err := url.Parse(img.URL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return textBlock(fmt.Sprintf("[An image at %q was not sent: only http and https URLs are supported.]", img.URL))
		}
		return anthropic.ContentBlockParamUnion{OfImage: &anthropic.ImageBlockParam{
			Source: anthropic.ImageBlockParamSourceUnion{OfURL: &anthropic.URLImageSourceParam{URL: img.URL}}}}
	}
	if len(img.Data) > maxImageBytes {
		return textBlock(fmt.Sprintf("[An image of %s was not sent: the API takes images up to %s.]",
			safefile.Size(int64(len(img.Data))), safefile.Size(maxImageBytes)))
	}
	// The bytes say what they are; the API refuses an image whose declared
	// type does not match them, so the sniffed type is sent.
	mt := http.DetectContentType(img.Data)
	if !imageMediaTypes[mt] {
		return textBlock(fmt.Sprintf("[An image (declared as %q, %s) was not sent: the model reads JPEG, PNG, GIF and WebP images only.]",
			img.MediaType, safefile.Size(int64(len(img.Data)))))
	}
	return anthropic.ContentBlockParamUnion{OfImage: &anthropic.ImageBlockParam{
		Source: anthropic.ImageBlockParamSourceUnion{OfBase64: &anthropic.Base64ImageSourceParam{
			Data: base64.StdEncoding.EncodeToString(img.Data), MediaType: anthropic.Base64ImageSourceMediaType(mt)}}}}
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
