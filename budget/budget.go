// Package budget counts what each model call of a run costs, in tokens and
// in US dollars, and stops the run cleanly once a budget is used up.
//
// The middleware (New) goes on an agent and on every subagent, so that a
// run's spending is its own model calls and those of the subagents below
// it: the run tree. What a run has spent is kept in its state with every
// step record (a reserved value, so it survives a crash and a resume); a
// subagent's spending goes to its parent with the result of the call that
// started it (saved with that result, so a crash after it loses nothing;
// a background subagent's with its receipt, through a Tally that counts it
// towards its parent while it runs),
// and before each model call the run checks its own budget and those of
// the runs above it, counting what their running subagents spent so far. A run past a budget ends with agent.StatusLimit and an
// error that says which budget and how much was spent; resuming its thread
// with a higher budget continues it where it stopped.
//
// Money comes from a Pricer (package pricing has the shipped table). A call
// of a model the pricer does not know costs "unknown": it is counted in
// Amount.Unpriced, and the dollar sum is then a lower bound, never a
// silent zero.
package budget

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"maps"
	"math"
	"strings"
	"sync"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/tool"
)

// ValueName is the reserved state value a run's spending is kept under
// (agent.StepInfo.Keep): the checkpoints of a thread have it, as JSON of a
// Spent.
const ValueName = "agent.budget"

// Limits are the budgets of one run, its subagents' spending included.
// Zero means no limit.
type Limits struct {
	// Tokens bounds the input plus output tokens of the run's model calls.
	Tokens int `json:"tokens,omitempty"`
	// Cost bounds what the run's model calls cost, in US dollars, at the
	// pricer's prices. Calls of a model without a price count nothing.
	Cost float64 `json:"cost_usd,omitempty"`
}

// IsZero reports whether l sets no limit.
func (l Limits) IsZero() bool { return l.Tokens <= 0 && l.Cost <= 0 }

// Pricer prices one model call: the cost in US dollars of usage u by
// model, a model name as the provider reports it (dated snapshots
// included). ok is false when the model has no price.
type Pricer interface {
	Price(model string, u llm.Usage) (usd float64, ok bool)
}

// Amount is what some model calls spent.
type Amount struct {
	// Calls counts the model calls.
	Calls int `json:"calls"`
	// Tokens are their input plus output tokens.
	Tokens int `json:"tokens"`
	// CostUSD is what the priced calls cost, in US dollars.
	CostUSD float64 `json:"cost_usd"`
	// Unpriced counts the calls whose model had no price: when it is not 0,
	// CostUSD is a lower bound.
	Unpriced int `json:"unpriced,omitempty"`
	// UnknownUsage is set when a provider reported no usage for some call:
	// Tokens (and the cost) are then a lower bound too.
	UnknownUsage bool `json:"unknown_usage,omitempty"`
}

// Add returns a + b.
func (a Amount) Add(b Amount) Amount {
	return Amount{Calls: a.Calls + b.Calls, Tokens: a.Tokens + b.Tokens, CostUSD: a.CostUSD + b.CostUSD,
		Unpriced: a.Unpriced + b.Unpriced, UnknownUsage: a.UnknownUsage || b.UnknownUsage}
}

// CostKnown reports whether every call was priced and reported its usage,
// so that CostUSD is the cost and not a lower bound.
func (a Amount) CostKnown() bool { return a.Unpriced == 0 && !a.UnknownUsage }

// Spent is what a run and the subagent runs below it spent: the total and
// the share of each agent path (agent.Path.String()). A run is one turn of
// its thread: a new turn starts from zero, a resumed run goes on from what
// it had spent.
type Spent struct {
	Amount
	ByAgent map[string]Amount `json:"by_agent,omitempty"`
	// Turn is the run's turn, as the model calls made at its path before
	// it began (agent.StepInfo.TurnStart).
	Turn int `json:"turn,omitempty"`
	// Earlier is what the thread's earlier turns at this path spent, so
	// that Thread is the whole thread's.
	Earlier Amount `json:"earlier,omitzero"`
}

