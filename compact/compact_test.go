package compact_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/compact"
	"github.com/deepagents-go/deepagents/ledger"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/tokens"
	"github.com/deepagents-go/deepagents/tool"
)

var echo = tool.MustFunc("echo", "Echo.", func(_ context.Context, _ *tool.Env, in struct {
	Q string `json:"q"`
}) (string, error) {
	return "result for " + in.Q + ": " + strings.Repeat("data ", 40), nil
})

// batch is a step calling echo n times in parallel.
func batch(round, n int) scripted.Step {
	var calls []scripted.StepCall
	for i := range n {
		calls = append(calls, scripted.StepCall{ID: fmt.Sprintf("c%d_%d", round, i), Name: "echo",
			Args: json.RawMessage(fmt.Sprintf(`{"q":"r%d-%d"}`, round, i))})
	}
	return scripted.Step{ToolCalls: calls}
}

func steps(s ...scripted.Step) scripted.AgentScript { return scripted.AgentScript{Steps: s} }

type run struct {
	res    *agent.Result
	err    error
	events []agent.Event
	model  *scripted.Model
}

func runAgent(t *testing.T, script scripted.Script, cfg compact.Config, input string) run {
	t.Helper()
	m := scripted.New(script, scripted.Options{})
	if cfg.Model == nil {
		cfg.Model = m
	}
	mw, err := compact.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{Model: m, Tools: []tool.Tool{echo}, Middleware: []agent.Middleware{mw}, MaxSteps: 100})
	if err != nil {
		t.Fatal(err)
	}
	var r run
	r.model = m
	for ev, err := range a.Run(t.Context(), agent.Prompt("Please edit src/a.go and keep the limit at 30 s.")) {
		if err != nil {
			r.err = err
		}
		r.events = append(r.events, ev)
		if ev.Type == agent.RunEnd && ev.Run != nil {
			r.res = ev.Run.Result
		}
	}
	return r
}

// parentRequests are the requests the parent's model calls received.
func parentRequests(m *scripted.Model) []*llm.Request {
	var out []*llm.Request
	for _, r := range m.Records() {
		if r.Who == "parent" {
			out = append(out, r.Request)
		}
	}
	return out
}

func checkBalanced(t *testing.T, msgs []llm.Message) {
	t.Helper()
	open := map[string]bool{}
	for i, m := range msgs {
		if m.Role == llm.RoleTool {
			if !open[m.ToolCallID] {
				t.Fatalf("message %d: result %s answers no open call", i, m.ToolCallID)
			}
			delete(open, m.ToolCallID)
			continue
		}
		if len(open) > 0 {
			t.Fatalf("message %d: calls %v have no result", i, open)
		}
		for _, c := range m.ToolCalls {
			open[c.ID] = true
		}
	}
}

// info is the payload of a compaction event.
func info(e agent.Event) *compact.Info {
	i, _ := compact.InfoOf(e)
	return i
}

func compactions(evs []agent.Event) []*compact.Info {
	var out []*compact.Info
	for _, e := range evs {
		if e.Type == compact.EventEnd {
			out = append(out, info(e))
		}
	}
	return out
}

