package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/internal/testkit"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/runner"
	"github.com/deepagents-go/deepagents/tool"
)

// deployLog records what the deploy tool saw on each of its runs.
type deployLog struct {
	mu   sync.Mutex
	runs []string
}

func (l *deployLog) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.runs = append(l.runs, s)
}

func (l *deployLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.runs...)
}

// deployTool writes a draft, then asks a person before it goes on, unless
// a person decided on the call already.
func deployTool(log *deployLog) tool.Tool {
	return tool.MustFunc("deploy", "Deploy a service.", func(ctx context.Context, env *tool.Env, in struct {
		Service string `json:"service"`
	}) (string, error) {
		d, decided := agent.DecisionOf(ctx)
		log.add(fmt.Sprintf("%s decided=%v type=%s approved=%v", in.Service, decided, d.Type, agent.Approved(ctx)))
		if err := env.Files.Write(ctx, "/draft/"+in.Service, "draft"); err != nil {
			return "", err
		}
		if !decided {
			return "", agent.Ask(agent.Question{Allowed: []agent.DecisionType{agent.Approve, agent.Edit, agent.Reject, agent.Respond},
				Reason: "deploying " + in.Service + " reaches production"})
		}
		return "deployed " + in.Service, nil
	})
}

func toolResult(res *agent.Result, id string) (llm.Message, bool) {
	for _, m := range res.State.Messages {
		if m.Role == llm.RoleTool && m.ToolCallID == id {
			return m, true
		}
	}
	return llm.Message{}, false
}

// A tool that asks for a decision once it has started makes its call wait:
// the run ends interrupted, what the call did is dropped, and no tool.end
// is told for it. Resumed with a decision, the call runs again with the
// decision visible (approve, edit) or does not run (reject, respond); a
// rejected call made again later is rejected without asking.
func TestToolAsksOnceStarted(t *testing.T) {
	for _, tc := range []struct {
		decision agent.Decision
		runs     []string // the tool's runs after the resume
		result   string   // what c1's result contains
		isError  bool
	}{
		{agent.Decision{Type: agent.Approve, CallID: "c1"}, []string{"web decided=true type=approve approved=true"}, "deployed web", false},
		{agent.Decision{Type: agent.Edit, CallID: "c1", Args: json.RawMessage(`{"service":"api"}`)},
			[]string{"api decided=true type=edit approved=true"}, "ran with {\"service\":\"api\"}.]\ndeployed api", false},
		{agent.Decision{Type: agent.Reject, CallID: "c1", Message: "not today"}, nil, "rejected the deploy call, so it did not run. Their reason: not today.", true},
		{agent.Decision{Type: agent.Respond, CallID: "c1", Message: "I deployed it by hand"}, nil, "I deployed it by hand", false},
	} {
		t.Run(string(tc.decision.Type), func(t *testing.T) {
			m := scripted.New(scripted.Script{"parent": steps(
				scripted.Step{ToolCalls: []scripted.StepCall{{ID: "c1", Name: "deploy", Args: json.RawMessage(`{"service":"web"}`)}}},
				scripted.Step{ToolCalls: []scripted.StepCall{{ID: "c2", Name: "deploy", Args: json.RawMessage(`{"service":"web"}`)}}},
				scripted.Step{Content: "done"},
			)}, scripted.Options{})
			log := &deployLog{}
			a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{deployTool(log)}})
			saver := checkpoint.NewMemory(0)
			var types []agent.EventType
			res, err := agent.Drain(a.Run(t.Context(), agent.Prompt("go"), runner.Checkpoints(saver, "T")), func(ev agent.Event) {
				if ev.Tool != nil || ev.Interrupt != nil {
					types = append(types, ev.Type)
				}
			})
			if !errors.Is(err, agent.ErrInterrupted) || len(res.Interrupts) != 1 {
				t.Fatalf("err %v, interrupts %+v", err, res.Interrupts)
			}
			in := res.Interrupts[0]
			if in.CallID != "c1" || in.Tool != "deploy" || in.Reason != "deploying web reaches production" ||
				!strings.HasPrefix(in.Description, "deploying web reaches production. The agent wants to call deploy") || len(in.Allowed) != 4 {
				t.Errorf("interrupt %+v", in)
			}
			if want := []agent.EventType{agent.ToolStart, agent.InterruptEvent}; fmt.Sprint(types) != fmt.Sprint(want) {
				t.Errorf("events %v, want %v", types, want)
			}
			if _, ok := res.State.Files["/draft/web"]; ok {
				t.Error("the waiting call's write was kept")
			}
			if got := log.get(); len(got) != 1 || got[0] != "web decided=false type= approved=false" {
				t.Fatalf("runs %q", got)
			}

			res, err = a.Invoke(t.Context(), agent.Input{}, runner.Checkpoints(saver, "T"), agent.WithDecisions(tc.decision))
			wantRuns := append([]string{"web decided=false type= approved=false"}, tc.runs...)
			// c2 runs until it asks: only then does the loop know it asks.
			wantRuns = append(wantRuns, "web decided=false type= approved=false")
			if tc.decision.Type == agent.Reject {
				// c2 is the same call: rejected without asking.
				if err != nil {
					t.Fatalf("resume: %v", err)
				}
				if got, _ := toolResult(res, "c2"); !strings.Contains(got.Content, "already rejected by a person") {
					t.Errorf("c2 result %q", got.Content)
				}
			} else {
				// c2 is a new call: it asks again.
				if !errors.Is(err, agent.ErrInterrupted) || len(res.Interrupts) != 1 || res.Interrupts[0].CallID != "c2" {
					t.Fatalf("resume: err %v, interrupts %+v", err, res.Interrupts)
				}
			}
			if got := log.get(); fmt.Sprint(got) != fmt.Sprint(wantRuns) {
				t.Errorf("runs %q, want %q", got, wantRuns)
			}
			got, ok := toolResult(res, "c1")
			if !ok || !strings.Contains(got.Content, tc.result) || got.IsError != tc.isError {
				t.Errorf("c1 result %+v, want %q (error %v)", got, tc.result, tc.isError)
			}
		})
	}
}

