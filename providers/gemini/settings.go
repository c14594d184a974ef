package gemini

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"google.golang.org/genai"

	"github.com/deepagents-go/deepagents/llm"
)

// family is what the adapter knows about a model id from its name.
type family struct {
	name string
	// major and minor are the generation ("gemini-2.5-flash" is 2.5); ok is
	// false for names without one (aliases such as "gemini-flash-latest").
	major, minor int
	ok           bool
}

func familyOf(model string) family {
	name := strings.ToLower(strings.TrimPrefix(strings.TrimSpace(model), "models/"))
	f := family{name: name}
	rest, found := strings.CutPrefix(name, "gemini-")
	if !found {
		return f
	}
	ver, _, _ := strings.Cut(rest, "-")
	majorS, minorS, _ := strings.Cut(ver, ".")
	major, err := strconv.Atoi(majorS)
	if err != nil {
		return f
	}
	minor := 0
	if minorS != "" {
		if minor, err = strconv.Atoi(minorS); err != nil {
			return f
		}
	}
	f.major, f.minor, f.ok = major, minor, true
	return f
}

func (f family) gemini() bool { return strings.HasPrefix(f.name, "gemini-") }

// atLeast reports whether the model is of generation major.minor or later;
// names without a generation (current aliases) count as the latest.
func (f family) atLeast(major, minor int) bool {
	if !f.ok {
		return f.gemini()
	}
	return f.major > major || (f.major == major && f.minor >= minor)
}

func (f family) has(words ...string) bool {
	for _, w := range words {
		if strings.Contains(f.name, w) {
			return true
		}
	}
	return false
}

// levels: Gemini 3 and later take a thinking level rather than a budget.
func (f family) levels() bool { return f.ok && f.major >= 3 }

// thinks: the model honours a thinking configuration (Gemini 2.5 and later,
// and the 2.0 thinking previews), except the image, speech and embedding
// variants.
func (f family) thinks() bool {
	if f.has("embedding", "aqa", "-tts", "flash-image", "live", "native-audio") && !f.levels() {
		return false
	}
	return f.atLeast(2, 5) || (f.gemini() && f.has("thinking"))
}

// images: the model reads images. Every Gemini chat model does; embedding,
// question-answering, speech and the text-only Gemma models do not.
func (f family) images() bool {
	if f.has("embedding", "aqa", "-tts") {
		return false
	}
	return !(strings.HasPrefix(f.name, "gemma-1") || strings.HasPrefix(f.name, "gemma-2") || strings.HasPrefix(f.name, "gemma-3-1b"))
}

// wireOptions: function responses carry images from Gemini 3 on, and only
// Gemini 3 and later refuse unsigned function calls. Names without a
// generation (aliases such as "gemini-pro-latest") count as current models.
func (f family) wireOptions() wireOptions {
	newer := f.ok && f.major >= 3 || !f.ok && f.gemini()
	return wireOptions{imagesInResponses: newer, signCalls: newer}
}

// Capabilities reports what the configured model accepts, from its name:
// images for every Gemini chat model and Gemma 3 (not embedding, AQA, TTS or
// text-only Gemma models); reasoning for Gemini 2.5 and later (and model
// aliases such as "gemini-flash-latest"), not for 2.0 and older nor the
// image, speech and live variants.
func (m *Model) Capabilities() llm.Capabilities {
	f := familyOf(m.cfg.Model)
	return llm.Capabilities{Images: f.images(), Reasoning: f.thinks()}
}

// budgetRange is the thinking budget the Gemini 2.5 models accept.
func (f family) budgetRange() (lo, hi int, known bool) {
	if !f.ok || f.major != 2 || f.minor != 5 {
		return 0, 0, false
	}
	switch {
	case f.has("flash-lite"):
		return 512, 24576, true
	case f.has("flash"):
		return 1, 24576, true
	case f.has("pro"):
		return 128, 32768, true
	}
	return 0, 0, false
}

// effortBudgets are the thinking budgets used for an effort on models that
// take a budget.
var effortBudgets = map[llm.ReasoningEffort]int{llm.EffortLow: 1024, llm.EffortMedium: 8192, llm.EffortHigh: 24576}

