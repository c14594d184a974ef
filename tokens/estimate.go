package tokens

import (
	"sync"
	"unicode"
	"unicode/utf8"

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
func Estimate(req *llm.Request) Breakdown {
	var b Breakdown
	b.System = EstimateText(req.System) + EstimateText(req.SystemTail)
	for _, t := range req.Tools {
		b.Tools += EstimateTool(t)
	}
	for _, m := range req.Messages {
		if m.Role == llm.RoleTool {
			b.ToolResults += EstimateMessage(m)
		} else {
			b.Messages += EstimateMessage(m)
		}
	}
	b.Total = b.System + b.Tools + b.Messages + b.ToolResults
	return b
}

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

var toolEstimates sync.Map // toolKey → int

// EstimateTool is the fast estimate of one tool definition: a quarter of
// the bytes of its OpenAI function-tool JSON, memoised because the same
// definitions are sent with every request.
func EstimateTool(spec llm.ToolSpec) int {
	key := toolKey(spec)
	if v, ok := toolEstimates.Load(key); ok {
		return v.(int)
	}
	n := (len(ToolJSON(spec)) + 3) / 4
	toolEstimates.Store(key, n)
	return n
}
