package main

import (
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/budget"
	"github.com/deepagents-go/deepagents/llm"
	ot "github.com/deepagents-go/deepagents/providers/openai/openaitest"
)

// pricedGPTTest prices the fake server's model at $1 per million input
// tokens and $10 per million output tokens: each call of costServer's
// (1,000 in, 100 out) costs $0.002.
const pricedGPTTest = "[prices.\"openai:gpt-test\"]\ninput = 1\noutput = 10\n"

// costServer delegates to a subagent that writes a file; every call uses
// 1,000 input and 100 output tokens.
func costServer(t *testing.T) *ot.Server {
	use := &ot.Usage{Prompt: 1000, Completion: 100}
	return ot.NewServer(t, func(r *ot.Request) ot.Reply {
		var rep ot.Reply
		switch {
		case r.HasTool("task") && r.Round() == 0:
			rep = ot.Tools(ot.Call{ID: "call_p1", Name: "task", Args: `{"description":"Write /child.md.","subagent_type":"general-purpose"}`})
		case r.HasTool("task"):
			rep = ot.Text("Relayed.")
		case r.Round() == 0:
			rep = ot.Tools(ot.Call{ID: "call_c1", Name: "write_file", Args: `{"file_path":"/child.md","content":"42\n"}`})
		default:
			rep = ot.Text("Written.")
		}
		rep.Usage = use
		return rep
	})
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func summaryOf(t *testing.T, out string) runSummary {
	t.Helper()
	var sum runSummary
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("json output: %v\n%s", err, out)
	}
	return sum
}

