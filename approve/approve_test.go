package approve_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/approve"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/hitl"
	"github.com/deepagents-go/deepagents/internal/testkit"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/runner"
	"github.com/deepagents-go/deepagents/tool"
)

type writeIn struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

var writeTool = tool.MustFunc("write", "Write a file.", func(ctx context.Context, env *tool.Env, in writeIn) (string, error) {
	return "wrote " + in.Path, env.Files.Write(ctx, in.Path, in.Content)
})

func steps(s ...scripted.Step) scripted.AgentScript { return scripted.AgentScript{Steps: s} }

func newAgent(t *testing.T, cfg agent.Config) *agent.Agent {
	t.Helper()
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// warningOf runs a once and returns the types of its events and its
// last warning, if any.
func warningOf(t *testing.T, a *agent.Agent) ([]agent.EventType, *agent.WarningInfo) {
	t.Helper()
	var types []agent.EventType
	var warn *agent.WarningInfo
	if _, err := agent.Drain(a.Run(t.Context(), agent.Prompt("go")), func(ev agent.Event) {
		types = append(types, ev.Type)
		if ev.Type == agent.Warning {
			warn = ev.Warning
		}
	}); err != nil {
		t.Fatal(err)
	}
	return types, warn
}

// protectedCheck makes a write under /protected/ wait, and asks to hear
// about every write under /protected/ or /told/.
func protectedCheck(_ context.Context, args json.RawMessage) approve.Verdict {
	var in writeIn
	if json.Unmarshal(args, &in) != nil {
		return approve.Verdict{}
	}
	var v approve.Verdict
	if strings.HasPrefix(in.Path, "/protected/") {
		v.Wait, v.Reason = true, in.Path+" is protected"
	}
	if strings.HasPrefix(in.Path, "/protected/") || strings.HasPrefix(in.Path, "/told/") {
		v.Report, v.Changes = "it changed "+in.Path, "/shown"+in.Path
	}
	return v
}

// A check on the arguments makes only the calls it picks wait, with its
// reason; once approved, the call runs with a context that says so, and the
// calls that never waited run without it.
func TestCheckGatesOnlyTheCallsItPicks(t *testing.T) {
	m := scripted.New(scripted.Script{"parent": steps(
		scripted.Step{ToolCalls: []scripted.StepCall{
			{ID: "c1", Name: "write", Args: json.RawMessage(`{"path":"/free.txt","content":"a"}`)},
			{ID: "c2", Name: "write", Args: json.RawMessage(`{"path":"/protected/x.txt","content":"b"}`)},
		}},
		scripted.Step{Content: "done"},
	)}, scripted.Options{})
	seen := &testkit.Approvals{}
	gates := approve.WithCheck(nil, protectedCheck, "write")
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{testkit.WriteTool(seen)}, Middleware: []agent.Middleware{approve.Gate(gates)}})
	saver := checkpoint.NewMemory(0)
	res, err := a.Invoke(t.Context(), agent.Prompt("go"), runner.Checkpoints(saver, "T"))
	if !errors.Is(err, agent.ErrInterrupted) {
		t.Fatalf("err %v, want interrupted", err)
	}
	if len(res.Interrupts) != 1 {
		t.Fatalf("interrupts %+v, want only c2", res.Interrupts)
	}
	in := res.Interrupts[0]
	if in.CallID != "c2" || in.Reason != "/protected/x.txt is protected" ||
		!strings.HasPrefix(in.Description, "/protected/x.txt is protected. The agent wants to call write with") {
		t.Errorf("interrupt %+v", in)
	}
	if h := hitl.RequestFor(res.Interrupts); h.ActionRequests[0].Description != in.Description {
		t.Errorf("the LangChain request's description %q, want %q", h.ActionRequests[0].Description, in.Description)
	}
	if approved, ran := seen.Get("c1"); !ran || approved {
		t.Errorf("c1: ran %v approved %v; want it run, not approved", ran, approved)
	}
	if _, ran := seen.Get("c2"); ran {
		t.Fatal("c2 ran before a person decided")
	}

	res, err = a.Invoke(t.Context(), agent.Input{}, runner.Checkpoints(saver, "T"),
		agent.WithDecisions(agent.Decision{Type: agent.Approve, CallID: "c2"}))
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if approved, ran := seen.Get("c2"); !ran || !approved {
		t.Errorf("c2: ran %v approved %v; want it run with the approval", ran, approved)
	}
	if res.FinalText() != "done" {
		t.Errorf("result %q", res.FinalText())
	}
	if !slices.Contains(res.Changed, "/shown/protected/x.txt") {
		t.Errorf("changed %v: the gate's path is missing", res.Changed)
	}
}

