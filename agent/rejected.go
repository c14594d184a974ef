package agent

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/deepagents-go/deepagents/llm"
)

// RejectedCall says whether a person rejected a call of tool name with
// these arguments at this agent's path of the thread (the loop remembers
// it, and answers the same call again as rejected without asking). A
// client uses it to show such a call's error result as the person's
// rejection rather than as a failure of the tool.
func (l LoopState) RejectedCall(name string, args json.RawMessage) bool {
	_, ok := l.Rejected[callKey(name, args)]
	return ok
}

// maxRequest caps LoopState.Request.
const maxRequest = 16 << 10

// turnRequest is the text of the last user message of a turn's input
// ("" when it has none), cut to maxRequest on a character boundary.
func turnRequest(input []llm.Message) string {
	for i := len(input) - 1; i >= 0; i-- {
		if input[i].Role == llm.RoleUser && input[i].HasText() {
			text := input[i].Content
			if len(text) > maxRequest {
				k := maxRequest
				for k > 0 && !utf8.RuneStart(text[k]) {
					k--
				}
				text = text[:k]
			}
			return text
		}
	}
	return ""
}