// run --output json has the run's cost, by agent, at the configured
// prices; threads show has it too, in text and JSON.
func TestRunShowsCost(t *testing.T) {
	srv := costServer(t)
	_, home := runEnv(t, srv)
	writeFileAt(t, filepath.Join(home, ".deepagents", "config.toml"), pricedGPTTest)
	code, out, errs := runCLI(t, "run", "-p", "go", "--model", "openai:gpt-test", "--output", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	sum := summaryOf(t, out)
	if sum.CostUSD == nil || !near(*sum.CostUSD, 0.008) || sum.CostLowerBound {
		t.Fatalf("cost %v (lower bound %v), want $0.008", sum.CostUSD, sum.CostLowerBound)
	}
	kid := "parent / general-purpose#call_p1"
	if len(sum.CostByAgent) != 2 || !near(sum.CostByAgent["parent"].CostUSD, 0.004) || !near(sum.CostByAgent[kid].CostUSD, 0.004) ||
		sum.CostByAgent[kid].Calls != 2 {
		t.Errorf("cost by agent %+v", sum.CostByAgent)
	}
	if !strings.Contains(out, `"cost_usd":0.008`) || !strings.Contains(out, `"cost_by_agent":{`) {
		t.Errorf("the JSON spells the cost otherwise:\n%s", out)
	}

	code, out, errs = runCLI(t, "threads", "show", sum.ThreadID)
	if code != 0 || !strings.Contains(out, "cost of the last run: $0.0080 in 4 model calls (4.4k tokens)") ||
		!strings.Contains(out, "  "+kid+": $0.0040 in 2 model calls") {
		t.Errorf("threads show: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = runCLI(t, "threads", "show", sum.ThreadID, "--json")
	var th struct {
		CostUSD       *float64                 `json:"cost_usd"`
		ThreadCostUSD *float64                 `json:"thread_cost_usd"`
		CostByAgent   map[string]budget.Amount `json:"cost_by_agent"`
	}
	if err := json.Unmarshal([]byte(out), &th); code != 0 || err != nil || th.CostUSD == nil || !near(*th.CostUSD, 0.008) ||
		th.ThreadCostUSD == nil || !near(*th.ThreadCostUSD, 0.008) || len(th.CostByAgent) != 2 {
		t.Errorf("threads show --json: exit %d %v %+v\n%s", code, err, th, errs)
	}

	// A second turn has a cost of its own; the thread's total counts both.
	code, out, errs = runCLI(t, "run", "-p", "again", "--model", "openai:gpt-test", "--thread", sum.ThreadID, "--output", "json")
	if code != 0 {
		t.Fatalf("second turn: exit %d: %s", code, errs)
	}
	if s2 := summaryOf(t, out); s2.CostUSD == nil || !near(*s2.CostUSD, 0.002) {
		t.Errorf("second turn's cost %v, want $0.002 (one call)", s2.CostUSD)
	}
	_, out, _ = runCLI(t, "threads", "show", sum.ThreadID)
	if !strings.Contains(out, "cost of the last run: $0.0020 in 1 model call") || !strings.Contains(out, "the whole thread: $0.0100 in 5 model calls") {
		t.Errorf("threads show after two turns:\n%s", out)
	}
}

// A model without a price makes the cost unknown, never $0.
func TestUnpricedCostIsUnknown(t *testing.T) {
	srv := costServer(t)
	runEnv(t, srv)
	code, out, errs := runCLI(t, "run", "-p", "go", "--model", "openai:gpt-test", "--output", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	sum := summaryOf(t, out)
	if sum.CostUSD != nil || !sum.CostLowerBound || sum.CostByAgent["parent"].Unpriced != 2 {
		t.Errorf("cost %v, lower bound %v, by agent %+v: want unknown", sum.CostUSD, sum.CostLowerBound, sum.CostByAgent)
	}
	if !strings.Contains(out, `"cost_usd":null`) {
		t.Errorf("cost_usd is not null:\n%s", out)
	}
	_, out, _ = runCLI(t, "threads", "show", sum.ThreadID)
	if !strings.Contains(out, "cost of the last run: cost unknown (4 model calls without a price)") {
		t.Errorf("threads show:\n%s", out)
	}
}

// --max-cost stops the run cleanly at the budget (status limit, exit 1,
// the subagent stopped too), and resume --max-cost HIGHER goes on in the
// same turn where it stopped, its spending carried on.
func TestMaxCostStopsAndResumes(t *testing.T) {
	srv := costServer(t)
	_, home := runEnv(t, srv)
	writeFileAt(t, filepath.Join(home, ".deepagents", "config.toml"), pricedGPTTest)
	if code, _, errs := runCLI(t, "run", "-p", "go", "--model", "openai:gpt-test", "--max-cost", "-1"); code != exitUsage || !strings.Contains(errs, "--max-cost must be") {
		t.Errorf("--max-cost -1: exit %d: %s", code, errs)
	}
	code, out, errs := runCLI(t, "run", "-p", "go", "--model", "openai:gpt-test", "--max-cost", "0.003", "--output", "json")
	if code != exitFailed {
		t.Fatalf("exit %d, want 1: %s", code, errs)
	}
	sum := summaryOf(t, out)
	if sum.Status != agent.StatusLimit || !strings.Contains(sum.Error, "this run's cost budget of $0.0030 is used up ($0.0040 spent") ||
		sum.CostUSD == nil || !near(*sum.CostUSD, 0.004) {
		t.Fatalf("status %s, error %q, cost %v", sum.Status, sum.Error, sum.CostUSD)
	}
	if len(sum.Subagents) != 1 || sum.Subagents[0].Status != agent.StatusLimit || srv.Count() != 2 {
		t.Fatalf("subagents %+v, %d calls: want the child stopped after its first call", sum.Subagents, srv.Count())
	}

	// The same budget again: nothing more is spent.
	code, out, _ = runCLI(t, "resume", "--thread", sum.ThreadID, "--output", "json")
	if s := summaryOf(t, out); code != exitFailed || s.Status != agent.StatusLimit || srv.Count() != 2 {
		t.Fatalf("resume with the same budget: exit %d, status %s, %d calls", code, s.Status, srv.Count())
	}
	code, out, errs = runCLI(t, "resume", "--thread", sum.ThreadID, "--max-cost", "1", "--output", "json")
	if code != exitOK {
		t.Fatalf("resume with a higher budget: exit %d: %s", code, errs)
	}
	done := summaryOf(t, out)
	if done.Status != agent.StatusOK || done.Result != "Relayed." || srv.Count() != 3 || done.CostUSD == nil || !near(*done.CostUSD, 0.006) {
		t.Fatalf("after the resume: %s %q, %d calls, cost %v", done.Status, done.Result, srv.Count(), done.CostUSD)
	}
	// The same turn went on: the last request has the one prompt.
	users := 0
	for _, m := range srv.Requests()[2].Messages {
		if m.Role == "user" {
			users++
		}
	}
	if users != 1 {
		t.Errorf("the resumed request has %d user messages, want 1", users)
	}
}

// Progress lines show the turn's running cost; /cost shows the thread's.
func TestProgressAndSlashCost(t *testing.T) {
	var b strings.Builder
	m := &costMeter{}
	p := &progressPrinter{w: &b, cost: m}
	m.charge(budget.Charge{Agent: "parent", Model: "gpt-test", Usage: llm.Usage{InputTokens: 1000, OutputTokens: 100}, CostUSD: 0.002, Priced: true})
	p.event(agent.Event{Type: agent.ModelResponse, Agent: agent.RootPath("parent"), Response: &agent.ResponseInfo{Usage: llm.Usage{InputTokens: 1000, OutputTokens: 100}}})
	if !strings.Contains(b.String(), "so far · $0.0020\n") {
		t.Errorf("progress: %q", b.String())
	}
	m.charge(budget.Charge{Agent: "parent", Model: "mystery", Usage: llm.Usage{InputTokens: 10}})
	b.Reset()
	p.event(agent.Event{Type: agent.ModelResponse, Agent: agent.RootPath("parent"), Response: &agent.ResponseInfo{}})
	if !strings.Contains(b.String(), "$0.0020 or more (no price for mystery)") {
		t.Errorf("progress with an unpriced call: %q", b.String())
	}

	srv := costServer(t)
	_, home := runEnv(t, srv)
	writeFileAt(t, filepath.Join(home, ".deepagents", "config.toml"), pricedGPTTest)
	f := runFlags{model: "openai:gpt-test", output: "text", set: map[string]bool{}}
	var out, errb strings.Builder
	s, err := assemble(t.Context(), f, &errb)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	sess := &session{setup: s, flags: f, stdout: &out, stderr: &errb}
	if code := sess.interactive(t.Context(), strings.NewReader("/cost\ngo\n/cost\n")); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	got := errb.String()
	if !strings.Contains(got, "/cost: nothing spent yet") || !strings.Contains(got, "cost of the last run: $0.0080 in 4 model calls") {
		t.Errorf("/cost:\n%s", got)
	}
}
