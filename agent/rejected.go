package agent

import "encoding/json"

// RejectedCall says whether a person rejected a call of tool name with
// these arguments at this agent's path of the thread (the loop remembers
// it, and answers the same call again as rejected without asking). A
// client uses it to show such a call's error result as the person's
// rejection rather than as a failure of the tool.
func (l LoopState) RejectedCall(name string, args json.RawMessage) bool {
	_, ok := l.Rejected[callKey(name, args)]
	return ok
}
