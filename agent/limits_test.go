package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/internal/testkit"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/tool"
)

type gateIn struct {
	Name string `json:"name"`
}

// Three calls of one step must all be running at the same moment: each
// blocks until all three have started, which only concurrent calls can pass.
// Then they finish in the order the test releases them (fast, mid, slow):
// tool.end events follow that order, the results the call order.
func TestParallelToolCallsOverlapAndKeepCallOrder(t *testing.T) {
	var arrived sync.WaitGroup
	arrived.Add(3)
	all := make(chan struct{})
	go func() { arrived.Wait(); close(all) }()
	release := map[string]chan struct{}{"slow": make(chan struct{}), "mid": make(chan struct{}), "fast": make(chan struct{})}
	close(release["fast"])
	gate := tool.MustFunc("gate", "Wait at the gate.", func(ctx context.Context, _ *tool.Env, in gateIn) (string, error) {
		arrived.Done()
		for _, ch := range []chan struct{}{all, release[in.Name]} {
			select {
			case <-ch:
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}
		return "done " + in.Name, nil
	})
	m := scripted.New(scripted.Script{"parent": steps(
		scripted.Step{ToolCalls: []scripted.StepCall{
			call("gate", `{"name":"slow"}`), call("gate", `{"name":"mid"}`), call("gate", `{"name":"fast"}`),
		}},
		scripted.Step{Content: "done"},
	)}, scripted.Options{NoUsage: true})
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{gate}})
	// A safety net only: calls that cannot overlap wait at the first gate
	// until this ends the run.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var ends []string
	res, err := agent.Drain(a.Run(ctx, agent.Prompt("go")), func(e agent.Event) {
		if e.Type != agent.ToolEnd {
			return
		}
		ends = append(ends, e.Tool.Result)
		switch e.Tool.Result {
		case "done fast":
			close(release["mid"])
		case "done mid":
			close(release["slow"])
		}
	})
	if err != nil {
		t.Fatalf("the three calls did not all run at once: %v", err)
	}
	if want := "[done fast done mid done slow]"; fmt.Sprint(ends) != want {
		t.Errorf("tool.end events in order %v, want them as the calls finish: %s", ends, want)
	}
	var got []string
	for _, tm := range toolMessages(res.State.Messages) {
		got = append(got, tm.Content)
	}
	if want := "[done slow done mid done fast]"; fmt.Sprint(got) != want {
		t.Errorf("results appended in %v, want call order %s", got, want)
	}
}

// MaxParallel bounds how many calls of one step are inside their tool at
// once. The test runs in a synctest bubble: every call sleeps on the
// bubble's fake clock, which only advances once all goroutines are blocked,
// so by then every call the bound lets in has entered the tool. The peak of
// the in-flight count is therefore exactly the bound, with no wall-clock
// timing involved.
func TestMaxParallelBoundsInFlightCalls(t *testing.T) {
	cases := []struct {
		name               string
		maxParallel, calls int
		want               int
	}{
		{"one runs them one by one", 1, 3, 1},
		{"two at a time", 2, 5, 2},
		{"fewer calls than the bound", 4, 3, 3},
		{"the default bound is 16", 0, 20, 16},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			testkit.Bubble(t, func(t *testing.T) {
				holder := testkit.NewHolder()
				hold := holder.Tool
				calls := make([]scripted.StepCall, c.calls)
				for i := range calls {
					calls[i] = call("hold", `{}`)
				}
				m := scripted.New(scripted.Script{"parent": steps(scripted.Step{ToolCalls: calls}, scripted.Step{Content: "done"})}, scripted.Options{NoUsage: true})
				a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{hold}, MaxParallel: c.maxParallel})
				res, err := a.Invoke(t.Context(), agent.Prompt("go"))
				if err != nil {
					t.Fatal(err)
				}
				if got := holder.Peak(); got != c.want {
					t.Errorf("at most %d calls were in flight at once, want %d", got, c.want)
				}
				if n := len(toolMessages(res.State.Messages)); n != c.calls {
					t.Errorf("%d results for %d calls", n, c.calls)
				}
			})
		})
	}
}

// loopModel asks for one tool call on every round, forever.
func loopModel() *scripted.Model {
	return scripted.New(nil, scripted.Options{NoUsage: true, Func: func(llm.CallInfo, *llm.Request) (scripted.Step, error) {
		return scripted.Step{ToolCalls: []scripted.StepCall{call("noop", `{}`)}}, nil
	}})
}

var noopTool = tool.MustFunc("noop", "Do nothing.", func(context.Context, *tool.Env, struct{}) (string, error) { return "ok", nil })

