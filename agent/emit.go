package agent

import (
	"time"

	"github.com/deepagents-go/deepagents/llm"
)

// This file holds the helpers through which a run reports: every event goes
// through emit, on the loop's goroutine.

// emit sends ev to the consumer. Called only on the loop's goroutine.
func (r *run) emit(ev Event) {
	if ev.Agent == "" {
		ev.Agent = r.path
	}
	if ev.Agent == r.path && ev.TaskCall == "" {
		ev.TaskCall = r.instance
	}
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	r.observe(ev)
	if r.stopped {
		return
	}
	if !r.yield(ev, nil) {
		r.stopped = true
		r.cancel()
	}
}

// observe folds the results of direct subagent runs into this run.
func (r *run) observe(ev Event) {
	if ev.Type != SubagentEnd || ev.Agent != r.path || ev.Subagent == nil || ev.Subagent.Run == nil {
		return
	}
	child := ev.Subagent.Run
	if r.children == nil {
		r.children = map[string]*Result{}
	}
	r.children[ev.Subagent.CallID] = child
	if r.tree == nil {
		r.tree = map[string]llm.Usage{}
	}
	for p, u := range child.UsageByAgent {
		r.tree[p] = r.tree[p].Add(u)
	}
}

func isAre(n int) string {
	if n == 1 {
		return "it is"
	}
	return "they are"
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
