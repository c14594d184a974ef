package budget_test

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"strings"
	"sync"
	"testing"

	"github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/budget"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/runner"
	"github.com/deepagents-go/deepagents/tool"
)

// flatPricer prices every model at a dollar per thousand tokens but
// "unpriced", which it does not know.
type flatPricer struct{}

func (flatPricer) Price(model string, u llm.Usage) (float64, bool) {
	if model == "unpriced" {
		return 0, false
	}
	return float64(u.Total()) / 1000, true
}

// fourSteps writes a file three times, each call using 100 tokens, then
// answers.
const fourSteps = `{"parent": [
  {"tool_calls": [{"id": "w1", "name": "write_file", "args": {"file_path": "/a.md", "content": "one"}}], "usage": {"input_tokens": 90, "output_tokens": 10}},
  {"tool_calls": [{"id": "w2", "name": "write_file", "args": {"file_path": "/b.md", "content": "two"}}], "usage": {"input_tokens": 90, "output_tokens": 10}},
  {"tool_calls": [{"id": "w3", "name": "write_file", "args": {"file_path": "/c.md", "content": "three"}}], "usage": {"input_tokens": 90, "output_tokens": 10}},
  {"content": "all written", "usage": {"input_tokens": 90, "output_tokens": 10}}]}`

func newAgent(t *testing.T, script string, b *budget.Middleware) (*agent.Agent, *scripted.Model) {
	t.Helper()
	var s scripted.Script
	if err := json.Unmarshal([]byte(script), &s); err != nil {
		t.Fatal(err)
	}
	m := scripted.New(s, scripted.Options{})
	a, err := deepagents.New(deepagents.Config{Model: m, Budget: b})
	if err != nil {
		t.Fatal(err)
	}
	return a, m
}

