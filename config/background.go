package config

import (
	"cmp"
	"maps"
	"slices"

	"github.com/deepagents-go/deepagents/subagent"
)

// backgroundKeys are the keys of the [background] table.
var backgroundKeys = []string{"max_cost", "max_running", "max_steps", "max_tokens", "timeout"}

// tomlBackground reads the [background] table: the caps of background
// subagent runs (max_steps, max_tokens, max_cost, timeout) and how many run at once
// (max_running). A key left out keeps its default.
func tomlBackground(p *problems, v any, line int, at func(...string) int) subagent.BackgroundLimits {
	var l subagent.BackgroundLimits
	t, ok := v.(map[string]any)
	if !ok {
		p.add(line, "background must be a table ([background] with max_running, max_steps, max_tokens, max_cost, timeout), got %s", tomlKind(v))
		return l
	}
	for _, key := range slices.Sorted(maps.Keys(t)) {
		kl := at("background", key)
		full := "background." + key
		switch key {
		case "max_cost":
			l.MaxCost = tomlMaxCost(p, t[key], kl)
		case "max_running":
			l.MaxRunning = tomlPositiveInt(p, full, t[key], kl)
		case "max_steps":
			l.MaxSteps = tomlPositiveInt(p, full, t[key], kl)
		case "max_tokens":
			l.MaxTokens = tomlPositiveInt(p, full, t[key], kl)
		case "timeout":
			l.Timeout, _ = tomlDuration(p, full, t[key], kl)
		default:
			p.add(kl, "%s", unknownKey(full, key, backgroundKeys))
		}
	}
	return l
}

// lowerBackground keeps of a project file's caps only those that lower
// cur's (or the defaults): a project may tighten what a background run may
// spend, never loosen it.
func lowerBackground(cur, project subagent.BackgroundLimits) subagent.BackgroundLimits {
	def := subagent.DefaultBackgroundLimits()
	lower := func(have, want, fallback int) int {
		if have == 0 {
			have = fallback
		}
		if want > have {
			return 0
		}
		return want
	}
	project.MaxRunning = lower(cur.MaxRunning, project.MaxRunning, def.MaxRunning)
	project.MaxSteps = lower(cur.MaxSteps, project.MaxSteps, def.MaxSteps)
	project.MaxTokens = lower(cur.MaxTokens, project.MaxTokens, def.MaxTokens)
	if cur.MaxCost > 0 && project.MaxCost > cur.MaxCost {
		project.MaxCost = 0
	}
	if have := cmp.Or(cur.Timeout, def.Timeout); project.Timeout > have {
		project.Timeout = 0
	}
	return project
}

// LowerBackground keeps of the caps a project's file sets (an agent
// file's background_* keys) only those that lower user's, the caps in force
// (or the defaults): a project may tighten what a background run may spend,
// never loosen it. A cap it may not raise is left zero, so user's holds.
func LowerBackground(user, project subagent.BackgroundLimits) subagent.BackgroundLimits {
	return lowerBackground(user, project)
}

// mergeBackground sets the caps other sets over c's.
func mergeBackground(c, other subagent.BackgroundLimits) subagent.BackgroundLimits {
	if other.MaxRunning != 0 {
		c.MaxRunning = other.MaxRunning
	}
	if other.MaxSteps != 0 {
		c.MaxSteps = other.MaxSteps
	}
	if other.MaxTokens != 0 {
		c.MaxTokens = other.MaxTokens
	}
	if other.MaxCost != 0 {
		c.MaxCost = other.MaxCost
	}
	if other.Timeout != 0 {
		c.Timeout = other.Timeout
	}
	return c
}
