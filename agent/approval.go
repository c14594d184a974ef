package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/deepagents-go/deepagents/tool"
)

// This file is human approval: which tool calls wait for a person, what a
// waiting call looks like, and the decisions that release it. The JSON shapes
// follow LangChain v1's human-in-the-loop payloads (action_requests,
// review_configs, decisions), so user interfaces written for it can drive a
// run; docs/APPROVALS.md describes them.

// DecisionType is what a person decided about a call that waited for them.
type DecisionType string

// The decisions a person may take.
const (
	// Approve runs the call as the model asked.
	Approve DecisionType = "approve"
	// Edit runs the call with other arguments.
	Edit DecisionType = "edit"
	// Reject does not run the call; the model is told why.
	Reject DecisionType = "reject"
	// Respond does not run the call: the person answers in the tool's
	// place, and their message is the call's result. A question allows it
	// only when it names it.
	Respond DecisionType = "respond"
)

// AllDecisions are the decisions a question allows when it names none.
var AllDecisions = []DecisionType{Approve, Edit, Reject}

// knownDecisions are every decision there is, in the order they are listed.
var knownDecisions = []DecisionType{Approve, Edit, Reject, Respond}

// Known reports whether d is a decision there is: approve, edit, reject or
// respond.
func (d DecisionType) Known() bool { return slices.Contains(knownDecisions, d) }

// Interrupt is a tool call waiting for a person's decision.
type Interrupt struct {
	// Path is the agent path of the run whose model made the call: the
	// top-level agent's, or a subagent's.
	Path    Path            `json:"path"`
	CallID  string          `json:"call_id"`
	Tool    string          `json:"tool"`
	Args    json.RawMessage `json:"args"`
	Allowed []DecisionType  `json:"allowed_decisions"`
	// Description says what is asked, for the person.
	Description string `json:"description,omitempty"`
	// Reason, when set, is why this call waits, from a gate that looks at
	// its arguments (such as a write to a protected file); Description
	// opens with it.
	Reason string `json:"reason,omitempty"`
}

// Decision is a person's answer to one Interrupt. CallID names the call
// (Path may narrow it down when two agents used one call id); Args are the
// new arguments of an edit; Message tells the model why a call was rejected,
// or is the answer of a respond.
type Decision struct {
	Type    DecisionType    `json:"type"`
	CallID  string          `json:"call_id,omitempty"`
	Path    Path            `json:"path,omitempty"`
	Args    json.RawMessage `json:"args,omitempty"`
	Message string          `json:"message,omitempty"`
	// Tool, when set, is the tool an edit names (LangChain's
	// edited_action.name): it must be the call's own, since an edit changes
	// the arguments only.
	Tool string `json:"tool,omitempty"`
}

// WaitingNames names waiting calls by tool and call id, for messages:
// "write_file c1, edit_file c2".
func WaitingNames(waiting []Interrupt) string {
	names := make([]string, len(waiting))
	for i, w := range waiting {
		names[i] = w.Tool + " " + w.CallID
	}
	return strings.Join(names, ", ")
}

// Check verifies a decision's shape: a known type, a call id, for an edit
// arguments that are a JSON object, and for a respond a message.
func (d Decision) Check() error {
	switch d.Type {
	case Approve, Reject:
	case Respond:
		if strings.TrimSpace(d.Message) == "" {
			return fmt.Errorf(`the respond to call %q has no "message": a respond answers the call with its message, in the tool's place`, d.CallID)
		}
	case Edit:
		if len(d.Args) == 0 {
			return fmt.Errorf("an edit of call %q has no arguments", d.CallID)
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(d.Args, &obj); err != nil || obj == nil {
			return fmt.Errorf("the arguments of the edit of call %q are not a JSON object", d.CallID)
		}
	case "":
		return errors.New(`the decision has no "type"; it must be approve, edit, reject or respond`)
	default:
		return fmt.Errorf("decision type %q is not one of approve, edit, reject, respond", d.Type)
	}
	if d.CallID == "" {
		return fmt.Errorf("the %s decision names no call_id", d.Type)
	}
	return nil
}

func compactArgs(args json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, args); err != nil {
		return string(args)
	}
	return b.String()
}

// rejectedText is the result a rejected call gets; again marks a call
// identical to one rejected earlier in the thread, answered without asking.
func rejectedText(name, message string, again bool) string {
	var b strings.Builder
	if again {
		fmt.Fprintf(&b, "Error: this exact %s call was already rejected by a person earlier in this conversation, so it was not run and they were not asked again.", name)
	} else {
		fmt.Fprintf(&b, "Error: a person reviewing this run rejected the %s call, so it did not run.", name)
	}
	if m := strings.TrimSpace(message); m != "" {
		if !strings.ContainsAny(m[len(m)-1:], ".!?") {
			m += "."
		}
		fmt.Fprintf(&b, " Their reason: %s", m)
	}
	b.WriteString(" Do not repeat this call with the same arguments; change the approach or ask the user.")
	return b.String()
}

// respondedResult is the result of a call a person answered in its tool's
// place: their message, a result like any other, not an error.
func respondedResult(d Decision) tool.Result { return tool.Result{Content: d.Message} }

// staleApprovalText is the result of an approved call that did not run
// because what it changes is no longer what the person was told: now is
// what its gate says about it at the time it would run.
func staleApprovalText(name, now string) string {
	return fmt.Sprintf("Error: a person approved this %s call, but what it would change is not what they were shown when they decided: %s. It did not run. Make the call again if it is still needed, so that they are asked about what it changes now.",
		name, strings.TrimRight(now, ". "))
}

// editedNote is prefixed to the result of a call a person edited, so the
// model knows what actually ran.
func editedNote(args json.RawMessage) string {
	return "[A person reviewing this run changed the arguments before the call ran; it ran with " + compactArgs(args) + ".]\n"
}

// callKey identifies a call by tool and arguments, for remembering rejected
// calls across steps.
func callKey(name string, args json.RawMessage) string {
	var v any
	if err := json.Unmarshal(args, &v); err == nil {
		if b, err := json.Marshal(v); err == nil { // map keys sorted: one spelling per value
			return name + " " + string(b)
		}
	}
	return name + " " + string(args)
}

// ungatedText says which names a gating middleware (source) gives match no
// tool, and what that means for their calls.
func ungatedText(source string, ungated, tools []string, stepTools bool) string {
	which := "is not one of the agent's tools"
	if len(ungated) > 1 {
		which = "are not among the agent's tools"
	}
	if len(tools) > 0 {
		which += " (" + strings.Join(tools, ", ") + ")"
	}
	then := "so nothing waits for a decision on them"
	if stepTools {
		then = "so their calls wait only if a middleware adds a tool by that name for a step"
	}
	return fmt.Sprintf("%s names %s, which %s, %s", source, strings.Join(ungated, ", "), which, then)
}

func isJSONNull(b json.RawMessage) bool { return string(bytes.TrimSpace(b)) == "null" }
