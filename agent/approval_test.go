package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/runner"
	"github.com/deepagents-go/deepagents/subagent"
	"github.com/deepagents-go/deepagents/tool"
)

func TestParseDecisions(t *testing.T) {
	cases := []struct {
		name, in string
		want     []agent.Decision
		err      string
	}{
		{name: "list", in: `[{"type":"approve","call_id":"c1"},{"type":"reject","call_id":"c2","message":"no"}]`,
			want: []agent.Decision{{Type: "approve", CallID: "c1"}, {Type: "reject", CallID: "c2", Message: "no"}}},
		{name: "langchain object", in: `{"decisions":[{"type":"edit","id":"c3","edited_action":{"name":"write_file","args":{"a":1}}}]}`,
			want: []agent.Decision{{Type: "edit", CallID: "c3", Args: json.RawMessage(`{"a":1}`), Tool: "write_file"}}},
		{name: "older clients say arguments", in: `[{"type":"edit","call_id":"c4","edited_action":{"arguments":{"b":2}}}]`,
			want: []agent.Decision{{Type: "edit", CallID: "c4", Args: json.RawMessage(`{"b":2}`)}}},
		{name: "path narrows", in: `[{"type":"approve","call_id":"c","path":"parent / general-purpose#t1"}]`,
			want: []agent.Decision{{Type: "approve", CallID: "c", Path: "parent / general-purpose#t1"}}},
		{name: "unknown type", in: `[{"type":"ignore","call_id":"c"}]`, err: `decision 1: decision type "ignore" is not one of approve, edit, reject, respond`},
		{name: "respond", in: `[{"type":"respond","call_id":"c","message":"42"}]`, want: []agent.Decision{{Type: "respond", CallID: "c", Message: "42"}}},
		{name: "respond without message", in: `[{"type":"respond","call_id":"c"}]`, err: `the respond to call "c" has no "message"`},
		{name: "no type", in: `[{"call_id":"c"}]`, err: `decision 1: the decision has no "type"`},
		{name: "no call id", in: `[{"type":"approve"}]`, err: "names no call_id"},
		{name: "edit without args", in: `[{"type":"edit","call_id":"c"}]`, err: `an edit of call "c" has no arguments`},
		{name: "edit with list args", in: `[{"type":"edit","call_id":"c","args":[1]}]`, err: "are not a JSON object"},
		{name: "edit with null args", in: `[{"type":"edit","call_id":"c","args":null}]`, err: "has no arguments"},
		{name: "object without list", in: `{"approve":"c"}`, err: `no "decisions" list`},
		{name: "not json", in: `approve c1`, err: "decisions:"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := agent.ParseDecisions([]byte(c.in))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			gb, _ := json.Marshal(got)
			wb, _ := json.Marshal(c.want)
			if string(gb) != string(wb) {
				t.Fatalf("got %s, want %s", gb, wb)
			}
		})
	}
}

