package config

import (
	"maps"
	"slices"
)

// [protect] is where the user loosens the CLI's protection of the control
// plane: the files that decide how later runs behave. A change of one of
// them by the agent's file tools waits for the user's approval; the kinds
// of places named in allow change without asking (and a change of the
// user's memory is still reported):
//
//	[protect]
//	allow = ["memory", "skills"]
//
// Only the user's own file (~/.deepagents/config.toml) may hold the table:
// a project file cannot loosen what protects the user from it. Git's data,
// the thread database, the trust store and the user's own settings are never
// changed by the agent, and cannot be named.

// The kinds of protected places whose changes wait for approval, which
// [protect] allow may let through without asking.
const (
	// ProtectAgents are agent files: .deepagents/agents and --subagents.
	ProtectAgents = "agents"
	// ProtectSkills are skill folders: .deepagents/skills and the skill
	// folders the run loaded.
	ProtectSkills = "skills"
	// ProtectMemory are the project's memory files: every AGENTS.md but the
	// user's.
	ProtectMemory = "memory"
	// ProtectUserMemory is the user's memory file, ~/.deepagents/AGENTS.md.
	ProtectUserMemory = "user-memory"
	// ProtectProjectConfig are deepagents.toml, .mcp.json and the rest of
	// .deepagents.
	ProtectProjectConfig = "project-config"
)

// ProtectGroups lists the kinds of places [protect] allow may name.
var ProtectGroups = []string{ProtectAgents, ProtectSkills, ProtectMemory, ProtectUserMemory, ProtectProjectConfig}

// The kinds of places the agent never changes, which no setting loosens.
const (
	ProtectGit        = "git"
	ProtectDatabase   = "database"
	ProtectTrust      = "trust"
	ProtectUserConfig = "user-config"
)

// protectFixed are the kinds no setting loosens, with why, for errors.
var protectFixed = map[string]string{
	ProtectGit:        "git's repository data (.git)",
	ProtectDatabase:   "the thread database",
	ProtectTrust:      "the store of trusted projects",
	ProtectUserConfig: "your own deepagents settings",
}

// tomlProtect reads the [protect] table: allow, a list of kinds of places.
func tomlProtect(p *problems, v any, line int, at func(...string) int) []string {
	t, ok := v.(map[string]any)
	if !ok {
		p.add(line, `protect must be a table with allow = ["memory", ...], got %s`, tomlKind(v))
		return nil
	}
	allow := []string{}
	for _, key := range slices.Sorted(maps.Keys(t)) {
		l := at("protect", key)
		if key != "allow" {
			p.add(l, "%s", unknownKey("protect."+key, key, []string{"allow"}))
			continue
		}
		list, ok := t[key].([]any)
		if !ok {
			p.add(l, "protect.allow must be a list of kinds of places (%s), got %s", quoteList(ProtectGroups, "or"), tomlKind(t[key]))
			continue
		}
		for i, it := range list {
			s, ok := it.(string)
			switch {
			case !ok:
				p.add(l, "protect.allow item %d must be a string, got %s", i+1, tomlKind(it))
			case protectFixed[s] != "":
				p.add(l, "protect.allow names %q, %s, which the agent never changes: it cannot be allowed", s, protectFixed[s])
			case !slices.Contains(ProtectGroups, s):
				msg := "protect.allow: %q is not a kind of protected place; use %s"
				if g := suggest(s, ProtectGroups); g != "" {
					msg += " (did you mean " + g + "?)"
				}
				p.add(l, msg, s, quoteList(ProtectGroups, "or"))
			case !slices.Contains(allow, s):
				allow = append(allow, s)
			}
		}
	}
	return allow
}
