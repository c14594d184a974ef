package compact_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/compact"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/runner"
	"github.com/deepagents-go/deepagents/tool"
)

func summarizerInputs(m *scripted.Model) []string {
	var out []string
	for _, r := range m.Records() {
		if r.Who == compact.SummarizerAgent {
			out = append(out, r.Request.Messages[0].Content)
		}
	}
	return out
}

// PreCompact sees the cut and adds instructions to the summariser's input;
// PostCompact gets the summary made and the compaction's numbers.
func TestPreAndPostCompactHooks(t *testing.T) {
	var cuts []compact.Cut
	var dones []compact.Compacted
	cfg := compact.Config{TriggerTokens: 250, KeepMessages: 2,
		PreCompact: func(_ context.Context, c compact.Cut) (string, error) {
			cuts = append(cuts, c)
			return "Keep every query string exactly.", nil
		},
		PostCompact: func(_ context.Context, d compact.Compacted) { dones = append(dones, d) },
	}
	r := runAgent(t, scripted.Script{
		"parent":     steps(batch(0, 1), batch(1, 1), batch(2, 1), scripted.Step{Content: "done"}),
		"summarizer": steps(scripted.Step{Content: "summary: src/a.go, 30 s, queries r0-0 r1-0"}),
	}, cfg, "")
	if r.err != nil {
		t.Fatal(r.err)
	}
	cs := compactions(r.events)
	if len(cs) != 1 || len(cuts) != 1 || len(dones) != 1 {
		t.Fatalf("%d compactions, %d PreCompact calls, %d PostCompact calls; want 1 each", len(cs), len(cuts), len(dones))
	}
	c := cuts[0]
	if c.Agent != "parent" || c.Trigger != "auto" || c.TokensBefore != cs[0].TokensBefore || len(c.Summarised) != cs[0].Evicted ||
		c.Summarised[0].Role != llm.RoleUser || len(c.Kept) == 0 || c.Kept[0].Role != llm.RoleAssistant || c.PreviousSummary != "" {
		t.Fatalf("cut %+v (event %+v)", c, cs[0])
	}
	in := summarizerInputs(r.model)
	if len(in) != 1 || !strings.HasPrefix(in[0], "Give most room in the summary to what concerns this: Keep every query string exactly.") {
		t.Fatalf("summariser input: %q", in)
	}
	d := dones[0]
	st, _, _ := agent.GetValue[compact.State](&r.res.State, compact.StateKey)
	if d.Agent != "parent" || d.Trigger != "auto" || d.Summary != st.Summary || d.Info.TokensAfter != cs[0].TokensAfter ||
		d.Info.File != st.File || len(d.Summarised) != cs[0].Evicted {
		t.Fatalf("PostCompact got %+v; event %+v, state summary %q", d, cs[0], st.Summary)
	}
}

