package config

import (
	"maps"
	"slices"

	"github.com/deepagents-go/deepagents/vfs/perm"
	"go.yaml.in/yaml/v3"
)

// permissions are allow/deny rules on the file tools' access by path glob
// (package vfs/perm), an ordered list where the first matching rule wins:
//
//	[permissions]
//	rules = ["allow read /secrets/README.md", "deny all /secrets/**", "deny write /etc/**"]
//
// In an agent file's front matter, the same list:
//
//	permissions: ["deny write /**"]
//
// The user's rules are checked before the project's, so a project file
// cannot lift a rule the user set. An agent file's list replaces the
// parent's for that subagent ([] lifts them all) as far as this package
// and the library go; the CLI keeps the user's own rules under every
// agent file but the user's (Config.UserPermissions).

// tomlPermissions reads the [permissions] table.
func tomlPermissions(p *problems, v any, line int, at func(...string) int) perm.Rules {
	t, ok := v.(map[string]any)
	if !ok {
		p.add(line, `permissions must be a table with rules = ["deny write /etc/**", ...], got %s`, tomlKind(v))
		return nil
	}
	rules := perm.Rules{}
	for _, key := range slices.Sorted(maps.Keys(t)) {
		val := t[key]
		l := at("permissions", key)
		if key != "rules" {
			p.add(l, "%s", unknownKey("permissions."+key, key, []string{"rules"}))
			continue
		}
		list, ok := val.([]any)
		if !ok {
			p.add(l, `permissions.rules must be a list of rules such as "deny write /etc/**", got %s`, tomlKind(val))
			continue
		}
		for i, it := range list {
			s, ok := it.(string)
			if !ok {
				p.add(l, "permissions.rules item %d must be a string, got %s", i+1, tomlKind(it))
				continue
			}
			r, err := perm.Parse(s)
			if err != nil {
				p.add(l, "%v", err)
				continue
			}
			rules = append(rules, r)
		}
	}
	return rules
}

// yamlPermissions reads an agent file's permissions list.
func yamlPermissions(p *problems, v *yaml.Node, line int, at func(*yaml.Node) int) perm.Rules {
	if v.Kind != yaml.SequenceNode {
		p.add(line, `permissions must be a list of rules such as "deny write /etc/**", got %s`, describe(v))
		return nil
	}
	rules := perm.Rules{}
	for i, en := range v.Content {
		e := deref(en)
		if e.Kind != yaml.ScalarNode || e.ShortTag() != "!!str" {
			p.add(at(en), "permissions item %d must be a rule such as \"deny write /etc/**\", got %s", i+1, describe(e))
			continue
		}
		r, err := perm.Parse(e.Value)
		if err != nil {
			p.add(at(en), "%v", err)
			continue
		}
		rules = append(rules, r)
	}
	return rules
}