// A cut that falls inside a batch of parallel results moves back to the
// assistant message: the next request starts with the summary, holds no
// result without its call, and the thread keeps every message.
func TestCutInsideParallelBatchKeepsTheBatch(t *testing.T) {
	script := scripted.Script{
		"parent":     steps(batch(0, 3), batch(1, 3), batch(2, 3), scripted.Step{Content: "done"}),
		"summarizer": steps(scripted.Step{Content: "Summary: the user wants src/a.go edited with the limit at 30 s."}),
	}
	// 4 kept messages end in the middle of round 2's three results.
	r := runAgent(t, script, compact.Config{TriggerTokens: 600, KeepMessages: 4}, "")
	if r.err != nil {
		t.Fatal(r.err)
	}
	reqs := parentRequests(r.model)
	last := reqs[len(reqs)-1]
	if !compact.IsSummary(last.Messages[0]) {
		t.Fatalf("the last request does not start with the summary: %+v", last.Messages[0])
	}
	checkBalanced(t, last.Messages)
	// The kept part begins with round 2's assistant message and all 3 results.
	if got := last.Messages[1]; got.Role != llm.RoleAssistant || len(got.ToolCalls) != 3 || got.ToolCalls[0].ID != "c2_0" {
		t.Fatalf("kept part starts with %+v", got)
	}
	if n := len(r.res.State.Messages); n != 1+4*3+1 {
		t.Fatalf("the thread has %d messages, want every one of 14", n)
	}
	cs := compactions(r.events)
	if len(cs) == 0 || cs[0].Cutoff != 9 || cs[0].Error != "" {
		t.Fatalf("compactions %+v", cs)
	}
	if !strings.Contains(last.Messages[0].Content, "/conversation_history/session_") {
		t.Fatalf("the summary message does not name the history file: %s", last.Messages[0].Content)
	}
}

// Two compactions in a row: the second cutoff is absolute (the first plus
// the messages the second summarised), and the history file has two
// sections holding every summarised message once.
func TestTwoCompactionsChainTheirCutoffs(t *testing.T) {
	script := scripted.Script{
		"parent": steps(batch(0, 1), batch(1, 1), batch(2, 1), batch(3, 1), batch(4, 1), scripted.Step{Content: "done"}),
		"summarizer": steps(scripted.Step{Content: "first summary of src/a.go and 30 s"},
			scripted.Step{Content: "second summary of src/a.go and 30 s"}),
	}
	r := runAgent(t, script, compact.Config{TriggerTokens: 250, KeepMessages: 2}, "")
	if r.err != nil {
		t.Fatal(r.err)
	}
	var cs []*compact.Info
	for _, c := range compactions(r.events) {
		if c.Error == "" {
			cs = append(cs, c)
		}
	}
	if len(cs) < 2 {
		t.Fatalf("%d compactions, want 2 or more", len(cs))
	}
	c1, c2 := cs[0], cs[1]
	if c2.Cutoff != c1.Cutoff+c2.Evicted {
		t.Fatalf("second cutoff %d, want %d + %d", c2.Cutoff, c1.Cutoff, c2.Evicted)
	}
	if c1.File == "" || c2.File != c1.File {
		t.Fatalf("files %q %q", c1.File, c2.File)
	}
	f := r.res.State.Files[c1.File]
	if n := strings.Count(f.Content, "## Summarized at "); n != len(cs) {
		t.Fatalf("history file has %d sections, want %d:\n%s", n, len(cs), f.Content)
	}
	if n := strings.Count(f.Content, "<message role=user>"); n != 1 {
		t.Fatalf("the user message is saved %d times", n)
	}
	// The second summary was asked with the first one as its opening part.
	var sumReqs []*llm.Request
	for _, rec := range r.model.Records() {
		if rec.Who == compact.SummarizerAgent {
			sumReqs = append(sumReqs, rec.Request)
		}
	}
	if !strings.Contains(sumReqs[1].Messages[0].Content, "<previous_summary>\nfirst summary") {
		t.Fatalf("second summariser input: %s", sumReqs[1].Messages[0].Content)
	}
	last := parentRequests(r.model)
	if got := last[len(last)-1].Messages[0].Content; !strings.Contains(got, "second summary") || strings.Contains(got, "first summary") {
		t.Fatalf("last summary message: %s", got)
	}
}

