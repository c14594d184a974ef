package agent_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/approve"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/hitl"
	"github.com/deepagents-go/deepagents/internal/testkit"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/runner"
	"github.com/deepagents-go/deepagents/subagent"
	"github.com/deepagents-go/deepagents/tool"
)

// respondRun stops a run at one write call gated by policy and returns
// the agent, its saver and what the call's tool saw.
func respondRun(t *testing.T, policy approve.Policy) (*agent.Agent, checkpoint.Saver, *testkit.Approvals, agent.Interrupt) {
	t.Helper()
	m := scripted.New(scripted.Script{"parent": steps(
		scripted.Step{ToolCalls: []scripted.StepCall{{ID: "c1", Name: "write", Args: json.RawMessage(`{"path":"/a.md","content":"a"}`)}}},
		scripted.Step{Content: "done"},
	)}, scripted.Options{})
	seen := &testkit.Approvals{}
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{testkit.WriteTool(seen)}, Middleware: []agent.Middleware{approve.Gate(map[string]approve.Policy{"write": policy})}})
	saver := checkpoint.NewMemory(0)
	res, err := a.Invoke(t.Context(), agent.Prompt("go"), runner.Checkpoints(saver, "T"))
	if !errors.Is(err, agent.ErrInterrupted) || len(res.Interrupts) != 1 {
		t.Fatalf("err %v, interrupts %+v", err, res.Interrupts)
	}
	return a, saver, seen, res.Interrupts[0]
}

// A respond answers a waiting call in its tool's place: the tool does not
// run, and the person's message is the call's result, a success (not an
// error, unlike a rejection), which the model reads on its next step.
func TestRespondAnswersInTheToolsPlace(t *testing.T) {
	a, saver, seen, in := respondRun(t, approve.Policy{Allowed: []agent.DecisionType{agent.Approve, agent.Respond}})
	if want := []agent.DecisionType{agent.Approve, agent.Respond}; !slices.Equal(in.Allowed, want) {
		t.Fatalf("allowed %v, want %v", in.Allowed, want)
	}
	var ends []agent.ToolInfo
	starts := 0
	res, err := agent.Drain(a.Run(t.Context(), agent.Input{}, runner.Checkpoints(saver, "T"),
		agent.WithDecisions(agent.Decision{Type: agent.Respond, CallID: "c1", Message: "The file is written already."})),
		func(ev agent.Event) {
			switch ev.Type {
			case agent.ToolStart:
				starts++
			case agent.ToolEnd:
				ends = append(ends, *ev.Tool)
			}
		})
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if _, ran := seen.Get("c1"); ran {
		t.Error("the tool ran; a respond answers in its place")
	}
	if _, ok := res.State.Files["/a.md"]; ok {
		t.Error("/a.md was written")
	}
	var got []llm.Message
	for _, msg := range res.State.Messages {
		if msg.Role == llm.RoleTool && msg.ToolCallID == "c1" {
			got = append(got, msg)
		}
	}
	if len(got) != 1 || got[0].Content != "The file is written already." || got[0].IsError || got[0].Name != "write" {
		t.Fatalf("tool messages for c1: %+v, want one successful result with the person's text", got)
	}
	if starts != 0 || len(ends) != 1 || ends[0].CallID != "c1" || ends[0].IsError || ends[0].Result != "The file is written already." {
		t.Errorf("tool events: %d starts, ends %+v; want no start and one successful end", starts, ends)
	}
	if last := res.State.Messages[len(res.State.Messages)-1]; last.Content != "done" || res.Status != agent.StatusOK {
		t.Errorf("status %s, last message %+v", res.Status, last)
	}
}