// spendIn is the arguments of the spend tool.
type spendIn struct {
	Amount int `json:"amount"`
}

// budget is a middleware other than the approval gate that asks a person
// before a call spends more than limit, and reports the calls it let
// through; limit may change between runs.
type budget struct {
	mu    sync.Mutex
	limit int
}

func (b *budget) middleware() agent.Middleware {
	return agent.Middleware{Name: "budget", Admit: func(ctx context.Context, call *agent.ToolCall) error {
		if call.Call.Name != "spend" {
			return nil
		}
		var in spendIn
		if err := json.Unmarshal(call.Call.Args, &in); err != nil {
			return err
		}
		b.mu.Lock()
		limit := b.limit
		b.mu.Unlock()
		if in.Amount > limit {
			call.OnRan(func(emit func(agent.Event), _ func(string)) {
				emit(agent.Event{Type: agent.Warning, Warning: &agent.WarningInfo{Source: "budget", Text: fmt.Sprintf("spent %d", in.Amount)}})
			})
			return agent.Ask(agent.Question{Allowed: []agent.DecisionType{agent.Approve, agent.Reject},
				Description: "Spend money?", Reason: fmt.Sprintf("%d is over the limit of %d", in.Amount, limit)})
		}
		return nil
	}}
}

// A middleware's Admit hook asks before a call starts: the call waits
// without a tool.start, and once approved it runs when the hook asks the
// same again, but not when it asks with another reason (what the person
// was told no longer holds). Another error of the hook refuses the call.
func TestAdmitAsksBeforeTheCallStarts(t *testing.T) {
	for _, tc := range []struct {
		name    string
		limit   int // on resume
		runs    bool
		refused bool
	}{
		{"same reason", 100, true, false},
		{"other reason", 50, false, false},
		{"within the limit now", 1000, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := scripted.New(scripted.Script{"parent": steps(
				scripted.Step{ToolCalls: []scripted.StepCall{
					{ID: "c1", Name: "spend", Args: json.RawMessage(`{"amount":500}`)},
					{ID: "c2", Name: "spend", Args: json.RawMessage(`{"amount":5}`)},
					{ID: "c3", Name: "spend", Args: json.RawMessage(`{"amount":"x"}`)},
				}},
				scripted.Step{Content: "done"},
			)}, scripted.Options{})
			var mu sync.Mutex
			ran := map[string]bool{}
			spend := tool.MustFunc("spend", "Spend money.", func(ctx context.Context, env *tool.Env, in spendIn) (string, error) {
				mu.Lock()
				defer mu.Unlock()
				ran[env.CallID] = agent.Approved(ctx)
				return "spent", nil
			})
			b := &budget{limit: 100}
			a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{spend}, Middleware: []agent.Middleware{b.middleware()}})
			saver := checkpoint.NewMemory(0)
			started := map[string]bool{}
			res, err := agent.Drain(a.Run(t.Context(), agent.Prompt("go"), runner.Checkpoints(saver, "T")), func(ev agent.Event) {
				if ev.Type == agent.ToolStart {
					started[ev.Tool.CallID] = true
				}
			})
			if !errors.Is(err, agent.ErrInterrupted) || len(res.Interrupts) != 1 {
				t.Fatalf("err %v, interrupts %+v", err, res.Interrupts)
			}
			if in := res.Interrupts[0]; in.CallID != "c1" || in.Description != "500 is over the limit of 100. Spend money?" {
				t.Errorf("interrupt %+v", in)
			}
			if started["c1"] || !started["c2"] || started["c3"] {
				t.Errorf("started %v: want c2 only", started)
			}
			mu.Lock()
			if _, ok := ran["c2"]; !ok {
				t.Error("c2 did not run")
			}
			mu.Unlock()
			if got, _ := toolResult(res, "c3"); got.Content != "" {
				t.Errorf("c3 has a result before the step ended: %q", got.Content)
			}
			b.mu.Lock()
			b.limit = tc.limit
			b.mu.Unlock()
			var warnings []string
			res, err = agent.Drain(a.Run(t.Context(), agent.Input{}, runner.Checkpoints(saver, "T"),
				agent.WithDecisions(agent.Decision{Type: agent.Approve, CallID: "c1"})), func(ev agent.Event) {
				if ev.Type == agent.Warning && ev.Warning.Source == "budget" {
					warnings = append(warnings, ev.Warning.Text)
				}
			})
			if err != nil {
				t.Fatalf("resume: %v", err)
			}
			mu.Lock()
			approved, didRun := ran["c1"]
			mu.Unlock()
			if didRun != tc.runs || didRun && !approved {
				t.Errorf("c1 ran %v approved %v, want ran %v", didRun, approved, tc.runs)
			}
			got, _ := toolResult(res, "c1")
			if stale := strings.Contains(got.Content, "is not what they were shown when they decided: 500 is over the limit of 50"); stale == tc.runs {
				t.Errorf("c1 result %q", got.Content)
			}
			if wantWarn := tc.runs && tc.limit < 500; (len(warnings) == 1) != wantWarn {
				t.Errorf("warnings %q", warnings)
			}
			if got, _ := toolResult(res, "c3"); !got.IsError || !strings.Contains(got.Content, "Error: json: cannot unmarshal") {
				t.Errorf("c3 result %+v: want the hook's error", got)
			}
		})
	}
}