// Without a MaxSteps, one run may make 500 model calls, as many as the
// reference's default recursion limit allows, and then stops with ErrLimit.
func TestDefaultStepLimit(t *testing.T) {
	a := newAgent(t, agent.Config{Model: loopModel(), Tools: []tool.Tool{noopTool}})
	res, err := a.Invoke(t.Context(), agent.Prompt("loop"))
	if res == nil || res.Rounds != 500 || res.Status != agent.StatusLimit {
		t.Fatalf("default run = %+v, want status limit after 500 model calls", res)
	}
	if !errors.Is(err, agent.ErrLimit) || err.Error() != "stopped after 500 model calls (the step limit)" {
		t.Errorf("err = %v", err)
	}
	// The budget is per run: a second run of the same agent gets all of it.
	res, _ = a.Invoke(t.Context(), agent.Prompt("again"))
	if res.Rounds != 500 {
		t.Errorf("second run made %d model calls, want its own 500", res.Rounds)
	}
	// WithMaxSteps overrides the default for one run.
	res, _ = a.Invoke(t.Context(), agent.Prompt("short"), agent.WithMaxSteps(4))
	if res.Rounds != 4 || res.Status != agent.StatusLimit {
		t.Errorf("WithMaxSteps(4): %d rounds, status %s", res.Rounds, res.Status)
	}
}

var errRevoked = errors.New("access revoked")

