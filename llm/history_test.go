package llm_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/llm"
)

func tcall(id, name, args string) llm.ToolCall {
	c := llm.ToolCall{ID: id, Name: name}
	if args != "" { // no arguments are nil, as llm.Clone makes them
		c.Args = json.RawMessage(args)
	}
	return c
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
			out, n := llm.CloseDanglingCalls(tc.in)
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
		out, n := llm.CloseDanglingCalls(in)
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
		if again, m := llm.CloseDanglingCalls(out); m != 0 || !reflect.DeepEqual(again, out) {
			t.Fatalf("a second pass added %d", m)
		}
		if n == 0 && !reflect.DeepEqual(out, in) {
			t.Fatal("nothing added, yet the history changed")
		}
	})
}

// A reply that holds only reasoning has no text: it is never the final text.
func TestLastTextSkipsReasoningOnly(t *testing.T) {
	withText := llm.NewMessage(llm.RoleAssistant, llm.ReasoningPart("thinking", nil), llm.TextPart("the answer"))
	onlyReasoning := llm.NewMessage(llm.RoleAssistant, llm.ReasoningPart("more thinking, no answer", nil))
	cases := []struct {
		name string
		msgs []llm.Message
		want string
	}{
		{"reasoning after text", []llm.Message{llm.User("q"), withText, onlyReasoning}, "the answer"},
		{"reasoning only", []llm.Message{llm.User("q"), onlyReasoning}, ""},
	}
	for _, tc := range cases {
		if got := llm.LastText(tc.msgs); got != tc.want || strings.Contains(got, "thinking") {
			t.Errorf("%s: LastText %q, want %q", tc.name, got, tc.want)
		}
	}
}