// A tool gated for every call keeps waiting for every call when a check is
// added, keeps its allowed decisions, and the check's reason is told for the
// calls it picks.
func TestWithCheckKeepsTheToolsOwnGate(t *testing.T) {
	own := map[string]approve.Policy{"write": {Allowed: []agent.DecisionType{agent.Approve, agent.Reject}}}
	gates := approve.WithCheck(own, protectedCheck, "write", "other")
	if own["write"].Check != nil {
		t.Fatal("WithCheck changed the map it was given")
	}
	for _, tc := range []struct {
		path   string
		reason string
	}{{"/free.txt", ""}, {"/protected/y", "/protected/y is protected"}} {
		v := gates["write"].Check(t.Context(), json.RawMessage(`{"path":"`+tc.path+`","content":""}`))
		if !v.Wait || v.Reason != tc.reason {
			t.Errorf("%s: %+v, want wait with reason %q", tc.path, v, tc.reason)
		}
	}
	if got := gates["write"].Decisions(); !slices.Equal(got, []agent.DecisionType{agent.Approve, agent.Reject}) {
		t.Errorf("decisions %v", got)
	}
	if v := gates["other"].Check(t.Context(), json.RawMessage(`{"path":"/free"}`)); v.Wait {
		t.Errorf("a tool with only the check waits for a free path: %+v", v)
	}
}

// A call a gate asked to hear about is reported once it ran without an
// error, whether it waited or not; a call that failed is not.
func TestCheckReportsWhatRan(t *testing.T) {
	m := scripted.New(scripted.Script{"parent": steps(
		scripted.Step{ToolCalls: []scripted.StepCall{
			{ID: "c1", Name: "write", Args: json.RawMessage(`{"path":"/told/a","content":"a"}`)},
			{ID: "c2", Name: "write", Args: json.RawMessage(`{"path":"/failing","content":"b"}`)},
			{ID: "c3", Name: "write", Args: json.RawMessage(`{"path":"/protected/p","content":"c"}`)},
		}},
		scripted.Step{Content: "done"},
	)}, scripted.Options{})
	failing := func(ctx context.Context, args json.RawMessage) approve.Verdict {
		v := protectedCheck(ctx, args)
		if strings.Contains(string(args), "/failing") {
			v.Report = "the failing one"
		}
		return v
	}
	seen := &testkit.Approvals{}
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{testkit.WriteTool(seen)}, Middleware: []agent.Middleware{approve.Gate(approve.WithCheck(nil, failing, "write"))}})
	saver := checkpoint.NewMemory(0)
	var reports []string
	collect := func(ev agent.Event) {
		if ev.Type == agent.Warning && ev.Warning.Source == "gate" {
			reports = append(reports, ev.Warning.Text)
		}
	}
	if _, err := agent.Drain(a.Run(t.Context(), agent.Prompt("go"), runner.Checkpoints(saver, "T")), collect); !errors.Is(err, agent.ErrInterrupted) {
		t.Fatalf("err %v", err)
	}
	want := []string{"write call c1 ran without waiting for a person: it changed /told/a"}
	if !slices.Equal(reports, want) {
		t.Fatalf("reports %q, want %q", reports, want)
	}
	reports = nil
	res, err := agent.Drain(a.Run(t.Context(), agent.Input{}, runner.Checkpoints(saver, "T"),
		agent.WithDecisions(agent.Decision{Type: agent.Edit, CallID: "c3", Args: json.RawMessage(`{"path":"/protected/q","content":"d"}`)})), collect)
	if err != nil {
		t.Fatal(err)
	}
	want = []string{"write call c3 ran after a person approved it: it changed /protected/q"}
	if !slices.Equal(reports, want) {
		t.Fatalf("reports %q, want %q", reports, want)
	}
	if approved, _ := seen.Get("c3"); !approved {
		t.Error("an edited call runs as approved")
	}
	if !slices.Contains(res.Changed, "/shown/protected/q") || slices.Contains(res.Changed, "/shown/protected/p") {
		t.Errorf("changed %v: want the edited call's path only", res.Changed)
	}
}