// Thread is what the whole thread spent at this path: its earlier turns
// and this run.
func (s Spent) Thread() Amount { return s.Earlier.Add(s.Amount) }

// add counts a in the total and in the share of path.
func (s *Spent) add(path string, a Amount) {
	s.Amount = s.Amount.Add(a)
	if s.ByAgent == nil {
		s.ByAgent = map[string]Amount{}
	}
	s.ByAgent[path] = s.ByAgent[path].Add(a)
}

func (s Spent) clone() Spent {
	s.ByAgent = maps.Clone(s.ByAgent)
	return s
}

// merge counts what o spent, by agent, in s.
func (s *Spent) merge(o Spent) {
	for p, a := range o.ByAgent {
		s.add(p, a)
	}
	if len(o.ByAgent) == 0 {
		s.Amount = s.Amount.Add(o.Amount)
	}
}

// SpentOf reads the spending kept in a run's state values (a checkpoint's,
// or agent.RunState.Values as runner.LoadRunState reads them). ok is false
// when there is none, or it does not decode.
func SpentOf(values map[string]json.RawMessage) (Spent, bool) {
	raw, found := values[ValueName]
	if !found || len(raw) == 0 {
		return Spent{}, false
	}
	var s Spent
	if json.Unmarshal(raw, &s) != nil {
		return Spent{}, false
	}
	return s, true
}

// Charge is one model call as the middleware counted it.
type Charge struct {
	// Agent is the path of the agent whose run made the call.
	Agent string
	// Model is the model the provider said answered, or the one asked for
	// (Options.Model) when the response names none.
	Model string
	Usage llm.Usage
	// CostUSD is the call's cost; Priced is false when the model has no
	// price (CostUSD is then 0, meaning unknown).
	CostUSD float64
	Priced  bool
}

// Options configure the middleware.
type Options struct {
	// Limits are the budgets of every top-level run of the agent (a
	// subagent run counts towards its parent's). WithLimits gives a run
	// budgets of its own instead, a subagent's too.
	Limits Limits
	// Pricer prices the calls; nil prices none (every cost is unknown).
	Pricer Pricer
	// Model is the model the agent asked for, "provider:model": a call
	// whose response names no model is priced as it (as the telemetry
	// does), rather than counted as unpriced. AgentModels overrides it by
	// agent name, for a subagent on a model of its own.
	Model       string
	AgentModels map[string]string
	// OnCharge, when set, is called after each model call with what it
	// cost, from the goroutine of the run that made it: a subagent's calls
	// come from other goroutines, so it must be safe for concurrent use.
	OnCharge func(Charge)
}

type limitsKey struct{}

// ownLimits is a run's budgets as carried by its context: set marks that
// the context says (none given means none, for a subagent).
type ownLimits struct {
	set    bool
	limits Limits
}

// WithLimits returns a context whose run has budgets l of its own: the run
// started with it (a top-level run, or a subagent run such as a background
// child) stops once its tree spent l, whatever Options.Limits say. Runs
// below it still count towards it.
func WithLimits(ctx context.Context, l Limits) context.Context {
	return context.WithValue(ctx, limitsKey{}, ownLimits{set: true, limits: l})
}

type parentKey struct{}

// callValue prefixes the state value by which a tool call that started
// runs (a task call) hands what they spent to the run that made it: saved
// with the call's result, so that a crash after the call loses nothing,
// and folded into the run's spending before its next model call.
const callValue = "budget.call/"

// Middleware counts spending and stops runs at their budgets. Safe for
// concurrent runs.
type Middleware struct {
	opts Options

	mu   sync.Mutex
	runs map[*agent.State]*node
}

