// Package hitl reads and writes LangChain's human-in-the-loop payloads: the
// request a run that stopped for approval shows (action requests and review
// configs) and the decisions a resume sends back. The server and the command
// use it at their edges; the agent itself only knows agent.Interrupt and
// agent.Decision. docs/APPROVALS.md describes the shapes.
package hitl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/deepagents-go/deepagents/agent"
)

// Request is the LangChain-compatible view of the calls a run stopped at:
// one action request and one review config per waiting call, in order.
type Request struct {
	ActionRequests []ActionRequest `json:"action_requests"`
	ReviewConfigs  []ReviewConfig  `json:"review_configs"`
}

// ActionRequest is one waiting call as LangChain clients show it; ID and
// Path are ours, so that a client can answer by call id.
type ActionRequest struct {
	Name        string          `json:"name"`
	Args        json.RawMessage `json:"args"`
	Description string          `json:"description,omitempty"`
	ID          string          `json:"id"`
	Path        string          `json:"path"`
}

// ReviewConfig says which decisions a waiting call allows.
type ReviewConfig struct {
	ActionName       string               `json:"action_name"`
	AllowedDecisions []agent.DecisionType `json:"allowed_decisions"`
}

// RequestFor returns the request that shows interrupts.
func RequestFor(interrupts []agent.Interrupt) Request {
	req := Request{ActionRequests: []ActionRequest{}, ReviewConfigs: []ReviewConfig{}}
	for _, in := range interrupts {
		req.ActionRequests = append(req.ActionRequests, ActionRequest{Name: in.Tool, Args: in.Args,
			Description: in.Description, ID: in.CallID, Path: in.Path.String()})
		req.ReviewConfigs = append(req.ReviewConfigs, ReviewConfig{ActionName: in.Tool, AllowedDecisions: in.Allowed})
	}
	return req
}

// wireDecision is a decision as clients send it: our shape, or LangChain's,
// where the call is "id" and an edit carries {"edited_action": {"name": ...,
// "args": {...}}} (older clients send "arguments").
type wireDecision struct {
	Type         agent.DecisionType `json:"type"`
	CallID       string             `json:"call_id"`
	ID           string             `json:"id"`
	Path         agent.Path         `json:"path"`
	Args         json.RawMessage    `json:"args"`
	Message      string             `json:"message"`
	EditedAction *struct {
		Name      string          `json:"name"`
		Args      json.RawMessage `json:"args"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"edited_action"`
}

func (w *wireDecision) decision() agent.Decision {
	d := agent.Decision{Type: w.Type, CallID: w.CallID, Path: w.Path, Args: w.Args, Message: w.Message}
	if d.CallID == "" {
		d.CallID = w.ID
	}
	if ea := w.EditedAction; ea != nil {
		d.Tool = ea.Name
		if len(d.Args) == 0 {
			d.Args = ea.Args
			if len(d.Args) == 0 {
				d.Args = ea.Arguments
			}
		}
	}
	if string(bytes.TrimSpace(d.Args)) == "null" {
		d.Args = nil
	}
	return d
}

// ParseDecision reads one decision object in our shape or LangChain's,
// without checking it (agent.Decision.Check does).
func ParseDecision(b []byte) (agent.Decision, error) {
	var w wireDecision
	if err := json.Unmarshal(b, &w); err != nil {
		return agent.Decision{}, err
	}
	return w.decision(), nil
}

// ParseDecisions reads decisions as JSON: a list of decisions, or an object
// {"decisions": [...]} as LangChain's resume payload has it. Every decision
// is checked for shape (a known type, a call id, object arguments for an
// edit, a message for a respond); whether it answers a waiting call is
// checked when a run resumes.
func ParseDecisions(b []byte) ([]agent.Decision, error) {
	b = bytes.TrimSpace(b)
	var ws []wireDecision
	if len(b) > 0 && b[0] == '{' {
		var wrap struct {
			Decisions *[]wireDecision `json:"decisions"`
		}
		if err := json.Unmarshal(b, &wrap); err != nil {
			return nil, fmt.Errorf("decisions: %w", err)
		}
		if wrap.Decisions == nil {
			return nil, errors.New(`decisions: the object has no "decisions" list`)
		}
		ws = *wrap.Decisions
	} else if err := json.Unmarshal(b, &ws); err != nil {
		return nil, fmt.Errorf("decisions: %w", err)
	}
	var ds []agent.Decision
	for i := range ws {
		d := ws[i].decision()
		if err := d.Check(); err != nil {
			return nil, fmt.Errorf("decision %d: %w", i+1, err)
		}
		ds = append(ds, d)
	}
	return ds, nil
}

// InOrder reads decisions given as JSON objects, as a resume payload lists
// them, against the calls waiting for them. A decision that names no call
// (no "call_id" or "id"), as LangChain's clients send them, answers the
// waiting call at its position in waiting, which is the order of the
// request's action_requests; a decision that names one is left as it is.
// Then the decisions are parsed as by ParseDecisions.
func InOrder(list []json.RawMessage, waiting []agent.Interrupt) ([]agent.Decision, error) {
	fixed := make([]json.RawMessage, len(list))
	for i, raw := range list {
		fixed[i] = raw
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil || m == nil {
			return nil, fmt.Errorf("decision %d is not a JSON object", i+1)
		}
		_, hasCall := m["call_id"]
		_, hasID := m["id"]
		if hasCall || hasID {
			continue
		}
		if len(waiting) == 0 {
			return nil, fmt.Errorf("decision %d names no call_id, and no call is waiting for a decision", i+1)
		}
		if len(list) > len(waiting) {
			return nil, fmt.Errorf("%d %s for %d waiting %s (%s): give one decision per waiting call, in order, or name each one's call_id",
				len(list), plural(len(list), "decision", "decisions"), len(waiting), plural(len(waiting), "call", "calls"), agent.WaitingNames(waiting))
		}
		m["call_id"], _ = json.Marshal(waiting[i].CallID)
		if _, ok := m["path"]; !ok {
			m["path"], _ = json.Marshal(waiting[i].Path)
		}
		b, err := json.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("decision %d: %v", i+1, err)
		}
		fixed[i] = b
	}
	b, err := json.Marshal(fixed)
	if err != nil {
		return nil, err
	}
	return ParseDecisions(b)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
