package gemini

import (
	"context"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/providers/gemini/geminitest"
)

// TestReasoningSettingMapping: the provider-neutral reasoning setting
// becomes a thinking level on Gemini 3 and a thinking budget on 2.5 and on
// aliases, with thought summaries on.
func TestReasoningSettingMapping(t *testing.T) {
	for _, tc := range []struct {
		model     string
		reasoning llm.ReasoningConfig
		want      string // thinkingConfig as JSON
	}{
		{"gemini-3-flash-preview", llm.ReasoningConfig{Effort: "low"}, `{"includeThoughts":true,"thinkingLevel":"LOW"}`},
		{"gemini-3-flash-preview", llm.ReasoningConfig{Effort: "medium"}, `{"includeThoughts":true,"thinkingLevel":"MEDIUM"}`},
		{"gemini-3.1-pro-preview", llm.ReasoningConfig{Effort: "high"}, `{"includeThoughts":true,"thinkingLevel":"HIGH"}`},
		{"gemini-3-pro-preview", llm.ReasoningConfig{Effort: "medium"}, `{"includeThoughts":true,"thinkingLevel":"HIGH"}`},
		{"gemini-3-flash-preview", llm.ReasoningConfig{BudgetTokens: 1000}, `{"includeThoughts":true,"thinkingLevel":"LOW"}`},
		{"gemini-3-flash-preview", llm.ReasoningConfig{BudgetTokens: 8000}, `{"includeThoughts":true,"thinkingLevel":"MEDIUM"}`},
		{"gemini-3-flash-preview", llm.ReasoningConfig{BudgetTokens: 30000}, `{"includeThoughts":true,"thinkingLevel":"HIGH"}`},
		{"gemini-2.5-flash", llm.ReasoningConfig{Effort: "low"}, `{"includeThoughts":true,"thinkingBudget":1024}`},
		{"gemini-2.5-flash", llm.ReasoningConfig{Effort: "medium"}, `{"includeThoughts":true,"thinkingBudget":8192}`},
		{"gemini-2.5-pro", llm.ReasoningConfig{Effort: "high"}, `{"includeThoughts":true,"thinkingBudget":24576}`},
		{"gemini-2.5-flash-lite", llm.ReasoningConfig{Effort: "low"}, `{"includeThoughts":true,"thinkingBudget":1024}`},
		{"gemini-2.5-pro", llm.ReasoningConfig{BudgetTokens: 300}, `{"includeThoughts":true,"thinkingBudget":300}`},
		{"models/gemini-2.5-flash", llm.ReasoningConfig{BudgetTokens: 2000}, `{"includeThoughts":true,"thinkingBudget":2000}`},
		{"gemini-flash-latest", llm.ReasoningConfig{Effort: "high"}, `{"includeThoughts":true,"thinkingBudget":24576}`},
		{"gemini-2.0-flash", llm.ReasoningConfig{Effort: "high"}, `null`},
	} {
		srv := geminitest.NewServer(t, geminitest.Sequence(geminitest.Text("ok")))
		m, _ := newTestModel(t, srv, func(c *Config) { c.Model = tc.model; c.ThinkingBudget = ptr(5) })
		r := tc.reasoning
		if _, err := m.Generate(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("hi")}, Settings: llm.Settings{Reasoning: &r}}); err != nil {
			t.Fatalf("%s %+v: %v", tc.model, tc.reasoning, err)
		}
		assertValid(t, srv)
		var got any
		if g := lastRequest(t, srv).Body.GenerationConfig; g != nil {
			got = g.ThinkingConfig
		}
		if s := mustJSON(t, got); s != tc.want {
			t.Errorf("%s %+v: thinkingConfig = %s, want %s", tc.model, tc.reasoning, s, tc.want)
		}
	}
}