// nestedProbe is a tool that runs "agents": it records whether its own call
// runs as approved.
type nestedProbe struct{ seen *testkit.Approvals }

func (n nestedProbe) Spec() llm.ToolSpec {
	return llm.ToolSpec{Name: "task", Description: "Run a subagent.", Parameters: json.RawMessage(`{"type":"object"}`)}
}

func (n nestedProbe) Run(ctx context.Context, env *tool.Env, _ json.RawMessage) (tool.Result, error) {
	n.seen.Note(ctx, env.CallID)
	return tool.Text("ran"), nil
}

func (n nestedProbe) RunNested(ctx context.Context, env *tool.Env, args json.RawMessage, _ agent.Host) (tool.Result, *agent.Result, error) {
	res, err := n.Run(ctx, env, args)
	return res, nil, err
}

// A person's approval of a call that runs a subagent does not make the
// subagent's own calls approved.
func TestApprovalOfATaskCallStaysWithIt(t *testing.T) {
	m := scripted.New(scripted.Script{"parent": steps(
		scripted.Step{ToolCalls: []scripted.StepCall{{ID: "t1", Name: "task", Args: json.RawMessage(`{}`)}}},
		scripted.Step{Content: "done"},
	)}, scripted.Options{})
	seen := &testkit.Approvals{}
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{nestedProbe{seen}}, Middleware: []agent.Middleware{approve.Gate(map[string]approve.Policy{"task": {}})}})
	saver := checkpoint.NewMemory(0)
	if _, err := a.Invoke(t.Context(), agent.Prompt("go"), runner.Checkpoints(saver, "T")); !errors.Is(err, agent.ErrInterrupted) {
		t.Fatalf("err %v", err)
	}
	if _, err := a.Invoke(t.Context(), agent.Input{}, runner.Checkpoints(saver, "T"),
		agent.WithDecisions(agent.Decision{Type: agent.Approve, CallID: "t1"})); err != nil {
		t.Fatal(err)
	}
	if approved, ran := seen.Get("t1"); !ran || approved {
		t.Errorf("the task call ran %v approved %v; want it run, not marked approved", ran, approved)
	}
}

