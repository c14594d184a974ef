package tokens_test

import (
	"math"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/tokens"
)

func TestEstimateText(t *testing.T) {
	if got := tokens.EstimateText(strings.Repeat("abcd", 250)); got != 250 {
		t.Errorf("1000 ASCII bytes: %d, want 250", got)
	}
	cjk := strings.Repeat("漢", 10000)
	if got := tokens.EstimateText(cjk); got < 6000 {
		t.Errorf("10,000 CJK runes estimated %d tokens; at least 6,000 expected", got)
	}
	if tokens.EstimateText("") != 0 {
		t.Error("empty text is not 0 tokens")
	}
}

func TestEstimateSplitsARequest(t *testing.T) {
	req := &llm.Request{System: strings.Repeat("s", 400), SystemTail: strings.Repeat("t", 40),
		Messages: []llm.Message{llm.User(strings.Repeat("u", 80)),
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "1", Name: "ls", Args: []byte(`{"path":"/"}`)}}},
			{Role: llm.RoleTool, ToolCallID: "1", Content: strings.Repeat("r", 800)}}}
	b := tokens.Estimate(req)
	if b.System != 110 || b.Messages != (20+3)+(3+3+1+3) || b.ToolResults != 200+3 || b.Total != b.System+b.Tools+b.Messages+b.ToolResults {
		t.Fatalf("breakdown %+v", b)
	}
}

// A model that reports twice our estimate: after three calls the ratio is
// within [1.8, 2.0]; extreme reports are clamped.
func TestCalibratorConverges(t *testing.T) {
	var c tokens.Calibrator
	if c.Ratio("m") != 1 || c.Calibrated("m", 100) != 100 {
		t.Fatal("an unobserved model is not at ratio 1")
	}
	for range 3 {
		c.Observe("m", 1000, 2000)
	}
	if r := c.Ratio("m"); r < 1.8 || r > 2.0 {
		t.Fatalf("ratio after 3 calls %.3f", r)
	}
	c.Observe("x", 100, 100000)
	if c.Ratio("x") != 2.0 || c.Ratio("m") == c.Ratio("other") {
		t.Fatalf("clamp or per-model keeping failed: %v", c.Ratio("x"))
	}
	c.Observe("m", 0, 5)
	c.Observe("m", 5, 0)
}

func TestProfileFor(t *testing.T) {
	if p, ok := tokens.ProfileFor("anthropic", "claude-sonnet-4-5-20250929"); !ok || p.Window != 200_000 || !p.Caches {
		t.Errorf("claude-sonnet-4-5: %+v %v", p, ok)
	}
	if p, ok := tokens.ProfileFor("openai", "gpt-4.1-mini"); !ok || p.Window != 1_047_576 {
		t.Errorf("gpt-4.1-mini: %+v %v", p, ok)
	}
	if p, ok := tokens.ProfileFor("openai", "my-local-model"); ok || p.Window != 0 {
		t.Errorf("an unknown model: %+v %v", p, ok)
	}
	tests := []struct {
		provider, model string
		want            tokens.Profile
	}{
		{"anthropic", "claude-opus-4-1-20250805", tokens.Profile{Window: 200_000, MaxOutput: 32_000, Caches: true}},
		{"anthropic", "claude-opus-4-5", tokens.Profile{Window: 200_000, MaxOutput: 64_000, Caches: true}},
		{"anthropic", "claude-3-5-haiku-latest", tokens.Profile{Window: 200_000, MaxOutput: 8_192, Caches: true}},
		{"openai", "gpt-4o-mini", tokens.Profile{Window: 128_000, MaxOutput: 16_384, Caches: true}},
		{"openai", "gpt-4-0613", tokens.Profile{Window: 8_192, MaxOutput: 8_192}},
		{"openai", "gpt-5-mini", tokens.Profile{Window: 400_000, MaxOutput: 128_000, Caches: true}},
		{"openai", "gpt-5-chat-latest", tokens.Profile{Window: 128_000, MaxOutput: 16_384, Caches: true}},
		{"OpenAI", "o1-mini", tokens.Profile{Window: 128_000, MaxOutput: 65_536, Caches: true}},
		{"gemini", "gemini-2.5-flash", tokens.Profile{Window: 1_048_576, MaxOutput: 65_536, Caches: true}},
		{"google", "models/gemini-1.5-pro-002", tokens.Profile{Window: 2_097_152, MaxOutput: 8_192}},
		{"ollama", "gpt-4o", tokens.Profile{}},
	}
	for _, tt := range tests {
		if got, _ := tokens.ProfileFor(tt.provider, tt.model); got != tt.want {
			t.Errorf("ProfileFor(%s, %s) = %+v, want %+v", tt.provider, tt.model, got, tt.want)
		}
	}
}

