package server

import (
	"encoding/json"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/budget"
)

// An earlier turn's unpriced call makes the thread's cost a lower bound
// even when the last run's cost is exact.
func TestThreadCostLowerBound(t *testing.T) {
	raw, err := json.Marshal(budget.Spent{Amount: budget.Amount{Calls: 1, CostUSD: 0.5},
		Earlier: budget.Amount{Calls: 2, CostUSD: 0.25, Unpriced: 1}})
	if err != nil {
		t.Fatal(err)
	}
	c, ok := costOf(&agent.RunState{Values: map[string]json.RawMessage{budget.ValueName: raw}})
	if !ok || c.CostLowerBound || !c.ThreadCostLowerBound || c.ThreadCostUSD == nil || *c.ThreadCostUSD != 0.75 {
		t.Errorf("cost %+v: want the run's exact and the thread's a lower bound", c)
	}
}