// TestCheckSettings: settings Gemini rejects are refused with a clear error
// before any call (and Generate refuses them too); settings this model
// ignores are listed as dropped.
func TestCheckSettings(t *testing.T) {
	for _, tc := range []struct {
		name    string
		model   string
		s       llm.Settings
		dropped string
		err     string
	}{
		{"nothing", "gemini-2.5-flash", llm.Settings{}, "", ""},
		{"fine", "gemini-3-pro-preview", llm.Settings{Temperature: ptr(1.0), TopP: ptr(0.95), MaxTokens: 100, Reasoning: &llm.ReasoningConfig{Effort: "high"}}, "", ""},
		{"temperature", "gemini-2.5-flash", llm.Settings{Temperature: ptr(2.5)}, "", "temperature must be between 0 and 2, got 2.5"},
		{"top_p", "gemini-2.5-flash", llm.Settings{TopP: ptr(-0.1)}, "", "top_p must be between 0 and 1, got -0.1"},
		{"stop", "gemini-2.5-flash", llm.Settings{Stop: []string{"a", "b", "c", "d", "e", "f"}}, "", "at most 5 stop sequences, got 6"},
		{"effort", "gemini-2.5-flash", llm.Settings{Reasoning: &llm.ReasoningConfig{Effort: "extreme"}}, "", `unknown reasoning effort "extreme": use low, medium or high`},
		{"both", "gemini-2.5-flash", llm.Settings{Reasoning: &llm.ReasoningConfig{Effort: "low", BudgetTokens: 10}}, "", "set a reasoning effort or a reasoning budget, not both"},
		{"negative budget", "gemini-3-flash-preview", llm.Settings{Reasoning: &llm.ReasoningConfig{BudgetTokens: -1}}, "", "must be a positive number of tokens, got -1"},
		{"budget too big", "gemini-2.5-flash", llm.Settings{Reasoning: &llm.ReasoningConfig{BudgetTokens: 50000}}, "", "gemini-2.5-flash takes a reasoning budget between 1 and 24576 tokens, got 50000"},
		{"budget too small", "gemini-2.5-pro", llm.Settings{Reasoning: &llm.ReasoningConfig{BudgetTokens: 100}}, "", "between 128 and 32768 tokens, got 100"},
		{"no thinking", "gemini-2.0-flash", llm.Settings{Reasoning: &llm.ReasoningConfig{Effort: "low"}}, "reasoning", ""},
		{"no parallel switch", "gemini-2.5-flash", llm.Settings{ParallelToolCalls: ptr(false)}, "parallel_tool_calls", ""},
		{"parallel on is the default", "gemini-2.5-flash", llm.Settings{ParallelToolCalls: ptr(true)}, "", ""},
	} {
		srv := geminitest.NewServer(t, geminitest.Sequence(geminitest.Text("ok")))
		m, _ := newTestModel(t, srv, func(c *Config) { c.Model = tc.model })
		dropped, err := m.CheckSettings(tc.s)
		if got := strings.Join(dropped, ","); got != tc.dropped {
			t.Errorf("%s: dropped %q, want %q", tc.name, got, tc.dropped)
		}
		if (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.err)
		}
		_, gerr := m.Generate(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("hi")}, Settings: tc.s})
		if (gerr == nil) != (tc.err == "") {
			t.Errorf("%s: Generate err = %v", tc.name, gerr)
		}
		if tc.err != "" && len(srv.Requests()) != 0 {
			t.Errorf("%s: a refused setting was sent", tc.name)
		}
	}
}

func TestCapabilities(t *testing.T) {
	for _, tc := range []struct {
		model             string
		images, reasoning bool
	}{
		{"gemini-3-pro-preview", true, true},
		{"gemini-3-flash-preview", true, true},
		{"gemini-2.5-flash", true, true},
		{"gemini-2.5-flash-lite", true, true},
		{"models/gemini-2.5-pro", true, true},
		{"gemini-flash-latest", true, true},
		{"gemini-2.0-flash", true, false},
		{"gemini-2.0-flash-thinking-exp", true, true},
		{"gemini-1.5-pro", true, false},
		{"gemini-2.5-flash-image", true, false},
		{"gemini-2.5-flash-preview-tts", false, false},
		{"gemini-embedding-001", false, false},
		{"gemma-3-27b-it", true, false},
		{"gemma-2-9b-it", false, false},
	} {
		m := &Model{cfg: Config{Model: tc.model}}
		if got := m.Capabilities(); got != (llm.Capabilities{Images: tc.images, Reasoning: tc.reasoning}) {
			t.Errorf("%s: %+v, want images=%v reasoning=%v", tc.model, got, tc.images, tc.reasoning)
		}
	}
}
