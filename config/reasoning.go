package config

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/deepagents-go/deepagents/llm"
	"go.yaml.in/yaml/v3"
)

// MaxReasoningBudget is the largest thinking budget a setting may ask for,
// in tokens. It is above the output limit of every current model, so a
// larger number is a typo rather than a wish.
const MaxReasoningBudget = 200_000

// ReasoningEfforts are the efforts a reasoning setting may name.
var ReasoningEfforts = []string{string(llm.EffortLow), string(llm.EffortMedium), string(llm.EffortHigh)}

var reasoningKeys = []string{"effort", "budget_tokens"}

// ParseReasoning reads a reasoning setting written as text, as --reasoning
// takes it and as a config or agent file may write it: an effort ("low",
// "medium" or "high", in any case) or a budget of thinking tokens ("8000",
// 1 to MaxReasoningBudget). Its errors say what is accepted; callers put
// the setting's name and a colon before them.
func ParseReasoning(text string) (*llm.ReasoningConfig, error) {
	s := strings.ToLower(strings.TrimSpace(text))
	if slices.Contains(ReasoningEfforts, s) {
		return &llm.ReasoningConfig{Effort: llm.ReasoningEffort(s)}, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if errors.Is(err, strconv.ErrRange) {
		if strings.HasPrefix(s, "-") {
			return nil, fmt.Errorf("a budget of %s thinking tokens is too small: at least 1", s)
		}
		return nil, fmt.Errorf("a budget of %s thinking tokens is too large: at most %d", s, MaxReasoningBudget)
	}
	if err != nil {
		return nil, fmt.Errorf(`want an effort (%s) or a number of thinking tokens (1 to %d), got %q`,
			quoteList(ReasoningEfforts, "or"), MaxReasoningBudget, text)
	}
	return reasoningBudget(n)
}

// reasoningBudget checks a thinking budget.
func reasoningBudget(n int64) (*llm.ReasoningConfig, error) {
	switch {
	case n < 1:
		return nil, fmt.Errorf("a budget of %d thinking tokens is too small: at least 1", n)
	case n > MaxReasoningBudget:
		return nil, fmt.Errorf("a budget of %d thinking tokens is too large: at most %d", n, MaxReasoningBudget)
	}
	return &llm.ReasoningConfig{BudgetTokens: int(n)}, nil
}

// reasoningEffort checks an effort named under effort, where a number
// belongs under budget_tokens instead.
func reasoningEffort(s string) (*llm.ReasoningConfig, error) {
	e := strings.ToLower(strings.TrimSpace(s))
	if !slices.Contains(ReasoningEfforts, e) {
		hint := ""
		if _, err := strconv.Atoi(e); err == nil {
			hint = "; a number of thinking tokens goes in budget_tokens"
		}
		return nil, fmt.Errorf("want %s, got %q%s", quoteList(ReasoningEfforts, "or"), s, hint)
	}
	return &llm.ReasoningConfig{Effort: llm.ReasoningEffort(e)}, nil
}

// reasoningShape describes every accepted way of writing the setting, for
// errors about a value of the wrong kind.
const reasoningShape = `an effort ("low", "medium" or "high"), a number of thinking tokens, or a table with effort or budget_tokens`

// tomlReasoning reads the reasoning key of a config file: a string (see
// ParseReasoning), an integer budget, or a table with exactly one of
// effort and budget_tokens.
func tomlReasoning(p *problems, v any, line int, at func(...string) int) *llm.ReasoningConfig {
	switch x := v.(type) {
	case string:
		r, err := ParseReasoning(x)
		if err != nil {
			p.add(line, "reasoning: %v", err)
		}
		return r
	case int64:
		r, err := reasoningBudget(x)
		if err != nil {
			p.add(line, "reasoning: %v", err)
		}
		return r
	case map[string]any:
		var out *llm.ReasoningConfig
		outLine := 0
		bad := false
		for _, key := range slices.Sorted(maps.Keys(x)) {
			kl := at("reasoning", key)
			full := "reasoning." + key
			var r *llm.ReasoningConfig
			var err error
			switch key {
			case "effort":
				s, ok := x[key].(string)
				if !ok {
					p.add(kl, "%s: want %s, got %s", full, quoteList(ReasoningEfforts, "or"), tomlKind(x[key]))
					bad = true
					continue
				}
				r, err = reasoningEffort(s)
			case "budget_tokens":
				n, ok := x[key].(int64)
				if !ok {
					p.add(kl, "%s must be a whole number of thinking tokens, got %s", full, tomlKind(x[key]))
					bad = true
					continue
				}
				r, err = reasoningBudget(n)
			default:
				p.add(kl, "%s", unknownKey(full, key, reasoningKeys))
				bad = true
				continue
			}
			if err != nil {
				p.add(kl, "%s: %v", full, err)
				bad = true
				continue
			}
			if out != nil {
				// Blame the later of the two lines.
				p.add(max(kl, outLine), "reasoning sets both effort and budget_tokens: set one of them")
				return nil
			}
			out, outLine = r, kl
		}
		if out == nil && !bad {
			p.add(line, "reasoning is an empty table: set effort or budget_tokens")
		}
		if bad {
			return nil
		}
		return out
	}
	p.add(line, "reasoning must be %s, got %s", reasoningShape, tomlKind(v))
	return nil
}

// yamlReasoning reads the reasoning key of an agent file's front matter:
// a word or number (see ParseReasoning), or a mapping with exactly one of
// effort and budget_tokens.
func yamlReasoning(p *problems, v *yaml.Node, line int, at func(*yaml.Node) int) *llm.ReasoningConfig {
	switch {
	case v.Kind == yaml.ScalarNode && v.ShortTag() == "!!null":
		p.add(line, "reasoning has no value: write an effort (low, medium or high) or a number of thinking tokens")
		return nil
	case v.Kind == yaml.ScalarNode && v.ShortTag() == "!!str":
		r, err := ParseReasoning(v.Value)
		if err != nil {
			p.add(line, "reasoning: %v", err)
		}
		return r
	case v.Kind == yaml.ScalarNode && v.ShortTag() == "!!int":
		r, err := reasoningBudget(yamlInt(v))
		if err != nil {
			p.add(line, "reasoning: %v", err)
		}
		return r
	case v.Kind == yaml.MappingNode:
		var out *llm.ReasoningConfig
		bad := false
		seen := map[string]bool{}
		for i := 0; i+1 < len(v.Content); i += 2 {
			k, val := deref(v.Content[i]), deref(v.Content[i+1])
			kl, vl := at(v.Content[i]), at(v.Content[i+1])
			if k.Kind != yaml.ScalarNode {
				p.add(kl, "reasoning: keys must be words, got %s", describe(k))
				bad = true
				continue
			}
			full := "reasoning." + k.Value
			if seen[k.Value] {
				p.add(kl, "%s is set twice", full)
				bad = true
				continue
			}
			seen[k.Value] = true
			var r *llm.ReasoningConfig
			var err error
			switch k.Value {
			case "effort":
				if val.Kind != yaml.ScalarNode || val.ShortTag() != "!!str" {
					p.add(vl, "%s: want %s, got %s", full, quoteList(ReasoningEfforts, "or"), describe(val))
					bad = true
					continue
				}
				r, err = reasoningEffort(val.Value)
			case "budget_tokens":
				if val.Kind != yaml.ScalarNode || val.ShortTag() != "!!int" {
					p.add(vl, "%s must be a whole number of thinking tokens, got %s", full, describe(val))
					bad = true
					continue
				}
				r, err = reasoningBudget(yamlInt(val))
			default:
				p.add(kl, "%s", unknownKey(full, k.Value, reasoningKeys))
				bad = true
				continue
			}
			if err != nil {
				p.add(vl, "%s: %v", full, err)
				bad = true
				continue
			}
			if out != nil {
				p.add(kl, "reasoning sets both effort and budget_tokens: set one of them")
				return nil
			}
			out = r
		}
		if out == nil && !bad {
			p.add(line, "reasoning is an empty mapping: set effort or budget_tokens")
		}
		if bad {
			return nil
		}
		return out
	}
	p.add(line, "reasoning must be %s, got %s", reasoningShape, describe(v))
	return nil
}

// yamlInt is the value of an !!int node; one beyond int64 is returned as
// the nearest int64, which is too large or too small for any setting.
func yamlInt(v *yaml.Node) int64 {
	var n int64
	if v.Decode(&n) != nil {
		if strings.HasPrefix(strings.TrimSpace(v.Value), "-") {
			return math.MinInt64
		}
		return math.MaxInt64
	}
	return n
}
