package openai

import (
	"fmt"
	"strings"

	"github.com/deepagents-go/deepagents/llm"
)

// Budget thresholds of the mapping from a thinking budget to an effort: the
// API takes only an effort, so a budget below effortMediumBudget tokens asks
// for low effort, one below effortHighBudget for medium, and anything larger
// for high.
const (
	effortMediumBudget = 4096
	effortHighBudget   = 16384
)

var (
	_ llm.CapabilityReporter = (*Model)(nil)
	_ llm.SettingsChecker    = (*Model)(nil)
)

// effort returns the reasoning_effort to send for rc ("" for none). An
// explicit effort wins over a budget.
func effort(rc *llm.ReasoningConfig) (string, error) {
	if rc == nil || rc.IsZero() {
		return "", nil
	}
	switch rc.Effort {
	case llm.EffortLow, llm.EffortMedium, llm.EffortHigh:
		return string(rc.Effort), nil
	case "":
	default:
		return "", fmt.Errorf("unknown reasoning effort %q (use low, medium or high)", rc.Effort)
	}
	switch b := rc.BudgetTokens; {
	case b < 0:
		return "", fmt.Errorf("the reasoning budget must be positive, not %d tokens", b)
	case b < effortMediumBudget:
		return string(llm.EffortLow), nil
	case b < effortHighBudget:
		return string(llm.EffortMedium), nil
	}
	return string(llm.EffortHigh), nil
}

// family is the lower-case model name without an "openai/" style prefix.
func family(model string) string {
	m := strings.ToLower(model)
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	return m
}

// reasoningModel reports whether model is one of OpenAI's reasoning models
// (the o-series, gpt-5 and codex models other than the gpt-5 chat ones),
// which think by default and reject sampling settings.
func reasoningModel(model string) bool {
	f := family(model)
	switch {
	case strings.Contains(f, "-chat"):
		return false
	case len(f) >= 2 && f[0] == 'o' && f[1] >= '1' && f[1] <= '9':
		return true
	case strings.HasPrefix(f, "gpt-5"), strings.Contains(f, "codex"):
		return true
	}
	return false
}

// plainModel reports whether model is a known OpenAI model that does not
// reason at all (gpt-3.5, gpt-4, gpt-4o, gpt-4.1 and their variants), so that
// asking it for a reasoning effort is an error the API would return anyway.
func plainModel(model string) bool {
	f := family(model)
	for _, p := range []string{"gpt-3.5", "gpt-4", "chatgpt-4o"} {
		if strings.HasPrefix(f, p) {
			return true
		}
	}
	return false
}

// textOnlyModel reports whether model is a known OpenAI model that reads no
// images: gpt-3.5, the original gpt-4 and its text-only previews (not
// gpt-4-turbo, gpt-4o or gpt-4.1), o1-mini, o1-preview and o3-mini.
func textOnlyModel(model string) bool {
	f := family(model)
	switch {
	case strings.HasPrefix(f, "gpt-3.5"):
		return true
	case f == "gpt-4", strings.HasPrefix(f, "gpt-4-0"), strings.HasPrefix(f, "gpt-4-32k"), strings.HasPrefix(f, "gpt-4-1106-preview"):
		return true
	case strings.HasPrefix(f, "o1-mini"), strings.HasPrefix(f, "o1-preview"), strings.HasPrefix(f, "o3-mini"):
		return true
	}
	return false
}

// Capabilities reports what the model accepts, judged from its name:
// images for every model except the known text-only ones (gpt-3.5, the
// original gpt-4, o1-mini, o1-preview, o3-mini) and except when
// Config.NoImages is set; reasoning for every model except the known
// non-reasoning OpenAI families (gpt-3.5, gpt-4, gpt-4o, gpt-4.1). Models of
// other servers are assumed to take both, as current families do; set
// Config.NoImages for a text-only local model.
func (m *Model) Capabilities() llm.Capabilities {
	return llm.Capabilities{
		Images:    !m.cfg.NoImages && !textOnlyModel(m.cfg.Model),
		Reasoning: !plainModel(m.cfg.Model),
	}
}

// CheckSettings says before any call what the API would refuse. It returns an
// error for an unknown effort, a negative budget, or a reasoning setting on a
// model that does not reason. It lists as dropped — and the requests then
// leave out — temperature and top_p on OpenAI's reasoning models, which
// reject them, and stop sequences on the Responses API, which has none.
func (m *Model) CheckSettings(s llm.Settings) (dropped []string, err error) {
	e, err := effort(s.Reasoning)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", m.provider, err)
	}
	if e != "" && plainModel(m.cfg.Model) {
		return nil, fmt.Errorf("%s: model %s does not reason, so it takes no reasoning setting; remove it or pick a reasoning model (o3, o4-mini, gpt-5, ...)", m.provider, m.cfg.Model)
	}
	return m.dropped(s), nil
}

// dropped names the settings of s that requests leave out (see
// CheckSettings).
func (m *Model) dropped(s llm.Settings) []string {
	var out []string
	if reasoningModel(m.cfg.Model) {
		if s.Temperature != nil {
			out = append(out, "temperature")
		}
		if s.TopP != nil {
			out = append(out, "top_p")
		}
	}
	if m.responsesAPI() && len(s.Stop) > 0 {
		out = append(out, "stop")
	}
	return out
}

// responsesAPI reports whether the model talks to the Responses API.
func (m *Model) responsesAPI() bool { return m.cfg.API == APIResponses }