// A run stops before the model call that would go past its token budget:
// status limit (not error), its work kept, and the error names the budget
// and what was spent.
func TestStopsAtTokenBudget(t *testing.T) {
	a, _ := newAgent(t, fourSteps, budget.New(budget.Options{Limits: budget.Limits{Tokens: 150}}))
	res, err := a.Invoke(t.Context(), agent.Prompt("write"))
	if !errors.Is(err, agent.ErrLimit) || errors.Is(err, agent.ErrFailed) || res.Status != agent.StatusLimit {
		t.Fatalf("err %v, status %s; want a limit", err, res.Status)
	}
	for _, want := range []string{"this run's token budget of 150 is used up", "200 tokens spent", "2 model calls", "higher budget"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	var be *budget.Error
	if !errors.As(err, &be) || be.Kind != "tokens" || be.Spent.Tokens != 200 {
		t.Errorf("budget error %+v", be)
	}
	if res.Rounds != 2 {
		t.Errorf("%d model calls, want 2: the third is never made", res.Rounds)
	}
	// Nothing lost: both writes and their results are kept.
	if len(res.State.Files) != 2 {
		t.Errorf("files %v, want /a.md and /b.md", res.State.Files)
	}
	if last := res.State.Messages[len(res.State.Messages)-1]; last.Role != llm.RoleTool {
		t.Errorf("the history ends with %s, want the second call's result", last.Role)
	}
}

// The cost budget counts dollars from the pricer; a call of a model without
// a price counts nothing and is reported as unpriced, with a warning.
func TestStopsAtCostBudget(t *testing.T) {
	var mu sync.Mutex
	var charges []budget.Charge
	b := budget.New(budget.Options{Limits: budget.Limits{Cost: 0.25}, Pricer: flatPricer{},
		OnCharge: func(c budget.Charge) { mu.Lock(); charges = append(charges, c); mu.Unlock() }})
	a, _ := newAgent(t, fourSteps, b)
	res, err := a.Invoke(t.Context(), agent.Prompt("write"))
	if !errors.Is(err, agent.ErrLimit) || res.Status != agent.StatusLimit {
		t.Fatalf("err %v, status %s; want a limit", err, res.Status)
	}
	if !strings.Contains(err.Error(), "this run's cost budget of $0.2500 is used up ($0.3000 spent") {
		t.Errorf("error %q", err)
	}
	if len(charges) != 3 || charges[0].CostUSD != 0.1 || !charges[0].Priced || charges[0].Agent != "parent" || charges[0].Model != "scripted" {
		t.Errorf("charges %+v", charges)
	}

	// Unpriced: the cost never reaches the budget, and the run says why.
	p := budget.New(budget.Options{Limits: budget.Limits{Cost: 0.25}, Pricer: pricerFor("unpriced")})
	a, _ = newAgent(t, fourSteps, p)
	var warnings []string
	res, err = agent.Drain(a.Run(t.Context(), agent.Prompt("write")), func(ev agent.Event) {
		if ev.Type == agent.Warning && ev.Warning.Source == "budget" {
			warnings = append(warnings, ev.Warning.Text)
		}
	})
	if err != nil || res.Status != agent.StatusOK {
		t.Fatalf("unpriced run: %v", err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "no price") || !strings.Contains(warnings[0], "lower bound") {
		t.Errorf("warnings %q, want one about the missing price", warnings)
	}
}

// pricerFor answers for every model as if its name were model.
type pricerFor string

func (p pricerFor) Price(_ string, u llm.Usage) (float64, bool) {
	return flatPricer{}.Price(string(p), u)
}

// A subagent's calls count towards its parent's budget, in the same tree:
// the parent's spending has the child's share under the child's path, and
// the child stops once the parent's budget is used up.
func TestSubagentCallsCountTowardsTheParent(t *testing.T) {
	const script = `{
	 "parent": [
	  {"tool_calls": [{"id": "t1", "name": "task", "args": {"description": "write three files", "subagent_type": "general-purpose"}}], "usage": {"input_tokens": 40, "output_tokens": 10}},
	  {"content": "delegated", "usage": {"input_tokens": 40, "output_tokens": 10}}],
	 "general-purpose": [
	  {"tool_calls": [{"id": "g1", "name": "write_file", "args": {"file_path": "/a.md", "content": "one"}}], "usage": {"input_tokens": 90, "output_tokens": 10}},
	  {"tool_calls": [{"id": "g2", "name": "write_file", "args": {"file_path": "/b.md", "content": "two"}}], "usage": {"input_tokens": 90, "output_tokens": 10}},
	  {"content": "written", "usage": {"input_tokens": 90, "output_tokens": 10}}]}`
	saver := checkpoint.NewMemory(0)
	a, _ := newAgent(t, script, budget.New(budget.Options{Limits: budget.Limits{Tokens: 200}}))
	res, err := a.Invoke(t.Context(), agent.Prompt("go"), runner.Checkpoints(saver, "tree"))
	if !errors.Is(err, agent.ErrLimit) {
		t.Fatalf("err %v, want a limit", err)
	}
	kid, ok := res.Child("t1")
	if !ok || kid.Status != agent.StatusLimit || kid.Rounds != 2 {
		t.Fatalf("the subagent: %+v", kid)
	}
	if !strings.Contains(kid.Error, "the token budget of 200 of parent, which this run counts towards, is used up (250 tokens spent") {
		t.Errorf("the subagent's error %q", kid.Error)
	}
	// The parent stops too, before its next call.
	if res.Rounds != 1 || !strings.Contains(err.Error(), "this run's token budget of 200 is used up (250 tokens spent") {
		t.Errorf("parent: %d calls, %v", res.Rounds, err)
	}
	rs, err := runner.LoadRunState(t.Context(), saver, "tree", agent.RootPath("parent"), false)
	if err != nil {
		t.Fatal(err)
	}
	spent, ok := budget.SpentOf(rs.Values)
	if !ok || spent.Tokens != 250 || spent.Calls != 3 || spent.ByAgent["parent"].Tokens != 50 || spent.ByAgent[kid.Agent.String()].Tokens != 200 {
		t.Errorf("the parent's saved spending %+v (child %s)", spent, kid.Agent)
	}
	if res.Usage.Total() != spent.Tokens {
		t.Errorf("usage %d tokens, spending %d", res.Usage.Total(), spent.Tokens)
	}
}

// A run stopped at its budget is resumed with a higher one: it goes on in
// the same turn where it stopped, no model call made twice, and what it had
// spent is read back from the checkpoint (a new process), not counted from
// zero.
func TestResumeWithAHigherBudget(t *testing.T) {
	saver := checkpoint.NewMemory(0)
	a, _ := newAgent(t, fourSteps, budget.New(budget.Options{Limits: budget.Limits{Tokens: 150}}))
	if _, err := a.Invoke(t.Context(), agent.Prompt("write"), runner.Checkpoints(saver, "T")); !errors.Is(err, agent.ErrLimit) {
		t.Fatalf("first run: %v", err)
	}
	rs, err := runner.LoadRunState(t.Context(), saver, "T", agent.RootPath("parent"), false)
	if err != nil || rs.Status != agent.StatusLimit {
		t.Fatalf("saved run: %+v %v", rs, err)
	}
	if spent, ok := budget.SpentOf(rs.Values); !ok || spent.Tokens != 200 {
		t.Fatalf("saved spending %+v", spent)
	}

	// Not high enough: it stops again at once, having made no call.
	again, m := newAgent(t, fourSteps, budget.New(budget.Options{Limits: budget.Limits{Tokens: 200}}))
	res, err := again.Invoke(t.Context(), agent.Input{}, runner.Checkpoints(saver, "T"))
	if !errors.Is(err, agent.ErrLimit) || len(m.Records()) != 0 || res.Rounds != 2 || !strings.Contains(err.Error(), "200 tokens spent") {
		t.Fatalf("resume at the same budget: %v, %d calls", err, len(m.Records()))
	}

	higher, m := newAgent(t, fourSteps, budget.New(budget.Options{Limits: budget.Limits{Tokens: 1000}}))
	res, err = higher.Invoke(t.Context(), agent.Input{}, runner.Checkpoints(saver, "T"))
	if err != nil || res.FinalText() != "all written" {
		t.Fatalf("resume with a higher budget: %v", err)
	}
	if n := len(m.Records()); n != 2 {
		t.Errorf("%d model calls after the resume, want the 2 left", n)
	}
	if len(res.State.Files) != 3 || res.Rounds != 4 {
		t.Errorf("files %d, rounds %d: want the whole turn's", len(res.State.Files), res.Rounds)
	}
	users := 0
	for _, msg := range res.State.Messages {
		if msg.Role == llm.RoleUser {
			users++
		}
	}
	if users != 1 {
		t.Errorf("%d user messages, want the one: the same turn goes on", users)
	}
	rs, err = runner.LoadRunState(context.Background(), saver, "T", agent.RootPath("parent"), false)
	if err != nil {
		t.Fatal(err)
	}
	if spent, ok := budget.SpentOf(rs.Values); !ok || spent.Tokens != 400 || spent.Calls != 4 || rs.Status != agent.StatusOK {
		t.Errorf("after the resume: %s, spending %+v", rs.Status, spent)
	}
}

// WithLimits gives a run budgets of its own (a background child's caps),
// over the middleware's.
func TestWithLimits(t *testing.T) {
	a, _ := newAgent(t, fourSteps, budget.New(budget.Options{Limits: budget.Limits{Tokens: 1000}}))
	ctx := budget.WithLimits(t.Context(), budget.Limits{Tokens: 100})
	res, err := a.Invoke(ctx, agent.Prompt("write"))
	if !errors.Is(err, agent.ErrLimit) || res.Rounds != 1 {
		t.Fatalf("%v after %d calls, want a limit after 1", err, res.Rounds)
	}
	// No budget: the run finishes.
	a, _ = newAgent(t, fourSteps, budget.New(budget.Options{}))
	if _, err := a.Invoke(t.Context(), agent.Prompt("write")); err != nil {
		t.Fatal(err)
	}
}

func TestFormatUSD(t *testing.T) {
	for v, want := range map[float64]string{0: "$0.00", 12.345: "$12.35", 0.0123: "$0.0123", 0.003: "$0.0030", 0.0000451: "$0.000045"} {
		if got := budget.FormatUSD(v); got != want {
			t.Errorf("FormatUSD(%v) = %q, want %q", v, got, want)
		}
	}
}

// A new turn of a thread has a budget of its own; what the earlier turns
// spent is kept beside it, for the thread's total.
func TestNewTurnStartsFromZero(t *testing.T) {
	const script = `{"parent": [
	  {"content": "one", "usage": {"input_tokens": 90, "output_tokens": 10}},
	  {"content": "two", "usage": {"input_tokens": 90, "output_tokens": 10}}]}`
	saver := checkpoint.NewMemory(0)
	for _, prompt := range []string{"first", "second"} {
		a, _ := newAgent(t, script, budget.New(budget.Options{Limits: budget.Limits{Tokens: 100}}))
		if _, err := a.Invoke(t.Context(), agent.Prompt(prompt), runner.Checkpoints(saver, "turns")); err != nil {
			t.Fatalf("turn %q: %v", prompt, err)
		}
	}
	rs, err := runner.LoadRunState(t.Context(), saver, "turns", agent.RootPath("parent"), false)
	if err != nil {
		t.Fatal(err)
	}
	spent, _ := budget.SpentOf(rs.Values)
	if spent.Tokens != 100 || spent.Earlier.Tokens != 100 || spent.Thread().Tokens != 200 || spent.Thread().Calls != 2 {
		t.Errorf("spending %+v", spent)
	}
}

// HandOver hands a run what a detached run its tool started spent: the
// run counts it before its next call (and not before: the detached run
// counts towards nothing above it), and keeps no trace of the handover in
// its state.
func TestHandOver(t *testing.T) {
	mw := budget.New(budget.Options{Limits: budget.Limits{Tokens: 350}})
	var nested *agent.Agent
	later := tool.MustFunc("later", "Starts work that ends later.", func(ctx context.Context, _ *tool.Env, _ struct{}) (tool.Result, error) {
		if _, err := nested.Invoke(budget.Detach(ctx), agent.Prompt("in the background"),
			agent.AsChild(agent.Child{Path: agent.RootPath("parent").Child("bg", "l1")})); err != nil {
			return tool.Result{}, err
		}
		res := tool.Result{Content: "started"}
		err := budget.HandOver(&res, "bg1", budget.Spent{Amount: budget.Amount{Calls: 2, Tokens: 300}, ByAgent: map[string]budget.Amount{"parent / bg#1": {Calls: 2, Tokens: 300}}})
		return res, err
	})
	const script = `{"parent": [
	  {"tool_calls": [{"id": "l1", "name": "later", "args": {}}], "usage": {"input_tokens": 90, "output_tokens": 10}},
	  {"content": "never", "usage": {"input_tokens": 90, "output_tokens": 10}}]}`
	var s scripted.Script
	if err := json.Unmarshal([]byte(script), &s); err != nil {
		t.Fatal(err)
	}
	a, err := deepagents.New(deepagents.Config{Model: scripted.New(s, scripted.Options{}), Tools: []tool.Tool{later}, Budget: mw})
	if err != nil {
		t.Fatal(err)
	}
	// A subagent run on the same middleware, detached as a background
	// child is: its 1,000 tokens are past the parent's budget but count
	// only as handed over (300 here).
	bg := `{"bg": [{"content": "bg done", "usage": {"input_tokens": 900, "output_tokens": 100}}]}`
	var bs scripted.Script
	if err := json.Unmarshal([]byte(bg), &bs); err != nil {
		t.Fatal(err)
	}
	if nested, err = deepagents.New(deepagents.Config{Name: "bg", Model: scripted.New(bs, scripted.Options{}), Budget: mw}); err != nil {
		t.Fatal(err)
	}
	saver := checkpoint.NewMemory(0)
	res, err := a.Invoke(t.Context(), agent.Prompt("go"), runner.Checkpoints(saver, "h"))
	if !errors.Is(err, agent.ErrLimit) || !strings.Contains(err.Error(), "400 tokens spent") {
		t.Fatalf("%v: want a stop at 400 tokens, the handed-over 300 counted", err)
	}
	for name := range res.State.Values {
		t.Errorf("value %s left in the state", name)
	}
	rs, _ := runner.LoadRunState(t.Context(), saver, "h", agent.RootPath("parent"), false)
	if spent, _ := budget.SpentOf(rs.Values); spent.Tokens != 400 || spent.ByAgent["parent / bg#1"].Calls != 2 {
		t.Errorf("saved spending %+v", spent)
	}
}

// anonymous answers as the scripted model does, but its responses name no
// model (some providers leave the field out).
type anonymous struct{ *scripted.Model }

func (m anonymous) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.StreamEvent, error] {
	return func(yield func(llm.StreamEvent, error) bool) {
		for ev, err := range m.Model.Stream(ctx, req) {
			if ev.Response != nil {
				r := *ev.Response
				r.Model = ""
				ev.Response = &r
			}
			if !yield(ev, err) {
				return
			}
		}
	}
}

func (m anonymous) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	r, err := m.Model.Generate(ctx, req)
	if r != nil {
		c := *r
		c.Model = ""
		r = &c
	}
	return r, err
}

// A response that names no model is priced as the model the agent asked
// for, so its cost counts towards the budget.
func TestPricesTheRequestedModel(t *testing.T) {
	var s scripted.Script
	if err := json.Unmarshal([]byte(fourSteps), &s); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var charges []budget.Charge
	b := budget.New(budget.Options{Limits: budget.Limits{Cost: 0.25}, Pricer: flatPricer{}, Model: "openai:gpt-4o",
		OnCharge: func(c budget.Charge) { mu.Lock(); charges = append(charges, c); mu.Unlock() }})
	a, err := deepagents.New(deepagents.Config{Model: anonymous{scripted.New(s, scripted.Options{})}, Budget: b})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Invoke(t.Context(), agent.Prompt("write")); !errors.Is(err, agent.ErrLimit) {
		t.Fatalf("err %v; want the cost budget to stop the run", err)
	}
	if len(charges) == 0 || !charges[0].Priced || charges[0].Model != "openai:gpt-4o" {
		t.Errorf("charges %+v", charges)
	}
}