// A WrapTool middleware may ask too, once the call has started.
func TestWrapToolAsks(t *testing.T) {
	m := scripted.New(scripted.Script{"parent": steps(
		scripted.Step{ToolCalls: []scripted.StepCall{{ID: "c1", Name: "write", Args: json.RawMessage(`{"path":"/a","content":"x"}`)}}},
		scripted.Step{Content: "done"},
	)}, scripted.Options{})
	ask := agent.Middleware{Name: "ask", WrapTool: func(ctx context.Context, call *agent.ToolCall, next agent.ToolFunc) (tool.Result, error) {
		if _, ok := agent.DecisionOf(ctx); !ok {
			return tool.Result{}, agent.Ask(agent.Question{})
		}
		return next(ctx, call)
	}}
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{writeTool}, Middleware: []agent.Middleware{ask}})
	saver := checkpoint.NewMemory(0)
	res, err := a.Invoke(t.Context(), agent.Prompt("go"), runner.Checkpoints(saver, "T"))
	if !errors.Is(err, agent.ErrInterrupted) || len(res.Interrupts) != 1 {
		t.Fatalf("err %v, interrupts %+v", err, res.Interrupts)
	}
	if in := res.Interrupts[0]; fmt.Sprint(in.Allowed) != "[approve edit reject]" || in.Description != `The agent wants to call write with {"path":"/a","content":"x"}.` {
		t.Errorf("interrupt %+v", in)
	}
	res, err = a.Invoke(t.Context(), agent.Input{}, runner.Checkpoints(saver, "T"),
		agent.WithDecisions(agent.Decision{Type: agent.Approve, CallID: "c1"}))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := toolResult(res, "c1"); got.Content != "wrote /a" || res.FinalText() != "done" {
		t.Errorf("c1 %q, final %q", got.Content, res.FinalText())
	}
}

