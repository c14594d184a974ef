package budget

import (
	"context"
	"testing"
)

// Background tallies a run on the node of the call that starts it, and
// only then: a context whose tally belongs to another call (a run started
// again after a crash sees the call one level up) gives a detached run.
func TestBackgroundTalliesOnlyUnderItsOwnCall(t *testing.T) {
	owner := &node{path: "parent / researcher#t1"}
	acc := &callAcc{owner: owner}
	owner.calls = map[string]*callAcc{"t1": acc}
	ctx := context.WithValue(context.Background(), parentKey{}, acc)
	if _, tl := Background(ctx, context.Background(), "t1"); tl.acc == nil {
		t.Fatal("the task call's own tally was not used")
	}
	if _, tl := Background(ctx, context.Background(), "b7"); tl.acc != nil {
		t.Fatal("a run started under another call's tally was tallied there")
	}
	if _, ok := owner.calls["b7@background"]; ok {
		t.Fatal("a tally was registered on a node that did not start the run")
	}
}
