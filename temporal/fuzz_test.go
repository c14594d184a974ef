package temporal_test

import (
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/temporal"
)

// The ids of a served run's workflows are parsed back into the run and
// the thread: for any thread and any subagent names and call ids, every
// child's id names its run, and a run id without the marks parses back.
func FuzzServedIDs(f *testing.F) {
	f.Add("T", "run-1", "helper", "call_1", "sub", "c2")
	f.Add("a~b/c", "0192-uuid", "x/y", "c~1", "", "")
	f.Add("", "r", "n", "", "m", "~")
	f.Fuzz(func(t *testing.T, thread, run, name1, call1, name2, call2 string) {
		if run == "" || strings.ContainsAny(run, "/~") {
			return // run ids are the server's: no slash, no mark
		}
		id := temporal.WorkflowID(thread, run)
		child := temporal.ServedChildID(id, agent.RootPath("p").Child(name1, call1))
		grandchild := temporal.ServedChildID(child, agent.RootPath("p").Child(name1, call1).Child(name2, call2))
		for _, w := range []string{id, child, grandchild} {
			if got := temporal.ServedRun(w); got != id {
				t.Fatalf("ServedRun(%q) = %q, want %q", w, got, id)
			}
		}
	})
}