// node is one run's spending in this process: its own calls and its
// subagents', with the budgets it checks.
type node struct {
	parent *node
	path   string
	limits Limits

	mu sync.Mutex
	// spent is what the run keeps in its state: its own calls and what
	// the calls it folded started.
	spent Spent
	// calls are the run's tool calls that started runs (task calls), not
	// folded yet, by call id: what they spent so far counts in total.
	calls map[string]*callAcc
	// dirty: spent changed since it was last kept; loaded: spent was
	// read from what the run was saved with.
	dirty, loaded bool
	// warned: the run said once that some cost is unknown.
	warned bool
}

// New returns the budget middleware. Put it on the agent and on every
// subagent (deepagents.New does, with Config.Budget).
func New(o Options) *Middleware {
	return &Middleware{opts: o, runs: map[*agent.State]*node{}}
}

// Middleware returns m as an agent middleware.
func (m *Middleware) Middleware() agent.Middleware {
	return agent.Middleware{Name: "budget", BeforeModel: m.beforeModel, WrapStream: m.wrapStream, WrapTool: m.wrapTool, AfterRun: m.afterRun}
}

// run returns the run's node, made on first use, with what a resumed run
// was saved with.
func (m *Middleware) run(ctx context.Context, step agent.StepInfo) *node {
	n := m.node(ctx, step.State, step.Path)
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.loaded {
		return n
	}
	n.loaded = true
	// Calls counted before (a summariser's, before the run's first step)
	// are added to what it was saved with.
	before := n.spent
	defer func() {
		if before.Calls > 0 {
			n.spent.merge(before)
			n.dirty = true
		}
	}()
	n.spent = Spent{Turn: step.TurnStart}
	if step.Kept != nil {
		if raw := step.Kept(ValueName); len(raw) > 0 {
			var s Spent
			if json.Unmarshal(raw, &s) == nil {
				if s.Turn == step.TurnStart {
					n.spent = s // the same run, resumed
				} else {
					// A new turn: its budget is its own.
					n.spent.Earlier = s.Thread()
				}
				n.dirty = s.Turn != step.TurnStart
			}
		}
	}
	return n
}

// node returns the node of the run whose state is state, made on first
// use (by its first hook: a resumed run's first may be WrapTool, for the
// calls of the step it resumes), under the run whose tool call started it.
func (m *Middleware) node(ctx context.Context, state *agent.State, path agent.Path) *node {
	m.mu.Lock()
	defer m.mu.Unlock()
	if n, ok := m.runs[state]; ok {
		return n
	}
	n := &node{path: path.String()}
	acc, _ := ctx.Value(parentKey{}).(*callAcc)
	if acc != nil && path.IsNested() {
		n.parent = acc.owner
		acc.mu.Lock()
		acc.child = n
		acc.mu.Unlock()
	}
	switch own, _ := ctx.Value(limitsKey{}).(ownLimits); {
	case own.set:
		n.limits = own.limits
	case !path.IsNested():
		n.limits = m.opts.Limits
	}
	m.runs[state] = n
	return n
}

// lookup returns the node of a run already seen.
func (m *Middleware) lookup(s *agent.State) *node {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.runs[s]
}

// beforeModel saves what the run's subagents spent since its last call and
// stops the run when it, or a run above it, has used up a budget.
func (m *Middleware) beforeModel(ctx context.Context, step agent.StepInfo, _ *llm.Request) error {
	n := m.run(ctx, step)
	n.fold(step)
	n.keep(step)
	for at, own := n, true; at != nil; at, own = at.parent, false {
		if err := at.check(own); err != nil {
			return err
		}
	}
	return nil
}

// wrapStream prices each model call of the run at the end of its stream
// and counts it in the run's spending (the runs above it read it there
// while it runs, and get it with the result of the call that started it).
func (m *Middleware) wrapStream(ctx context.Context, req *llm.Request, next agent.StreamFunc) iter.Seq2[llm.StreamEvent, error] {
	return func(yield func(llm.StreamEvent, error) bool) {
		for ev, err := range next(ctx, req) {
			if err == nil && ev.Type == llm.EventDone && ev.Response != nil {
				m.charge(ctx, ev.Response)
			}
			if !yield(ev, err) {
				return
			}
		}
	}
}

