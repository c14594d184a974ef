package server

import (
	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/budget"
)

// costValues is the "cost" value of a thread's state, when its agent
// counts what its model calls cost (package budget): the last top-level
// run's cost in US dollars (cost_usd, null when no call was priced;
// cost_lower_bound when some call had no price or no usage), its share by
// agent path (cost_by_agent), and the whole thread's (thread_cost_usd, with
// thread_cost_lower_bound when some call of any turn had no price or no
// usage: an earlier turn's unknown cost makes the thread's a lower bound
// even when the last run's is exact).
type costValues struct {
	CostUSD        *float64                 `json:"cost_usd"`
	CostLowerBound bool                     `json:"cost_lower_bound,omitempty"`
	CostByAgent    map[string]budget.Amount `json:"cost_by_agent,omitempty"`
	ThreadCostUSD  *float64                 `json:"thread_cost_usd"`
	// ThreadCostLowerBound is true when ThreadCostUSD is a lower bound.
	ThreadCostLowerBound bool `json:"thread_cost_lower_bound,omitempty"`
	// Calls counts the run's model calls, Tokens their input and output
	// tokens.
	Calls  int `json:"calls"`
	Tokens int `json:"tokens"`
}

// costOf reads the cost a run's state keeps; ok is false when none.
func costOf(rs *agent.RunState) (costValues, bool) {
	s, ok := budget.SpentOf(rs.Values)
	if !ok {
		return costValues{}, false
	}
	usd := func(a budget.Amount) *float64 {
		if a.Calls > 0 && a.Unpriced >= a.Calls {
			return nil
		}
		v := a.CostUSD
		return &v
	}
	return costValues{CostUSD: usd(s.Amount), CostLowerBound: !s.CostKnown(), CostByAgent: s.ByAgent,
		ThreadCostUSD: usd(s.Thread()), ThreadCostLowerBound: !s.Thread().CostKnown(), Calls: s.Calls, Tokens: s.Tokens}, true
}
