package agent

import (
	"fmt"
	"slices"
	"strings"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/tool"
)

// This file checks the decisions a person takes on waiting calls.

// WithDecisions answers calls that wait for a person (Result.Interrupts)
// when a thread is resumed. Decisions may answer some of the waiting calls;
// the others keep waiting. A decision that answers no waiting call, or takes
// a decision its call does not allow, is refused with a *DecisionError and
// nothing runs.
func WithDecisions(ds ...Decision) RunOption {
	return func(c *runConfig) { c.decisions = append(c.decisions, ds...) }
}

// DecisionError refuses decisions that do not fit the calls waiting for
// them. The thread is unchanged and still waits.
type DecisionError struct{ Msg string }

func (e *DecisionError) Error() string { return e.Msg }

// CheckDecisions is the package's CheckDecisions for a top-level run of a:
// it also refuses an edit whose arguments do not fit the schema of the
// tool of the waiting call, whether a's own model or a subagent's made it,
// so that a caller can refuse decisions before it starts a run (a run
// checks them the same way).
func (a *Agent) CheckDecisions(ds []Decision, waiting []Interrupt) error {
	if err := CheckDecisions(ds, waiting); err != nil {
		return err
	}
	return a.checkEdits(ds, waiting, RootPath(a.name))
}

// checkEdits refuses an edit whose arguments do not fit the schema of the
// tool of a call waiting in the agent at path or in a subagent below it,
// before anything runs: a person's typo should be theirs to fix, not the
// model's to puzzle over. A call whose agent, tool or schema cannot be
// found or read here is left to its tool to check when it runs.
func (a *Agent) checkEdits(ds []Decision, waiting []Interrupt, where Path) error {
	for _, d := range ds {
		if d.Type != Edit {
			continue
		}
		for _, in := range waiting {
			if !d.answers(in) {
				continue
			}
			p := in.Path
			if len(p) < len(where) || !p[:len(where)].Equal(where) {
				continue // not below this run
			}
			rest := p[len(where):]
			specs, ok := a.toolSpecsAt(rest)
			if !ok {
				continue
			}
			for _, spec := range specs {
				if spec.Name != in.Tool || len(spec.Parameters) == 0 {
					continue
				}
				s, err := tool.CompileSchema(spec.Parameters)
				if err != nil {
					break // a schema this package cannot read: the tool checks
				}
				var args map[string]any
				if err := tool.DecodeArgs(s, d.Args, &args); err != nil {
					return &DecisionError{Msg: fmt.Sprintf("the new arguments of call %q do not fit %s: %v", d.CallID, in.Tool, err)}
				}
			}
		}
	}
	return nil
}

// toolSpecsAt returns the tool definitions of the agent at rest, a path
// below a: a's own when rest is empty, else those of the subagent that a
// tool of a (a Delegator) runs under rest's first name, and so on down.
// ok is false when no tool of a, or more than one, holds such an agent.
func (a *Agent) toolSpecsAt(rest Path) ([]llm.ToolSpec, bool) {
	if len(rest) == 0 {
		return a.specs, true
	}
	var found *Agent
	for _, t := range a.tools {
		d, ok := t.(Delegator)
		if !ok {
			continue
		}
		kid, ok := d.Agent(rest[0].Name)
		if !ok || kid == nil || kid == found {
			continue
		}
		if found != nil {
			return nil, false // two tools run agents by that name
		}
		found = kid
	}
	if found == nil {
		return nil, false
	}
	return found.toolSpecsAt(rest[1:])
}

// decidedToRun reports whether a person approved or edited the call: it
// was then started, whatever the run did after.
func decidedToRun(st *StepState, id string) bool {
	d, ok := st.Decided[id]
	return ok && (d.Type == Approve || d.Type == Edit)
}

// CheckDecisions refuses, with a *DecisionError, decisions that answer no
// call of waiting, answer one twice, or take a decision the call does not
// allow: what a resume with them would refuse, for callers (a server) that
// check before they start it.
func CheckDecisions(ds []Decision, waiting []Interrupt) error {
	seen := map[string]bool{}
	for _, d := range ds {
		if err := d.Check(); err != nil {
			return &DecisionError{Msg: err.Error()}
		}
		var match *Interrupt
		for i := range waiting {
			if d.answers(waiting[i]) {
				if match != nil {
					return &DecisionError{Msg: fmt.Sprintf("call id %q is waiting in more than one agent (%s and %s); give the decision a path",
						d.CallID, match.Path, waiting[i].Path)}
				}
				match = &waiting[i]
			}
		}
		if match == nil {
			ids := make([]string, 0, len(waiting))
			seen := map[string]int{}
			for _, w := range waiting {
				seen[w.CallID]++
			}
			for _, w := range waiting {
				if seen[w.CallID] > 1 {
					ids = append(ids, w.CallID+" (in "+w.Path.String()+")") // one id in two agents
				} else {
					ids = append(ids, w.CallID)
				}
			}
			if len(ids) == 0 {
				return &DecisionError{Msg: fmt.Sprintf("no call is waiting for a decision, so the decision for %q cannot be taken", d.CallID)}
			}
			return &DecisionError{Msg: fmt.Sprintf("no call %q is waiting for a decision; waiting: %s", d.CallID, strings.Join(ids, ", "))}
		}
		if d.Tool != "" && d.Tool != match.Tool {
			return &DecisionError{Msg: fmt.Sprintf("the edit of call %q names tool %s, but the call is a %s call; an edit changes the arguments only", d.CallID, d.Tool, match.Tool)}
		}
		key := match.Path.String() + "\x00" + match.CallID
		if seen[key] {
			return &DecisionError{Msg: fmt.Sprintf("call %q has two decisions", d.CallID)}
		}
		seen[key] = true
		if !slices.Contains(match.Allowed, d.Type) {
			return &DecisionError{Msg: fmt.Sprintf("call %q (%s) allows %s, not %s", d.CallID, match.Tool, joinDecisions(match.Allowed), d.Type)}
		}
	}
	return nil
}

func joinDecisions(ds []DecisionType) string {
	s := make([]string, len(ds))
	for i, d := range ds {
		s[i] = string(d)
	}
	return strings.Join(s, ", ")
}

// decisionFor returns the decision given for this run's call id.
func (r *run) decisionFor(callID string) (Decision, bool) {
	for _, d := range r.decisions {
		if d.CallID == callID && (len(d.Path) == 0 || d.Path.Equal(r.path)) {
			return d, true
		}
	}
	return Decision{}, false
}

// answers reports whether d names the waiting call in: its call id, and
// its path when d gives one.
func (d Decision) answers(in Interrupt) bool {
	return d.CallID == in.CallID && (len(d.Path) == 0 || d.Path.Equal(in.Path))
}