// An overflow error on a call compacts once and repeats the call once.
func TestOverflowCompactsAndRetriesOnce(t *testing.T) {
	script := scripted.Script{
		"parent": steps(batch(0, 2), batch(1, 2),
			scripted.Step{Error: "context_length_exceeded: the prompt is too long for this model"},
			scripted.Step{Content: "done"}),
		"summarizer": steps(scripted.Step{Content: "summary with src/a.go and 30 s"}),
	}
	r := runAgent(t, script, compact.Config{KeepMessages: 2}, "")
	if r.err != nil {
		t.Fatal(r.err)
	}
	reqs := parentRequests(r.model)
	if len(reqs) != 4 {
		t.Fatalf("%d parent calls, want 4 (one retried)", len(reqs))
	}
	if compact.IsSummary(reqs[2].Messages[0]) || !compact.IsSummary(reqs[3].Messages[0]) {
		t.Fatal("the retry is not the compacted request")
	}
	cs := compactions(r.events)
	if len(cs) != 1 || cs[0].Trigger != "overflow" {
		t.Fatalf("compactions %+v", cs)
	}
}

// A second overflow after the retry is the run's error: no loop.
func TestOverflowNeverLoops(t *testing.T) {
	over := scripted.Step{Error: "context_length_exceeded: prompt is too long"}
	script := scripted.Script{
		"parent":     steps(batch(0, 2), batch(1, 2), over, over, over, scripted.Step{Content: "done"}),
		"summarizer": steps(scripted.Step{Content: "summary with src/a.go and 30 s"}, scripted.Step{Content: "again"}),
	}
	r := runAgent(t, script, compact.Config{KeepMessages: 2}, "")
	if r.err == nil || !strings.Contains(r.err.Error(), "too long") {
		t.Fatalf("err %v", r.err)
	}
	if n := len(parentRequests(r.model)); n != 4 {
		t.Fatalf("%d parent calls, want 4", n)
	}
}

// The summary lost a path: the summariser is asked once more with the
// list, and what it still leaves out is appended under "Verbatim facts".
func TestQualityGateAppendsLostFacts(t *testing.T) {
	for _, tc := range []struct {
		name, again string
		verbatim    []string
	}{
		{"fixed by the second ask", "Edit src/a.go; limit 30 s.", nil},
		{"still missing", "The user wants an edit; limit 30 s.", []string{"src/a.go"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script := scripted.Script{
				"parent":     steps(batch(0, 1), batch(1, 1), batch(2, 1), scripted.Step{Content: "done"}),
				"summarizer": steps(scripted.Step{Content: "The user wants an edit; limit 30 s."}, scripted.Step{Content: tc.again}),
			}
			r := runAgent(t, script, compact.Config{TriggerTokens: 250, KeepMessages: 2}, "")
			if r.err != nil {
				t.Fatal(r.err)
			}
			cs := compactions(r.events)
			if len(cs) != 1 || cs[0].SummarizerCalls != 2 || !slices.Equal(cs[0].Verbatim, tc.verbatim) {
				t.Fatalf("compactions %+v", cs[0])
			}
			var reprompt string
			for _, rec := range r.model.Records() {
				if rec.Who == compact.SummarizerAgent && rec.Round == 1 {
					reprompt = rec.Request.Messages[0].Content
				}
			}
			if !strings.Contains(reprompt, "- src/a.go\n") || strings.Contains(reprompt, "- 30 s\n") {
				t.Fatalf("re-prompt does not list exactly the lost path:\n%s", reprompt)
			}
			reqs := parentRequests(r.model)
			sum := reqs[len(reqs)-1].Messages[0].Content
			if tc.verbatim != nil && !strings.Contains(sum, "Verbatim facts (from the user's messages, as written):\n- src/a.go") {
				t.Fatalf("summary message:\n%s", sum)
			}
			if !strings.Contains(sum, "src/a.go") {
				t.Fatalf("the path is lost:\n%s", sum)
			}
		})
	}
}

