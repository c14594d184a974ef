package server

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/hitl"
)

// maxDecisions caps the decisions of one resume.
const maxDecisions = 1000

// parseResume reads command.resume into decisions. It takes what LangGraph
// clients send: a list of decisions, {"decisions": [...]}, or either keyed
// by the interrupt's id ({"<id>": {"decisions": [...]}}). A key must be
// interruptID, the id the server reports for the thread's waiting
// interrupt: decisions meant for another interrupt (an earlier one, or of
// another thread) must not answer the calls waiting now. Decisions without
// a call id answer the waiting calls in order, as LangChain's clients
// send them; waiting lists those calls.
func parseResume(raw json.RawMessage, waiting []agent.Interrupt, interruptID string) ([]agent.Decision, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '{' {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil {
			return nil, fmt.Errorf("command.resume is not valid JSON: %v", err)
		}
		if _, ok := obj["decisions"]; !ok && len(obj) == 1 {
			for k, v := range obj {
				if k != interruptID {
					return nil, fmt.Errorf("command.resume is keyed by %q, which is not the id of the thread's waiting interrupt (%q); key the decisions by %q or send them without a key", k, interruptID, interruptID)
				}
				raw = bytes.TrimSpace(v)
			}
		}
	}
	var list []json.RawMessage
	if len(raw) > 0 && raw[0] == '{' {
		var wrap struct {
			Decisions *[]json.RawMessage `json:"decisions"`
		}
		if err := json.Unmarshal(raw, &wrap); err != nil {
			return nil, fmt.Errorf("command.resume: %v", err)
		}
		if wrap.Decisions == nil {
			return nil, fmt.Errorf(`command.resume has no "decisions" list`)
		}
		list = *wrap.Decisions
	} else if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf(`command.resume must be a list of decisions or {"decisions": [...]}`)
	}
	if len(list) > maxDecisions {
		return nil, fmt.Errorf("command.resume has %d decisions; at most %d are taken", len(list), maxDecisions)
	}
	if len(list) > len(waiting) {
		// Each waiting call takes one decision: say so, rather than
		// complain about the first decision left without a call.
		return nil, fmt.Errorf("command.resume has %d decisions for %d waiting %s (%s); send one decision per waiting call",
			len(list), len(waiting), plural(len(waiting), "call", "calls"), agent.WaitingNames(waiting))
	}
	ds, err := hitl.InOrder(list, waiting)
	if err != nil {
		return nil, fmt.Errorf("command.resume: %w", err)
	}
	return ds, nil
}

// plural picks the word for n things.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
