package config

import (
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/deepagents-go/deepagents/tokens"
)

// This file is the [models."provider:model"] tables: configured numbers for
// a model's context window, output limit and prompt caching, over the
// built-in table (tokens.ProfileFor) or for a model it does not know.

var modelKeys = []string{"context_window", "max_output", "caches"}

// maxWindow bounds configured token counts: larger numbers are typos.
const maxWindow = 100_000_000

// parseModels reads the models table: one table per "provider:model" key.
func parseModels(p *problems, v any, line int, at func(...string) int) map[string]tokens.Override {
	tables, ok := v.(map[string]any)
	if !ok {
		p.add(line, `models must be a table of [models."provider:model"] tables, got %s`, tomlKind(v))
		return nil
	}
	out := map[string]tokens.Override{}
	for _, ref := range slices.Sorted(maps.Keys(tables)) {
		l := at("models", ref)
		key, msg := modelKey(ref)
		if msg != "" {
			p.add(l, "models.%q %s", ref, msg)
			continue
		}
		if _, dup := out[key]; dup {
			p.add(l, "models.%q names the same model as another table (provider names are not case-sensitive)", ref)
			continue
		}
		t, ok := tables[ref].(map[string]any)
		if !ok {
			p.add(l, "models.%q must be a table, got %s", ref, tomlKind(tables[ref]))
			continue
		}
		var o tokens.Override
		for _, k := range slices.Sorted(maps.Keys(t)) {
			kl := at("models", ref, k)
			full := "models." + ref + "." + k
			switch k {
			case "context_window", "max_output":
				n, ok := t[k].(int64)
				switch {
				case !ok:
					p.add(kl, "%s must be a whole number of tokens, got %s", full, tomlKind(t[k]))
				case n < 1:
					p.add(kl, "%s must be at least 1, got %d", full, n)
				case n > maxWindow || n > math.MaxInt32:
					p.add(kl, "%s is too large: %d tokens", full, n)
				case k == "context_window":
					o.Window = int(n)
				default:
					o.MaxOutput = int(n)
				}
			case "caches":
				b, ok := t[k].(bool)
				if !ok {
					p.add(kl, "%s must be true or false, got %s", full, tomlKind(t[k]))
					continue
				}
				o.Caches = &b
			default:
				p.add(kl, "%s", unknownKey(full, k, modelKeys))
			}
		}
		if o.Window > 0 && o.MaxOutput >= o.Window {
			p.add(l, "models.%q: max_output (%d) must be less than context_window (%d)", ref, o.MaxOutput, o.Window)
			continue
		}
		out[key] = o
	}
	return out
}

// modelKey is the canonical form of a "provider:model" key: the provider
// in lower case, both parts trimmed. msg says what is wrong, if anything.
func modelKey(ref string) (key, msg string) {
	provider, model, ok := strings.Cut(strings.TrimSpace(ref), ":")
	provider, model = strings.ToLower(strings.TrimSpace(provider)), strings.TrimSpace(model)
	switch {
	case !ok:
		return "", `must be "provider:model" (e.g. "openai:gpt-4.1")`
	case !nameRe.MatchString(provider):
		return "", `must start with a provider name (letters, digits, "_" and "-") before the ":"`
	case model == "":
		return "", `names no model after the ":"`
	}
	return provider + ":" + model, ""
}

// Profile returns what the harness knows about a provider's model: the
// built-in numbers (tokens.ProfileFor; the provider's type is used for a
// configured provider such as an OpenAI-compatible server), then any
// [models."provider:model"] table over them. Window is 0 when neither knows
// the model.
func (c *Config) Profile(provider, model string) tokens.Profile {
	provider = strings.ToLower(provider)
	p, ok := tokens.ProfileFor(provider, model)
	if !ok && c != nil {
		if kind := c.ProviderFor(provider).Type; kind == "openai" || kind == "anthropic" || kind == "gemini" {
			p, _ = tokens.ProfileFor(kind, model)
		}
	}
	if c == nil {
		return p
	}
	if o, ok := c.Models[provider+":"+strings.TrimSpace(model)]; ok {
		p = o.Apply(p)
	}
	return p
}