// A failing summariser skips compaction (the request is sent in full) and
// the third failure in a row ends the run with ErrCompactionFailed; the
// thread keeps every message.
func TestSummarizerFailuresEndTheRunAfterThree(t *testing.T) {
	fail := scripted.Step{Error: "summariser unavailable"}
	script := scripted.Script{
		"parent":     steps(batch(0, 1), batch(1, 1), batch(2, 1), batch(3, 1), batch(4, 1), scripted.Step{Content: "done"}),
		"summarizer": steps(fail, fail, fail),
	}
	r := runAgent(t, script, compact.Config{TriggerTokens: 200, KeepMessages: 2}, "")
	if !errors.Is(r.err, compact.ErrCompactionFailed) {
		t.Fatalf("err %v", r.err)
	}
	reqs := parentRequests(r.model)
	for _, q := range reqs {
		if compact.IsSummary(q.Messages[0]) {
			t.Fatal("a request was compacted")
		}
	}
	if len(r.res.State.Messages) != 1+2*len(reqs) {
		t.Fatalf("%d messages after %d calls", len(r.res.State.Messages), len(reqs))
	}
	cs := compactions(r.events)
	if len(cs) != 3 || !strings.Contains(cs[0].Error, "summariser unavailable") {
		t.Fatalf("compactions %+v", cs)
	}
}

// A todo list in the run's state is re-injected after compaction.
func TestTodosAreReinjected(t *testing.T) {
	m := scripted.New(scripted.Script{
		"parent":     steps(batch(0, 1), batch(1, 1), batch(2, 1), scripted.Step{Content: "done"}),
		"summarizer": steps(scripted.Step{Content: "summary: src/a.go, 30 s; output in /large_tool_results/big_1"}),
	}, scripted.Options{})
	mw, _ := compact.New(compact.Config{TriggerTokens: 250, KeepMessages: 2, Model: m})
	todos := agent.Middleware{Name: "todos", BeforeModel: func(_ context.Context, st agent.StepInfo, _ *llm.Request) error {
		return st.SetValue("todos", []map[string]string{{"content": "edit src/a.go", "status": "in_progress"}, {"content": "run tests", "status": "pending"}})
	}}
	a, _ := agent.New(agent.Config{Model: m, Tools: []tool.Tool{echo}, Middleware: []agent.Middleware{todos, mw}})
	if _, err := a.Invoke(t.Context(), agent.Prompt("Please edit src/a.go, limit 30 s. Earlier output: /large_tool_results/big_1")); err != nil {
		t.Fatal(err)
	}
	reqs := parentRequests(m)
	sum := reqs[len(reqs)-1].Messages[0].Content
	if !strings.Contains(sum, "<current_todos>\n[~] edit src/a.go\n[ ] run tests\n</current_todos>") {
		t.Fatalf("summary message:\n%s", sum)
	}
	if !strings.Contains(sum, "<offloaded_files>\n/large_tool_results/big_1\n</offloaded_files>") {
		t.Fatalf("summary message:\n%s", sum)
	}
}

// The summariser's input is bounded: a long eviction is summarised in
// chunks that each fit half its window, then merged.
func TestLongEvictionIsChunked(t *testing.T) {
	var ps []scripted.Step
	for i := range 12 {
		ps = append(ps, batch(i, 2))
	}
	ps = append(ps, scripted.Step{Content: "done"})
	var ss []scripted.Step
	for range 20 {
		ss = append(ss, scripted.Step{Content: "part summary: src/a.go 30 s"})
	}
	script := scripted.Script{"parent": steps(ps...), "summarizer": steps(ss...)}
	r := runAgent(t, script, compact.Config{TriggerTokens: 1200, KeepMessages: 2, SummarizerWindow: 1400}, "")
	if r.err != nil {
		t.Fatal(r.err)
	}
	cs := compactions(r.events)
	if len(cs) == 0 || cs[0].SummarizerCalls < 4 {
		t.Fatalf("compactions %+v", cs)
	}
	for _, rec := range r.model.Records() {
		if rec.Who != compact.SummarizerAgent {
			continue
		}
		if n := tokens.Estimate(rec.Request).Total; n > 700 {
			t.Fatalf("a summariser call of %d tokens, over half its 1,400-token window", n)
		}
	}
}