// A PreCompact error vetoes the compaction, whatever its trigger: nothing
// is summarised, the end event says why, and no failure is counted.
func TestPreCompactVeto(t *testing.T) {
	no := errors.New("the audit needs the full history")
	veto := func(context.Context, compact.Cut) (string, error) { return "", no }
	manual := scripted.Step{ToolCalls: []scripted.StepCall{{ID: "k", Name: compact.ToolName, Args: json.RawMessage(`{}`)}}}
	overflow := scripted.Step{Error: "context_length_exceeded: the prompt is too long for this model"}
	for _, tc := range []struct {
		name    string
		cfg     compact.Config
		parent  []scripted.Step
		wantErr bool
	}{
		{"auto", compact.Config{TriggerTokens: 250, KeepMessages: 2},
			[]scripted.Step{batch(0, 1), batch(1, 1), batch(2, 1), scripted.Step{Content: "done"}}, false},
		{"overflow", compact.Config{KeepMessages: 2},
			[]scripted.Step{batch(0, 1), batch(1, 1), overflow, scripted.Step{Content: "done"}}, true},
		{"manual", compact.Config{TriggerTokens: 400, KeepMessages: 2, Tool: true},
			[]scripted.Step{batch(0, 1), batch(1, 1), manual, scripted.Step{Content: "done"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.PreCompact = veto
			posts := 0
			cfg.PostCompact = func(context.Context, compact.Compacted) { posts++ }
			r := runAgent(t, scripted.Script{
				"parent":     steps(tc.parent...),
				"summarizer": steps(scripted.Step{Content: "summary"}),
			}, cfg, "")
			if tc.wantErr != (r.err != nil) {
				t.Fatalf("run error %v, want one: %v", r.err, tc.wantErr)
			}
			if tc.wantErr && !strings.Contains(r.err.Error(), "context_length_exceeded") {
				t.Fatalf("the overflow's error should stand: %v", r.err)
			}
			if in := summarizerInputs(r.model); len(in) != 0 || posts != 0 {
				t.Fatalf("vetoed, yet %d summariser calls and %d PostCompact calls", len(in), posts)
			}
			cs := compactions(r.events)
			if len(cs) == 0 {
				t.Fatal("no compaction.end event for the veto")
			}
			for _, c := range cs {
				if !strings.Contains(c.Error, "PreCompact declined this compaction: the audit needs the full history") || c.Evicted != 0 {
					t.Fatalf("end event %+v", c)
				}
			}
			st, _, _ := agent.GetValue[compact.State](&r.res.State, compact.StateKey)
			if st.Summary != "" || st.Failures != 0 || st.Count != 0 {
				t.Fatalf("state after a veto %+v", st)
			}
			if tc.name == "manual" {
				for _, msg := range r.res.State.Messages {
					if msg.ToolCallID == "k" && !strings.HasPrefix(msg.Content, "Not compacted: the audit needs the full history") {
						t.Fatalf("tool answer %q", msg.Content)
					}
				}
			}
		})
	}
}

// Compact (the CLI's /compact) asks PreCompact too, with the person's
// focus, and a veto is ErrVetoed; PostCompact is called when the summary
// is made.
func TestCompactAsksTheHooks(t *testing.T) {
	m := scripted.New(scripted.Script{
		"parent":     steps(batch(0, 1), batch(1, 1), batch(2, 1), scripted.Step{Content: "done"}),
		"summarizer": steps(scripted.Step{Content: "summary of src/a.go, 30 s"}),
	}, scripted.Options{})
	mw, _ := compact.New(compact.Config{KeepMessages: 2})
	a, _ := agent.New(agent.Config{Model: m, Tools: []tool.Tool{echo}, Middleware: []agent.Middleware{mw}})
	saver := checkpoint.NewMemory(0)
	if _, err := a.Invoke(t.Context(), agent.Prompt("Please edit src/a.go and keep the limit at 30 s."), runner.Checkpoints(saver, "h")); err != nil {
		t.Fatal(err)
	}
	rs, err := runner.LoadRunState(t.Context(), saver, "h", agent.RootPath("parent"), false)
	if err != nil {
		t.Fatal(err)
	}
	var focus string
	cfg := compact.Config{KeepMessages: 2, Model: m, PreCompact: func(_ context.Context, c compact.Cut) (string, error) {
		focus = c.Focus
		return "", errors.New("not now")
	}}
	if _, err := compact.Compact(t.Context(), cfg, rs, "the limits"); !errors.Is(err, compact.ErrVetoed) || !strings.Contains(err.Error(), "not now") {
		t.Fatalf("vetoed Compact: %v", err)
	}
	if focus != "the limits" {
		t.Fatalf("PreCompact saw focus %q", focus)
	}
	var post *compact.Compacted
	cfg.PreCompact = nil
	cfg.PostCompact = func(_ context.Context, d compact.Compacted) { post = &d }
	man, err := compact.Compact(t.Context(), cfg, rs, "the limits")
	if err != nil {
		t.Fatal(err)
	}
	if post == nil || post.Trigger != "manual" || post.Summary != "summary of src/a.go, 30 s" || post.Info.TokensAfter != man.Info().TokensAfter {
		t.Fatalf("PostCompact got %+v", post)
	}
}