// A person decides on what they are told. When the gate says something
// else about the call by the time it would run (the place a path leads to
// changed since), neither an approval nor an edit made on the old view lets
// it run: it gets an error result saying what it would change now, and is
// not remembered as rejected. While the gate says the same, it runs.
func TestApprovalCoversWhatThePersonWasTold(t *testing.T) {
	for _, tc := range []struct {
		name     string
		decision agent.Decision
		changed  bool // the gate's view changes before the decision
		runs     bool
	}{
		{"approved, unchanged", agent.Decision{Type: agent.Approve, CallID: "c1"}, false, true},
		{"approved, changed", agent.Decision{Type: agent.Approve, CallID: "c1"}, true, false},
		{"edited, changed", agent.Decision{Type: agent.Edit, CallID: "c1", Args: json.RawMessage(`{"path":"/link/x","content":"edited"}`)}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := scripted.New(scripted.Script{"parent": steps(
				scripted.Step{ToolCalls: []scripted.StepCall{{ID: "c1", Name: "write", Args: json.RawMessage(`{"path":"/link/x","content":"a"}`)}}},
				scripted.Step{Content: "done"},
			)}, scripted.Options{})
			var mu sync.Mutex
			linked := false // /link leads to a protected place
			check := func(_ context.Context, args json.RawMessage) approve.Verdict {
				mu.Lock()
				defer mu.Unlock()
				if linked && strings.Contains(string(args), `"/link/`) {
					return approve.Verdict{Wait: true, Reason: "/link/x leads to a protected place"}
				}
				return approve.Verdict{}
			}
			seen := &testkit.Approvals{}
			// write waits for every call (the person's own gate) and has
			// the check too.
			gates := approve.WithCheck(map[string]approve.Policy{"write": {}}, check, "write")
			a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{testkit.WriteTool(seen)}, Middleware: []agent.Middleware{approve.Gate(gates)}})
			saver := checkpoint.NewMemory(0)
			res, err := a.Invoke(t.Context(), agent.Prompt("go"), runner.Checkpoints(saver, "T"))
			if !errors.Is(err, agent.ErrInterrupted) || len(res.Interrupts) != 1 || res.Interrupts[0].Reason != "" {
				t.Fatalf("err %v, interrupts %+v", err, res.Interrupts)
			}
			mu.Lock()
			linked = tc.changed
			mu.Unlock()
			res, err = a.Invoke(t.Context(), agent.Input{}, runner.Checkpoints(saver, "T"), agent.WithDecisions(tc.decision))
			if err != nil {
				t.Fatalf("resume: %v", err)
			}
			if _, ran := seen.Get("c1"); ran != tc.runs {
				t.Fatalf("ran %v, want %v", ran, tc.runs)
			}
			var result string
			for _, msg := range res.State.Messages {
				if msg.Role == llm.RoleTool && msg.ToolCallID == "c1" {
					result = msg.Content
				}
			}
			const stale = "is not what they were shown when they decided: /link/x leads to a protected place. It did not run."
			if got := strings.Contains(result, stale); got == tc.runs {
				t.Errorf("result %q", result)
			}
		})
	}
}

// A gate on a name no tool has (a misspelling) is reported by a warning
// right after run.start, and the agent says which names those are.
func TestGateWithoutToolWarns(t *testing.T) {
	stepTools := agent.Middleware{Name: "late", StepTools: func(context.Context, agent.StepInfo) []tool.Tool { return nil }}
	for _, tc := range []struct {
		name  string
		gates map[string]approve.Policy
		mw    []agent.Middleware
		want  string
	}{
		{"misspelt", map[string]approve.Policy{"wirte": {}, "write": {}}, nil,
			"interrupt_on names wirte, which is not one of the agent's tools (write), so nothing waits for a decision on them"},
		{"two, with step tools", map[string]approve.Policy{"b": {}, "a": {}}, []agent.Middleware{stepTools},
			"interrupt_on names a, b, which are not among the agent's tools (write), so their calls wait only if a middleware adds a tool by that name for a step"},
		{"all bound", map[string]approve.Policy{"write": {}}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := scripted.New(scripted.Script{"parent": steps(scripted.Step{Content: "hi"})}, scripted.Options{})
			a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{writeTool}, Middleware: append([]agent.Middleware{approve.Gate(tc.gates)}, tc.mw...)})
			types, warn := warningOf(t, a)
			if tc.want == "" {
				if warn != nil || len(a.UngatedNames()) != 0 {
					t.Fatalf("unexpected warning %+v (ungated %v)", warn, a.UngatedNames())
				}
				return
			}
			if warn == nil || types[1] != agent.Warning {
				t.Fatalf("events %v: want a warning right after run.start", types)
			}
			if warn.Source != "interrupt_on" || !slices.Equal(warn.Tools, a.UngatedNames()) || warn.Text != tc.want {
				t.Errorf("warning %+v (ungated %v), want text %q", warn, a.UngatedNames(), tc.want)
			}
		})
	}
}
