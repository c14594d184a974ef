package compact_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/compact"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/runner"
	"github.com/deepagents-go/deepagents/tool"
)

// A compaction made between two turns (a person's /compact) summarises the
// saved thread at once, with the person's focus in the summariser's input;
// the next turn records it before its first model call (state value,
// history file, events, usage), and a run of another thread leaves it out.
func TestManualCompactionBetweenTurns(t *testing.T) {
	m := scripted.New(scripted.Script{
		"parent": steps(batch(0, 1), batch(1, 1), batch(2, 1), scripted.Step{Content: "done"},
			scripted.Step{Content: "second turn done"}, scripted.Step{Content: "other thread done"}),
		"summarizer": steps(scripted.Step{Content: "summary: src/a.go, limit 30 s, three lookups",
			Usage: &llm.Usage{InputTokens: 900, OutputTokens: 40}}),
	}, scripted.Options{})
	cfg := compact.Config{KeepMessages: 2} // the trigger (170,000) is never reached
	mw, err := compact.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{Model: m, Tools: []tool.Tool{echo}, Middleware: []agent.Middleware{mw}})
	if err != nil {
		t.Fatal(err)
	}
	saver := checkpoint.NewMemory(0)
	_, err = a.Invoke(t.Context(), agent.Prompt("Please edit src/a.go and keep the limit at 30 s."), runner.Checkpoints(saver, "t"))
	if err != nil {
		t.Fatal(err)
	}
	rs, err := runner.LoadRunState(t.Context(), saver, "t", agent.RootPath("parent"), false)
	if err != nil {
		t.Fatal(err)
	}

	// Without a model there is nobody to write the summary.
	if _, err := compact.Compact(t.Context(), cfg, rs, ""); err == nil {
		t.Fatal("compacted without a model")
	}
	cfg.Model = m
	man, err := compact.Compact(t.Context(), cfg, rs, "the timeout values")
	if err != nil {
		t.Fatal(err)
	}
	info := man.Info()
	// 8 messages: user, 3 × (call, result), answer; keeping the last 2
	// would part a result from its call, so the call is kept too.
	if info.Trigger != "manual" || info.Evicted != 5 || info.Cutoff != 5 || info.TokensAfter >= info.TokensBefore ||
		info.Usage != (llm.Usage{InputTokens: 900, OutputTokens: 40}) || info.SummarizerCalls != 1 {
		t.Fatalf("info %+v", info)
	}
	var sumReq *llm.Request
	for _, r := range m.Records() {
		if r.Who == compact.SummarizerAgent {
			sumReq = r.Request
		}
	}
	if sumReq == nil || !strings.Contains(sumReq.Messages[0].Content, "the timeout values") {
		t.Fatalf("the focus is not in the summariser's input: %+v", sumReq)
	}
	// Nothing in the thread changed yet.
	if again, _ := runner.LoadRunState(t.Context(), saver, "t", agent.RootPath("parent"), false); again.Values[compact.StateKey] != nil {
		t.Fatal("Compact changed the thread")
	}

	// A run of another thread does not take it.
	other, err := a.Invoke(compact.WithManual(t.Context(), man), agent.Prompt("unrelated"), runner.Checkpoints(saver, "u"))
	if err != nil {
		t.Fatal(err)
	}
	if man.Done(&other.State) || other.State.Values[compact.StateKey] != nil {
		t.Fatal("a run of another thread took the compaction")
	}

	var events []agent.Event
	second, err := agent.Drain(a.Run(compact.WithManual(t.Context(), man), agent.Prompt("Now the tests."), runner.Checkpoints(saver, "t")),
		func(ev agent.Event) { events = append(events, ev) })
	if err != nil {
		t.Fatal(err)
	}
	if !man.Done(&second.State) {
		t.Fatal("the manual compaction is not recorded")
	}
	cs := compactions(events)
	if len(cs) != 1 || cs[0].Trigger != "manual" || cs[0].Usage.InputTokens != 900 {
		t.Fatalf("compaction events %+v", cs)
	}
	own := llm.Usage{}
	for _, ev := range events {
		if ev.Type == agent.ModelResponse {
			own = own.Add(ev.Response.Usage)
		}
	}
	if want := own.Add(cs[0].Usage); second.Usage != want {
		t.Fatalf("second turn's usage %+v, want its own call's plus the summariser's: %+v", second.Usage, want)
	}
	reqs := parentRequests(m)
	last := reqs[len(reqs)-1]
	if !compact.IsSummary(last.Messages[0]) || !strings.Contains(last.Messages[0].Content, "three lookups") {
		t.Fatalf("the turn's request does not start with the summary: %q", last.Messages[0].Content)
	}
	if n := len(last.Messages); n != 1+3+1 { // summary, kept 3, new user message
		t.Fatalf("request has %d messages", n)
	}
	st, _, _ := agent.GetValue[compact.State](&second.State, compact.StateKey)
	if st.File == "" || !strings.Contains(second.State.Files[st.File].Content, "keep the limit at 30 s") {
		t.Fatalf("history file %q: %q", st.File, second.State.Files[st.File].Content)
	}
	if len(second.State.Messages) != 10 {
		t.Fatalf("the thread has %d messages, want all 10", len(second.State.Messages))
	}

	// Keeping every message leaves nothing to compact.
	if _, err := compact.Compact(t.Context(), compact.Config{KeepMessages: 8, Model: m}, rs, ""); !errors.Is(err, compact.ErrNothingToCompact) {
		t.Fatalf("keeping every message: %v", err)
	}
}
