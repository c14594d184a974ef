// Package approve is human approval of tool calls by tool name, the policy
// behind interrupt_on: a Policy says that calls of a tool wait for a
// person and what the person may decide, and Gate turns the policies of an
// agent into a middleware whose Admit hook asks (agent.Ask) before such a
// call starts. A Check looks at a call's arguments, so that only some calls
// of a tool wait (writes to a protected file, say) and the person is told
// why; what it asks to hear about a call is reported once the call ran.
// A Session's approval mode (manual, accept-edits, auto, yolo; WithMode)
// decides who answers for the calls that wait: the person, the mode
// itself, or a classifier model. What a decision does (reject, respond,
// edit, approve) is the agent loop's; see docs/APPROVALS.md.
package approve

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/deepagents-go/deepagents/agent"
)

// Policy says that calls of one tool wait for a person, and what the
// person may decide. The zero value allows approve, edit and reject.
type Policy struct {
	// Allowed lists the decisions the person may take; empty means
	// approve, edit and reject (respond only when listed).
	Allowed []agent.DecisionType `json:"allowed_decisions,omitempty"`
	// Description is shown to the person with each request; empty gives a
	// default naming the tool.
	Description string `json:"description,omitempty"`
	// Check, when set, looks at each call's arguments: only the calls it
	// says wait do, with its reason (see WithCheck). Nil makes every call
	// of the tool wait.
	Check Check `json:"-"`

	// Session, when set, is the approval mode that decides on the calls
	// the policy makes wait (see WithMode); nil: they wait.
	Session *Session `json:"-"`
}

// Allows reports whether d is one of the policy's decisions.
func (p Policy) Allows(d agent.DecisionType) bool {
	if len(p.Allowed) == 0 {
		return slices.Contains(agent.AllDecisions, d)
	}
	return slices.Contains(p.Allowed, d)
}

// Decisions returns the allowed decisions, in the order approve, edit,
// reject, respond.
func (p Policy) Decisions() []agent.DecisionType {
	var out []agent.DecisionType
	for _, d := range []agent.DecisionType{agent.Approve, agent.Edit, agent.Reject, agent.Respond} {
		if p.Allows(d) {
			out = append(out, d)
		}
	}
	return out
}

// Check looks at the arguments of one call of a gated tool and says
// whether the call waits for a person. It runs on the loop's goroutine
// before the step's calls start, so it must return promptly; it must not
// change anything.
type Check func(ctx context.Context, args json.RawMessage) Verdict

// Verdict is what a Check says about one call.
type Verdict struct {
	// Wait makes the call wait for a person's decision.
	Wait bool
	// Reason says why it waits, in words for the person: it is the
	// Interrupt's Reason and opens its Description.
	Reason string
	// Report, when set, is told in a warning event (source "gate") once the
	// call has run without an error, whether it waited or not: a change
	// the user must always hear about.
	Report string
	// Changes is the path the call changes, counted among the run's changed
	// files (Result.Changed) once the call has run without an error, for a
	// file the run's own tracking does not see (one a middleware mounted).
	Changes string
	// Protected marks a wait that no approval mode lifts: a change of a
	// place that needs a person's approval whatever the session's mode
	// (the agent's own files, git's configuration).
	Protected bool
}

// Name is the name of the middleware Gate returns, and the source of its
// warning about policies for tools the agent does not have.
const Name = "interrupt_on"

// Validate refuses a policy that allows a decision there is not.
func Validate(policies map[string]Policy) error {
	for _, name := range slices.Sorted(maps.Keys(policies)) {
		for _, d := range policies[name].Allowed {
			if !d.Known() {
				return fmt.Errorf("interrupt_on %s: decision %q is not one of approve, edit, reject, respond", name, d)
			}
		}
	}
	return nil
}

