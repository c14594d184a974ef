package agent_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/tool"
)

// checkingModel is a scripted model that answers CheckSettings like a
// provider that refuses or drops some settings.
type checkingModel struct {
	*scripted.Model
	dropped []string
	err     error
	seen    []llm.Settings
}

func (m *checkingModel) CheckSettings(s llm.Settings) ([]string, error) {
	m.seen = append(m.seen, s)
	return m.dropped, m.err
}

// The reasoning setting goes out with every request of the run.
func TestReasoningIsSentWithEveryRequest(t *testing.T) {
	cases := []struct {
		name string
		cfg  *llm.ReasoningConfig
		want *llm.ReasoningConfig
	}{
		{"none", nil, nil},
		{"effort", &llm.ReasoningConfig{Effort: llm.EffortHigh}, &llm.ReasoningConfig{Effort: "high"}},
		{"budget", &llm.ReasoningConfig{BudgetTokens: 2048}, &llm.ReasoningConfig{BudgetTokens: 2048}},
		{"empty config is none", &llm.ReasoningConfig{}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := scripted.New(scripted.Script{"parent": steps(
				scripted.Step{ToolCalls: []scripted.StepCall{call("noop", `{}`)}}, scripted.Step{Content: "done"})}, scripted.Options{})
			a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{noopTool}, Reasoning: tc.cfg})
			if tc.cfg != nil {
				tc.cfg.Effort = "low" // changing the caller's value later must not reach the requests
			}
			if _, err := a.Invoke(t.Context(), agent.Prompt("go")); err != nil {
				t.Fatal(err)
			}
			recs := m.Records()
			if len(recs) != 2 {
				t.Fatalf("%d model calls, want 2", len(recs))
			}
			for _, r := range recs {
				if !reflect.DeepEqual(r.Request.Settings.Reasoning, tc.want) {
					t.Errorf("round %d: reasoning %+v, want %+v", r.Round, r.Request.Settings.Reasoning, tc.want)
				}
			}
		})
	}
}

// A model that checks settings is asked once, at assembly, with the
// settings that will be sent: a refusal is a ConfigError naming the agent,
// and dropped settings are a warning at the start of every run.
func TestSettingsCheckedAtAssembly(t *testing.T) {
	budget := &llm.ReasoningConfig{BudgetTokens: 4000}
	t.Run("refused", func(t *testing.T) {
		m := &checkingModel{Model: scripted.New(nil, scripted.Options{}), err: errors.New("temperature cannot be set with thinking on")}
		_, err := agent.New(agent.Config{Name: "lead", Model: m, Reasoning: budget})
		var ce *agent.ConfigError
		if !errors.As(err, &ce) {
			t.Fatalf("err = %v, want a *ConfigError", err)
		}
		if want := "agent lead: the model refuses its settings: temperature cannot be set with thinking on"; ce.Error() != want {
			t.Errorf("error %q, want %q", ce.Error(), want)
		}
		if len(m.seen) != 1 || !reflect.DeepEqual(m.seen[0].Reasoning, budget) {
			t.Errorf("CheckSettings saw %+v, want one call with the reasoning budget", m.seen)
		}
	})
	for _, tc := range []struct {
		name    string
		dropped []string
		want    string
	}{
		{"one dropped", []string{"temperature"}, "the model does not take temperature, so it is not sent with its requests"},
		{"two dropped", []string{"temperature", "top_p"}, "the model does not take temperature, top_p, so they are not sent with its requests"},
		{"none dropped", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &checkingModel{Model: scripted.New(scripted.Script{"parent": steps(scripted.Step{Content: "hi"})}, scripted.Options{}), dropped: tc.dropped}
			a := newAgent(t, agent.Config{Model: m, Reasoning: budget})
			types, warn := warningOf(t, a)
			if tc.want == "" {
				if warn != nil {
					t.Errorf("unexpected warning %+v", warn)
				}
				return
			}
			if warn == nil || types[1] != agent.Warning {
				t.Fatalf("events %v: want a warning right after run.start", types)
			}
			if warn.Source != "settings" || !slices.Equal(warn.Dropped, tc.dropped) || warn.Text != tc.want {
				t.Errorf("warning %+v, want source settings, dropped %v, text %q", warn, tc.dropped, tc.want)
			}
		})
	}
}

