package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/deepagents-go/deepagents/llm"
)

// This file is the primitive by which a tool call waits for a person: a
// middleware's Admit hook, a WrapTool middleware or the tool itself returns
// Ask(...), and the loop puts the call to the person, ends the run as
// interrupted once the step's other calls are done, and on resume applies
// their decision. What the decisions mean is the loop's: a rejected call
// does not run (and the same call is later rejected without asking), a
// respond answers in the tool's place, an edit replaces the arguments, and
// an approved or edited call runs again with DecisionOf and Approved saying
// so.

// Question is what a call asks a person.
type Question struct {
	// Allowed lists the decisions the person may take; empty means
	// approve, edit and reject (respond only when listed).
	Allowed []DecisionType
	// Description says what is asked; empty gives a default naming the
	// tool and its arguments.
	Description string
	// Reason, when set, is why this call waits (such as a write to a
	// protected file); the description opens with it. A call the person
	// decided on whose check asks again with another reason does not run:
	// what it would do is no longer what they were told.
	Reason string
}

// asked is the error Ask returns.
type asked struct{ q Question }

func (e *asked) Error() string {
	if e.q.Reason != "" {
		return "the call waits for a person's decision: " + e.q.Reason
	}
	return "the call waits for a person's decision"
}

// Ask returns the error by which a tool call waits for a person's decision:
// returned by a middleware's Admit hook, the call waits before it starts;
// returned by a tool or a WrapTool middleware, it waits once it has
// started, and its file changes are dropped when the backend branches (the
// in-state default; a backend that does not keeps what the call did, so
// such a tool asks before it changes anything). Either way the run ends with
// StatusInterrupted once the step's other calls are done, and resuming the
// thread with WithDecisions goes through the same hook or tool again, with
// the decision visible to it (DecisionOf). It is not an error result for
// the model.
func Ask(q Question) error { return &asked{q: q} }

// askedOf reports whether err is (or wraps) an Ask, and its question.
func askedOf(err error) (*Question, bool) {
	var a *asked
	if errors.As(err, &a) {
		return &a.q, true
	}
	return nil, false
}

// decisionKey marks the context of a call a person decided on.
type decisionKey struct{}

// DecisionOf returns the decision a person took on the call running (or
// being admitted) with ctx, when it waited for one: approve or edit, as
// the calls rejected or answered do not run. It is false for every other
// call, and inside a subagent started by a decided call.
func DecisionOf(ctx context.Context) (Decision, bool) {
	d, ok := ctx.Value(decisionKey{}).(*Decision)
	if !ok || d == nil {
		return Decision{}, false
	}
	return *d, true
}

// withDecision returns ctx carrying d (nil: no decision), leaving ctx as it
// is when it already carries none.
func withDecision(ctx context.Context, d *Decision) context.Context {
	if d == nil {
		if prev, _ := ctx.Value(decisionKey{}).(*Decision); prev == nil {
			return ctx
		}
	}
	return context.WithValue(ctx, decisionKey{}, d)
}

// question returns the waiting call a question asks about, as the person
// is shown it.
func (r *run) question(c llm.ToolCall, q *Question) Interrupt {
	return Interrupt{Path: r.path, CallID: c.ID, Tool: c.Name, Args: c.Args, Allowed: allowedDecisions(q.Allowed),
		Description: describeCall(q.Description, q.Reason, c.Name, c.Args), Reason: q.Reason}
}

// allowedDecisions are the decisions of a question in the order approve,
// edit, reject, respond: approve, edit and reject when it names none.
func allowedDecisions(allowed []DecisionType) []DecisionType {
	if len(allowed) == 0 {
		allowed = AllDecisions
	}
	var out []DecisionType
	for _, d := range knownDecisions {
		for _, a := range allowed {
			if a == d {
				out = append(out, d)
				break
			}
		}
	}
	return out
}

// describeCall is what the person is told about a waiting call: the
// question's description, else a default naming the tool and its
// arguments; its reason comes first.
func describeCall(description, reason, name string, args json.RawMessage) string {
	text := description
	if text == "" {
		text = fmt.Sprintf("The agent wants to call %s with %s.", name, compactArgs(args))
	}
	if reason == "" {
		return text
	}
	if !strings.ContainsAny(reason[len(reason)-1:], ".!?") {
		reason += "."
	}
	return reason + " " + text
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