// respond is opt-in: a policy that names no decisions allows approve, edit
// and reject only, and a respond to its call is refused before anything
// runs, naming the decisions the call allows; a respond without a message
// is refused too.
func TestRespondIsRefusedWhenNotAllowedOrEmpty(t *testing.T) {
	if got := (approve.Policy{}).Decisions(); !slices.Equal(got, agent.AllDecisions) || slices.Contains(got, agent.Respond) {
		t.Fatalf("default decisions %v", got)
	}
	for _, tc := range []struct {
		name   string
		policy approve.Policy
		d      agent.Decision
		want   string
	}{
		{"not allowed", approve.Policy{}, agent.Decision{Type: agent.Respond, CallID: "c1", Message: "done"},
			`call "c1" (write) allows approve, edit, reject, not respond`},
		{"no message", approve.Policy{Allowed: []agent.DecisionType{agent.Respond}}, agent.Decision{Type: agent.Respond, CallID: "c1", Message: " "},
			`the respond to call "c1" has no "message"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, saver, seen, in := respondRun(t, tc.policy)
			if err := a.CheckDecisions([]agent.Decision{tc.d}, []agent.Interrupt{in}); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("CheckDecisions: %v, want %q", err, tc.want)
			}
			_, err := a.Invoke(t.Context(), agent.Input{}, runner.Checkpoints(saver, "T"), agent.WithDecisions(tc.d))
			var de *agent.DecisionError
			if !errors.As(err, &de) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("resume: %v, want a decision error %q", err, tc.want)
			}
			if _, ran := seen.Get("c1"); ran {
				t.Error("the tool ran")
			}
		})
	}
}

// The JSON shape LangChain's clients send, {"type": "respond", "message":
// ...}, is read, and "respond" is a decision a policy may name.
func TestRespondDecisionJSON(t *testing.T) {
	ds, err := hitl.ParseDecisions([]byte(`{"decisions":[{"type":"respond","id":"c1","message":"42"}]}`))
	if err != nil || len(ds) != 1 || ds[0].Type != agent.Respond || ds[0].CallID != "c1" || ds[0].Message != "42" {
		t.Fatalf("got %+v, %v", ds, err)
	}
	if !agent.Respond.Known() || agent.DecisionType("ignore").Known() {
		t.Error("Known")
	}
	if err := approve.Validate(map[string]approve.Policy{"write": {Allowed: []agent.DecisionType{agent.Respond}}}); err != nil {
		t.Errorf("a policy allowing respond: %v", err)
	}
	if err := approve.Validate(map[string]approve.Policy{"write": {Allowed: []agent.DecisionType{"ignore"}}}); err == nil {
		t.Error("a policy allowing a decision there is not is valid")
	}
}

// A respond to a call inside a subagent answers it there: the subagent's
// tool does not run, its model reads the answer, and the run goes on.
func TestRespondInsideASubagent(t *testing.T) {
	m := scripted.New(scripted.Script{
		"parent": steps(scripted.Step{ToolCalls: []scripted.StepCall{{ID: "t1", Name: "task", Args: json.RawMessage(`{"description":"write","subagent_type":"w"}`)}}},
			scripted.Step{Content: "done"}),
		"w": steps(scripted.Step{ToolCalls: []scripted.StepCall{{ID: "s1", Name: "write", Args: json.RawMessage(`{"path":"/s.md","content":"x"}`)}}},
			scripted.Step{Content: "child done"}),
	}, scripted.Options{})
	seen := &testkit.Approvals{}
	gates := map[string]approve.Policy{"write": {Allowed: []agent.DecisionType{agent.Respond}}}
	tk, err := subagent.NewTask(subagent.Config{Model: m, Middleware: []agent.Middleware{approve.Gate(gates)}, Subagents: []subagent.Spec{
		{Name: "w", Description: "Writes.", Tools: []tool.Tool{testkit.WriteTool(seen)}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{tk}, Middleware: []agent.Middleware{approve.Gate(gates)}})
	saver := checkpoint.NewMemory(0)
	res, err := a.Invoke(t.Context(), agent.Prompt("go"), runner.Checkpoints(saver, "T"))
	if !errors.Is(err, agent.ErrInterrupted) || len(res.Interrupts) != 1 || res.Interrupts[0].CallID != "s1" {
		t.Fatalf("err %v, interrupts %+v", err, res.Interrupts)
	}
	in := res.Interrupts[0]
	res, err = a.Invoke(t.Context(), agent.Input{}, runner.Checkpoints(saver, "T"),
		agent.WithDecisions(agent.Decision{Type: agent.Respond, CallID: "s1", Path: in.Path, Message: "answered by a person"}))
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if _, ran := seen.Get("s1"); ran {
		t.Error("the subagent's tool ran")
	}
	child := res.Children["t1"]
	if child == nil {
		t.Fatalf("no child result: %+v", res.Children)
	}
	var got []llm.Message
	for _, msg := range child.State.Messages {
		if msg.Role == llm.RoleTool && msg.ToolCallID == "s1" {
			got = append(got, msg)
		}
	}
	if len(got) != 1 || got[0].Content != "answered by a person" || got[0].IsError {
		t.Errorf("the subagent's result for s1: %+v", got)
	}
	if res.Status != agent.StatusOK {
		t.Errorf("status %s", res.Status)
	}
}
