package agent

import (
	"time"

	"github.com/deepagents-go/deepagents/llm"
)

// This file holds the helpers through which a run reports: every event goes
// through emit, on the loop's goroutine.

// emit sends ev to the consumer. Called only on the loop's goroutine.
func (r *run) emit(ev Event) {
	if len(ev.Agent) == 0 {
		ev.Agent = r.path
	}
	if ev.TaskCall == "" && ev.Agent.Equal(r.path) {
		ev.TaskCall = r.instance
	}
	if ev.Time.IsZero() {
		ev.Time = r.rt.Now()
	}
	if r.stopped {
		return
	}
	if !r.yield(ev, nil) {
		r.stopped = true
		r.cancel()
	}
}

// addChild keeps the finished run of a nested tool call and rolls its usage
// up. The child's Result comes straight from the tool call that ran it.
func (r *run) addChild(callID string, child *Result) {
	if r.rs.Finished == nil {
		r.rs.Finished = map[string]*Result{}
	}
	r.rs.Finished[callID] = child
	if r.rec != nil {
		// Recorded with the next step, whichever way the child came in
		// (just finished, or restored from a saved call after a crash).
		if r.rec.kids == nil {
			r.rec.kids = map[string]*Result{}
		}
		r.rec.kids[callID] = child
	}
	if r.rs.Loop.Tree == nil {
		r.rs.Loop.Tree = map[string]llm.Usage{}
	}
	for p, u := range child.UsageByAgent {
		r.rs.Loop.Tree[p] = r.rs.Loop.Tree[p].Add(u)
	}
	r.addChildContext(child)
}

func isAre(n int) string {
	if n == 1 {
		return "it is"
	}
	return "they are"
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
