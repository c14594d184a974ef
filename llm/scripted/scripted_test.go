package scripted

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/llm"
)

func ctxFor(agent, instance, task string) context.Context {
	return llm.WithCallInfo(context.Background(), llm.CallInfo{Agent: agent, Instance: instance, Task: task})
}

func TestScriptJSONForms(t *testing.T) {
	var s Script
	doc := `{"parent":[{"content":"a"},{"tool_calls":[{"name":"ls"}]}],"helper":{"cases":[{"match":"A","steps":[{"content":"A!"}]},{"steps":[{"content":"other"}]}]}}`
	if err := json.Unmarshal([]byte(doc), &s); err != nil {
		t.Fatal(err)
	}
	if len(s["parent"].Steps) != 2 || len(s["helper"].Cases) != 2 {
		t.Fatalf("parsed %+v", s)
	}
	out, _ := json.Marshal(s)
	var back Script
	if err := json.Unmarshal(out, &back); err != nil || len(back["helper"].Cases) != 2 {
		t.Errorf("round trip: %v %s", err, out)
	}
	if err := json.Unmarshal([]byte(`{"parent":{"steps":[]}}`), &s); err == nil {
		t.Error("an object without cases must be rejected")
	}
}

func TestStepsPerInstanceAndCases(t *testing.T) {
	m := New(Script{
		"parent": {Steps: []Step{{Content: "p0"}, {Content: "p1"}}},
		"helper": {Cases: []Case{{Match: "Topic A", Steps: []Step{{Content: "a0"}, {Content: "a1"}}}, {Steps: []Step{{Content: "x0"}}}}},
	}, Options{})
	req := &llm.Request{Messages: []llm.Message{llm.User("hi")}}
	ask := func(ctx context.Context) string {
		r, err := m.Generate(ctx, req)
		if err != nil {
			return "error: " + err.Error()
		}
		return r.Message.Content
	}
	got := []string{
		ask(context.Background()),
		ask(ctxFor("helper", "c1", "Topic A please")),
		ask(ctxFor("helper", "c2", "something else")),
		ask(ctxFor("helper", "c1", "Topic A please")),
		ask(context.Background()),
		ask(ctxFor("helper", "c2", "something else")),
	}
	want := []string{"p0", "a0", "x0", "a1", "p1",
		`error: scripted model: the script ran out: agent "helper" (instance c2) case 1 has no step for round 1 (it has 1)`}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("call %d = %q, want %q", i, got[i], want[i])
		}
	}
	recs := m.Records()
	if len(recs) != 6 || recs[1].Case != 0 || recs[2].Case != 1 || recs[3].Round != 1 || recs[0].Who != "parent" {
		t.Errorf("records: %+v", recs)
	}
	if _, err := m.Generate(ctxFor("nobody", "", ""), req); err == nil || !strings.Contains(err.Error(), `no replies for agent "nobody"`) {
		t.Errorf("unknown agent: %v", err)
	}
	if _, err := m.Generate(ctxFor("helper", "c9", ""), &llm.Request{}); err != nil {
		t.Errorf("the default case matches any task: %v", err)
	}
}

func TestGeneratedIDsUsageAndErrors(t *testing.T) {
	m := New(Script{"parent": {Steps: []Step{
		{Content: "x", ToolCalls: []StepCall{{Name: "ls"}, {ID: "mine", Name: "grep", Args: json.RawMessage(`{"pattern":"a"}`)}}},
		{Error: "boom"},
	}}}, Options{})
	req := &llm.Request{System: "sys", Messages: []llm.Message{llm.User("hello there")}, Tools: []llm.ToolSpec{{Name: "ls", Description: "d", Parameters: json.RawMessage(`{}`)}}}
	r, err := m.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	c := r.Message.ToolCalls
	if c[0].ID != "call_parent_0_r0_0" || string(c[0].Args) != "{}" || c[1].ID != "mine" || r.StopReason != llm.StopToolCalls {
		t.Errorf("calls %+v", c)
	}
	if r.Usage.InputTokens < 10 || r.Usage.OutputTokens == 0 {
		t.Errorf("usage %+v", r.Usage)
	}
	if _, err := m.Generate(context.Background(), req); err == nil || err.Error() != "boom" {
		t.Errorf("error step: %v", err)
	}
	if recs := m.Records(); recs[1].Err != "boom" {
		t.Errorf("error not recorded: %+v", recs[1])
	}
}

