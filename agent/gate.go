package agent

import (
	"context"
	"encoding/json"
	"maps"
	"strings"
)

// This file is the part of human approval that looks at a call's arguments
// rather than only its tool's name: an Approval with a Check makes only
// some calls of its tool wait (those that write a protected file, say),
// tells the person why, and may ask that a call be reported once it ran,
// whether it waited or not. A call that ran after a person approved it runs
// with a context that says so (Approved), for the backends that refuse
// what was not approved.

// ArgCheck looks at the arguments of one call of a gated tool and says
// whether the call waits for a person. It runs on the loop's goroutine
// before the step's calls start, so it must return promptly; it must not
// change anything.
type ArgCheck func(ctx context.Context, args json.RawMessage) Verdict

// Verdict is what an ArgCheck says about one call.
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
}

// approvedKey marks the context of a tool call that a person approved.
type approvedKey struct{}

// Approved reports whether the tool call running with ctx waited for a
// person and was approved, as asked or with arguments the person edited.
// Backends that guard files whose change needs a person's approval allow
// the change only then. It is false for every other call, and inside a
// subagent started by an approved call.
func Approved(ctx context.Context) bool {
	v, _ := ctx.Value(approvedKey{}).(bool)
	return v
}

// withApproved returns ctx marked as approved or not, leaving ctx as it is
// when it already says so.
func withApproved(ctx context.Context, approved bool) context.Context {
	if Approved(ctx) == approved {
		return ctx
	}
	return context.WithValue(ctx, approvedKey{}, approved)
}

// WithCheck returns a copy of gates in which each of the named tools also
// puts its calls to check: a call waits when the tool's own policy makes it
// wait (every call, for a policy without a Check) or when check says so,
// with the reasons and reports of both. A tool that gates has no policy
// gets one of check alone, allowing approve, edit and reject. gates is not
// changed.
func WithCheck(gates map[string]Approval, check ArgCheck, tools ...string) map[string]Approval {
	out := make(map[string]Approval, len(gates)+len(tools))
	maps.Copy(out, gates)
	for _, name := range tools {
		p, ok := out[name]
		if !ok {
			out[name] = Approval{Check: check}
			continue
		}
		p.Check = bothChecks(p.Check, check)
		out[name] = p
	}
	return out
}

// bothChecks combines a tool's own check (nil: every call waits) with
// another.
func bothChecks(own, more ArgCheck) ArgCheck {
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
			Report: joinText(a.Report, b.Report), Changes: changes}
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

// verdictFor is what the policy p of a gated tool says about a call with
// args: every call waits under a policy without a Check.
func verdictFor(ctx context.Context, p Approval, args json.RawMessage) Verdict {
	if p.Check == nil {
		return Verdict{Wait: true}
	}
	return p.Check(ctx, args)
}

// admitGated is the agent's InterruptOn as an Admit hook: a call of a gated
// tool that its policy makes wait asks the person, and what the policy asks
// to hear about a call is reported once it ran. A call the person approved
// or edited is reported by what runs: the person's arguments, for an edit.
func (a *Agent) admitGated(ctx context.Context, call *ToolCall) error {
	p, ok := a.cfg.InterruptOn[call.Call.Name]
	if !ok {
		return nil
	}
	v := verdictFor(ctx, p, call.Call.Args)
	report, changes := v.Report, v.Changes
	d, decided := DecisionOf(ctx)
	if decided && d.Type == Edit {
		rv := verdictFor(ctx, p, d.Args)
		report, changes = rv.Report, rv.Changes
	}
	if report != "" || changes != "" {
		// A person's approval of a task call is not one of the calls its
		// subagent makes.
		_, nested := call.Tool.(Nested)
		approved := decided && !nested
		name, id := call.Call.Name, call.Call.ID
		call.OnRan(func(emit func(Event), changed func(string)) {
			if changes != "" {
				changed(changes)
			}
			if report != "" {
				emit(Event{Type: Warning, Warning: &WarningInfo{Source: "gate", Tools: []string{name},
					Text: gateReport(name, id, report, approved)}})
			}
		})
	}
	if v.Wait {
		return Ask(Question{Allowed: p.Allowed, Description: p.Description, Reason: v.Reason})
	}
	return nil
}

// gateReport is the text of the warning that reports a call a gate asked to
// hear about.
func gateReport(name, callID, report string, approved bool) string {
	how := "without waiting for a person"
	if approved {
		how = "after a person approved it"
	}
	return name + " call " + callID + " ran " + how + ": " + report
}