// charge counts one response.
func (m *Middleware) charge(ctx context.Context, resp *llm.Response) {
	state, ok := agent.RunFrom(ctx)
	if !ok {
		return
	}
	n := m.lookup(state)
	if n == nil {
		return
	}
	c := Charge{Agent: n.path, Model: cmp.Or(resp.Model, m.requested(n.path)), Usage: resp.Usage}
	a := Amount{Calls: 1, Tokens: resp.Usage.Total(), UnknownUsage: resp.Usage.Unknown}
	if m.opts.Pricer != nil && c.Model != "" {
		c.CostUSD, c.Priced = m.opts.Pricer.Price(c.Model, resp.Usage)
	}
	if c.Priced && !math.IsNaN(c.CostUSD) && c.CostUSD >= 0 {
		a.CostUSD = c.CostUSD
	} else {
		c.CostUSD, c.Priced = 0, false
		a.Unpriced = 1
	}
	n.mu.Lock()
	n.spent.add(n.path, a)
	n.dirty = true
	n.mu.Unlock()
	if step, ok := agent.StepFrom(ctx); ok && step.State == state {
		n.keep(step)
		if !c.Priced && n.limits.Cost > 0 && step.Emit != nil && !n.warned {
			n.warned = true
			step.Emit(agent.Event{Type: agent.Warning, Warning: &agent.WarningInfo{Source: "budget",
				Text: fmt.Sprintf("model %q has no price: its calls count nothing towards the cost budget, and the cost shown is a lower bound; add its price to the configuration ([prices])", c.Model)}})
		}
	}
	if m.opts.OnCharge != nil {
		m.opts.OnCharge(c)
	}
}

// requested is the model the agent at path asked for: its own from
// AgentModels, else Options.Model.
func (m *Middleware) requested(path string) string {
	if p, err := agent.ParsePath(path); err == nil && len(p) > 0 {
		if model := m.opts.AgentModels[p.Last().Name]; model != "" {
			return model
		}
	}
	return m.opts.Model
}

// wrapTool gives the runs a call starts (a subagent's run above all) the
// calling run as their parent, and no budgets of their own but those
// WithLimits gives them; what they spent goes with the call's result.
func (m *Middleware) wrapTool(ctx context.Context, call *agent.ToolCall, next agent.ToolFunc) (tool.Result, error) {
	state, ok := agent.RunFrom(ctx)
	if !ok || call.Env == nil {
		return next(ctx, call)
	}
	path, err := agent.ParsePath(call.Env.Agent)
	if err != nil {
		return next(ctx, call)
	}
	n := m.node(ctx, state, path)
	acc := &callAcc{owner: n}
	n.mu.Lock()
	if n.calls == nil {
		n.calls = map[string]*callAcc{}
	}
	n.calls[call.Call.ID] = acc
	n.mu.Unlock()
	ctx = context.WithValue(ctx, parentKey{}, acc)
	ctx = context.WithValue(ctx, limitsKey{}, ownLimits{})
	res, err := next(ctx, call)
	s := acc.total()
	acc.mu.Lock()
	acc.done = &s
	acc.mu.Unlock()
	if s.Calls > 0 {
		_ = HandOver(&res, call.Call.ID, s) // a Spent always encodes
	}
	return res, err
}

// Detach returns a context whose run counts towards no run above it, with
// budgets of its own only (WithLimits). A background subagent is not
// detached but tallied (Background), so that its parent's budget counts it.
func Detach(ctx context.Context) context.Context {
	return context.WithValue(ctx, parentKey{}, (*callAcc)(nil))
}

// Tally is what a run that a tool call starts and does not wait for (a
// background subagent) spends, counted towards the run that made the call
// until its receipt hands it over (Tally.HandOver).
type Tally struct {
	acc *callAcc
	key string
}

