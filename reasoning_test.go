package deepagents_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/subagent"
)

// Config.Reasoning reaches the agent's requests and those of every
// subagent without its own; a spec's own setting wins for that subagent.
func TestReasoningReachesAgentAndSubagents(t *testing.T) {
	m := scripted.New(scripted.Script{
		"parent": {Steps: []scripted.Step{
			{ToolCalls: []scripted.StepCall{
				{ID: "g", Name: "task", Args: []byte(`{"description":"a","subagent_type":"general-purpose"}`)},
				{ID: "d", Name: "task", Args: []byte(`{"description":"b","subagent_type":"deep"}`)},
			}},
			{Content: "done"},
		}},
		"general-purpose": {Steps: []scripted.Step{{Content: "gp report"}}},
		"deep":            {Steps: []scripted.Step{{Reasoning: "thinking hard", Content: "deep report"}}},
	}, scripted.Options{})
	medium := &llm.ReasoningConfig{Effort: llm.EffortMedium}
	high := &llm.ReasoningConfig{BudgetTokens: 16000}
	a, err := deepagents.New(deepagents.Config{Model: m, Reasoning: medium,
		Subagents: []subagent.Spec{{Name: "deep", Description: "Thinks hard.", Reasoning: high}}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Invoke(t.Context(), agent.Prompt("go"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]*llm.ReasoningConfig{"parent": medium, "general-purpose": medium, "deep": high}
	for _, r := range m.Records() {
		if !reflect.DeepEqual(r.Request.Settings.Reasoning, want[r.Who]) {
			t.Errorf("%s round %d sent %+v, want %+v", r.Who, r.Round, r.Request.Settings.Reasoning, want[r.Who])
		}
	}
	// The deep child's reasoning is in its own result, not in the parent's messages.
	for _, msg := range res.State.Messages {
		if strings.Contains(msg.Content, "thinking hard") || msg.ReasoningText() != "" {
			t.Errorf("parent message carries the child's reasoning: %+v", msg)
		}
	}
	if c, ok := res.Child("d"); !ok || c.State.Messages[len(c.State.Messages)-1].ReasoningText() != "thinking hard" {
		t.Error("the child's own history must keep its reasoning")
	}
}

// noThinking is a model that refuses reasoning settings at assembly.
type noThinking struct{ *scripted.Model }

func (noThinking) CheckSettings(s llm.Settings) ([]string, error) {
	if s.Reasoning != nil {
		return nil, errors.New("thinking is not available on this model")
	}
	return nil, nil
}

// deepagents.New reports a model's refusal of the settings as a ConfigError:
// on the top-level agent, or naming the subagent whose settings it is.
func TestReasoningRefusedAtAssembly(t *testing.T) {
	plain := scripted.New(nil, scripted.Options{})
	cases := []struct {
		name         string
		cfg          deepagents.Config
		wantSubagent string
		want         string
	}{
		{"the agent's model", deepagents.Config{Model: noThinking{plain}, Reasoning: &llm.ReasoningConfig{Effort: llm.EffortHigh}},
			"", "agent parent: the model refuses its settings: thinking is not available on this model"},
		{"a subagent's model", deepagents.Config{Model: plain,
			Subagents: []subagent.Spec{{Name: "quick", Description: "Fast.", Model: noThinking{plain}, Reasoning: &llm.ReasoningConfig{Effort: llm.EffortLow}}}},
			"quick", "SubAgent 'quick': agent quick: the model refuses its settings: thinking is not available on this model"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := deepagents.New(c.cfg)
			var ce *deepagents.ConfigError
			if !errors.As(err, &ce) || ce.Subagent != c.wantSubagent || err.Error() != c.want {
				t.Errorf("err %v (subagent %q), want %q naming %q", err, ce.Subagent, c.want, c.wantSubagent)
			}
		})
	}
}