// Every status but ok comes back as an error that wraps its status's
// sentinel and its cause; Invoke, Result.Err and the run.end event agree.
// Runs in a synctest bubble so that timeouts are exact and instant.
func TestEveryStatusButOKIsAnError(t *testing.T) {
	slow := 5000.0
	schema := json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)
	sentinels := []error{agent.ErrFailed, agent.ErrLimit, agent.ErrCancelled, agent.ErrRefused}
	type setup struct {
		cfg  agent.Config
		ctx  func(context.Context) (context.Context, context.CancelFunc)
		opts []agent.RunOption
	}
	script := func(s ...scripted.Step) *scripted.Model {
		return scripted.New(scripted.Script{"parent": steps(s...)}, scripted.Options{NoUsage: true})
	}
	fatal := tool.MustFunc("fatal", "Fails for good.", func(context.Context, *tool.Env, struct{}) (string, error) {
		return "", tool.Fatal(errRevoked)
	})
	cases := []struct {
		name   string
		setup  func() setup
		status agent.Status
		is     []error // besides the status's sentinel
		text   string
	}{
		{"ok", func() setup { return setup{cfg: agent.Config{Model: script(scripted.Step{Content: "hi"})}} },
			agent.StatusOK, nil, ""},
		{"step limit", func() setup {
			return setup{cfg: agent.Config{Model: loopModel(), Tools: []tool.Tool{noopTool}, MaxSteps: 2}}
		}, agent.StatusLimit, nil, "stopped after 2 model calls (the step limit)"},
		{"own timeout", func() setup {
			return setup{cfg: agent.Config{Model: script(scripted.Step{Content: "late", DelayMS: &slow})},
				opts: []agent.RunOption{agent.WithTimeout(50 * time.Millisecond)}}
		}, agent.StatusLimit, []error{context.DeadlineExceeded}, "timed out after 50ms"},
		{"model failure", func() setup {
			return setup{cfg: agent.Config{Model: script(scripted.Step{Error: "upstream overloaded"})}}
		}, agent.StatusError, nil, "model call 1 of parent failed: upstream overloaded"},
		{"fatal tool", func() setup {
			return setup{cfg: agent.Config{Model: script(scripted.Step{ToolCalls: []scripted.StepCall{{ID: "f1", Name: "fatal", Args: json.RawMessage(`{}`)}}}),
				Tools: []tool.Tool{fatal}}}
		}, agent.StatusError, []error{tool.ErrFatal, errRevoked}, "tool fatal (call f1) failed fatally: fatal tool error: access revoked"},
		{"no structured response", func() setup {
			return setup{cfg: agent.Config{Model: script(scripted.Step{Content: "7"}, scripted.Step{Content: "seven"}),
				Response: &agent.ResponseFormat{Name: "N", Schema: schema}}}
		}, agent.StatusError, []error{agent.ErrNoStructuredResponse},
			"the agent finished without a valid structured response: it answered in text instead of calling N"},
		{"cancelled", func() setup {
			return setup{cfg: agent.Config{Model: script(scripted.Step{Content: "late", DelayMS: &slow})},
				ctx: func(ctx context.Context) (context.Context, context.CancelFunc) {
					ctx, cancel := context.WithCancel(ctx)
					cancel()
					return ctx, cancel
				}}
		}, agent.StatusCancelled, []error{context.Canceled}, "context canceled"},
		{"cancelled with a cause", func() setup {
			return setup{cfg: agent.Config{Model: script(scripted.Step{Content: "late", DelayMS: &slow})},
				ctx: func(ctx context.Context) (context.Context, context.CancelFunc) {
					ctx, cancel := context.WithCancelCause(ctx)
					cancel(errRevoked)
					return ctx, func() {}
				}}
		}, agent.StatusCancelled, []error{errRevoked}, "access revoked"},
		{"caller's deadline", func() setup {
			return setup{cfg: agent.Config{Model: script(scripted.Step{Content: "late", DelayMS: &slow})},
				ctx: func(ctx context.Context) (context.Context, context.CancelFunc) {
					return context.WithTimeout(ctx, 50*time.Millisecond)
				},
				// The caller's deadline comes first: a cancellation, not the run's own limit.
				opts: []agent.RunOption{agent.WithTimeout(time.Second)}}
		}, agent.StatusCancelled, []error{context.DeadlineExceeded}, "context deadline exceeded"},
		{"refused", func() setup {
			return setup{cfg: agent.Config{Model: script(scripted.Step{Refusal: "I can't help with that request."})}}
		}, agent.StatusRefused, nil, "the model declined to answer: I can't help with that request."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			testkit.Bubble(t, func(t *testing.T) {
				// Each way of running gets a fresh setup (scripted models count rounds).
				start := func() (*agent.Agent, context.Context, []agent.RunOption, context.CancelFunc) {
					s := c.setup()
					ctx, cancel := t.Context(), context.CancelFunc(func() {})
					if s.ctx != nil {
						ctx, cancel = s.ctx(ctx)
					}
					return newAgent(t, s.cfg), ctx, s.opts, cancel
				}
				run := func() (*agent.Result, error, *agent.RunInfo, error) {
					a, ctx, opts, cancel := start()
					defer cancel()
					var end *agent.RunInfo
					var endErr error
					for ev, err := range a.Run(ctx, agent.Prompt("go"), opts...) {
						if ev.Type == agent.RunEnd {
							end, endErr = ev.Run, err
						}
					}
					a, ctx, opts, cancel2 := start()
					defer cancel2()
					res, err := a.Invoke(ctx, agent.Prompt("go"), opts...)
					return res, err, end, endErr
				}
				res, err, end, endErr := run()
				if res == nil || end == nil {
					t.Fatalf("no result (err %v) or no run.end", err)
				}
				if res.Status != c.status || end.Status != c.status {
					t.Fatalf("status %s (run.end %s), want %s", res.Status, end.Status, c.status)
				}
				if c.status == agent.StatusOK {
					if err != nil || endErr != nil || res.Err() != nil || res.Error != "" {
						t.Errorf("an ok run has errors: %v / %v / %v / %q", err, endErr, res.Err(), res.Error)
					}
					return
				}
				for name, e := range map[string]error{"Invoke": err, "run.end": endErr, "Result.Err": res.Err()} {
					if e == nil {
						t.Errorf("%s: nil error for status %s", name, c.status)
						continue
					}
					if e.Error() != c.text {
						t.Errorf("%s: %q, want %q", name, e, c.text)
					}
					for _, s := range sentinels {
						want := map[agent.Status]error{agent.StatusError: agent.ErrFailed, agent.StatusLimit: agent.ErrLimit, agent.StatusCancelled: agent.ErrCancelled, agent.StatusRefused: agent.ErrRefused}[c.status]
						if errors.Is(e, s) != (s == want) {
							t.Errorf("%s: errors.Is(%v, %v) = %v", name, e, s, !(s == want))
						}
					}
					for _, cause := range c.is {
						if !errors.Is(e, cause) {
							t.Errorf("%s: %v does not match its cause %v", name, e, cause)
						}
					}
					var re *agent.RunError
					if !errors.As(e, &re) || re.Status != c.status || re.Agent.String() != "parent" {
						t.Errorf("%s: %#v is not a *RunError of status %s", name, e, c.status)
					}
				}
				if res.Err() != err {
					t.Errorf("Result.Err() is not the error Invoke returned")
				}
				if res.Error != c.text || end.Error != c.text {
					t.Errorf("Result.Error %q, run.end error %q, want %q", res.Error, end.Error, c.text)
				}
			})
		})
	}
}

// A Result that was saved and loaded again still says how its run ended.
func TestResultErrAfterJSON(t *testing.T) {
	a := newAgent(t, agent.Config{Model: loopModel(), Tools: []tool.Tool{noopTool}, MaxSteps: 1})
	res, _ := a.Invoke(t.Context(), agent.Prompt("go"))
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var back agent.Result
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	e := back.Err()
	if !errors.Is(e, agent.ErrLimit) || errors.Is(e, agent.ErrFailed) || e.Error() != "stopped after 1 model call (the step limit)" {
		t.Errorf("decoded Result.Err() = %v", e)
	}
	if (&agent.Result{Status: agent.StatusOK}).Err() != nil {
		t.Error("an ok result has an error")
	}
	if e := (&agent.Result{Status: agent.StatusCancelled}).Err(); !errors.Is(e, agent.ErrCancelled) || !strings.Contains(e.Error(), "cancelled") {
		t.Errorf("a bare cancelled result: %v", e)
	}
}
