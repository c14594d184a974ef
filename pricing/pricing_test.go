package pricing_test

import (
	"math"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/pricing"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

func TestShippedTable(t *testing.T) {
	tab := pricing.Default()
	if tab.AsOf == "" || len(tab.Keys()) < 20 {
		t.Fatalf("as of %q, %d models", tab.AsOf, len(tab.Keys()))
	}
	for model, want := range map[string]string{
		"gpt-4o":                     "openai:gpt-4o",
		"gpt-4o-2024-08-06":          "openai:gpt-4o",
		"gpt-4o-mini-2024-07-18":     "openai:gpt-4o-mini",
		"openai:gpt-4.1-mini":        "openai:gpt-4.1-mini",
		"claude-sonnet-4-5-20250929": "anthropic:claude-sonnet-4-5",
		"claude-opus-4-1-20250805":   "anthropic:claude-opus-4-1",
		"claude-sonnet-4@20250514":   "anthropic:claude-sonnet-4",
		"models/gemini-2.5-flash":    "google:gemini-2.5-flash",
		"gemini-2.5-flash-lite":      "google:gemini-2.5-flash-lite",
		"O3-2025-04-16":              "openai:o3",
		"claude-3-5-haiku-latest":    "anthropic:claude-3-5-haiku",
		"gemini-2.0-flash-001":       "google:gemini-2.0-flash",
		"gpt-5-mini-2025-08-07":      "openai:gpt-5-mini",
		"gpt-4o-2024-05-13":          "openai:gpt-4o-2024-05-13",
		"gpt-5.1-2025-11-13":         "openai:gpt-5.1",
		"o3-deep-research":           "openai:o3-deep-research",
	} {
		if _, key, ok := tab.Lookup(model); !ok || key != want {
			t.Errorf("Lookup(%q) = %q, %v; want %q", model, key, ok, want)
		}
	}
	// A prefix must end at a word boundary, and a model nobody priced has
	// no price (not zero).
	// A known name followed by anything but a snapshot suffix is another
	// model, which may cost more than the known one.
	for _, model := range []string{"o30", "gpt-4", "scripted", "", "llama3", "gpt-4omni",
		"gpt-5.2", "claude-opus-4-6", "gemini-2.5-flash-image", "gpt-4o-audio-preview", "o3-mini-high"} {
		if _, key, ok := tab.Lookup(model); ok {
			t.Errorf("Lookup(%q) matched %q", model, key)
		}
		if c, ok := tab.Price(model, llm.Usage{InputTokens: 10}); ok || c != 0 {
			t.Errorf("Price(%q) = %v, %v", model, c, ok)
		}
	}
}

// A call's cost splits its input into plain, cache-read and cache-written
// tokens, and its output into visible and reasoning tokens, each at its
// price.
func TestCost(t *testing.T) {
	p := pricing.Price{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75, Reasoning: 20}
	u := llm.Usage{InputTokens: 1_000_000, CachedInputTokens: 200_000, CacheWriteTokens: 100_000, OutputTokens: 50_000, ReasoningTokens: 10_000}
	want := 0.7*3 + 0.2*0.3 + 0.1*3.75 + 0.04*15 + 0.01*20
	if got := p.Cost(u); !near(got, want) {
		t.Errorf("cost %v, want %v", got, want)
	}
	// Counts that do not add up never make a cost negative.
	if got := p.Cost(llm.Usage{InputTokens: 5, CachedInputTokens: 10, OutputTokens: 1, ReasoningTokens: 4}); got < 0 {
		t.Errorf("cost %v", got)
	}
	tab := pricing.Default()
	c, ok := tab.Price("claude-sonnet-4-5-20250929", llm.Usage{InputTokens: 2_000_000, OutputTokens: 1_000_000})
	if !ok || !near(c, 2*3+15) {
		t.Errorf("sonnet: %v %v", c, ok)
	}
	// Reasoning defaults to the output price, cache writes to input.
	gp, _, _ := tab.Lookup("gpt-4o")
	if gp.Reasoning != gp.Output || gp.CacheWrite != gp.Input || gp.CacheRead != 1.25 {
		t.Errorf("gpt-4o %+v", gp)
	}
}

func ptr(v float64) *float64 { return &v }

func TestOverrides(t *testing.T) {
	tab, err := pricing.Default().With(map[string]pricing.Override{
		"openai:gpt-4o":  {Input: ptr(1)},
		"local:qwen3":    {Input: ptr(0.5), Output: ptr(1)},
		"openai:gpt-5.2": {Input: ptr(2), Output: ptr(12), Reasoning: ptr(12)},
	})
	if err != nil {
		t.Fatal(err)
	}
	gp, _, _ := tab.Lookup("gpt-4o-2024-11-20")
	if gp.Input != 1 || gp.Output != 10 || gp.CacheRead != 1.25 {
		t.Errorf("changed gpt-4o %+v: input changes, the rest stays", gp)
	}
	if p, key, ok := tab.Lookup("qwen3"); !ok || key != "local:qwen3" || p.CacheRead != 0.5 || p.Reasoning != 1 {
		t.Errorf("added model %+v %q", p, key)
	}
	if _, key, _ := tab.Lookup("gpt-5.2-2025-12-11"); key != "openai:gpt-5.2" {
		t.Errorf("gpt-5.2 matched %q", key)
	}
	// An Ollama model's own colon is part of its name, with or without the
	// provider in front.
	tab, err = pricing.Default().With(map[string]pricing.Override{"ollama:qwen3:8b": {Input: ptr(0.1), Output: ptr(0.2)}})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"qwen3:8b", "ollama:qwen3:8b"} {
		if _, key, ok := tab.Lookup(name); !ok || key != "ollama:qwen3:8b" {
			t.Errorf("Lookup(%q) = %q, %v", name, key, ok)
		}
	}
	if _, key, ok := tab.Lookup("qwen3:32b"); ok {
		t.Errorf("qwen3:32b matched %q", key)
	}
	if orig, _, _ := pricing.Default().Lookup("gpt-4o"); orig.Input != 2.5 {
		t.Error("With changed the shipped table")
	}
	for name, o := range map[string]map[string]pricing.Override{
		"unknown needs input and output": {"x:new-model": {Input: ptr(1)}},
		"negative":                       {"openai:gpt-4o": {Output: ptr(-1)}},
		"NaN":                            {"openai:gpt-4o": {Output: ptr(math.NaN())}},
		"no provider":                    {"gpt-4o": {Input: ptr(1)}},
		"no model":                       {"openai:": {Input: ptr(1)}},
	} {
		if _, err := pricing.Default().With(o); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestParse(t *testing.T) {
	tab, err := pricing.Parse([]byte(`{"as_of": "2030-01-01", "models": {"acme:rocket": {"input": 1, "output": 2}}}`))
	if err != nil || tab.AsOf != "2030-01-01" {
		t.Fatal(tab, err)
	}
	for _, bad := range []string{
		`{"models": {"acme:rocket": {"input": 1, "output": 2, "extra": 3}}}`,
		`{"models": {"acme:rocket": {"input": "1", "output": 2}}}`,
		`{"models": {"rocket": {"input": 1, "output": 2}}}`,
		`{"models": {"acme:rocket": {"input": 1}}}`,
		`{"models": [1]}`,
		`[`,
		`{"price": 1}`,
		strings.Repeat(" ", pricing.MaxTableBytes+1),
	} {
		if _, err := pricing.Parse([]byte(bad)); err == nil {
			t.Errorf("Parse(%.60q) accepted", bad)
		}
	}
}

// The table's decoder never panics, and what it accepts prices every
// model it lists at a cost that is a number and not negative.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"as_of": "2030-01-01", "models": {"acme:rocket": {"input": 1, "output": 2}}}`))
	f.Add([]byte(`{"models": {"a:b": {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0, "reasoning": 0}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tab, err := pricing.Parse(data)
		if err != nil {
			return
		}
		u := llm.Usage{InputTokens: 1000, OutputTokens: 500, CachedInputTokens: 100, CacheWriteTokens: 50, ReasoningTokens: 20}
		for _, key := range tab.Keys() {
			c, ok := tab.Price(key, u)
			if !ok || math.IsNaN(c) || c < 0 {
				t.Fatalf("%q: %v %v", key, c, ok)
			}
		}
	})
}
