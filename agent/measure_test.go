package agent_test

import (
	"context"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/tokens"
)

// The last middleware that measures makes each request's report, given
// the tokens of the system prompt text each middleware tagged; the loop
// sums the reports in the result. Without such a middleware there is no
// report.
func TestMeasureHookGetsTaggedParts(t *testing.T) {
	added := strings.Repeat("remember this. ", 40)
	tagger := agent.Middleware{Name: "tagger", SystemPart: "notes", BeforeModel: func(_ context.Context, _ agent.StepInfo, req *llm.Request) error {
		req.System += added
		return nil
	}}
	var gotParts map[string]int
	measurer := func(calibrated int) agent.Middleware {
		return agent.Middleware{Name: "measure", Measure: func(_ agent.StepInfo, _ *llm.Request, parts map[string]int) tokens.Report {
			gotParts = parts
			return tokens.Report{Calibrated: calibrated}
		}}
	}
	run := func(mws ...agent.Middleware) (*agent.Result, []*tokens.Report) {
		t.Helper()
		m := scripted.New(scripted.Script{"parent": steps(scripted.Step{Content: "done"})}, scripted.Options{})
		var reps []*tokens.Report
		res, err := agent.Drain(newAgent(t, agent.Config{Model: m, Middleware: mws}).Run(t.Context(), agent.Prompt("go")), func(ev agent.Event) {
			if ev.Type == agent.ModelRequest {
				reps = append(reps, ev.Request.Context)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		return res, reps
	}
	res, reps := run(tagger, measurer(1), measurer(2))
	if len(reps) != 1 || reps[0] == nil || reps[0].Calibrated != 2 {
		t.Fatalf("reports %v, want the last measurer's", reps)
	}
	if gotParts["notes"] != tokens.EstimateText(added) || len(gotParts) != 1 {
		t.Errorf("parts %v, want notes: %d", gotParts, tokens.EstimateText(added))
	}
	if res.Context == nil || res.Context.Calls != 1 || res.Context.Last.Calibrated != 2 {
		t.Errorf("result ledger %+v", res.Context)
	}
	res, reps = run(tagger)
	if len(reps) != 1 || reps[0] != nil || res.Context != nil {
		t.Errorf("without a measurer: reports %v, ledger %+v", reps, res.Context)
	}
}

// Keep saves only values under reserved names, which stay out of the
// run's state; Kept reads them back.
func TestKeepTakesReservedNames(t *testing.T) {
	var errPlain, errReserved error
	var kept string
	mw := agent.Middleware{Name: "keeper", BeforeModel: func(_ context.Context, step agent.StepInfo, _ *llm.Request) error {
		errPlain = step.Keep("mine", 1)
		errReserved = step.Keep("agent.mine", 2)
		kept = string(step.Kept("agent.mine"))
		return nil
	}}
	m := scripted.New(scripted.Script{"parent": steps(scripted.Step{Content: "done"})}, scripted.Options{})
	res, err := newAgent(t, agent.Config{Model: m, Middleware: []agent.Middleware{mw}}).Invoke(t.Context(), agent.Prompt("go"))
	if err != nil {
		t.Fatal(err)
	}
	if errPlain == nil || errReserved != nil || kept != "2" {
		t.Errorf("keep: plain name %v, reserved name %v, read back %q", errPlain, errReserved, kept)
	}
	if len(res.State.Values) != 0 {
		t.Errorf("kept values in the state: %v", res.State.Values)
	}
}
