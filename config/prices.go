package config

import (
	"maps"
	"math"
	"slices"

	"github.com/deepagents-go/deepagents/pricing"
)

// This file is the cost settings: max_cost, the budget in US dollars of
// each run, and the [prices."provider:model"] tables over the shipped list
// prices (package pricing).

var priceKeys = []string{"input", "output", "cache_read", "cache_write", "reasoning"}

// maxCostLimit bounds max_cost: a larger number is a typo.
const maxCostLimit = 1_000_000

// tomlMaxCost reads max_cost: dollars, more than 0.
func tomlMaxCost(p *problems, v any, line int) float64 {
	f, ok := tomlNumber(v)
	switch {
	case !ok:
		p.add(line, "max_cost must be a number of US dollars (e.g. 2.50), got %s", tomlKind(v))
	case math.IsNaN(f) || f <= 0:
		p.add(line, "max_cost must be more than 0 dollars, got %v", f)
	case f > maxCostLimit:
		p.add(line, "max_cost is too large: %v dollars", f)
	default:
		return f
	}
	return 0
}

// tomlNumber is a TOML integer or float as a float.
func tomlNumber(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

// parsePrices reads the prices table: one table per "provider:model" key,
// each price in US dollars per million tokens.
func parsePrices(p *problems, v any, line int, at func(...string) int) map[string]pricing.Override {
	tables, ok := v.(map[string]any)
	if !ok {
		p.add(line, `prices must be a table of [prices."provider:model"] tables, got %s`, tomlKind(v))
		return nil
	}
	out := map[string]pricing.Override{}
	for _, ref := range slices.Sorted(maps.Keys(tables)) {
		l := at("prices", ref)
		key, msg := modelKey(ref)
		if msg != "" {
			p.add(l, "prices.%q %s", ref, msg)
			continue
		}
		if _, dup := out[key]; dup {
			p.add(l, "prices.%q names the same model as another table (provider names are not case-sensitive)", ref)
			continue
		}
		t, ok := tables[ref].(map[string]any)
		if !ok {
			p.add(l, "prices.%q must be a table, got %s", ref, tomlKind(tables[ref]))
			continue
		}
		var o pricing.Override
		for _, k := range slices.Sorted(maps.Keys(t)) {
			kl := at("prices", ref, k)
			full := "prices." + ref + "." + k
			if !slices.Contains(priceKeys, k) {
				p.add(kl, "%s", unknownKey(full, k, priceKeys))
				continue
			}
			f, ok := tomlNumber(t[k])
			if !ok {
				p.add(kl, "%s must be a price in US dollars per million tokens, got %s", full, tomlKind(t[k]))
				continue
			}
			if msg := pricing.Check(f); msg != "" {
				p.add(kl, "%s %s", full, msg)
				continue
			}
			switch k {
			case "input":
				o.Input = &f
			case "output":
				o.Output = &f
			case "cache_read":
				o.CacheRead = &f
			case "cache_write":
				o.CacheWrite = &f
			case "reasoning":
				o.Reasoning = &f
			}
		}
		if _, err := pricing.Default().With(map[string]pricing.Override{key: o}); err != nil {
			p.add(l, "prices.%q: %v", ref, err)
			continue
		}
		out[key] = o
	}
	return out
}

// mergePrices lays other's price tables over c's, field by field.
func (c *Config) mergePrices(other *Config) {
	for key, o := range other.Prices {
		if c.Prices == nil {
			c.Prices = map[string]pricing.Override{}
		}
		cur := c.Prices[key]
		for _, f := range []struct{ to, from **float64 }{{&cur.Input, &o.Input}, {&cur.Output, &o.Output},
			{&cur.CacheRead, &o.CacheRead}, {&cur.CacheWrite, &o.CacheWrite}, {&cur.Reasoning, &o.Reasoning}} {
			if *f.from != nil {
				v := **f.from
				*f.to = &v
			}
		}
		c.Prices[key] = cur
	}
}

// Pricing returns the price table the run uses: the shipped list prices
// with the [prices] tables over them, each applied on its own so that one
// table the shipped prices cannot take (Parse checks each against them,
// but a merge of files may leave, say, a new model with only an output
// price) costs that table alone, never every other override.
func (c *Config) Pricing() *pricing.Table {
	t := pricing.Default()
	if c == nil {
		return t
	}
	for _, key := range slices.Sorted(maps.Keys(c.Prices)) {
		if next, err := t.With(map[string]pricing.Override{key: c.Prices[key]}); err == nil {
			t = next
		}
	}
	return t
}

// projectCost keeps a project file from loosening the user's cost
// settings: its max_cost may lower the budget, never raise it, and its
// prices may raise a price, never lower one (a cheaper price is room
// to spend more). A project price for a model the user's table does not
// price is dropped too: it would turn a cost the budget counts as unknown
// into a number the project chose. What it may not do is dropped, and so
// is a table whose remainder the user's table would not take.
func projectCost(user, project *Config) {
	if project.MaxCost > 0 && user.MaxCost > 0 && project.MaxCost > user.MaxCost {
		project.MaxCost = 0
	}
	if len(project.Prices) == 0 {
		return
	}
	before := user.Pricing()
	for _, key := range slices.Sorted(maps.Keys(project.Prices)) {
		o := project.Prices[key]
		cur, _, known := before.Lookup(key)
		if !known {
			delete(project.Prices, key)
			continue
		}
		for _, f := range []struct {
			v   **float64
			was float64
		}{{&o.Input, cur.Input}, {&o.Output, cur.Output}, {&o.CacheRead, cur.CacheRead}, {&o.CacheWrite, cur.CacheWrite}, {&o.Reasoning, cur.Reasoning}} {
			if *f.v != nil && **f.v < f.was {
				*f.v = nil
			}
		}
		if o == (pricing.Override{}) {
			delete(project.Prices, key)
			continue
		}
		if _, err := before.With(map[string]pricing.Override{key: o}); err != nil {
			delete(project.Prices, key)
			continue
		}
		project.Prices[key] = o
	}
}