// Background gives the run started with the returned context, made from
// child, the run whose tool call ctx call is (the task call that starts a
// background subagent) as its parent, although the call returns at once:
// the parent's budgets stop it, and what it spends counts in the parent's
// tree while it runs, under a tally of its own (named by id, the call's id)
// that stays open until the parent folds its receipt. Without a calling run
// (a run started again after a crash) the run is detached, and the tally
// counts nothing.
func Background(call, child context.Context, id string) (context.Context, *Tally) {
	acc, _ := call.Value(parentKey{}).(*callAcc)
	if acc == nil || acc.owner == nil {
		return Detach(child), &Tally{}
	}
	n := acc.owner
	n.mu.Lock()
	if n.calls[id] != acc {
		// Not the tally of this very call (a run started again after a
		// crash sees the call that started its own run, one level up):
		// tallying there would count the run for an agent above its parent.
		n.mu.Unlock()
		return Detach(child), &Tally{}
	}
	t := &Tally{acc: &callAcc{owner: n}, key: id + "@background"}
	if n.calls == nil {
		n.calls = map[string]*callAcc{}
	}
	n.calls[t.key] = t.acc
	n.mu.Unlock()
	return context.WithValue(child, parentKey{}, t.acc), t
}

// Spent is what the tallied run and its subagents spent so far.
func (t *Tally) Spent() Spent {
	if t == nil || t.acc == nil {
		return Spent{}
	}
	return t.acc.total()
}

// HandOver adds to res, the tallied run's receipt, what it spent: the
// parent folds it into its own spending when it applies res's state, before
// its next model call, and closes the tally then.
func (t *Tally) HandOver(res *tool.Result) error {
	s := t.Spent()
	if t == nil || t.acc == nil || s.Calls == 0 {
		return nil
	}
	return HandOver(res, t.key, s)
}

// HandOver adds to res what runs a tool call started spent, for the call
// (or tally, Tally.HandOver) id whose result res is: the run that made the
// call adds it to its spending before its next model call, and its
// checkpoint keeps it from then on. The middleware does it for the calls a
// run waits for.
func HandOver(res *tool.Result, id string, s Spent) error {
	raw, err := json.Marshal(s)
	if err != nil {
		return err
	}
	res.State = maps.Clone(res.State)
	if res.State == nil {
		res.State = map[string]json.RawMessage{}
	}
	res.State[callValue+id] = raw
	return nil
}

// callAcc is one tool call of a run that started runs: what they spent,
// read from the run the call started while it goes on, and kept once the
// call returned.
type callAcc struct {
	owner *node

	mu    sync.Mutex
	child *node
	done  *Spent
}

func (a *callAcc) total() Spent {
	a.mu.Lock()
	done, child := a.done, a.child
	a.mu.Unlock()
	switch {
	case done != nil:
		return *done
	case child != nil:
		return child.total()
	}
	return Spent{}
}

