package agent

import (
	"encoding/json"
	"fmt"

	"github.com/deepagents-go/deepagents/llm"
)

// This file keeps a history the loop is given balanced: every tool call an
// assistant message makes is answered by a tool result before the next
// message, as providers require.

// CloseDanglingCalls returns msgs with a result added for every tool call
// that has none, and how many it added. A call is answered by a tool message
// with its id among the tool messages right after the assistant message that
// made it; the results added for the unanswered ones go right after those,
// in call order, and say that the call never ran (or, when its arguments are
// not valid JSON, that it could not run because they were malformed or cut
// off). Such histories come from imports and from runs cut off between a
// model response and its tool results. A balanced history is returned as it
// is, with 0; msgs itself is never changed.
func CloseDanglingCalls(msgs []llm.Message) ([]llm.Message, int) {
	var out []llm.Message // nil until the first addition
	added := 0
	for i := 0; i < len(msgs); {
		m := msgs[i]
		end := i + 1
		if m.Role != llm.RoleAssistant || len(m.ToolCalls) == 0 {
			if out != nil {
				out = append(out, m)
			}
			i = end
			continue
		}
		answered := map[string]bool{}
		for end < len(msgs) && msgs[end].Role == llm.RoleTool {
			answered[msgs[end].ToolCallID] = true
			end++
		}
		var missing []llm.Message
		for _, c := range m.ToolCalls {
			if !answered[c.ID] {
				answered[c.ID] = true // a repeated id gets one result
				missing = append(missing, danglingResult(c))
			}
		}
		if len(missing) > 0 && out == nil {
			out = make([]llm.Message, 0, len(msgs)+len(missing))
			out = append(out, msgs[:i]...)
		}
		if out != nil {
			out = append(out, msgs[i:end]...)
			out = append(out, missing...)
		}
		added += len(missing)
		i = end
	}
	if out == nil {
		return msgs, 0
	}
	return out, added
}

// danglingResult is the error result given to a call that never ran.
func danglingResult(c llm.ToolCall) llm.Message {
	if len(c.Args) > 0 && !json.Valid(c.Args) {
		return llm.ToolResult(c, fmt.Sprintf("Error: this %s call could not run because its arguments were malformed or cut off "+
			"(they are not valid JSON). Nothing was done; call %s again with complete arguments if you still need it.", c.Name, c.Name), true)
	}
	return llm.ToolResult(c, fmt.Sprintf("Error: this %s call never ran (the run stopped before its result was recorded), "+
		"so it has no result. Call %s again if you still need it.", c.Name, c.Name), true)
}

// cutOffResult is the result of a call that was running when its run
// stopped, closed because a new message came instead of a resume: unlike a
// call that never started, it may have done part of its work. keeps says
// the run's files are kept in its state, where the call's changes were
// dropped (on a real directory they may remain).
func cutOffResult(c llm.ToolCall, keeps bool) string {
	effects := "Some of what it did may have taken effect."
	if keeps {
		effects = "Its file changes were not kept, but other effects may have happened."
	}
	return fmt.Sprintf("Error: this %s call was cut off: the run stopped while it was running, and a new message came "+
		"instead of resuming it, so it has no result. %s Call %s again if you still need it.", c.Name, effects, c.Name)
}

// closeDangling balances the run's history before any model sees it and
// reports a rewrite with one notice event.
func (r *run) closeDangling() {
	msgs, n := CloseDanglingCalls(r.state.Messages)
	if n == 0 {
		return
	}
	r.state.Messages = msgs
	calls := "tool call"
	if n != 1 {
		calls = "tool calls"
	}
	r.emit(Event{Type: Notice, Notice: &NoticeInfo{Source: "history", Count: n,
		Text: fmt.Sprintf("the history had %d %s without a result; each now has an error result saying it never ran", n, calls)}})
}