// thinkingConfig maps a provider-neutral reasoning setting to Gemini's:
//   - Gemini 3 and later take a level: low, medium and high map to LOW,
//     MEDIUM and HIGH (MEDIUM becomes HIGH on gemini-3-pro, which has no
//     MEDIUM); a budget maps to LOW up to 2048 tokens, MEDIUM up to 12288,
//     else HIGH;
//   - Gemini 2.5 and unknown names take a budget: low, medium and high are
//     1024, 8192 and 24576 tokens (capped to what the model takes); a budget
//     is sent as is and must lie in the model's range.
//
// Thought summaries are always asked for. It returns nil, nil when r asks for
// nothing or the model does not think (CheckSettings reports that).
func thinkingConfig(f family, r *llm.ReasoningConfig) (*genai.ThinkingConfig, error) {
	if r == nil || r.IsZero() {
		return nil, nil
	}
	switch r.Effort {
	case "", llm.EffortLow, llm.EffortMedium, llm.EffortHigh:
	default:
		return nil, fmt.Errorf("unknown reasoning effort %q: use low, medium or high", r.Effort)
	}
	if r.BudgetTokens < 0 {
		return nil, fmt.Errorf("the reasoning budget must be a positive number of tokens, got %d", r.BudgetTokens)
	}
	if r.Effort != "" && r.BudgetTokens != 0 {
		return nil, errors.New("set a reasoning effort or a reasoning budget, not both")
	}
	if !f.thinks() {
		return nil, nil
	}
	tc := &genai.ThinkingConfig{IncludeThoughts: true}
	if f.levels() {
		effort := r.Effort
		if effort == "" {
			switch {
			case r.BudgetTokens <= 2048:
				effort = llm.EffortLow
			case r.BudgetTokens <= 12288:
				effort = llm.EffortMedium
			default:
				effort = llm.EffortHigh
			}
		}
		tc.ThinkingLevel = map[llm.ReasoningEffort]genai.ThinkingLevel{
			llm.EffortLow: genai.ThinkingLevelLow, llm.EffortMedium: genai.ThinkingLevelMedium, llm.EffortHigh: genai.ThinkingLevelHigh,
		}[effort]
		if tc.ThinkingLevel == genai.ThinkingLevelMedium && strings.HasPrefix(f.name, "gemini-3-pro") {
			tc.ThinkingLevel = genai.ThinkingLevelHigh
		}
		return tc, nil
	}
	lo, hi, known := f.budgetRange()
	budget := r.BudgetTokens
	if r.Effort != "" {
		budget = effortBudgets[r.Effort]
		if known {
			budget = max(lo, min(budget, hi))
		}
	} else if known && (budget < lo || budget > hi) {
		return nil, fmt.Errorf("%s takes a reasoning budget between %d and %d tokens, got %d", f.name, lo, hi, budget)
	}
	tc.ThinkingBudget = genai.Ptr(int32(min(budget, math.MaxInt32)))
	return tc, nil
}

// CheckSettings reports, before any call, the settings Gemini rejects (an
// error naming them) and the ones this model ignores, which the adapter does
// not send: "reasoning" on a model that does not think, and
// "parallel_tool_calls" set to false (Gemini has no such switch).
func (m *Model) CheckSettings(s llm.Settings) (dropped []string, err error) {
	f := familyOf(m.cfg.Model)
	var errs []error
	if t := s.Temperature; t != nil && !(*t >= 0 && *t <= 2) {
		errs = append(errs, fmt.Errorf("temperature must be between 0 and 2, got %v", *t))
	}
	if p := s.TopP; p != nil && !(*p >= 0 && *p <= 1) {
		errs = append(errs, fmt.Errorf("top_p must be between 0 and 1, got %v", *p))
	}
	if s.MaxTokens < 0 {
		errs = append(errs, fmt.Errorf("max tokens must not be negative, got %d", s.MaxTokens))
	}
	if len(s.Stop) > 5 {
		errs = append(errs, fmt.Errorf("gemini takes at most 5 stop sequences, got %d", len(s.Stop)))
	}
	if _, e := thinkingConfig(f, s.Reasoning); e != nil {
		errs = append(errs, e)
	} else if s.Reasoning != nil && !s.Reasoning.IsZero() && !f.thinks() {
		dropped = append(dropped, "reasoning")
	}
	if s.ParallelToolCalls != nil && !*s.ParallelToolCalls {
		dropped = append(dropped, "parallel_tool_calls")
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("gemini (%s): %w", m.cfg.Model, errors.Join(errs...))
	}
	return dropped, nil
}
