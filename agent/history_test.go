package agent_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
)

func tcall(id, name, args string) llm.ToolCall {
	c := llm.ToolCall{ID: id, Name: name}
	if args != "" { // no arguments are nil, as llm.Clone makes them
		c.Args = json.RawMessage(args)
	}
	return c
}

// runWithHistory runs an agent that answers at once on history, and
// returns the messages its first request carried and the notice events.
func runWithHistory(t *testing.T, history []llm.Message) ([]llm.Message, []agent.NoticeInfo, *agent.Result) {
	t.Helper()
	m := scripted.New(scripted.Script{"parent": steps(scripted.Step{Content: "ok"})}, scripted.Options{})
	var notices []agent.NoticeInfo
	res, err := agent.Drain(newAgent(t, agent.Config{Model: m}).Run(t.Context(), agent.Input{Messages: history}), func(ev agent.Event) {
		if ev.Type == agent.Notice {
			notices = append(notices, *ev.Notice)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	recs := m.Records()
	if len(recs) != 1 {
		t.Fatalf("%d model calls", len(recs))
	}
	return recs[0].Request.Messages, notices, res
}

// Two calls and one result: the model's first request has a result for the
// other call right after the existing one, saying it never ran; one notice.
func TestDanglingCallGetsResultAfterTheExistingOnes(t *testing.T) {
	c1, c2 := tcall("c1", "read_file", `{"path":"/a"}`), tcall("c2", "write_file", `{"path":"/b","content":"x"}`)
	history := []llm.Message{
		llm.User("do it"),
		llm.Assistant("", c1, c2),
		llm.ToolResult(c1, "contents of a", false),
		llm.User("go on"),
	}
	orig := llm.Clone(history)
	sent, notices, res := runWithHistory(t, history)
	if len(sent) != 5 {
		t.Fatalf("%d messages sent, want 5: %+v", len(sent), sent)
	}
	if !reflect.DeepEqual(sent[:3], orig[:3]) || !reflect.DeepEqual(sent[4], orig[3]) {
		t.Errorf("the messages around the added result changed: %+v", sent)
	}
	added := sent[3]
	if added.Role != llm.RoleTool || added.ToolCallID != "c2" || added.Name != "write_file" || !added.IsError {
		t.Errorf("added message %+v, want an error result for c2 (write_file)", added)
	}
	if !strings.Contains(added.Content, "never ran") || strings.Contains(added.Content, "malformed") {
		t.Errorf("added result says %q, want that the call never ran", added.Content)
	}
	if len(notices) != 1 || notices[0].Count != 1 || notices[0].Source != "history" {
		t.Errorf("notices %+v, want one from history counting 1", notices)
	}
	if !reflect.DeepEqual(history, orig) {
		t.Error("the caller's history was changed")
	}
	if got := res.State.Messages[3]; got.ToolCallID != "c2" {
		t.Errorf("the run's state lacks the added result: %+v", got)
	}
}

// A call whose arguments are not valid JSON is answered with the
// malformed-arguments text.
func TestDanglingCallWithMalformedArguments(t *testing.T) {
	cut := tcall("c1", "write_file", `{"path":"/b","content":"half a`)
	sent, notices, _ := runWithHistory(t, []llm.Message{llm.User("go"), llm.Assistant("", cut)})
	if len(sent) != 3 || sent[2].ToolCallID != "c1" {
		t.Fatalf("sent %+v", sent)
	}
	if got := sent[2].Content; !strings.Contains(got, "could not run because its arguments were malformed or cut off") || strings.Contains(got, "never ran") {
		t.Errorf("result %q, want the malformed-arguments text", got)
	}
	if len(notices) != 1 || notices[0].Count != 1 {
		t.Errorf("notices %+v", notices)
	}
}

// A balanced history reaches the model unchanged and no notice is emitted.
func TestBalancedHistoryIsUntouched(t *testing.T) {
	c1, c2 := tcall("c1", "ls", `{}`), tcall("c2", "ls", `{"path":"/x"}`)
	history := []llm.Message{
		llm.User("list"),
		llm.Assistant("", c1, c2),
		llm.ToolResult(c2, "b", false), // results in any order
		llm.ToolResult(c1, "a", false),
		llm.Assistant("listed"),
		llm.User("thanks"),
	}
	sent, notices, _ := runWithHistory(t, history)
	if !reflect.DeepEqual(sent, history) {
		t.Errorf("sent %+v, want the history unchanged", sent)
	}
	if len(notices) != 0 {
		t.Errorf("notices %+v, want none", notices)
	}
}

func TestCloseDanglingCalls(t *testing.T) {
	a, b, c := tcall("a", "t", `{}`), tcall("b", "t", `{}`), tcall("c", "t", `{}`)
	cases := []struct {
		name string
		in   []llm.Message
		want []string // role:call id of each message out
		n    int
	}{
		{"empty", nil, nil, 0},
		{"no calls", []llm.Message{llm.User("hi"), llm.Assistant("hello")}, []string{"user:", "assistant:"}, 0},
		{"ends on calls", []llm.Message{llm.User("u"), llm.Assistant("", a, b)}, []string{"user:", "assistant:", "tool:a", "tool:b"}, 2},
		{"two turns, both short", []llm.Message{llm.Assistant("", a), llm.User("u"), llm.Assistant("", b, c), llm.ToolResult(c, "", false)},
			[]string{"assistant:", "tool:a", "user:", "assistant:", "tool:c", "tool:b"}, 2},
		{"result after another message does not count", []llm.Message{llm.Assistant("", a), llm.User("u"), llm.ToolResult(a, "", false)},
			[]string{"assistant:", "tool:a", "user:", "tool:a"}, 1},
		{"repeated id gets one result", []llm.Message{llm.Assistant("", a, a)}, []string{"assistant:", "tool:a"}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, n := agent.CloseDanglingCalls(tc.in)
			var got []string
			for _, m := range out {
				got = append(got, string(m.Role)+":"+m.ToolCallID)
			}
			if n != tc.n || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v (%d added), want %v (%d)", got, n, tc.want, tc.n)
			}
		})
	}
}

// Whatever the history, the result keeps every message in order, answers
// every call right after its message, adds exactly the count it reports, and
// a second pass changes nothing.
func FuzzCloseDanglingCalls(f *testing.F) {
	for _, s := range []string{"", "ua2t0u", "a2t1", "a3t2t0a1", "a1ua1t0", `a1"`, "t0a0"} {
		f.Add(s, `{"x":1}`)
	}
	f.Fuzz(func(t *testing.T, ops, args string) {
		var in []llm.Message
		id := 0
		for i := 0; i < len(ops) && len(in) < 64; i++ {
			switch ops[i] {
			case 'u':
				in = append(in, llm.User("u"))
			case 'a':
				n := 0
				if i+1 < len(ops) {
					n = int(ops[i+1]) % 4
					i++
				}
				var calls []llm.ToolCall
				for range n {
					calls = append(calls, tcall(string(rune('A'+id%26)), "t", args))
					id++
				}
				in = append(in, llm.Assistant("", calls...))
			case 't':
				k := 0
				if i+1 < len(ops) {
					k = int(ops[i+1])
					i++
				}
				in = append(in, llm.ToolResult(tcall(string(rune('A'+k%26)), "t", ""), "r", false))
			}
		}
		orig := llm.Clone(in)
		out, n := agent.CloseDanglingCalls(in)
		if !reflect.DeepEqual(in, orig) {
			t.Fatal("the input was changed")
		}
		if len(out) != len(in)+n {
			t.Fatalf("%d messages out of %d with %d added", len(out), len(in), n)
		}
		// Every input message is in the output, in order; the others are
		// added error results.
		j := 0
		for _, m := range out {
			if j < len(in) && reflect.DeepEqual(m, in[j]) {
				j++
				continue
			}
			if m.Role != llm.RoleTool || !m.IsError {
				t.Fatalf("an added message is not an error result: %+v", m)
			}
		}
		if j != len(in) {
			t.Fatalf("only %d of %d input messages kept in order", j, len(in))
		}
		for i, m := range out {
			if m.Role != llm.RoleAssistant {
				continue
			}
			got := map[string]bool{}
			for k := i + 1; k < len(out) && out[k].Role == llm.RoleTool; k++ {
				got[out[k].ToolCallID] = true
			}
			for _, c := range m.ToolCalls {
				if !got[c.ID] {
					t.Fatalf("call %s of message %d has no result after it", c.ID, i)
				}
			}
		}
		if again, m := agent.CloseDanglingCalls(out); m != 0 || !reflect.DeepEqual(again, out) {
			t.Fatalf("a second pass added %d", m)
		}
		if n == 0 && !reflect.DeepEqual(out, in) {
			t.Fatal("nothing added, yet the history changed")
		}
	})
}