func TestDelayConcurrencyAndCancel(t *testing.T) {
	m := New(Script{"helper": {Steps: []Step{{Content: "ok"}}}}, Options{Delay: 50 * time.Millisecond})
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = m.Generate(ctxFor("helper", string(rune('a'+i)), ""), &llm.Request{})
		}()
	}
	wg.Wait()
	if m.MaxConcurrent() != 3 {
		t.Errorf("max concurrent = %d", m.MaxConcurrent())
	}
	ctx, cancel := context.WithCancel(ctxFor("helper", "z", ""))
	cancel()
	if _, err := m.Generate(ctx, &llm.Request{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call: %v", err)
	}
	m.Reset()
	if len(m.Records()) != 0 || m.MaxConcurrent() != 0 {
		t.Error("Reset keeps records")
	}
}

func TestStreamChunksReassemble(t *testing.T) {
	text := "A reply long enough to arrive in several pieces — ünïcödé too."
	m := New(Script{"parent": {Steps: []Step{{Content: text, ToolCalls: []StepCall{{ID: "1", Name: "write", Args: json.RawMessage(`{"path":"/ä","content":"ok"}`)}}}}}}, Options{NoUsage: true})
	n := 0
	var acc llm.Accumulator
	var resp *llm.Response
	for ev, err := range m.Stream(context.Background(), &llm.Request{}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		if r := acc.Add(ev); r != nil {
			resp = r
		}
	}
	partial := acc.Partial()
	if n < 6 || resp == nil || partial.Message.Content != text || string(partial.Message.ToolCalls[0].Args) != `{"path":"/ä","content":"ok"}` {
		t.Errorf("%d events, partial %+v", n, partial.Message)
	}
}

// Empty scripts are valid: they fail at the first model call, with an error
// naming the agent, the instance and the round.
func TestEmptyScriptsFailAtTheFirstCall(t *testing.T) {
	cases := []struct {
		name, doc, agent, instance, task, want string
	}{
		{"empty steps", `{"w": []}`, "w", "c1", "anything",
			`scripted model: the script ran out: agent "w" (instance c1) has no step for round 0 (it has 0)`},
		{"case with empty steps", `{"w": {"cases": [{"match": "A", "steps": []}, {"steps": [{"content": "x"}]}]}}`, "w", "c2", "job A",
			`scripted model: the script ran out: agent "w" (instance c2) case 0 has no step for round 0 (it has 0)`},
		{"no cases", `{"w": {"cases": []}}`, "w", "c3", "job B",
			`scripted model: no case of agent "w" matches its task "job B"`},
		{"empty parent", `{"parent": []}`, "parent", "", "hi",
			`scripted model: the script ran out: agent "parent" has no step for round 0 (it has 0)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var s Script
			if err := json.Unmarshal([]byte(c.doc), &s); err != nil {
				t.Fatalf("an empty script must be valid: %v", err)
			}
			m := New(s, Options{})
			_, err := m.Generate(ctxFor(c.agent, c.instance, c.task), &llm.Request{Messages: []llm.Message{llm.User(c.task)}})
			if err == nil || err.Error() != c.want {
				t.Errorf("error %v, want %q", err, c.want)
			}
			if recs := m.Records(); len(recs) != 1 || recs[0].Round != 0 || recs[0].Err == "" {
				t.Errorf("the failed call must be recorded as round 0 with its error: %+v", recs)
			}
		})
	}
}

// The system prompt's changing tail is recorded with the request and
// counted in the input tokens as a provider without breakpoints sends it:
// after the static prompt and a blank line.
func TestSystemTailCountedAndRecorded(t *testing.T) {
	usage := func(req *llm.Request) (int, *Model) {
		t.Helper()
		m := New(Script{"parent": {Steps: []Step{{Content: "ok"}}}}, Options{})
		r, err := m.Generate(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		return r.Usage.InputTokens, m
	}
	msgs := []llm.Message{llm.User("hello")}
	tail := "<current_todos>\n[ ] Write the parser\n</current_todos>"
	plain, _ := usage(&llm.Request{System: "sys", Messages: msgs})
	withTail, m := usage(&llm.Request{System: "sys", SystemTail: tail, Messages: msgs})
	joined, _ := usage(&llm.Request{System: "sys\n\n" + tail, Messages: msgs})
	if withTail <= plain || withTail != joined {
		t.Fatalf("input tokens: plain %d, with tail %d, joined %d", plain, withTail, joined)
	}
	if got := m.Records()[0].Request.SystemTail; got != tail {
		t.Fatalf("recorded tail %q", got)
	}
	blank, _ := usage(&llm.Request{System: "sys", SystemTail: "  ", Messages: msgs})
	if blank != plain {
		t.Fatalf("a blank tail counted: %d vs %d", blank, plain)
	}
}
