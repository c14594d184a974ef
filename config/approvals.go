package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/approve"
	"go.yaml.in/yaml/v3"
)

// interrupt_on names the tools whose calls wait for a person's decision.
// Each tool name maps to true (approve, edit and reject), to false (the
// tool runs without asking, which lets a subagent opt out of a tool its
// parent gates), or to a list of the decisions allowed; respond (the person
// answers in the tool's place) is allowed only when listed:
//
//	interrupt_on = { write_file = true, edit_file = ["approve", "reject"], ask_user = ["respond"] }
//
// In an agent file's front matter the same is written in YAML:
//
//	interrupt_on: {write_file: true, edit_file: [approve, reject]}

// decisionNames are the decisions a list may name.
var decisionNames = []string{string(agent.Approve), string(agent.Edit), string(agent.Reject), string(agent.Respond)}

// approvalEntry reads one tool's entry: gate reports whether calls of the
// tool wait at all; a problem is returned as text.
type approvalEntry struct {
	approval approve.Policy
	gate     bool
}

// checkApprovalTool checks a tool name of interrupt_on.
func checkApprovalTool(name string) string {
	if !nameRe.MatchString(name) {
		return fmt.Sprintf(`interrupt_on: tool name %q must be letters, digits, "_" and "-" only`, name)
	}
	return ""
}

// approvalFromList turns decision names into an approval; what is wrong is
// returned as text.
func approvalFromList(tool string, names []string) (approve.Policy, string) {
	if len(names) == 0 {
		return approve.Policy{}, fmt.Sprintf("interrupt_on.%s: the list of decisions is empty; write true for approve, edit and reject, or false to not ask", tool)
	}
	var a approve.Policy
	for _, n := range names {
		n = strings.ToLower(strings.TrimSpace(n))
		if !slices.Contains(decisionNames, n) {
			return approve.Policy{}, fmt.Sprintf("interrupt_on.%s: %q is not a decision; use %s", tool, n, quoteList(decisionNames, "or"))
		}
		if slices.Contains(a.Allowed, agent.DecisionType(n)) {
			return approve.Policy{}, fmt.Sprintf("interrupt_on.%s: decision %q is listed twice", tool, n)
		}
		a.Allowed = append(a.Allowed, agent.DecisionType(n))
	}
	return a, ""
}

// tomlInterruptOn reads interrupt_on from a TOML value.
func tomlInterruptOn(p *problems, v any, line int, at func(...string) int) map[string]approve.Policy {
	t, ok := v.(map[string]any)
	if !ok {
		p.add(line, "interrupt_on must be a table of tool names, each true, false or a list of decisions (%s), got %s",
			quoteList(decisionNames, "and"), tomlKind(v))
		return nil
	}
	out := map[string]approve.Policy{}
	for _, name := range slices.Sorted(maps.Keys(t)) {
		l := at("interrupt_on", name)
		if msg := checkApprovalTool(name); msg != "" {
			p.add(l, "%s", msg)
			continue
		}
		var e approvalEntry
		switch x := t[name].(type) {
		case bool:
			e.gate = x
		case []any:
			names := make([]string, 0, len(x))
			bad := false
			for _, it := range x {
				s, isText := it.(string)
				if !isText {
					p.add(l, "interrupt_on.%s: decisions must be strings (%s), got %s", name, quoteList(decisionNames, "or"), tomlKind(it))
					bad = true
					break
				}
				names = append(names, s)
			}
			if bad {
				continue
			}
			a, msg := approvalFromList(name, names)
			if msg != "" {
				p.add(l, "%s", msg)
				continue
			}
			e = approvalEntry{a, true}
		default:
			p.add(l, "interrupt_on.%s must be true, false or a list of decisions (%s), got %s", name, quoteList(decisionNames, "and"), tomlKind(x))
			continue
		}
		if e.gate {
			out[name] = e.approval
		}
	}
	return out
}

// yamlInterruptOn reads interrupt_on from an agent file's front matter.
func yamlInterruptOn(p *problems, v *yaml.Node, line int, at func(*yaml.Node) int) map[string]approve.Policy {
	if v.Kind != yaml.MappingNode {
		p.add(line, "interrupt_on must be a mapping of tool names, each true, false or a list of decisions (%s), got %s",
			quoteList(decisionNames, "and"), describe(v))
		return nil
	}
	out := map[string]approve.Policy{}
	seen := map[string]bool{}
	for i := 0; i+1 < len(v.Content); i += 2 {
		kn, vn := deref(v.Content[i]), deref(v.Content[i+1])
		l := at(v.Content[i])
		if kn.Kind != yaml.ScalarNode || kn.ShortTag() == "!!null" {
			p.add(l, "interrupt_on: keys must be tool names, got %s", describe(kn))
			continue
		}
		name := kn.Value
		if msg := checkApprovalTool(name); msg != "" {
			p.add(l, "%s", msg)
			continue
		}
		if seen[name] {
			p.add(l, "interrupt_on: tool %q is listed twice", name)
			continue
		}
		seen[name] = true
		switch {
		case vn.Kind == yaml.ScalarNode && vn.ShortTag() == "!!bool":
			var b bool
			if err := vn.Decode(&b); err != nil {
				p.add(l, "interrupt_on.%s must be true, false or a list of decisions, got %s", name, describe(vn))
				continue
			}
			if b {
				out[name] = approve.Policy{}
			}
		case vn.Kind == yaml.SequenceNode:
			names := make([]string, 0, len(vn.Content))
			bad := false
			for _, en := range vn.Content {
				e := deref(en)
				if e == nil || e.Kind != yaml.ScalarNode || e.ShortTag() != "!!str" {
					desc := "an alias"
					if e != nil {
						desc = describe(e)
					}
					p.add(at(en), "interrupt_on.%s: decisions must be %s, got %s", name, quoteList(decisionNames, "or"), desc)
					bad = true
					break
				}
				names = append(names, e.Value)
			}
			if bad {
				continue
			}
			a, msg := approvalFromList(name, names)
			if msg != "" {
				p.add(l, "%s", msg)
				continue
			}
			out[name] = a
		default:
			p.add(l, "interrupt_on.%s must be true, false or a list of decisions (%s), got %s", name, quoteList(decisionNames, "and"), describe(vn))
		}
	}
	return out
}

// ParseInterruptOnFlag reads a comma-separated list of tool names, as the
// CLI's --interrupt-on takes it, into approvals that allow approve, edit
// and reject.
func ParseInterruptOnFlag(text string) (map[string]approve.Policy, error) {
	out := map[string]approve.Policy{}
	for _, name := range strings.Split(text, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if !nameRe.MatchString(name) {
			return nil, fmt.Errorf(`%q is not a tool name (letters, digits, "_" and "-" only; separate names with commas)`, name)
		}
		out[name] = approve.Policy{}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no tool names given; write for example write_file,edit_file")
	}
	return out, nil
}

// cloneApprovals copies a policy map, keeping nil as nil.
func cloneApprovals(m map[string]approve.Policy) map[string]approve.Policy {
	if m == nil {
		return nil
	}
	out := make(map[string]approve.Policy, len(m))
	for k, v := range m {
		v.Allowed = slices.Clone(v.Allowed)
		out[k] = v
	}
	return out
}