// fold adds to the run's spending what its finished calls' runs spent, as
// their results handed it over in the run's state values, and removes
// those values; a call whose result carried none (it failed) is folded
// from what this process saw. On the run's goroutine only.
func (n *node) fold(step agent.StepInfo) {
	if step.State == nil {
		return
	}
	var folded []string
	for name, raw := range step.State.Values {
		id, ok := strings.CutPrefix(name, callValue)
		if !ok {
			continue
		}
		var s Spent
		if json.Unmarshal(raw, &s) == nil {
			n.mu.Lock()
			n.spent.merge(s)
			n.dirty = true
			delete(n.calls, id)
			n.mu.Unlock()
		}
		folded = append(folded, name)
	}
	for _, name := range folded {
		if step.SetValue != nil {
			_ = step.SetValue(name, nil)
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for id, acc := range n.calls {
		acc.mu.Lock()
		done := acc.done
		acc.mu.Unlock()
		if done != nil {
			if done.Calls > 0 {
				n.spent.merge(*done)
				n.dirty = true
			}
			delete(n.calls, id)
		}
	}
}

// afterRun keeps the run's last spending with its end and forgets the run.
func (m *Middleware) afterRun(_ context.Context, step agent.StepInfo, _ agent.Status) {
	m.mu.Lock()
	n := m.runs[step.State]
	delete(m.runs, step.State)
	m.mu.Unlock()
	if n != nil {
		n.fold(step)
		n.keep(step)
	}
}

// keep saves the run's spending with its next step record, when it changed.
// On the run's goroutine only.
func (n *node) keep(step agent.StepInfo) {
	n.mu.Lock()
	if !n.dirty || step.Keep == nil {
		n.mu.Unlock()
		return
	}
	s := n.spent.clone()
	n.dirty = false
	n.mu.Unlock()
	if step.Keep(ValueName, s) != nil {
		n.mu.Lock()
		n.dirty = true
		n.mu.Unlock()
	}
}

// total returns what the run and its subagents spent so far: what it
// keeps, and what the runs its calls started spent since.
func (n *node) total() Spent {
	n.mu.Lock()
	s := n.spent.clone()
	accs := make([]*callAcc, 0, len(n.calls))
	for _, a := range n.calls {
		accs = append(accs, a)
	}
	n.mu.Unlock()
	for _, a := range accs {
		s.merge(a.total())
	}
	return s
}

// check returns the error of a used-up budget; own says whether it is the
// checking run's own or a run's above it.
func (n *node) check(own bool) error {
	if n.limits.IsZero() {
		return nil
	}
	s := n.total()
	whose := ""
	if !own {
		whose = n.path
	}
	switch {
	case n.limits.Tokens > 0 && s.Tokens >= n.limits.Tokens:
		return &Error{Kind: "tokens", Whose: whose, Limits: n.limits, Spent: s.Amount}
	case n.limits.Cost > 0 && s.CostUSD >= n.limits.Cost:
		return &Error{Kind: "cost", Whose: whose, Limits: n.limits, Spent: s.Amount}
	}
	return nil
}

// Error is why a run stopped at a budget. It matches agent.ErrLimit.
type Error struct {
	// Kind is "tokens" or "cost".
	Kind string
	// Whose is the path of the run above whose budget it is; empty for
	// the stopped run's own.
	Whose  string
	Limits Limits
	// Spent is what that run's tree had spent.
	Spent Amount
}

func (e *Error) Error() string {
	var budget, spent string
	if e.Kind == "tokens" {
		budget, spent = fmt.Sprintf("token budget of %d", e.Limits.Tokens), fmt.Sprintf("%d tokens", e.Spent.Tokens)
	} else {
		budget, spent = "cost budget of "+FormatUSD(e.Limits.Cost), FormatUSD(e.Spent.CostUSD)
		if !e.Spent.CostKnown() {
			spent += " or more (some calls have no price or usage)"
		}
	}
	whose := "this run's " + budget
	if e.Whose != "" {
		whose = fmt.Sprintf("the %s of %s, which this run counts towards,", budget, e.Whose)
	}
	calls := "model calls"
	if e.Spent.Calls == 1 {
		calls = "model call"
	}
	return fmt.Sprintf("stopped before the next model call: %s is used up (%s spent by the run and its subagents in %d %s); "+
		"resume the thread with a higher budget to go on", whose, spent, e.Spent.Calls, calls)
}

// Unwrap makes the error match agent.ErrLimit.
func (e *Error) Unwrap() error { return agent.ErrLimit }

// FormatUSD writes a dollar amount with as many decimals as a small amount
// needs to show: $12.35, $0.0123, $0.0030, $0.000045.
func FormatUSD(v float64) string {
	switch {
	case v == 0:
		return "$0.00"
	case math.Abs(v) >= 1:
		return fmt.Sprintf("$%.2f", v)
	case math.Abs(v) >= 0.001:
		return fmt.Sprintf("$%.4f", v)
	}
	return fmt.Sprintf("$%.6f", v)
}
