package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/budget"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/runner"
)

// What the model calls cost, in US dollars: the budget middleware (package
// budget) prices each call as it ends, at the config's prices over the
// shipped list prices, and keeps the run's spending in the thread. The
// progress lines show the turn's running cost, and the outcome, /cost and
// 'threads show' read the saved spending, which a resumed run continues.

// costMeter is the running cost of the session's current turn, fed by the
// budget middleware from the goroutine of each run of the tree.
type costMeter struct {
	mu       sync.Mutex
	turn     budget.Amount
	unpriced map[string]bool // models without a price seen
}

// charge counts one model call (budget.Options.OnCharge).
func (m *costMeter) charge(c budget.Charge) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a := budget.Amount{Calls: 1, Tokens: c.Usage.Total(), CostUSD: c.CostUSD, UnknownUsage: c.Usage.Unknown}
	if !c.Priced {
		a.Unpriced = 1
		if m.unpriced == nil {
			m.unpriced = map[string]bool{}
		}
		m.unpriced[c.Model] = true
	}
	m.turn = m.turn.Add(a)
}

// startTurn starts counting a new turn, from what the thread saved for it
// (a resumed turn goes on from there).
func (m *costMeter) startTurn(from budget.Amount) {
	m.mu.Lock()
	m.turn = from
	m.mu.Unlock()
}

// now is the turn's running cost, as progress shows it.
func (m *costMeter) now() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return costText(m.turn, slices.Sorted(maps.Keys(m.unpriced)))
}

// costText is an amount's cost for people: "$0.0123"; a lower bound when
// some calls had no price or no usage ("$0.0123 or more: no price for
// gpt-test"); "cost unknown" when no call was priced.
func costText(a budget.Amount, unpriced []string) string {
	why := ""
	switch {
	case a.Unpriced > 0 && len(unpriced) > 0:
		why = "no price for " + strings.Join(unpriced, ", ")
	case a.Unpriced > 0:
		why = fmt.Sprintf("%s without a price", count(a.Unpriced, "model call"))
	case a.UnknownUsage:
		why = "a model reported no usage"
	}
	switch {
	case why == "":
		return budget.FormatUSD(a.CostUSD)
	case a.Unpriced >= a.Calls && a.Calls > 0:
		return "cost unknown (" + why + ")"
	}
	return budget.FormatUSD(a.CostUSD) + " or more (" + why + ")"
}

// costFields are the cost of a run in JSON, as 'run --output json' and
// 'threads show --json' write it: CostUSD is null when no call was priced,
// CostLowerBound says that some call had no price or no usage (CostUSD is
// then the least it cost), and CostByAgent splits it by agent path.
type costFields struct {
	CostUSD        *float64                 `json:"cost_usd"`
	CostLowerBound bool                     `json:"cost_lower_bound,omitempty"`
	CostByAgent    map[string]budget.Amount `json:"cost_by_agent,omitempty"`
}

func costFieldsOf(s budget.Spent) costFields {
	f := costFields{CostByAgent: s.ByAgent, CostLowerBound: !s.CostKnown()}
	if s.Calls == 0 || s.Unpriced < s.Calls {
		v := s.CostUSD
		f.CostUSD = &v
	}
	return f
}

// savedSpent reads what the top-level run of thread spent, as its last
// checkpoint keeps it.
func savedSpent(ctx context.Context, saver checkpoint.Reader, thread string) (budget.Spent, bool) {
	if saver == nil || thread == "" {
		return budget.Spent{}, false
	}
	rs, err := runner.LoadRunState(ctx, saver, thread, agent.RootPath(agent.DefaultName), false)
	if err != nil {
		return budget.Spent{}, false
	}
	return budget.SpentOf(rs.Values)
}

// writeCost writes the spending of a run for people: the run's cost, its
// share by agent when subagents spent too, and the thread's total.
func writeCost(w io.Writer, s budget.Spent, limit float64) {
	fmt.Fprintf(w, "cost of the last run: %s in %s (%s tokens)", costText(s.Amount, nil), count(s.Calls, "model call"), short(s.Tokens))
	if limit > 0 {
		fmt.Fprintf(w, " of a %s budget", budget.FormatUSD(limit))
	}
	fmt.Fprintln(w)
	if len(s.ByAgent) > 1 {
		for _, p := range slices.Sorted(maps.Keys(s.ByAgent)) {
			a := s.ByAgent[p]
			fmt.Fprintf(w, "  %s: %s in %s\n", p, costText(a, nil), count(a.Calls, "model call"))
		}
	}
	if s.Earlier.Calls > 0 {
		fmt.Fprintf(w, "the whole thread: %s in %s\n", costText(s.Thread(), nil), count(s.Thread().Calls, "model call"))
	}
}

// showCost is /cost: what the session's thread spent so far.
func (s *session) showCost(ctx context.Context) {
	spent, ok := savedSpent(ctx, s.setup.saver, s.thread)
	if !ok {
		fmt.Fprintln(s.stderr, "/cost: nothing spent yet in this session's thread.")
		return
	}
	writeCost(s.stderr, spent, s.setup.maxCost)
}

// startCost starts the turn's running cost: from zero for a new turn, from
// what the thread saved for a resumed one.
func (s *session) startCost(ctx context.Context, resumed bool) {
	if s.setup == nil || s.setup.cost == nil {
		return
	}
	var from budget.Amount
	if resumed {
		if spent, ok := savedSpent(ctx, s.setup.saver, s.thread); ok {
			from = spent.Amount
		}
	}
	s.setup.cost.startTurn(from)
}

// runCost is the cost of the turn just reported, as the thread saved it.
func (s *session) runCost() costFields {
	if s.setup == nil || s.discarded {
		return costFields{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	spent, ok := savedSpent(ctx, s.setup.saver, s.thread)
	if !ok {
		return costFields{}
	}
	return costFieldsOf(spent)
}