// The manual tool says when compaction is not needed yet, and compacts
// when it is.
func TestCompactConversationTool(t *testing.T) {
	call := scripted.Step{ToolCalls: []scripted.StepCall{{ID: "k", Name: compact.ToolName, Args: json.RawMessage(`{}`)}}}
	for _, tc := range []struct {
		name    string
		trigger int
		want    string
	}{
		{"not needed", 100_000, "Not compacted: the conversation is about"},
		{"compacts", 400, "Compacted: 3 earlier messages were summarised"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := scripted.New(scripted.Script{
				"parent":     steps(batch(0, 1), batch(1, 1), call, scripted.Step{Content: "done"}),
				"summarizer": steps(scripted.Step{Content: "summary: src/a.go, 30 s"}),
			}, scripted.Options{})
			mw, _ := compact.New(compact.Config{TriggerTokens: tc.trigger, KeepMessages: 2, Model: m, Tool: true})
			a, _ := agent.New(agent.Config{Model: m, Tools: []tool.Tool{echo}, Middleware: []agent.Middleware{mw}})
			var res *agent.Result
			var manual []*compact.Info
			for ev, err := range a.Run(t.Context(), agent.Prompt("Please edit src/a.go, limit 30 s.")) {
				if err != nil {
					t.Fatal(err)
				}
				if ev.Type == compact.EventEnd {
					manual = append(manual, info(ev))
				}
				if ev.Type == agent.RunEnd {
					res = ev.Run.Result
				}
			}
			compacts := tc.name == "compacts"
			if compacts != (len(manual) == 1) || compacts && (manual[0].Trigger != "manual" || manual[0].Evicted != 3 || manual[0].TokensAfter == 0) {
				for _, m := range manual {
					t.Logf("%+v", *m)
				}
				t.Fatal("compaction events")
			}
			st, _, _ := agent.GetValue[compact.State](&res.State, compact.StateKey)
			if st.Announce != nil {
				t.Fatal("the announcement stays in the state after its events")
			}
			var answer string
			for _, msg := range res.State.Messages {
				if msg.Role == llm.RoleTool && msg.ToolCallID == "k" {
					answer = msg.Content
				}
			}
			if !strings.HasPrefix(answer, tc.want) {
				t.Fatalf("answer %q", answer)
			}
			reqs := parentRequests(m)
			if got := compact.IsSummary(reqs[len(reqs)-1].Messages[0]); got != (tc.name == "compacts") {
				t.Fatalf("last request compacted: %v", got)
			}
			checkBalanced(t, reqs[len(reqs)-1].Messages[1:])
		})
	}
}

// Without a summariser model the agent's own model writes the summary,
// inside the model call, under the "summarizer" call name.
func TestNoModelUsesTheAgentsOwnModel(t *testing.T) {
	m := scripted.New(scripted.Script{
		"parent":     steps(batch(0, 1), batch(1, 1), batch(2, 1), scripted.Step{Content: "done"}),
		"summarizer": steps(scripted.Step{Content: "summary: src/a.go, 30 s"}),
	}, scripted.Options{})
	mw, err := compact.New(compact.Config{TriggerTokens: 250, KeepMessages: 2})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := agent.New(agent.Config{Model: m, Tools: []tool.Tool{echo}, Middleware: []agent.Middleware{mw}})
	res, err := a.Invoke(t.Context(), agent.Prompt("Please edit src/a.go and keep the limit at 30 s."))
	if err != nil {
		t.Fatal(err)
	}
	reqs := parentRequests(m)
	if !compact.IsSummary(reqs[len(reqs)-1].Messages[0]) {
		t.Fatal("the last request is not compacted")
	}
	st, ok, err := agent.GetValue[compact.State](&res.State, compact.StateKey)
	if !ok || err != nil || st.Count != 1 || st.Summary != "summary: src/a.go, 30 s" {
		t.Fatalf("state %+v %v %v", st, ok, err)
	}
}

