// Package tokens counts what a model is sent, offline: o200k_base and
// cl100k_base token counts of tool definitions (as OpenAI function-tool JSON,
// the form every provider's tool list is measured in here) and of messages.
//
// The vocabularies are embedded (github.com/tiktoken-go/tokenizer) and load
// lazily on first use; tool counts are memoised, because tool definitions are
// re-sent on every model call but never change.
package tokens

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/tiktoken-go/tokenizer"
)

// Encoding names a tokenizer vocabulary.
type Encoding string

// Supported encodings.
const (
	O200k  Encoding = "o200k_base"  // GPT-4o, GPT-4.1, o-series
	Cl100k Encoding = "cl100k_base" // GPT-4, GPT-3.5
)

var (
	codecMu sync.Mutex
	codecs  = map[Encoding]tokenizer.Codec{}
)

func codec(enc Encoding) tokenizer.Codec {
	codecMu.Lock()
	defer codecMu.Unlock()
	if c, ok := codecs[enc]; ok {
		return c
	}
	c, err := tokenizer.Get(tokenizer.Encoding(enc))
	if err != nil {
		panic(fmt.Sprintf("tokens: unknown encoding %q", enc))
	}
	codecs[enc] = c
	return c
}

// Count returns the number of tokens of text in enc.
func Count(enc Encoding, text string) int {
	if text == "" {
		return 0
	}
	n, err := codec(enc).Count(text)
	if err != nil {
		// Invalid UTF-8: count the repaired text, as the API would see it.
		n, _ = codec(enc).Count(strings.ToValidUTF8(text, "\uFFFD"))
	}
	return n
}

// Chars counts characters (Unicode code points), the unit the seed reports.
func Chars(s string) int { return utf8.RuneCountInString(s) }

// ToolJSON returns spec as OpenAI function-tool JSON, compact, with no HTML
// escaping: {"type":"function","function":{"name":…,"description":…,"parameters":…}}.
func ToolJSON(spec llm.ToolSpec) string {
	type fn struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	params := spec.Parameters
	if len(params) == 0 {
		params = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(struct {
		Type     string `json:"type"`
		Function fn     `json:"function"`
	}{"function", fn{spec.Name, spec.Description, params}})
	return strings.TrimSuffix(buf.String(), "\n")
}

// ToolCount is the cost of one tool definition.
type ToolCount struct {
	Name      string `json:"name"`
	DescChars int    `json:"description_chars"`
	JSONChars int    `json:"json_chars"`
	O200k     int    `json:"o200k"`
	Cl100k    int    `json:"cl100k"`
}

var (
	toolMemo  specMemo[ToolCount]
	o200kMemo specMemo[int]
)

// ToolO200k returns the memoised o200k cost of spec alone: what the agent
// loop reports on every request, without loading the cl100k vocabulary.
func ToolO200k(spec llm.ToolSpec) int {
	if v, ok := toolMemo.get(spec); ok {
		return v.O200k
	}
	if v, ok := o200kMemo.get(spec); ok {
		return v
	}
	n := Count(O200k, ToolJSON(spec))
	o200kMemo.put(spec, n)
	return n
}

// ToolsO200k is the o200k cost of specs together.
func ToolsO200k(specs []llm.ToolSpec) int {
	n := 0
	for _, s := range specs {
		n += ToolO200k(s)
	}
	return n
}

// Tool returns the memoised cost of spec.
func Tool(spec llm.ToolSpec) ToolCount {
	if v, ok := toolMemo.get(spec); ok {
		return v
	}
	js := ToolJSON(spec)
	tc := ToolCount{
		Name:      spec.Name,
		DescChars: Chars(spec.Description),
		JSONChars: Chars(js),
		O200k:     Count(O200k, js),
		Cl100k:    Count(Cl100k, js),
	}
	toolMemo.put(spec, tc)
	return tc
}

// Tools returns the per-tool costs of specs and their total.
func Tools(specs []llm.ToolSpec) ([]ToolCount, ToolCount) {
	out := make([]ToolCount, len(specs))
	var total ToolCount
	total.Name = "total"
	for i, s := range specs {
		c := Tool(s)
		out[i] = c
		total.DescChars += c.DescChars
		total.JSONChars += c.JSONChars
		total.O200k += c.O200k
		total.Cl100k += c.Cl100k
	}
	return out, total
}

// Framing tokens of OpenAI's chat accounting.
const (
	perMessage = 3 // around every message
	perReply   = 3 // priming the reply
)

// Messages counts the tokens of a request's system prompt and messages in
// enc, using OpenAI's chat accounting (a few tokens of framing per message
// plus the content and any tool calls).
func Messages(enc Encoding, system string, msgs []llm.Message) int {
	n := perReply
	if system != "" {
		n += SystemPrompt(enc, system)
	}
	for _, m := range msgs {
		n += Message(enc, m)
	}
	return n
}

// SystemPrompt counts a system prompt sent as a system message.
func SystemPrompt(enc Encoding, system string) int {
	return perMessage + Count(enc, "system") + Count(enc, system)
}

// Message counts one message with its framing.
func Message(enc Encoding, m llm.Message) int {
	n := perMessage + Count(enc, string(m.Role)) + Count(enc, m.Content)
	if m.Name != "" {
		n += 1 + Count(enc, m.Name)
	}
	for _, c := range m.ToolCalls {
		n += Count(enc, c.Name) + Count(enc, string(c.Args)) + 3
	}
	return n
}