// A call still waiting after a resume that decided on another is put to the
// person as it was the first time, whatever the hook says now.
func TestWaitingCallKeepsItsQuestion(t *testing.T) {
	m := scripted.New(scripted.Script{"parent": steps(
		scripted.Step{ToolCalls: []scripted.StepCall{
			{ID: "c1", Name: "spend", Args: json.RawMessage(`{"amount":500}`)},
			{ID: "c2", Name: "spend", Args: json.RawMessage(`{"amount":600}`)},
		}},
		scripted.Step{Content: "done"},
	)}, scripted.Options{})
	spend := tool.MustFunc("spend", "Spend money.", func(context.Context, *tool.Env, spendIn) (string, error) { return "spent", nil })
	b := &budget{limit: 100}
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{spend}, Middleware: []agent.Middleware{b.middleware()}})
	saver := checkpoint.NewMemory(0)
	res, err := a.Invoke(t.Context(), agent.Prompt("go"), runner.Checkpoints(saver, "T"))
	if !errors.Is(err, agent.ErrInterrupted) || len(res.Interrupts) != 2 {
		t.Fatalf("err %v, interrupts %+v", err, res.Interrupts)
	}
	first := res.Interrupts[1]
	b.mu.Lock()
	b.limit = 10
	b.mu.Unlock()
	res, err = a.Invoke(t.Context(), agent.Input{}, runner.Checkpoints(saver, "T"),
		agent.WithDecisions(agent.Decision{Type: agent.Reject, CallID: "c1"}))
	if !errors.Is(err, agent.ErrInterrupted) || len(res.Interrupts) != 1 {
		t.Fatalf("err %v, interrupts %+v", err, res.Interrupts)
	}
	if got := res.Interrupts[0]; fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", first) {
		t.Errorf("still waiting: %+v\nwant %+v", got, first)
	}
}