func TestConfigDefaults(t *testing.T) {
	for _, tc := range []struct {
		cfg  compact.Config
		want int
	}{
		{compact.Config{}, 170_000},
		{compact.Config{Window: 10_000}, 8_500},
		{compact.Config{Window: 10_000, TriggerTokens: 5}, 5},
	} {
		if got := tc.cfg.Trigger(); got != tc.want {
			t.Errorf("%+v: trigger %d, want %d", tc.cfg, got, tc.want)
		}
	}
	if _, err := compact.New(compact.Config{KeepMessages: -1}); err == nil {
		t.Error("a negative keep was taken")
	}
	m, err := compact.New(compact.Config{})
	if err != nil || m.BeforeModel == nil || m.WrapStream == nil || len(m.Tools) != 0 {
		t.Fatalf("zero config: %+v %v", m, err)
	}
	m, _ = compact.New(compact.Config{Tool: true})
	if len(m.Tools) != 1 || m.Tools[0].Spec().Name != "compact_conversation" {
		t.Fatal("Tool does not bind compact_conversation")
	}
}

// Estimates are scaled by what the provider reports: a model that reports
// twice the estimate reaches the trigger rounds earlier than one that
// reports the estimate itself.
func TestCalibrationFiresEarlier(t *testing.T) {
	firstCompaction := func(factor float64) int {
		m := scripted.New(nil, scripted.Options{Func: func(ci llm.CallInfo, req *llm.Request) (scripted.Step, error) {
			if ci.Agent == compact.SummarizerAgent {
				return scripted.Step{Content: "summary: src/a.go, 30 s"}, nil
			}
			use := &llm.Usage{InputTokens: int(float64(tokens.Estimate(req).Total) * factor)}
			if ci.Round >= 12 {
				return scripted.Step{Content: "done", Usage: use}, nil
			}
			st := batch(ci.Round, 1)
			st.Usage = use
			return st, nil
		}})
		mw, _ := compact.New(compact.Config{TriggerTokens: 700, KeepMessages: 2, Model: m})
		ac := agent.Config{Model: m, Tools: []tool.Tool{echo}, Middleware: []agent.Middleware{mw}}
		ac.Middleware = append(ac.Middleware, ledger.New(ac).Middleware()) // the calibration
		a, _ := agent.New(ac)
		for ev, err := range a.Run(t.Context(), agent.Prompt("Please edit src/a.go and keep the limit at 30 s.")) {
			if err != nil {
				t.Fatal(err)
			}
			if ev.Type == compact.EventStart {
				return len(parentRequests(m))
			}
		}
		return -1
	}
	plain, doubled := firstCompaction(1), firstCompaction(2)
	if plain < 0 || doubled < 0 || doubled >= plain {
		t.Fatalf("first compaction before call %d with a true estimate, %d with a doubled report", plain, doubled)
	}
}

// A summariser of its own is bound by the agent's response limits, as the
// agent's model is: its endless answer is cut off, not kept.
func TestSummarizerIsBoundByResponseLimits(t *testing.T) {
	huge := scripted.Step{Content: strings.Repeat("summary ", 1000)}
	script := scripted.Script{
		"parent":     steps(batch(0, 1), batch(1, 1), batch(2, 1), batch(3, 1), batch(4, 1), scripted.Step{Content: "done"}),
		"summarizer": steps(huge, huge, huge),
	}
	m := scripted.New(script, scripted.Options{})
	mw, err := compact.New(compact.Config{Model: m, TriggerTokens: 200, KeepMessages: 2})
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{Model: m, Tools: []tool.Tool{echo}, Middleware: []agent.Middleware{mw}, MaxSteps: 100,
		ResponseLimits: llm.ResponseLimits{MaxBytes: 2000}})
	if err != nil {
		t.Fatal(err)
	}
	var runErr error
	var evs []agent.Event
	for ev, err := range a.Run(t.Context(), agent.Prompt("Go.")) {
		if err != nil {
			runErr = err
		}
		evs = append(evs, ev)
	}
	if !errors.Is(runErr, compact.ErrCompactionFailed) {
		t.Fatalf("err %v, want the compaction to fail", runErr)
	}
	cs := compactions(evs)
	if len(cs) == 0 || !strings.Contains(cs[0].Error, "its limit is 2000 bytes (max_response_bytes)") {
		t.Fatalf("compaction error %q", cs[0].Error)
	}
}
