package tokens

import (
	"math"
	"sync"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"github.com/deepagents-go/deepagents/llm"
)

// This file is the fast estimate the loop and compaction use on every step:
// no tokenizer, a few nanoseconds per byte, calibrated against what each
// provider reports.

// PerMessage is the estimated overhead of one message (role, separators).
const PerMessage = 3

// EstimateText estimates the tokens of s: a quarter of its bytes for text
// that is mostly ASCII, two thirds of its runes for text that is mostly CJK
// (where bytes/4 undercounts), and the larger of the two for a mix.
func EstimateText(s string) int {
	if s == "" {
		return 0
	}
	byBytes := (len(s) + 3) / 4
	wide := 0
	runes := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			runes++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		runes++
		if unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul) {
			wide++
		}
	}
	if wide == 0 {
		return byBytes
	}
	byRunes := (wide*2+2)/3 + (runes-wide+3)/4
	return max(byBytes, byRunes)
}

// Breakdown splits a request's estimated tokens by where they come from.
// Total is their sum.
type Breakdown struct {
	System      int `json:"system"`
	Tools       int `json:"tools"`
	Messages    int `json:"messages"`     // user and assistant messages
	ToolResults int `json:"tool_results"` // tool messages
	Total       int `json:"total"`
}

// EstimateMessage estimates one message: its text, its tool calls'
// names and arguments, and PerMessage. Images count a fixed 1,000 tokens
// each (providers charge by pixels; this is a typical picture).
func EstimateMessage(m llm.Message) int {
	n := PerMessage + EstimateText(m.Content)
	for _, p := range m.Parts {
		switch p.Type {
		case llm.PartImage:
			n += 1000
		case llm.PartReasoning:
			n += EstimateText(p.Text)
		}
	}
	for _, c := range m.ToolCalls {
		n += PerMessage + EstimateText(c.Name) + (len(c.Args)+3)/4
	}
	return n
}

// Estimate splits req's estimated tokens. Tool definitions are counted from
// their JSON (memoised per definition, see EstimateTool).
func Estimate(req *llm.Request) Breakdown { return (*Cache)(nil).Estimate(req) }

// Calibrator keeps, per model, the ratio between the input tokens the
// provider reported and our estimate of the same request, as a moving
// average (weight 0.3 for the newest call) held between 0.5 and 2, so that
// estimates track the real tokenizer for code, prose and CJK alike. Safe for
// concurrent use; the zero value is ready.
type Calibrator struct {
	mu     sync.Mutex
	ratios map[string]float64
}

// Observe records that a request estimated at est tokens was reported as
// reported input tokens by model. Calls without a report (0) are ignored.
func (c *Calibrator) Observe(model string, est, reported int) {
	if est <= 0 || reported <= 0 {
		return
	}
	r := min(max(float64(reported)/float64(est), 0.5), 2.0)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ratios == nil {
		c.ratios = map[string]float64{}
	}
	if old, ok := c.ratios[model]; ok {
		r = 0.7*old + 0.3*r
	}
	c.ratios[model] = min(max(r, 0.5), 2.0)
}

