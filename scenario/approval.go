package scenario

import (
	"encoding/json"
	"reflect"
	"slices"
	"strconv"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/approve"
	"github.com/deepagents-go/deepagents/hitl"
)

// InterruptOn maps a tool name to whether its calls wait for a person's
// decision before they run, and which decisions that person may take.
type InterruptOn map[string]Gate

// Gate is one tool's entry in interrupt_on. In JSON it is true (approve,
// edit and reject), false (not gated), a list of decision names (respond,
// the person answering in the tool's place, only when listed), or
// LangChain's object {"allowed_decisions": [...], "description": "..."}.
type Gate struct {
	// Off is set by false: the tool's calls do not wait.
	Off bool
	// Allowed lists the decisions; empty means approve, edit and reject.
	Allowed []agent.DecisionType
	// Description is shown with each request; empty gives a default.
	Description string
}

// MarshalJSON writes the form decodeGate reads.
func (g Gate) MarshalJSON() ([]byte, error) {
	switch {
	case g.Off:
		return []byte("false"), nil
	case g.Description != "":
		return json.Marshal(struct {
			Allowed     []agent.DecisionType `json:"allowed_decisions,omitempty"`
			Description string               `json:"description"`
		}{g.Allowed, g.Description})
	case len(g.Allowed) > 0:
		return json.Marshal(g.Allowed)
	}
	return []byte("true"), nil
}

// approvals turns the scenario's policy into the agent's: nil stays nil (a
// subagent then inherits its parent's), and tools set to false are left
// out.
func (io InterruptOn) approvals() map[string]approve.Policy {
	if io == nil {
		return nil
	}
	out := make(map[string]approve.Policy, len(io))
	for name, g := range io {
		if !g.Off {
			out[name] = approve.Policy{Allowed: slices.Clone(g.Allowed), Description: g.Description}
		}
	}
	return out
}

const gateForms = `true, false, a list of decisions ("approve", "edit", "reject", "respond") or {"allowed_decisions": [...], "description": "..."}`

func decodeGate(d *decoder, n *node, v reflect.Value, path string) error {
	var g Gate
	var list *node
	switch n.kind {
	case kBool:
		g.Off = !n.boolean
	case kArray:
		list = n
	case kObject:
		for _, m := range n.members {
			if m.val.kind == kNull {
				// As elsewhere in a scenario, null is an absent value: no
				// description, approve, edit and reject.
				if m.key != "allowed_decisions" && m.key != "allowedDecisions" && m.key != "description" {
					d.warn(m.keyPos, "unknown key %q in %s (ignored)", m.key, path)
				}
				continue
			}
			switch m.key {
			case "allowed_decisions", "allowedDecisions":
				if list != nil {
					d.warn(m.keyPos, "both allowed_decisions and allowedDecisions are given in %s; the first is used", path)
					continue
				}
				if m.val.kind != kArray {
					return errAt(m.val.start, "%s.allowed_decisions must be a list of decisions, not %s", path, m.val.kind.words())
				}
				list = m.val
			case "description":
				if m.val.kind != kString {
					return errAt(m.val.start, "%s.description must be a string, not %s", path, m.val.kind.words())
				}
				g.Description = m.val.str
			default:
				d.warn(m.keyPos, "unknown key %q in %s (ignored)", m.key, path)
			}
		}
	default:
		return errAt(n.start, "%s must be %s, not %s", path, gateForms, n.kind.words())
	}
	if list != nil {
		if len(list.items) == 0 {
			return errAt(list.start, "%s allows no decision, so a waiting call could never go on; list at least one, or use false for a tool that does not wait", path)
		}
		for i, it := range list.items {
			dt := agent.DecisionType(it.str)
			if it.kind != kString || !dt.Known() {
				what := it.kind.words()
				if it.kind == kString {
					what = strconv.Quote(it.str)
				}
				return errAt(it.start, `%s: a decision is "approve", "edit", "reject" or "respond", not %s`, indexPath(path, i), what)
			}
			if !slices.Contains(g.Allowed, dt) {
				g.Allowed = append(g.Allowed, dt)
			}
		}
	}
	v.Set(reflect.ValueOf(g))
	return nil
}

// Decision is one decision of a scenario: a person's answer to a waiting
// call (agent.Decision, in our shape or LangChain's) and, optionally, Stop:
// the decision is held back until the run has stopped for approval that
// many times, so that one call can be left waiting at a first stop and
// decided at a later one.
type Decision struct {
	agent.Decision
	Stop int `json:"stop,omitempty"`
}