// A tool that asks again once a person decided on its call does not wait a
// second time: with the reason they were told, its call ends with an error
// saying it asked again; with another reason, what the person approved no
// longer holds, and the result says so.
func TestToolAsksAgainAfterTheDecision(t *testing.T) {
	for _, tc := range []struct {
		name, later, want string
	}{
		{"same reason", "risky", "asked a person again about what they had decided already"},
		{"other reason", "riskier", "is not what they were shown when they decided: riskier. It did not run."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := scripted.New(scripted.Script{"parent": steps(
				scripted.Step{ToolCalls: []scripted.StepCall{{ID: "c1", Name: "nag", Args: json.RawMessage(`{}`)}}},
				scripted.Step{Content: "done"},
			)}, scripted.Options{})
			nag := tool.MustFunc("nag", "Always asks.", func(ctx context.Context, _ *tool.Env, _ struct{}) (string, error) {
				reason := "risky"
				if _, decided := agent.DecisionOf(ctx); decided {
					reason = tc.later
				}
				return "", agent.Ask(agent.Question{Reason: reason})
			})
			a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{nag}})
			saver := checkpoint.NewMemory(0)
			if _, err := a.Invoke(t.Context(), agent.Prompt("go"), runner.Checkpoints(saver, "T")); !errors.Is(err, agent.ErrInterrupted) {
				t.Fatalf("err %v", err)
			}
			res, err := a.Invoke(t.Context(), agent.Input{}, runner.Checkpoints(saver, "T"),
				agent.WithDecisions(agent.Decision{Type: agent.Approve, CallID: "c1"}))
			if err != nil {
				t.Fatalf("resume: %v", err)
			}
			if got, _ := toolResult(res, "c1"); !got.IsError || !strings.Contains(got.Content, tc.want) {
				t.Errorf("c1 result %+v, want %q", got, tc.want)
			}
		})
	}
}

// hookOn is an Admit-only middleware over the write tool.
func hookOn(name string, admit func(ctx context.Context, path string) error) agent.Middleware {
	return agent.Middleware{Name: name, Admit: func(ctx context.Context, call *agent.ToolCall) error {
		var in struct {
			Path string `json:"path"`
		}
		if err := json.Unmarshal(call.Call.Args, &in); err != nil {
			return err
		}
		return admit(ctx, in.Path)
	}}
}

// Every Admit hook sees every call: one that asks does not hide another
// that refuses (the refusal wins) or that asks too (the person is asked
// once, with both reasons and only the decisions both allow).
func TestEveryAdmitHookIsAsked(t *testing.T) {
	always := hookOn("always", func(context.Context, string) error {
		return agent.Ask(agent.Question{Reason: "every write waits"})
	})
	denyEtc := hookOn("deny", func(_ context.Context, path string) error {
		if strings.HasPrefix(path, "/etc/") {
			return errors.New("writes under /etc are not allowed")
		}
		return nil
	})
	protect := hookOn("protect", func(_ context.Context, path string) error {
		if path == "/config/x" {
			return agent.Ask(agent.Question{Allowed: []agent.DecisionType{agent.Approve, agent.Reject}, Reason: "/config/x is protected"})
		}
		return nil
	})
	m := scripted.New(scripted.Script{"parent": steps(
		scripted.Step{ToolCalls: []scripted.StepCall{
			{ID: "c1", Name: "write", Args: json.RawMessage(`{"path":"/etc/passwd","content":"x"}`)},
			{ID: "c2", Name: "write", Args: json.RawMessage(`{"path":"/config/x","content":"x"}`)},
		}},
		scripted.Step{Content: "done"},
	)}, scripted.Options{})
	seen := &testkit.Approvals{}
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{testkit.WriteTool(seen)},
		Middleware: []agent.Middleware{always, denyEtc, protect}})
	res, err := a.Invoke(t.Context(), agent.Prompt("go"), runner.Checkpoints(checkpoint.NewMemory(0), "T"))
	if !errors.Is(err, agent.ErrInterrupted) {
		t.Fatalf("err %v", err)
	}
	if len(res.Interrupts) != 1 || res.Interrupts[0].CallID != "c2" {
		t.Fatalf("interrupts %+v: want c2 alone (c1 is refused, not put to the person)", res.Interrupts)
	}
	in := res.Interrupts[0]
	if in.Reason != "every write waits. /config/x is protected" {
		t.Errorf("reason %q: want both hooks' reasons", in.Reason)
	}
	if fmt.Sprint(in.Allowed) != "[approve reject]" {
		t.Errorf("allowed %v: want what both hooks allow", in.Allowed)
	}
	if _, ran := seen.Get("c1"); ran {
		t.Error("the refused call ran")
	}
}