// Seed sets the model's ratio to one learnt earlier (by a run that is
// being resumed, say) unless the calibrator has one of its own already,
// which is newer. It reports whether it set it; a ratio that is not a
// positive number is ignored, and one outside 0.5 to 2 is held to them.
func (c *Calibrator) Seed(model string, ratio float64) bool {
	if !(ratio > 0) || math.IsInf(ratio, 0) {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.ratios[model]; ok {
		return false
	}
	if c.ratios == nil {
		c.ratios = map[string]float64{}
	}
	c.ratios[model] = min(max(ratio, 0.5), 2.0)
	return true
}

// Ratio returns the model's ratio (1 before any report).
func (c *Calibrator) Ratio(model string) float64 {
	if c == nil {
		return 1
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.ratios[model]; ok {
		return r
	}
	return 1
}

// Calibrated returns est scaled by the model's ratio.
func (c *Calibrator) Calibrated(model string, est int) int {
	return int(float64(est)*c.Ratio(model) + 0.5)
}

var toolEstimates specMemo[int]

// EstimateTool is the fast estimate of one tool definition: a quarter of
// the bytes of its OpenAI function-tool JSON, memoised because the same
// definitions are sent with every request.
func EstimateTool(spec llm.ToolSpec) int {
	if v, ok := toolEstimates.get(spec); ok {
		return v
	}
	n := (len(ToolJSON(spec)) + 3) / 4
	toolEstimates.put(spec, n)
	return n
}

// Cache remembers message estimates for one conversation, so that a run
// that measures every request does not re-read its whole history each time
// (which would make a long run quadratic). A request that extends the
// previous one's messages in the same backing array costs only its new
// messages; otherwise a message is known by the identity of its text and of
// its first tool call's arguments. Both rest on a run's history being
// append-only: messages are not changed in place after they are appended,
// and a rewritten message has new strings. Use one Cache per run; it is not safe for
// concurrent use. The nil Cache estimates without remembering.
type Cache struct {
	m map[cacheKey]int
	// The last request's messages, summed: a request whose messages start
	// with the same backing array (a run's history only grows) adds only
	// its new messages.
	head         *llm.Message
	n, msgs, res int
	// The last request's tool definitions (the agent's own list is the
	// same slice on every step).
	toolsHead *llm.ToolSpec
	toolsN    int
	tools     int
}

type cacheKey struct {
	text  *byte
	n     int
	args  *byte
	part  *byte
	calls int
	parts int
}

func keyOf(m llm.Message) (cacheKey, bool) {
	k := cacheKey{text: unsafe.StringData(m.Content), n: len(m.Content), calls: len(m.ToolCalls), parts: len(m.Parts)}
	if len(m.ToolCalls) > 0 && len(m.ToolCalls[0].Args) > 0 {
		k.args = &m.ToolCalls[0].Args[0]
	}
	for _, p := range m.Parts {
		if p.Type == llm.PartReasoning && p.Text != "" {
			k.part = unsafe.StringData(p.Text)
			break
		}
	}
	// Short messages are cheap to estimate and their strings may be shared
	// literals: not worth remembering.
	return k, len(m.Content) >= 64 || k.args != nil
}

// Message estimates m, remembering the result.
func (c *Cache) Message(m llm.Message) int {
	if c == nil {
		return EstimateMessage(m)
	}
	k, ok := keyOf(m)
	if !ok {
		return EstimateMessage(m)
	}
	if n, hit := c.m[k]; hit {
		return n
	}
	n := EstimateMessage(m)
	if c.m == nil {
		c.m = map[cacheKey]int{}
	}
	c.m[k] = n
	return n
}

// Estimate is tokens.Estimate with the messages' estimates remembered.
func (c *Cache) Estimate(req *llm.Request) Breakdown {
	var b Breakdown
	b.System = EstimateText(req.System) + EstimateText(req.SystemTail)
	if c != nil && len(req.Tools) > 0 && c.toolsHead == &req.Tools[0] && c.toolsN == len(req.Tools) {
		b.Tools = c.tools
	} else {
		for _, t := range req.Tools {
			b.Tools += EstimateTool(t)
		}
		if c != nil && len(req.Tools) > 0 {
			c.toolsHead, c.toolsN, c.tools = &req.Tools[0], len(req.Tools), b.Tools
		}
	}
	msgs, start := req.Messages, 0
	if c != nil && len(msgs) > 0 && c.head == &msgs[0] && len(msgs) >= c.n {
		start, b.Messages, b.ToolResults = c.n, c.msgs, c.res
	}
	for _, m := range msgs[start:] {
		if m.Role == llm.RoleTool {
			b.ToolResults += c.Message(m)
		} else {
			b.Messages += c.Message(m)
		}
	}
	if c != nil && len(msgs) > 0 {
		c.head, c.n, c.msgs, c.res = &msgs[0], len(msgs), b.Messages, b.ToolResults
	}
	b.Total = b.System + b.Tools + b.Messages + b.ToolResults
	return b
}
