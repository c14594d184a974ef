package compact_test

import (
	"encoding/json"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/compact"
	"github.com/deepagents-go/deepagents/ledger"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/tokens"
	"github.com/deepagents-go/deepagents/tool"
)

// The summariser's calls are paid like the agent's own: their usage is in
// the run's usage, the agent's entry of UsageByAgent and its ledger, for
// automatic compaction (summariser model or the agent's own) and for the
// compact_conversation tool.
func TestSummarizerUsageIsInTheRunsUsage(t *testing.T) {
	withUsage := func(s scripted.Step, in, out int) scripted.Step {
		s.Usage = &llm.Usage{InputTokens: in, OutputTokens: out}
		return s
	}
	manual := scripted.Step{ToolCalls: []scripted.StepCall{{ID: "k", Name: compact.ToolName, Args: json.RawMessage(`{}`)}}}
	for _, tc := range []struct {
		name     string
		cfg      compact.Config
		ownModel bool
		parent   []scripted.Step
	}{
		{name: "auto, summariser model", cfg: compact.Config{TriggerTokens: 250, KeepMessages: 2},
			parent: []scripted.Step{withUsage(batch(0, 1), 100, 10), withUsage(batch(1, 1), 200, 20),
				withUsage(batch(2, 1), 300, 30), withUsage(scripted.Step{Content: "done"}, 400, 40)}},
		{name: "auto, the agent's own model", cfg: compact.Config{TriggerTokens: 250, KeepMessages: 2}, ownModel: true,
			parent: []scripted.Step{withUsage(batch(0, 1), 100, 10), withUsage(batch(1, 1), 200, 20),
				withUsage(batch(2, 1), 300, 30), withUsage(scripted.Step{Content: "done"}, 400, 40)}},
		{name: "manual tool", cfg: compact.Config{TriggerTokens: 400, KeepMessages: 2, Tool: true},
			parent: []scripted.Step{withUsage(batch(0, 1), 100, 10), withUsage(batch(1, 1), 200, 20),
				withUsage(manual, 300, 30), withUsage(scripted.Step{Content: "done"}, 400, 40)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := scripted.New(scripted.Script{
				"parent": steps(tc.parent...),
				"summarizer": steps(withUsage(scripted.Step{Content: "summary: src/a.go, 30 s"}, 5000, 700),
					withUsage(scripted.Step{Content: "summary again: src/a.go, 30 s"}, 6000, 800)),
			}, scripted.Options{})
			cfg := tc.cfg
			if !tc.ownModel {
				cfg.Model = m
			}
			if tc.name == "manual tool" {
				// The tool needs a summariser model; no automatic compaction.
				cfg.Model = m
			}
			mw, err := compact.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ac := agent.Config{Model: m, Tools: []tool.Tool{echo}, Middleware: []agent.Middleware{mw}}
			ac.Middleware = append(ac.Middleware, ledger.New(ac).Middleware())
			a, err := agent.New(ac)
			if err != nil {
				t.Fatal(err)
			}
			var summed llm.Usage
			var calls int
			var res *agent.Result
			for ev, err := range a.Run(t.Context(), agent.Prompt("Please edit src/a.go and keep the limit at 30 s.")) {
				if err != nil {
					t.Fatal(err)
				}
				if ev.Type == compact.EventEnd {
					summed = summed.Add(info(ev).Usage)
					calls += info(ev).SummarizerCalls
				}
				if ev.Type == agent.RunEnd {
					res = ev.Run.Result
				}
			}
			if calls == 0 || summed.InputTokens < 5000 {
				t.Fatalf("no summariser call reported: %d calls, %+v", calls, summed)
			}
			// The agent's own four calls: 1000 in, 100 out.
			want := llm.Usage{InputTokens: 1000 + summed.InputTokens, OutputTokens: 100 + summed.OutputTokens}
			if res.Usage != want {
				t.Fatalf("run usage %+v, want %+v (agent's calls plus the summariser's)", res.Usage, want)
			}
			if got := res.UsageByAgent["parent"]; got != want {
				t.Fatalf("usage of parent %+v, want %+v", got, want)
			}
			led := tokens.LedgerTree(res.Agent.String(), res.ContextByAgent)
			if led.SummarizerCalls != calls || led.Summarizer != summed || led.Calls != 4 {
				t.Fatalf("ledger %d calls, summariser %d calls %+v; want 4, %d, %+v", led.Calls, led.SummarizerCalls, led.Summarizer, calls, summed)
			}
		})
	}
}

// A ledger merged from agents keeps every summariser call.
func TestLedgerMergeKeepsSummarizerUsage(t *testing.T) {
	a := tokens.Ledger{Calls: 2, Sent: 10, SummarizerCalls: 1, Summarizer: llm.Usage{InputTokens: 7, OutputTokens: 1}}
	b := tokens.Ledger{SummarizerCalls: 2, Summarizer: llm.Usage{InputTokens: 5, OutputTokens: 2}}
	for _, got := range []tokens.Ledger{a.Merge(b), b.Merge(a)} {
		if got.Calls != 2 || got.Sent != 10 || got.SummarizerCalls != 3 || got.Summarizer != (llm.Usage{InputTokens: 12, OutputTokens: 3}) {
			t.Fatalf("merged %+v", got)
		}
	}
}

// A compaction the tool made in a run's last step (the step limit ends the
// run before another model call) is still announced and counted.
func TestToolCompactionInTheLastStepIsCounted(t *testing.T) {
	call := scripted.Step{ToolCalls: []scripted.StepCall{{ID: "k", Name: compact.ToolName, Args: json.RawMessage(`{}`)}},
		Usage: &llm.Usage{InputTokens: 10, OutputTokens: 1}}
	withUsage := func(s scripted.Step) scripted.Step { s.Usage = &llm.Usage{InputTokens: 10, OutputTokens: 1}; return s }
	m := scripted.New(scripted.Script{
		"parent":     steps(withUsage(batch(0, 1)), withUsage(batch(1, 1)), call),
		"summarizer": steps(scripted.Step{Content: "summary: src/a.go, 30 s", Usage: &llm.Usage{InputTokens: 500, OutputTokens: 50}}),
	}, scripted.Options{})
	mw, _ := compact.New(compact.Config{TriggerTokens: 400, KeepMessages: 2, Model: m, Tool: true})
	a, _ := agent.New(agent.Config{Model: m, Tools: []tool.Tool{echo}, Middleware: []agent.Middleware{mw}, MaxSteps: 3})
	var ends int
	res, _ := agent.Drain(a.Run(t.Context(), agent.Prompt("Please edit src/a.go, limit 30 s.")), func(ev agent.Event) {
		if ev.Type == compact.EventEnd {
			ends++
		}
	})
	if res == nil || res.Status != agent.StatusLimit {
		t.Fatalf("result %+v", res)
	}
	if ends != 1 || res.Usage != (llm.Usage{InputTokens: 530, OutputTokens: 53}) {
		t.Fatalf("%d compaction.end events, usage %+v; want 1 and the summariser's counted", ends, res.Usage)
	}
	st, _, _ := agent.GetValue[compact.State](&res.State, compact.StateKey)
	if st.Announce != nil || st.Count != 1 {
		t.Fatalf("state %+v", st)
	}
}