// An edit runs the person's arguments, so a hook that refuses them refuses
// the call: the edit is not a way around a refusal.
func TestEditIsAdmittedWithItsArguments(t *testing.T) {
	always := hookOn("always", func(context.Context, string) error { return agent.Ask(agent.Question{}) })
	denyEtc := hookOn("deny", func(_ context.Context, path string) error {
		if strings.HasPrefix(path, "/etc/") {
			return errors.New("writes under /etc are not allowed")
		}
		return nil
	})
	m := scripted.New(scripted.Script{"parent": steps(
		scripted.Step{ToolCalls: []scripted.StepCall{{ID: "c1", Name: "write", Args: json.RawMessage(`{"path":"/tmp/x","content":"x"}`)}}},
		scripted.Step{Content: "done"},
	)}, scripted.Options{})
	seen := &testkit.Approvals{}
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{testkit.WriteTool(seen)},
		Middleware: []agent.Middleware{always, denyEtc}})
	saver := checkpoint.NewMemory(0)
	if _, err := a.Invoke(t.Context(), agent.Prompt("go"), runner.Checkpoints(saver, "T")); !errors.Is(err, agent.ErrInterrupted) {
		t.Fatalf("err %v", err)
	}
	res, err := a.Invoke(t.Context(), agent.Input{}, runner.Checkpoints(saver, "T"), agent.WithDecisions(agent.Decision{
		Type: agent.Edit, CallID: "c1", Args: json.RawMessage(`{"path":"/etc/passwd","content":"x"}`)}))
	if err != nil {
		t.Fatal(err)
	}
	if _, ran := seen.Get("c1"); ran {
		t.Error("the edited call ran though a hook refuses its arguments")
	}
	if got, _ := toolResult(res, "c1"); !got.IsError || !strings.Contains(got.Content, "writes under /etc are not allowed") {
		t.Errorf("c1 result %+v: want the refusal", got)
	}
}

// nestedProbe is a Nested tool that notes what its run's context says of
// the person's decision, as a subagent's hooks would see it.
type nestedProbe struct {
	tool.Tool
	decided, approved *bool
}

func (p nestedProbe) RunNested(ctx context.Context, env *tool.Env, args json.RawMessage, host agent.Host) (tool.Result, *agent.Result, error) {
	_, *p.decided = agent.DecisionOf(ctx)
	*p.approved = agent.Approved(ctx)
	return tool.Result{Content: "ran"}, nil, nil
}

// A person's decision on a call that starts a subagent is that call's: the
// subagent's run sees neither the decision nor an approval.
func TestDecisionStaysWithTheTaskCall(t *testing.T) {
	var decided, approved bool
	probe := nestedProbe{Tool: tool.MustFunc("task", "Delegate.", func(context.Context, *tool.Env, struct{}) (string, error) {
		return "", errors.New("not run directly")
	}), decided: &decided, approved: &approved}
	m := scripted.New(scripted.Script{"parent": steps(
		scripted.Step{ToolCalls: []scripted.StepCall{{ID: "c1", Name: "task", Args: json.RawMessage(`{}`)}}},
		scripted.Step{Content: "done"},
	)}, scripted.Options{})
	gate := agent.Middleware{Name: "gate", Admit: func(ctx context.Context, call *agent.ToolCall) error {
		if _, ok := agent.DecisionOf(ctx); ok {
			return nil
		}
		return agent.Ask(agent.Question{})
	}}
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{probe}, Middleware: []agent.Middleware{gate}})
	saver := checkpoint.NewMemory(0)
	if _, err := a.Invoke(t.Context(), agent.Prompt("go"), runner.Checkpoints(saver, "T")); !errors.Is(err, agent.ErrInterrupted) {
		t.Fatalf("err %v", err)
	}
	if _, err := a.Invoke(t.Context(), agent.Input{}, runner.Checkpoints(saver, "T"),
		agent.WithDecisions(agent.Decision{Type: agent.Approve, CallID: "c1"})); err != nil {
		t.Fatal(err)
	}
	if decided || approved {
		t.Errorf("inside the subagent: decided %v approved %v, want neither", decided, approved)
	}
}
