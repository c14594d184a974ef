package agent

import (
	"fmt"

	"github.com/deepagents-go/deepagents/llm"
)

// This file keeps a history the loop is given balanced (llm.CloseDanglingCalls)
// and says what a cut-off call's result reads.

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
	msgs, n := llm.CloseDanglingCalls(r.state.Messages)
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
