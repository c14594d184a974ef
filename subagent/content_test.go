package subagent_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/subagent"
	"github.com/deepagents-go/deepagents/tool"
)

// A subagent's reasoning setting is its spec's, else the parent's; forks
// follow the same rule.
func TestReasoningInheritance(t *testing.T) {
	parent := &llm.ReasoningConfig{Effort: llm.EffortLow}
	own := &llm.ReasoningConfig{BudgetTokens: 8000}
	cases := []struct {
		name   string
		parent *llm.ReasoningConfig
		spec   subagent.Spec
		want   *llm.ReasoningConfig
	}{
		{"inherits the parent's", parent, subagent.Spec{}, parent},
		{"its own", parent, subagent.Spec{Reasoning: own}, own},
		{"neither", nil, subagent.Spec{}, nil},
		{"own without a parent setting", nil, subagent.Spec{Reasoning: own}, own},
		{"fork inherits the parent's", parent, subagent.Spec{Mode: subagent.Fork}, parent},
		{"fork with its own", parent, subagent.Spec{Mode: subagent.Fork, Reasoning: own}, own},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := scripted.New(scripted.Script{"worker": {Steps: []scripted.Step{step("done")}}}, scripted.Options{})
			c.spec.Name, c.spec.Description = "worker", "Works."
			task := newTask(t, subagent.Config{Model: m, Reasoning: c.parent, Subagents: []subagent.Spec{c.spec}})
			got := runTask(t, t.Context(), task, "c1", `{"description":"go","subagent_type":"worker"}`, &llm.Request{Messages: []llm.Message{llm.User("hi")}})
			if got.res.Content != "done" {
				t.Fatalf("receipt %q", got.res.Content)
			}
			recs := m.Records()
			if len(recs) != 1 || !reflect.DeepEqual(recs[0].Request.Settings.Reasoning, c.want) {
				t.Errorf("child sent reasoning %+v, want %+v", recs[0].Request.Settings.Reasoning, c.want)
			}
		})
	}
}

// refusingChecker refuses any reasoning setting, as a model without
// thinking would.
type refusingChecker struct{ *scripted.Model }

func (refusingChecker) CheckSettings(s llm.Settings) ([]string, error) {
	if s.Reasoning != nil {
		return nil, errors.New("this model cannot think")
	}
	return nil, nil
}

// A subagent whose model refuses its settings is an assembly error that
// names the subagent.
func TestSubagentSettingsRefusedAtAssembly(t *testing.T) {
	_, err := subagent.NewTask(subagent.Config{Model: scripted.New(nil, scripted.Options{}), BaseTools: []tool.Tool{writeTool},
		Subagents: []subagent.Spec{{Name: "thinker", Description: "Thinks.", Model: refusingChecker{scripted.New(nil, scripted.Options{})},
			Reasoning: &llm.ReasoningConfig{Effort: llm.EffortHigh}}}})
	var ce *subagent.ConfigError
	if !errors.As(err, &ce) || ce.Subagent != "thinker" {
		t.Fatalf("err %v, want a ConfigError naming thinker", err)
	}
	if want := "SubAgent 'thinker': agent thinker: the model refuses its settings: this model cannot think"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}

// A child's reasoning stays in its own conversation: the receipt is its
// last text, and a closing message of reasoning alone is no report.
func TestReasoningNeverReachesTheReceipt(t *testing.T) {
	cases := []struct {
		name  string
		steps []scripted.Step
		want  string
	}{
		{"reasoning then text", []scripted.Step{{Reasoning: "secret chain of thought", Content: "the answer is 42"}}, "the answer is 42"},
		{"last reply only reasoning", []scripted.Step{step("the real report", tc("note", `{}`)), {Reasoning: "secret chain of thought"}}, "the real report"},
		{"reasoning and no text at all", []scripted.Step{{Reasoning: "secret chain of thought"}}, "The subagent finished without writing a final report."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := scripted.New(scripted.Script{"worker": {Steps: c.steps}}, scripted.Options{})
			task := newTask(t, subagent.Config{Model: m, DefaultTools: []tool.Tool{noteTool}, Subagents: []subagent.Spec{{Name: "worker", Description: "Works."}}})
			got := runTask(t, t.Context(), task, "c1", `{"description":"go","subagent_type":"worker"}`, nil)
			if got.res.Content != c.want || got.res.Parts != nil || strings.Contains(got.res.Content, "secret") {
				t.Errorf("receipt %q (parts %v), want %q", got.res.Content, got.res.Parts, c.want)
			}
			// The child's own history keeps its reasoning.
			kept := false
			for _, msg := range got.child.State.Messages {
				kept = kept || msg.ReasoningText() == "secret chain of thought"
			}
			if !kept {
				t.Error("the child's messages lost its reasoning")
			}
		})
	}
}

// A refused child gives the parent an error receipt that says the subagent
// declined and why.
func TestRefusedChildReceipt(t *testing.T) {
	m := scripted.New(scripted.Script{"worker": {Steps: []scripted.Step{
		step("", tc("write", `{"path":"/draft.md","content":"x"}`)),
		{Refusal: "I can't help with that.\nPolicy details follow."},
	}}}, scripted.Options{})
	task := newTask(t, subagent.Config{Model: m, Subagents: []subagent.Spec{{Name: "worker", Description: "Works."}}})
	got := runTask(t, t.Context(), task, "c1", `{"description":"go","subagent_type":"worker"}`, nil)
	want := "Subagent worker declined the task and gave no report.\nIts reason: I can't help with that.\n" +
		"Do the task another way, or rephrase the brief.\nFiles it changed were kept: /draft.md."
	if !got.res.IsError || got.res.Content != want {
		t.Errorf("receipt\n%q\nwant\n%q", got.res.Content, want)
	}
	ends := got.ofType(agent.SubagentEnd)
	if len(ends) != 1 || ends[0].Subagent.Status != agent.StatusRefused || !errors.Is(got.child.Err(), agent.ErrRefused) {
		t.Errorf("subagent.end %+v", ends)
	}
}

// A child's usage, reasoning tokens and the unknown mark included, is
// reported on subagent.end and in its result.
func TestChildUsageKeepsReasoningAndUnknown(t *testing.T) {
	m := scripted.New(scripted.Script{"worker": {Steps: []scripted.Step{
		{ToolCalls: []scripted.StepCall{tc("note", `{}`)}, Usage: &llm.Usage{InputTokens: 50, OutputTokens: 30, ReasoningTokens: 20}},
		{Content: "done", Usage: &llm.Usage{Unknown: true}},
	}}}, scripted.Options{})
	task := newTask(t, subagent.Config{Model: m, DefaultTools: []tool.Tool{noteTool}, Subagents: []subagent.Spec{{Name: "worker", Description: "Works."}}})
	got := runTask(t, t.Context(), task, "c1", `{"description":"go","subagent_type":"worker"}`, nil)
	want := llm.Usage{InputTokens: 50, OutputTokens: 30, ReasoningTokens: 20, Unknown: true}
	ends := got.ofType(agent.SubagentEnd)
	if len(ends) != 1 || ends[0].Subagent.Usage != want || got.child.Usage != want || got.child.UsageByAgent["parent / worker#c1"] != want {
		t.Errorf("subagent.end usage %+v, child %+v, want %+v", ends[0].Subagent.Usage, got.child.Usage, want)
	}
}