func TestBadReasoningConfigIsRejected(t *testing.T) {
	m := scripted.New(nil, scripted.Options{})
	for _, tc := range []struct {
		cfg  llm.ReasoningConfig
		want string
	}{
		{llm.ReasoningConfig{Effort: "extreme"}, `agent parent: reasoning effort "extreme" is not one of low, medium, high`},
		{llm.ReasoningConfig{BudgetTokens: -1}, "agent parent: reasoning budget_tokens is -1; it must be 0 (none) or more"},
	} {
		_, err := agent.New(agent.Config{Model: m, Reasoning: &tc.cfg})
		var ce *agent.ConfigError
		if !errors.As(err, &ce) || ce.Error() != tc.want {
			t.Errorf("%+v: err %v, want %q", tc.cfg, err, tc.want)
		}
	}
}

// refusalTextModel says it refused only through Response.Refusal, with an
// ordinary stop reason.
type refusalTextModel struct{ *scripted.Model }

func (m refusalTextModel) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	resp, err := m.Model.Generate(ctx, req)
	if resp != nil {
		resp.StopReason = llm.StopEnd
	}
	return resp, err
}

func TestRefusalTextAloneIsARefusal(t *testing.T) {
	m := refusalTextModel{scripted.New(scripted.Script{"parent": steps(scripted.Step{Refusal: "No."})}, scripted.Options{})}
	res, err := newAgent(t, agent.Config{Model: m}).Invoke(t.Context(), agent.Prompt("go"))
	if !errors.Is(err, agent.ErrRefused) || res.Status != agent.StatusRefused || res.Refusal != "No." {
		t.Errorf("status %s, refusal %q, err %v", res.Status, res.Refusal, err)
	}
}

// A refusal ends the run as refused: the tool calls of the refusing reply
// do not run, the history keeps what the model said, and the model.response
// event carries the refusal.
func TestRefusalEndsTheRun(t *testing.T) {
	ran := false
	probe := tool.MustFunc("probe", "Probe.", func(context.Context, *tool.Env, struct{}) (string, error) { ran = true; return "ok", nil })
	for _, tc := range []struct {
		name, content, wantLast string
	}{
		{"refusal only", "", "Sorry, I won't do that."},
		{"text and refusal", "I cannot continue.", "I cannot continue."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := scripted.New(scripted.Script{"parent": steps(scripted.Step{Content: tc.content, Refusal: "Sorry, I won't do that.",
				ToolCalls: []scripted.StepCall{call("probe", `{}`)}})}, scripted.Options{})
			a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{probe}})
			var resp *agent.ResponseInfo
			res, err := agent.Drain(a.Run(t.Context(), agent.Prompt("go")), func(ev agent.Event) {
				if ev.Type == agent.ModelResponse {
					resp = ev.Response
				}
			})
			if !errors.Is(err, agent.ErrRefused) || res.Status != agent.StatusRefused {
				t.Fatalf("status %s, err %v", res.Status, err)
			}
			if res.Refusal != "Sorry, I won't do that." {
				t.Errorf("Result.Refusal %q", res.Refusal)
			}
			if ran {
				t.Error("a refusing reply's tool call ran")
			}
			last := res.State.Messages[len(res.State.Messages)-1]
			if last.Role != llm.RoleAssistant || last.Content != tc.wantLast || len(last.ToolCalls) != 0 {
				t.Errorf("last message %+v", last)
			}
			if resp == nil || resp.StopReason != llm.StopRefusal || resp.Refusal != "Sorry, I won't do that." {
				t.Errorf("model.response %+v", resp)
			}
		})
	}
}

