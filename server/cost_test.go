package server

import (
	"math"
	"testing"

	"github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/budget"
	"github.com/deepagents-go/deepagents/llm"
)

// thousandths prices every call at a dollar per thousand tokens.
type thousandths struct{}

func (thousandths) Price(_ string, u llm.Usage) (float64, bool) {
	return float64(u.Total()) / 1000, true
}

// A thread's values carry what its last run cost when its agent counts
// it: the run's total, by agent (a subagent's share under its path), and
// the thread's; the same in the run's final values and in the thread.
func TestValuesCarryTheCost(t *testing.T) {
	a, err := deepagents.New(deepagents.Config{Model: subagentWriter("x"), Budget: budget.New(budget.Options{Pricer: thousandths{}})})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, Config{Agents: []AgentSpec{{Name: "priced", Agent: a}}})
	h.json("POST", "/threads", map[string]any{"thread_id": "T"}, 200, nil)
	type cost struct {
		CostUSD       *float64                 `json:"cost_usd"`
		ThreadCostUSD *float64                 `json:"thread_cost_usd"`
		CostByAgent   map[string]budget.Amount `json:"cost_by_agent"`
		Calls, Tokens int
	}
	var v struct {
		Cost *cost `json:"cost"`
	}
	h.json("POST", "/threads/T/runs/wait", map[string]any{"assistant_id": "priced",
		"input": map[string]any{"messages": []map[string]any{{"role": "user", "content": "go"}}}}, 200, &v)
	c := v.Cost
	if c == nil || c.CostUSD == nil || c.Calls != 4 || c.Tokens == 0 || math.Abs(*c.CostUSD-float64(c.Tokens)/1000) > 1e-9 {
		t.Fatalf("cost in the run's values: %+v", c)
	}
	if len(c.CostByAgent) != 2 || c.CostByAgent["parent / general-purpose#t1"].Calls != 2 || c.ThreadCostUSD == nil || *c.ThreadCostUSD != *c.CostUSD {
		t.Errorf("cost by agent %+v, thread %v", c.CostByAgent, c.ThreadCostUSD)
	}
	var th struct {
		Values struct {
			Cost *cost `json:"cost"`
		} `json:"values"`
	}
	h.json("GET", "/threads/T", nil, 200, &th)
	if tc := th.Values.Cost; tc == nil || tc.CostUSD == nil || *tc.CostUSD != *c.CostUSD {
		t.Errorf("cost in the thread's values: %+v", tc)
	}
	// An agent that counts nothing has no cost value.
	h2 := newHarness(t, Config{})
	h2.json("POST", "/threads", map[string]any{"thread_id": "U"}, 200, nil)
	var raw map[string]any
	h2.json("POST", "/threads/U/runs/wait", map[string]any{"assistant_id": "researcher",
		"input": map[string]any{"messages": []map[string]any{{"role": "user", "content": "go"}}}}, 200, &raw)
	if _, ok := raw["cost"]; ok {
		t.Errorf("values of an agent without a budget: %v", raw["cost"])
	}
}