// FuzzParseDecisions: any input is parsed or refused without a panic, and
// every decision accepted passes Check and survives a JSON round trip.
func FuzzParseDecisions(f *testing.F) {
	for _, s := range []string{`[]`, `[{"type":"approve","call_id":"c1"}]`, `{"decisions":[{"type":"edit","id":"x","edited_action":{"args":{}}}]}`,
		`[{"type":"reject","call_id":"c","message":"why"}]`, `{"decisions":null}`, `[null]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ds, err := agent.ParseDecisions(b)
		if err != nil {
			return
		}
		for _, d := range ds {
			if err := d.Check(); err != nil {
				t.Fatalf("accepted %+v fails Check: %v", d, err)
			}
		}
		enc, err := json.Marshal(ds)
		if err != nil {
			t.Fatal(err)
		}
		again, err := agent.ParseDecisions(enc)
		if err != nil || len(again) != len(ds) {
			t.Fatalf("round trip of %s: %v", enc, err)
		}
	})
}

// A gate on a name no tool has (a misspelling) is reported by a warning
// right after run.start, and the agent says which names those are.
func TestGateWithoutToolWarns(t *testing.T) {
	stepTools := agent.Middleware{Name: "late", StepTools: func(context.Context, agent.StepInfo) []tool.Tool { return nil }}
	for _, tc := range []struct {
		name  string
		gates map[string]agent.Approval
		mw    []agent.Middleware
		want  string
	}{
		{"misspelt", map[string]agent.Approval{"wirte": {}, "write": {}}, nil,
			"interrupt_on names wirte, which is not one of the agent's tools (write), so nothing waits for a decision on them"},
		{"two, with step tools", map[string]agent.Approval{"b": {}, "a": {}}, []agent.Middleware{stepTools},
			"interrupt_on names a, b, which are not among the agent's tools (write), so their calls wait only if a middleware adds a tool by that name for a step"},
		{"all bound", map[string]agent.Approval{"write": {}}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := scripted.New(scripted.Script{"parent": steps(scripted.Step{Content: "hi"})}, scripted.Options{})
			a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{writeTool}, InterruptOn: tc.gates, Middleware: tc.mw})
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

// Decisions that name no call answer the waiting calls at their positions,
// keeping a path they give; decisions that name a call are left alone; more
// unnamed decisions than waiting calls, or none waiting, are refused.
func TestDecisionsInOrder(t *testing.T) {
	waiting := []agent.Interrupt{{Path: "parent", CallID: "c1", Tool: "write_file"}, {Path: "parent / w#t1", CallID: "c1", Tool: "edit_file"}}
	raws := func(s ...string) []json.RawMessage {
		out := make([]json.RawMessage, len(s))
		for i, x := range s {
			out[i] = json.RawMessage(x)
		}
		return out
	}
	ds, err := agent.DecisionsInOrder(raws(`{"type":"approve"}`, `{"type":"reject","message":"no"}`), waiting)
	if err != nil || len(ds) != 2 || ds[0].CallID != "c1" || ds[0].Path != "parent" || ds[1].Path != "parent / w#t1" || ds[1].Type != agent.Reject {
		t.Fatalf("by position: %+v, %v", ds, err)
	}
	ds, err = agent.DecisionsInOrder(raws(`{"type":"approve","call_id":"c9","path":"x"}`, `{"type":"approve","path":"mine"}`), waiting)
	if err != nil || ds[0].CallID != "c9" || ds[0].Path != "x" || ds[1].CallID != "c1" || ds[1].Path != "mine" {
		t.Fatalf("named and given a path: %+v, %v", ds, err)
	}
	for _, c := range []struct {
		list    []json.RawMessage
		waiting []agent.Interrupt
		want    string
	}{
		{raws(`{"type":"approve"}`, `{"type":"approve"}`, `{"type":"approve"}`), waiting, "3 decisions for 2 waiting calls (write_file c1, edit_file c1)"},
		{raws(`{"type":"approve"}`), nil, "decision 1 names no call_id, and no call is waiting"},
		{raws(`[1]`), waiting, "decision 1 is not a JSON object"},
		{raws(`{"type":"maybe"}`), waiting, "decision 1"},
	} {
		if _, err := agent.DecisionsInOrder(c.list, c.waiting); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.list, err, c.want)
		}
	}
}

// FuzzDecisionsInOrder: any list is taken or refused without a panic, and
// every decision taken names a call and passes Check.
func FuzzDecisionsInOrder(f *testing.F) {
	for _, s := range []string{`[]`, `[{"type":"approve"}]`, `[{"type":"edit","args":{"a":1}},{"type":"approve","id":"x"}]`, `[null]`, `[{"type":"reject","path":""}]`} {
		f.Add([]byte(s))
	}
	waiting := []agent.Interrupt{{Path: "parent", CallID: "c1", Tool: "t"}, {Path: "parent", CallID: "c2", Tool: "t"}}
	f.Fuzz(func(t *testing.T, b []byte) {
		var list []json.RawMessage
		if json.Unmarshal(b, &list) != nil {
			return
		}
		ds, err := agent.DecisionsInOrder(list, waiting)
		if err != nil {
			return
		}
		if len(ds) != len(list) {
			t.Fatalf("%d decisions for %d given", len(ds), len(list))
		}
		for _, d := range ds {
			if err := d.Check(); err != nil || d.CallID == "" {
				t.Fatalf("taken %+v: %v", d, err)
			}
		}
	})
}

// Calls that wait for a person in parallel subagents are listed in the
// order of the task calls that started them, however the subagents were
// scheduled: the first task's subagent is the slower one here.
func TestSubagentsWaitingCallsAreInCallOrder(t *testing.T) {
	write := tool.MustFunc("write", "Write a file.", func(ctx context.Context, env *tool.Env, in writeIn) (string, error) {
		return "wrote " + in.Path, env.Files.Write(ctx, in.Path, in.Content)
	})
	slow := 40.0
	task := func(id, name string) scripted.StepCall {
		return scripted.StepCall{ID: id, Name: "task", Args: json.RawMessage(`{"description":"write","subagent_type":"` + name + `"}`)}
	}
	wr := func(id, path string) scripted.StepCall {
		return scripted.StepCall{ID: id, Name: "write", Args: json.RawMessage(`{"path":"` + path + `","content":"x"}`)}
	}
	m := scripted.New(scripted.Script{
		"parent": steps(scripted.Step{ToolCalls: []scripted.StepCall{task("t1", "slow"), task("t2", "quick")}}, scripted.Step{Content: "done"}),
		"slow":   steps(scripted.Step{DelayMS: &slow, ToolCalls: []scripted.StepCall{wr("s1", "/s.md")}}, scripted.Step{Content: "s"}),
		"quick":  steps(scripted.Step{ToolCalls: []scripted.StepCall{wr("q1", "/q.md")}}, scripted.Step{Content: "q"}),
	}, scripted.Options{})
	gates := map[string]agent.Approval{"write": {}}
	tk, err := subagent.NewTask(subagent.Config{Model: m, InterruptOn: gates, Subagents: []subagent.Spec{
		{Name: "slow", Description: "Writes slowly.", Tools: []tool.Tool{write}},
		{Name: "quick", Description: "Writes.", Tools: []tool.Tool{write}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{tk}, InterruptOn: gates})
	res, err := a.Invoke(t.Context(), agent.Prompt("go"), runner.Checkpoints(checkpoint.NewMemory(0), "T"))
	if !errors.Is(err, agent.ErrInterrupted) {
		t.Fatalf("run: %v", err)
	}
	var got []string
	for _, in := range res.Interrupts {
		got = append(got, in.CallID)
	}
	if want := []string{"s1", "q1"}; !slices.Equal(got, want) {
		t.Errorf("waiting calls %v, want %v (the task calls' order)", got, want)
	}
}
