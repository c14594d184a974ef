package anthropic

import (
	"fmt"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/deepagents-go/deepagents/llm"
)

// Thinking budgets the provider-neutral efforts map to when a model thinks
// with a token budget (thinking type "enabled").
const (
	BudgetLow    = 2048
	BudgetMedium = 8192
	BudgetHigh   = 24576
	// MinThinkingBudget is the smallest budget the API accepts; smaller
	// budgets are raised to it.
	MinThinkingBudget = 1024
)

// interleavedBeta lets a model think between tool calls when it thinks with
// a token budget; adaptive thinking interleaves without it.
const interleavedBeta = "interleaved-thinking-2025-05-14"

// noReasoningPrefixes are model families without extended thinking.
var noReasoningPrefixes = []string{"claude-instant", "claude-2", "claude-3-opus", "claude-3-sonnet", "claude-3-haiku", "claude-3-5"}

// noImagePrefixes are model families that read text only.
var noImagePrefixes = []string{"claude-instant", "claude-2"}

// adaptivePrefixes are models that think adaptively, steered by an effort:
// the SDK reports budget thinking as deprecated on them.
var adaptivePrefixes = []string{"claude-opus-4-6", "claude-opus-4-7", "claude-mythos"}

func hasPrefix(model string, prefixes []string) bool {
	model = strings.ToLower(model)
	for _, p := range prefixes {
		if strings.HasPrefix(model, p) {
			return true
		}
	}
	return false
}

// Capabilities reports what the configured model accepts, decided by its
// name: every family since Claude 3 reads images (Claude 2 and Instant do
// not), and Claude 3.7 Sonnet, the Claude 4 families and later think
// (Claude 3, 3.5 and older do not). Unknown names are taken to be current
// models and get both.
func (m *Model) Capabilities() llm.Capabilities {
	return llm.Capabilities{
		Images:    !hasPrefix(m.cfg.Model, noImagePrefixes),
		Reasoning: !hasPrefix(m.cfg.Model, noReasoningPrefixes),
	}
}

// thinking is the thinking configuration of one request.
type thinking struct {
	budget   int                          // > 0: thinking with this token budget
	adaptive bool                         // adaptive thinking
	effort   anthropic.OutputConfigEffort // adaptive: the effort, "" for the model's default
}

func (t thinking) on() bool { return t.budget > 0 || t.adaptive }

// checkReasoning rejects a reasoning setting no provider can honour.
func checkReasoning(r *llm.ReasoningConfig) error {
	if r == nil {
		return nil
	}
	switch r.Effort {
	case "", llm.EffortLow, llm.EffortMedium, llm.EffortHigh:
	default:
		return fmt.Errorf("anthropic: unknown reasoning effort %q (want low, medium or high)", r.Effort)
	}
	if r.BudgetTokens < 0 {
		return fmt.Errorf("anthropic: the reasoning budget must not be negative (got %d)", r.BudgetTokens)
	}
	return nil
}

// budgetFor maps an effort to a thinking budget.
func budgetFor(e llm.ReasoningEffort) int {
	switch e {
	case llm.EffortLow:
		return BudgetLow
	case llm.EffortHigh:
		return BudgetHigh
	}
	return BudgetMedium
}

// effortFor maps a thinking budget to the nearest effort.
func effortFor(budget int) anthropic.OutputConfigEffort {
	switch {
	case budget <= 2*BudgetLow:
		return anthropic.OutputConfigEffortLow
	case budget <= 2*BudgetMedium:
		return anthropic.OutputConfigEffortMedium
	}
	return anthropic.OutputConfigEffortHigh
}

// thinkingFor resolves the thinking of a request: Settings.Reasoning when
// set (and the model thinks at all), else the Config's ThinkingBudget or
// AdaptiveThinking.
func (m *Model) thinkingFor(s llm.Settings) thinking {
	if r := s.Reasoning; r != nil && !r.IsZero() {
		if !m.Capabilities().Reasoning {
			return thinking{}
		}
		if m.cfg.AdaptiveThinking || hasPrefix(m.cfg.Model, adaptivePrefixes) {
			e := anthropic.OutputConfigEffort(r.Effort)
			if e == "" {
				e = effortFor(r.BudgetTokens)
			}
			return thinking{adaptive: true, effort: e}
		}
		b := r.BudgetTokens
		if b == 0 {
			b = budgetFor(r.Effort)
		}
		return thinking{budget: max(b, MinThinkingBudget)}
	}
	switch {
	case m.cfg.ThinkingBudget > 0:
		return thinking{budget: max(m.cfg.ThinkingBudget, MinThinkingBudget)}
	case m.cfg.AdaptiveThinking:
		return thinking{adaptive: true}
	}
	return thinking{}
}

// CheckSettings reports the settings the Messages API refuses: temperature
// and top_p together with thinking are an error (the API rejects sampling
// settings while the model thinks); without thinking they are dropped (the
// API version this SDK speaks removed them), and so is a reasoning setting
// on a model that does not think. An unknown effort or a negative budget is
// an error.
func (m *Model) CheckSettings(s llm.Settings) (dropped []string, err error) {
	if err := checkReasoning(s.Reasoning); err != nil {
		return nil, err
	}
	sampling := samplingSet(s)
	if m.thinkingFor(s).on() && len(sampling) > 0 {
		return nil, samplingError(sampling)
	}
	dropped = append(dropped, sampling...)
	if r := s.Reasoning; r != nil && !r.IsZero() && !m.Capabilities().Reasoning {
		dropped = append(dropped, "reasoning")
	}
	return dropped, nil
}

func samplingSet(s llm.Settings) []string {
	var out []string
	if s.Temperature != nil {
		out = append(out, "temperature")
	}
	if s.TopP != nil {
		out = append(out, "top_p")
	}
	return out
}

func samplingError(names []string) error {
	return fmt.Errorf("anthropic: %s cannot be set while extended thinking is on (the API rejects sampling settings when the model thinks); remove %s or turn reasoning off",
		strings.Join(names, " and "), map[bool]string{true: "it", false: "them"}[len(names) == 1])
}