func TestOverrideApply(t *testing.T) {
	base := tokens.Profile{Window: 200_000, MaxOutput: 64_000, Caches: true}
	no := false
	if got := (tokens.Override{MaxOutput: 8000}).Apply(base); got != (tokens.Profile{Window: 200_000, MaxOutput: 8000, Caches: true}) {
		t.Errorf("max_output only: %+v", got)
	}
	if got := (tokens.Override{Window: 32_768, Caches: &no}).Apply(base); got != (tokens.Profile{Window: 32_768, MaxOutput: 64_000}) {
		t.Errorf("window and caches: %+v", got)
	}
	if got := (tokens.Override{}).Apply(base); got != base {
		t.Errorf("an empty override changed %+v", got)
	}
}

func TestEstimateTool(t *testing.T) {
	spec := llm.ToolSpec{Name: "ls", Description: "List files.", Parameters: []byte(`{"type":"object","properties":{}}`)}
	js := `{"type":"function","function":{"name":"ls","description":"List files.","parameters":{"type":"object","properties":{}}}}`
	if got := tokens.EstimateTool(spec); got != (len(js)+3)/4 || tokens.EstimateTool(spec) != got {
		t.Errorf("EstimateTool = %d, want %d", got, (len(js)+3)/4)
	}
	if b := tokens.Estimate(&llm.Request{Tools: []llm.ToolSpec{spec, spec}}); b.Tools != 2*((len(js)+3)/4) || b.Total != b.Tools {
		t.Errorf("tools in a request: %+v", b)
	}
}

// The cache gives the same estimates as Estimate and remembers long
// messages, so a request measured twice is read once.
func TestCacheMatchesEstimate(t *testing.T) {
	long := strings.Repeat("a line of a tool result\n", 40)
	req := &llm.Request{System: "sys", Messages: []llm.Message{llm.User("hi"),
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "1", Name: "ls", Args: []byte(`{"path":"/"}`)}}},
		{Role: llm.RoleTool, ToolCallID: "1", Content: long}}}
	var c tokens.Cache
	want := tokens.Estimate(req)
	if got := c.Estimate(req); got != want {
		t.Fatalf("cache %+v, plain %+v", got, want)
	}
	if got := c.Estimate(req); got != want {
		t.Fatalf("second measure %+v, want %+v", got, want)
	}
	// A history that grows in place adds only its new messages.
	grown := make([]llm.Message, 3, 8)
	copy(grown, req.Messages)
	req.Messages = grown
	c.Estimate(req)
	req.Messages = append(req.Messages, llm.User(long))
	if got, plain := c.Estimate(req), tokens.Estimate(req); got != plain {
		t.Fatalf("after an append %+v, want %+v", got, plain)
	}
	// A rewritten history (a new slice, a changed message with a new
	// string) is estimated anew.
	rewritten := []llm.Message{req.Messages[0], req.Messages[1], {Role: llm.RoleTool, ToolCallID: "1", Content: long + long}}
	req.Messages = rewritten
	if got, plain := c.Estimate(req), tokens.Estimate(req); got != plain {
		t.Fatalf("after a rewrite %+v, want %+v", got, plain)
	}
}

// Seed sets a ratio only where the calibrator has none, held to 0.5..2,
// and ignores what is not a positive number.
func TestCalibratorSeed(t *testing.T) {
	var c tokens.Calibrator
	for _, tc := range []struct {
		model string
		ratio float64
		set   bool
		want  float64
	}{
		{"m", 1.5, true, 1.5},
		{"m", 1.2, false, 1.5}, // already known: the calibrator's own ratio stays
		{"big", 7, true, 2},
		{"small", 0.1, true, 0.5},
		{"zero", 0, false, 1},
		{"neg", -1, false, 1},
		{"nan", math.NaN(), false, 1},
		{"inf", math.Inf(1), false, 1},
	} {
		if got := c.Seed(tc.model, tc.ratio); got != tc.set {
			t.Errorf("Seed(%s, %v) = %v, want %v", tc.model, tc.ratio, got, tc.set)
		}
		if got := c.Ratio(tc.model); got != tc.want {
			t.Errorf("Ratio(%s) = %v, want %v", tc.model, got, tc.want)
		}
	}
}