// Gate is the middleware that makes the calls of the tools policies name
// wait for a person (agent.Ask) before they start, as their policies say,
// and reports what their checks ask to hear about once a call ran. A
// policy for a tool the agent does not have is reported by a warning at
// the start of every run (agent.Middleware.Gates). A policy that allows a
// decision there is not (see Validate) refuses its tool's calls.
func Gate(policies map[string]Policy) agent.Middleware {
	policies = maps.Clone(policies)
	return agent.Middleware{Name: Name, Gates: slices.Sorted(maps.Keys(policies)),
		Admit: func(ctx context.Context, call *agent.ToolCall) error { return admit(ctx, policies, call) }}
}

// admit is Gate's Admit hook. A call the person approved or edited is
// reported by what runs: the person's arguments, for an edit.
func admit(ctx context.Context, policies map[string]Policy, call *agent.ToolCall) error {
	p, ok := policies[call.Call.Name]
	if !ok {
		return nil
	}
	if err := Validate(map[string]Policy{call.Call.Name: p}); err != nil {
		return err
	}
	v := verdictFor(ctx, p, call.Call.Args)
	report, changes := v.Report, v.Changes
	d, decided := agent.DecisionOf(ctx)
	if decided && d.Type == agent.Edit {
		rv := verdictFor(ctx, p, d.Args)
		report, changes = rv.Report, rv.Changes
	}
	if report != "" || changes != "" {
		// A person's approval of a task call is not one of the calls its
		// subagent makes.
		_, nested := call.Tool.(agent.Nested)
		approved := decided && !nested
		name, id := call.Call.Name, call.Call.ID
		call.OnRan(func(emit func(agent.Event), changed func(string)) {
			if changes != "" {
				changed(changes)
			}
			if report != "" {
				emit(agent.Event{Type: agent.Warning, Warning: &agent.WarningInfo{Source: "gate", Tools: []string{name},
					Text: reportText(name, id, report, approved)}})
			}
		})
	}
	if sess := sessionFor(ctx, p); sess != nil {
		switch {
		case decided:
			sess.personDecided(ctx, call, d)
		case v.Wait:
			v = sess.decide(ctx, call, v)
		}
	}
	if v.Wait {
		return agent.Ask(agent.Question{Allowed: p.Allowed, Description: p.Description, Reason: v.Reason})
	}
	return nil
}

// verdictFor is what the policy p of a gated tool says about a call with
// args: every call waits under a policy without a Check.
func verdictFor(ctx context.Context, p Policy, args json.RawMessage) Verdict {
	if p.Check == nil {
		return Verdict{Wait: true}
	}
	return p.Check(ctx, args)
}

// reportText is the text of the warning that reports a call a check asked
// to hear about.
func reportText(name, callID, report string, approved bool) string {
	how := "without waiting for a person"
	if approved {
		how = "after a person approved it"
	}
	return name + " call " + callID + " ran " + how + ": " + report
}

// WithCheck returns a copy of policies in which each of the named tools
// also puts its calls to check: a call waits when the tool's own policy
// makes it wait (every call, for a policy without a Check) or when check
// says so, with the reasons and reports of both. A tool that has no policy
// gets one of check alone, allowing approve, edit and reject. policies is
// not changed.
func WithCheck(policies map[string]Policy, check Check, tools ...string) map[string]Policy {
	out := make(map[string]Policy, len(policies)+len(tools))
	maps.Copy(out, policies)
	for _, name := range tools {
		p, ok := out[name]
		if !ok {
			out[name] = Policy{Check: check}
			continue
		}
		p.Check = bothChecks(p.Check, check)
		out[name] = p
	}
	return out
}

// bothChecks combines a tool's own check (nil: every call waits) with
// another.
func bothChecks(own, more Check) Check {
	return func(ctx context.Context, args json.RawMessage) Verdict {
		a := Verdict{Wait: true}
		if own != nil {
			a = own(ctx, args)
		}
		b := more(ctx, args)
		changes := a.Changes
		if changes == "" {
			changes = b.Changes
		}
		return Verdict{Wait: a.Wait || b.Wait, Reason: joinText(a.Reason, b.Reason),
			Report: joinText(a.Report, b.Report), Changes: changes,
			Protected: a.Wait && a.Protected || b.Wait && b.Protected}
	}
}

func joinText(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "" || a == b:
		return a
	}
	return strings.TrimRight(a, ". ") + ". " + b
}
