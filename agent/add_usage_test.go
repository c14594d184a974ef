package agent_test

import (
	"context"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
)

// Model calls a middleware makes for the agent (a summariser's) count in
// the run's usage and ledger when the middleware reports them
// (StepInfo.AddUsage); an event that mentions usage counts nothing.
func TestAddUsageCountsInTheRunAndItsLedger(t *testing.T) {
	helper := agent.Middleware{Name: "helper", BeforeModel: func(_ context.Context, step agent.StepInfo, _ *llm.Request) error {
		step.AddUsage(2, llm.Usage{InputTokens: 100, OutputTokens: 10})
		step.Emit(agent.Event{Type: "compaction.end", Payload: &agent.Payload{Key: "compaction", Value: map[string]any{
			"trigger": "auto", "summarizer_calls": 5, "usage": llm.Usage{InputTokens: 7000, OutputTokens: 700}}}})
		return nil
	}}
	m := scripted.New(scripted.Script{"parent": steps(scripted.Step{Content: "done", Usage: &llm.Usage{InputTokens: 40, OutputTokens: 4}})}, scripted.Options{})
	res, err := newAgent(t, agent.Config{Model: m, Middleware: []agent.Middleware{helper}}).Invoke(t.Context(), agent.Prompt("go"))
	if err != nil {
		t.Fatal(err)
	}
	want := llm.Usage{InputTokens: 140, OutputTokens: 14}
	if res.Usage.InputTokens != want.InputTokens || res.Usage.OutputTokens != want.OutputTokens {
		t.Errorf("usage %+v, want the model's and the helper's: %+v", res.Usage, want)
	}
	if res.Context == nil || res.Context.SummarizerCalls != 2 || res.Context.Summarizer.InputTokens != 100 {
		t.Errorf("ledger %+v, want the helper's 2 calls and 100 input tokens", res.Context)
	}
}