// Tools learn from their env whether the agent's model reads images, and
// the parts of their results reach the tool message in order.
func TestToolResultPartsAndCapabilities(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\nfake")
	shot := tool.MustFunc("shot", "Screenshot.", func(_ context.Context, env *tool.Env, _ struct{}) (tool.Result, error) {
		if !env.Capabilities.Images {
			return tool.Text("no images here"), nil
		}
		return tool.WithParts(llm.TextPart("the screen:"), llm.ImagePart("image/png", png)), nil
	})
	for _, tc := range []struct {
		name     string
		noImages bool
		parts    int
		content  string
	}{
		{"model reads images", false, 2, "the screen:"},
		{"model does not", true, 0, "no images here"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := scripted.New(scripted.Script{"parent": steps(scripted.Step{ToolCalls: []scripted.StepCall{call("shot", `{}`)}},
				scripted.Step{Content: "seen"})}, scripted.Options{NoImages: tc.noImages})
			res, err := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{shot}}).Invoke(t.Context(), agent.Prompt("look"))
			if err != nil {
				t.Fatal(err)
			}
			tm := toolMessages(res.State.Messages)
			if len(tm) != 1 || tm[0].Content != tc.content || len(tm[0].Parts) != tc.parts || tm[0].ToolCallID == "" || tm[0].Name != "shot" {
				t.Fatalf("tool message %+v", tm)
			}
			if tc.parts == 2 && (tm[0].Parts[1].Image == nil || string(tm[0].Parts[1].Image.Data) != string(png)) {
				t.Errorf("image part %+v", tm[0].Parts[1])
			}
			// The model received the image in its next request.
			recs := m.Records()
			sent := recs[1].Request.Messages[2]
			if sent.HasParts(llm.PartImage) != (tc.parts == 2) {
				t.Errorf("image in the next request: %v", sent.HasParts(llm.PartImage))
			}
		})
	}
}

// Usage keeps reasoning tokens and the unknown mark per call and in sums.
func TestUsageKeepsReasoningAndUnknown(t *testing.T) {
	m := scripted.New(scripted.Script{"parent": steps(
		scripted.Step{ToolCalls: []scripted.StepCall{call("noop", `{}`)}, Usage: &llm.Usage{InputTokens: 10, OutputTokens: 7, ReasoningTokens: 5}},
		scripted.Step{Content: "done", Usage: &llm.Usage{Unknown: true}},
	)}, scripted.Options{})
	var per []llm.Usage
	res, err := agent.Drain(newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{noopTool}}).Run(t.Context(), agent.Prompt("go")), func(ev agent.Event) {
		if ev.Type == agent.ModelResponse {
			per = append(per, ev.Response.Usage)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []llm.Usage{{InputTokens: 10, OutputTokens: 7, ReasoningTokens: 5}, {Unknown: true}}
	if !reflect.DeepEqual(per, want) {
		t.Errorf("per call %+v, want %+v", per, want)
	}
	total := llm.Usage{InputTokens: 10, OutputTokens: 7, ReasoningTokens: 5, Unknown: true}
	if res.Usage != total || res.UsageByAgent["parent"] != total {
		t.Errorf("total %+v, by agent %+v, want %+v", res.Usage, res.UsageByAgent, total)
	}
}

// A streamed reply keeps its reasoning part; the deltas show the thinking
// as reasoning, not as text.
func TestStreamedReasoningIsKept(t *testing.T) {
	m := scripted.New(scripted.Script{"parent": steps(scripted.Step{Reasoning: "weighing options", Content: "pick A"})}, scripted.Options{})
	var kinds []llm.StreamEventType
	res, err := agent.Drain(newAgent(t, agent.Config{Model: m, Stream: true}).Run(t.Context(), agent.Prompt("go")), func(ev agent.Event) {
		if ev.Type == agent.ModelDelta {
			kinds = append(kinds, ev.Delta.Type)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	last := res.State.Messages[len(res.State.Messages)-1]
	if last.Content != "pick A" || last.ReasoningText() != "weighing options" || len(last.ReasoningFor("scripted")) != 1 {
		t.Errorf("final message %+v", last)
	}
	if len(kinds) < 2 || kinds[0] != llm.EventReasoningDelta || kinds[len(kinds)-1] != llm.EventTextDelta {
		t.Errorf("delta kinds %v", kinds)
	}
}
