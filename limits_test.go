package deepagents_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/internal/testkit"

	"github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/tool"
)

// delegate is a parent script that sends one task to general-purpose and
// then answers "ok".
func delegate(brief string) scripted.AgentScript {
	return scripted.AgentScript{Steps: []scripted.Step{
		{ToolCalls: []scripted.StepCall{{ID: "c1", Name: "task", Args: json.RawMessage(fmt.Sprintf(`{"description":%q,"subagent_type":"general-purpose"}`, brief))}}},
		{Content: "ok"},
	}}
}

// The step limit set on deepagents.Config (or the default, 500) bounds the
// agent and every child that sets none, each instance on its own budget.
func TestChildrenInheritTheStepLimit(t *testing.T) {
	loop := func(ci llm.CallInfo, req *llm.Request) (scripted.Step, error) {
		if ci.Agent == "parent" {
			return delegate("loop").Steps[min(ci.Round, 1)], nil
		}
		return scripted.Step{Content: "still going", ToolCalls: []scripted.StepCall{{Name: "ls", Args: json.RawMessage(`{}`)}}}, nil
	}
	for _, c := range []struct {
		maxSteps, want int
	}{{3, 3}, {0, 500}} {
		t.Run(fmt.Sprint("MaxSteps ", c.maxSteps), func(t *testing.T) {
			a, err := deepagents.New(deepagents.Config{Model: scripted.New(nil, scripted.Options{NoUsage: true, Func: loop}), MaxSteps: c.maxSteps})
			if err != nil {
				t.Fatal(err)
			}
			res, err := a.Invoke(t.Context(), agent.Prompt("go"))
			if err != nil {
				t.Fatalf("a child's limit must not fail the parent: %v", err)
			}
			child, ok := res.Child("c1")
			if !ok || child.Rounds != c.want || child.Status != agent.StatusLimit {
				t.Fatalf("child = %+v, want status limit after %d model calls", child, c.want)
			}
			want := fmt.Sprintf("Subagent general-purpose did not finish (status: limit; stopped after %d model calls (the step limit)).\nIts last message: still going", c.want)
			if got := res.State.Messages[2].Content; got != want {
				t.Errorf("receipt = %q, want %q", got, want)
			}
		})
	}
	// The top-level run reports its own limit as an error.
	a, err := deepagents.New(deepagents.Config{Model: scripted.New(nil, scripted.Options{NoUsage: true, Func: loop}), MaxSteps: 1})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Invoke(t.Context(), agent.Prompt("go"))
	if !errors.Is(err, agent.ErrLimit) || res.Status != agent.StatusLimit || res.Rounds != 1 {
		t.Errorf("top-level limit: %v, status %s after %d rounds", err, res.Status, res.Rounds)
	}
}

// The parallelism bound set on deepagents.Config (or the default, 16) bounds
// every child's tool calls too. In a synctest bubble every call the bound
// lets in is inside the tool before the fake clock moves, so the peak of the
// child's in-flight calls is exactly its bound.
func TestChildrenInheritTheParallelismBound(t *testing.T) {
	for _, c := range []struct {
		maxParallel, want int
	}{{1, 1}, {3, 3}, {0, 16}} {
		t.Run(fmt.Sprint("MaxParallel ", c.maxParallel), func(t *testing.T) {
			testkit.Bubble(t, func(t *testing.T) {
				holder := testkit.NewHolder()
				hold := holder.Tool
				calls := make([]scripted.StepCall, 20)
				for i := range calls {
					calls[i] = scripted.StepCall{Name: "hold", Args: json.RawMessage(`{}`)}
				}
				m := scripted.New(scripted.Script{
					"parent":          delegate("hold twenty times"),
					"general-purpose": {Steps: []scripted.Step{{ToolCalls: calls}, {Content: "held them all"}}},
				}, scripted.Options{NoUsage: true})
				a, err := deepagents.New(deepagents.Config{Model: m, Tools: []tool.Tool{hold}, MaxParallel: c.maxParallel})
				if err != nil {
					t.Fatal(err)
				}
				res, err := a.Invoke(t.Context(), agent.Prompt("go"))
				if err != nil || res.State.Messages[2].Content != "held them all" {
					t.Fatalf("run: %v, receipt %q", err, res.State.Messages[2].Content)
				}
				if got := holder.Peak(); got != c.want {
					t.Errorf("the child had %d calls in flight at once, want %d", got, c.want)
				}
			})
		})
	}
}

// A task call with arguments task does not take still starts the subagent it
// names; the dropped names are in a tool.progress event and nowhere in the
// child's requests.
func TestTaskIgnoresUnknownArguments(t *testing.T) {
	m := scripted.New(scripted.Script{
		"parent": {Steps: []scripted.Step{
			{ToolCalls: []scripted.StepCall{{ID: "c1", Name: "task", Args: json.RawMessage(`{"description":"Count the files.","subagent_type":"general-purpose","mode":"fork","priority":1}`)}}},
			{Content: "ok"},
		}},
		"general-purpose": {Steps: []scripted.Step{{Content: "3 files"}}},
	}, scripted.Options{})
	a, err := deepagents.New(deepagents.Config{Model: m, SystemPrompt: "Parent rules."})
	if err != nil {
		t.Fatal(err)
	}
	var notices []agent.Event
	res, err := agent.Drain(a.Run(t.Context(), agent.Prompt("How many files?")), func(e agent.Event) {
		if e.Type == agent.ToolProgress {
			notices = append(notices, e)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.State.Messages[2]; got.Content != "3 files" || got.IsError {
		t.Errorf("receipt = %+v", got)
	}
	if len(notices) != 1 || notices[0].Agent.String() != "parent" || notices[0].Tool.CallID != "c1" || !slices.Equal(notices[0].Tool.Ignored, []string{"mode", "priority"}) {
		t.Fatalf("notices = %+v", notices)
	}
	for _, r := range m.Records() {
		if r.Who != "general-purpose" {
			continue
		}
		b, _ := json.Marshal(r.Request)
		if strings.Contains(string(b), "priority") || strings.Contains(string(b), "Parent rules.") || len(r.Request.Messages) != 1 {
			t.Errorf("the child's request carries more than its brief: %s", b)
		}
	}
}

// A whitespace-only last message is not a report: the receipt is the last
// message with real text.
func TestWhitespaceLastMessageIsNotTheReceipt(t *testing.T) {
	m := scripted.New(scripted.Script{
		"parent": delegate("report"),
		"general-purpose": {Steps: []scripted.Step{
			{Content: "Found 3 files.", ToolCalls: []scripted.StepCall{{Name: "ls", Args: json.RawMessage(`{}`)}}},
			{Content: "\n  \t"},
		}},
	}, scripted.Options{})
	a, err := deepagents.New(deepagents.Config{Model: m})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Invoke(t.Context(), agent.Prompt("go"))
	if err != nil {
		t.Fatal(err)
	}
	if got := res.State.Messages[2].Content; got != "Found 3 files." {
		t.Errorf("receipt = %q, want the last message with text", got)
	}
	if _, ok := res.Child("c1"); !ok {
		t.Error("child transcript missing")
	}
}
