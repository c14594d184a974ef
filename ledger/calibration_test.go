package ledger_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/runner"
	"github.com/deepagents-go/deepagents/tokens"
	"github.com/deepagents-go/deepagents/tool"
)

// The calibration ratio an agent learnt survives a crash: a new agent (a
// new process) resuming the thread measures its first request with the
// saved ratio, not 1, and an agent without the saved value starts at 1.
func TestCalibrationSurvivesResume(t *testing.T) {
	// The provider reports far more input tokens than the estimate, so the
	// ratio moves to its bound of 2 on the first response.
	script := func() scripted.Script {
		return scripted.Script{"parent": scripted.AgentScript{Steps: []scripted.Step{
			{ToolCalls: []scripted.StepCall{{ID: "c1", Name: "crash", Args: json.RawMessage(`{}`)}},
				Usage: &llm.Usage{InputTokens: 1_000_000, OutputTokens: 5}},
			{Content: "done"},
		}}}
	}
	var crashNow context.CancelFunc
	crash := tool.MustFunc("crash", "Stop the process.", func(context.Context, *tool.Env, struct{}) (string, error) {
		crashNow() // the process dies while the call runs
		return "", errors.New("killed")
	})
	saver := checkpoint.NewMemory(0)

	first, meter := newMetered(t, agent.Config{Model: scripted.New(script(), scripted.Options{}), Tools: []tool.Tool{crash}})
	ctx, cancel := context.WithCancel(t.Context())
	crashNow = cancel
	_, err := first.Invoke(ctx, agent.Prompt("go"), runner.Checkpoints(saver, "cal"))
	if !errors.Is(err, agent.ErrCancelled) {
		t.Fatalf("first run: %v, want cancelled", err)
	}
	learnt := meter.Ratio()
	if learnt != 2 {
		t.Fatalf("learnt ratio %v, want 2", learnt)
	}

	var res *agent.Result
	firstReport := func(a *agent.Agent, in agent.Input, opts ...agent.RunOption) *tokens.Report {
		t.Helper()
		var rep *tokens.Report
		var err error
		res, err = agent.Drain(a.Run(t.Context(), in, opts...), func(ev agent.Event) {
			if rep == nil && ev.Type == agent.ModelRequest {
				rep = ev.Request.Context
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		if rep == nil {
			t.Fatal("no model request")
		}
		return rep
	}
	// The value keeps the name and shape it had when the loop saved it, so
	// that threads saved before resume with their ratio: the model's key
	// (the agent's name, for a model that tells none) and the ratio.
	rs, err := runner.LoadRunState(t.Context(), saver, "cal", agent.RootPath("parent"), false)
	if err != nil || string(rs.Values["agent.calibration"]) != `{"model":"parent","ratio":2}` {
		t.Fatalf("the checkpoint keeps no calibration: %v %v", rs, err)
	}
	crashNow = func() {}
	resumed := newAgent(t, agent.Config{Model: scripted.New(script(), scripted.Options{}), Tools: []tool.Tool{crash}})
	// The crashed step's call runs again, then the next request is measured.
	rep := firstReport(resumed, agent.Input{}, runner.Checkpoints(saver, "cal"))
	if _, ok := res.State.Values["agent.calibration"]; ok {
		t.Errorf("the resumed run's result shows the calibration: %s", res.State.Values)
	}
	if rep.Ratio != learnt {
		t.Fatalf("resumed run's first report has ratio %v, want the saved %v", rep.Ratio, learnt)
	}
	if rep.Calibrated == rep.Estimated {
		t.Fatalf("report not scaled: %+v", rep)
	}

	// Control: a fresh agent on a new thread starts at 1.
	fresh := newAgent(t, agent.Config{Model: scripted.New(script(), scripted.Options{}), Tools: []tool.Tool{crash}})
	if rep := firstReport(fresh, agent.Prompt("go"), runner.Checkpoints(saver, "other")); rep.Ratio != 1 {
		t.Fatalf("fresh run's ratio %v, want 1", rep.Ratio)
	}
}