// UnmarshalJSON reads a decision and its stop.
func (d *Decision) UnmarshalJSON(b []byte) error {
	var stop struct {
		Stop int `json:"stop"`
	}
	if err := json.Unmarshal(b, &stop); err != nil {
		return err
	}
	dec, err := hitl.ParseDecision(b)
	if err != nil {
		return err
	}
	d.Decision = dec
	d.Stop = stop.Stop
	return nil
}

// decodeDecision reads one decision in our shape or LangChain's (see
// hitl.ParseDecision), checks its shape and reports problems at their position.
func decodeDecision(d *decoder, n *node, v reflect.Value, path string) error {
	if n.kind != kObject {
		return errAt(n.start, `%s must be a decision {"call_id", "type", ...}, not %s`, path, n.kind.words())
	}
	for _, m := range n.members {
		want := kString
		switch m.key {
		case "type", "call_id", "id", "path", "message", "tool":
		case "args", "edited_action":
			want = kObject
		case "stop":
			want = kNumber
		default:
			d.warn(m.keyPos, "unknown key %q in %s (ignored)", m.key, path)
			continue
		}
		if m.val.kind != want && m.val.kind != kNull {
			return errAt(m.val.start, "%s.%s must be %s, not %s", path, m.key, map[kind]string{kString: "a string", kObject: "an object", kNumber: "a whole number"}[want], m.val.kind.words())
		}
	}
	if ea := n.get("edited_action"); ea != nil && ea.kind == kObject {
		for _, m := range ea.members {
			want := kObject
			switch m.key {
			case "name":
				want = kString
			case "args", "arguments":
			default:
				d.warn(m.keyPos, "unknown key %q in %s.edited_action (ignored)", m.key, path)
				continue
			}
			if m.val.kind != want && m.val.kind != kNull {
				return errAt(m.val.start, "%s.edited_action.%s must be %s, not %s", path, m.key, map[kind]string{kString: "a string", kObject: "an object"}[want], m.val.kind.words())
			}
		}
	}
	var dc Decision
	if st := n.get("stop"); st != nil && st.kind == kNumber {
		if err := d.value(st, reflect.ValueOf(&dc.Stop).Elem(), path+".stop"); err != nil {
			return err
		}
		if dc.Stop < 1 {
			return errAt(st.start, "%s.stop is %d; stops are counted from 1", path, dc.Stop)
		}
	}
	// Read the members by their exact keys (encoding/json would also take
	// "Type" or "TYPE", which the scenario warns about as unknown keys).
	str := func(n *node, key string) string {
		if m := n.get(key); m != nil {
			return m.str
		}
		return ""
	}
	raw := func(n *node, key string) json.RawMessage {
		if m := n.get(key); m != nil && m.kind != kNull {
			return json.RawMessage(d.raw(m))
		}
		return nil
	}
	dc.Type, dc.CallID, dc.Message = agent.DecisionType(str(n, "type")), str(n, "call_id"), str(n, "message")
	if text := str(n, "path"); text != "" {
		p, err := agent.ParsePath(text)
		if err != nil {
			return errAt(n.get("path").start, "%s.path: %v", path, err)
		}
		dc.Path = p
	}
	if dc.CallID == "" {
		dc.CallID = str(n, "id")
	}
	dc.Args = raw(n, "args")
	// The tool an edit names (LangChain's edited_action.name, or "tool" as
	// agent.Decision writes it): the agent refuses an edit whose tool is
	// not the waiting call's.
	dc.Tool = str(n, "tool")
	if name := str(n.get("edited_action"), "name"); name != "" && dc.Tool == "" {
		dc.Tool = name
	}
	if ea := n.get("edited_action"); ea != nil && len(dc.Args) == 0 {
		if dc.Args = raw(ea, "args"); len(dc.Args) == 0 {
			dc.Args = raw(ea, "arguments")
		}
	}
	if dc.CallID == "" && dc.Type.Known() {
		return errAt(n.start, `%s names no "call_id" (the id of the call it answers)`, path)
	}
	if err := dc.Check(); err != nil {
		key := "type"
		switch {
		case dc.Type == agent.Edit && len(dc.Args) == 0, dc.Type == agent.Edit && dc.CallID != "":
			key = "args"
			if n.get("args") == nil {
				key = "edited_action"
			}
		case dc.Type == agent.Respond && dc.CallID != "":
			key = "message"
		}
		off := n.start
		if m := n.get(key); m != nil {
			off = m.start
		}
		return errAt(off, "%s: %s", path, err.Error())
	}
	v.Set(reflect.ValueOf(dc))
	return nil
}
