package llm

import (
	"encoding/json"
	"fmt"
)

// This file reads and mends histories: the last answer in one, and results
// for tool calls left without one, as providers require every call to be
// answered before the next message.

// CloseDanglingCalls returns msgs with a result added for every tool call
// that has none, and how many it added. A call is answered by a tool message
// with its id among the tool messages right after the assistant message that
// made it; the results added for the unanswered ones go right after those,
// in call order, and say that the call never ran (or, when its arguments are
// not valid JSON, that it could not run because they were malformed or cut
// off). Such histories come from imports and from runs cut off between a
// model response and its tool results. A balanced history is returned as it
// is, with 0; msgs itself is never changed.
func CloseDanglingCalls(msgs []Message) ([]Message, int) {
	var out []Message // nil until the first addition
	added := 0
	for i := 0; i < len(msgs); {
		m := msgs[i]
		end := i + 1
		if m.Role != RoleAssistant || len(m.ToolCalls) == 0 {
			if out != nil {
				out = append(out, m)
			}
			i = end
			continue
		}
		answered := map[string]bool{}
		for end < len(msgs) && msgs[end].Role == RoleTool {
			answered[msgs[end].ToolCallID] = true
			end++
		}
		var missing []Message
		for _, c := range m.ToolCalls {
			if !answered[c.ID] {
				answered[c.ID] = true // a repeated id gets one result
				missing = append(missing, danglingResult(c))
			}
		}
		if len(missing) > 0 && out == nil {
			out = make([]Message, 0, len(msgs)+len(missing))
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
func danglingResult(c ToolCall) Message {
	if len(c.Args) > 0 && !json.Valid(c.Args) {
		return ToolResult(c, fmt.Sprintf("Error: this %s call could not run because its arguments were malformed or cut off "+
			"(they are not valid JSON). Nothing was done; call %s again with complete arguments if you still need it.", c.Name, c.Name), true)
	}
	return ToolResult(c, fmt.Sprintf("Error: this %s call never ran (the run stopped before its result was recorded), "+
		"so it has no result. Call %s again if you still need it.", c.Name, c.Name), true)
}

// LastText returns the text of the last assistant message with non-blank
// text in msgs. Only text parts count: a message that holds nothing but the
// model's reasoning has no text.
func LastText(msgs []Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == RoleAssistant && msgs[i].HasText() {
			return msgs[i].Content
		}
	}
	return ""
}
