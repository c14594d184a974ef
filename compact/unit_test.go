package compact

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
)

func TestFacts(t *testing.T) {
	for _, tc := range []struct {
		text string
		want []string
	}{
		{"Please edit src/a.go and keep the limit at 30 s.", []string{"src/a.go", "30 s"}},
		{"See https://example.com/docs/x?y=1, then fix main.go.", []string{"https://example.com/docs/x?y=1", "main.go"}},
		{`Set MAX_RETRIES to 5 and the title to "Quarterly report".`, []string{"Quarterly report", "MAX_RETRIES"}},
		{"Budget: 2.5GB of RAM and 80% CPU, e.g. on /srv/app.", []string{"/srv/app", "2.5GB", "80%"}},
		{"nothing to keep here", nil},
		{"use `go test -race` on pkg/x", []string{"pkg/x", "go test -race"}},
	} {
		if got := Facts(tc.text); !slices.Equal(got, tc.want) {
			t.Errorf("Facts(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}

func FuzzFacts(f *testing.F) {
	f.Add("Please edit src/a.go and keep the limit at 30 s.")
	f.Add(`see "x" and https://a.b/c and FOO_BAR 12 MB`)
	f.Add("\xff/\xfe.go")
	f.Fuzz(func(t *testing.T, text string) {
		facts := Facts(text)
		if len(facts) > maxFacts {
			t.Fatalf("%d facts", len(facts))
		}
		seen := map[string]bool{}
		for _, f := range facts {
			if seen[f] {
				t.Fatalf("%q twice", f)
			}
			seen[f] = true
			if strings.TrimSpace(f) != f || f == "" {
				t.Fatalf("fact %q has spaces around it", f)
			}
			// Every fact is in the text as written (quoted ones without
			// their quotes), so a summary can quote it.
			if !strings.Contains(text, f) {
				t.Fatalf("fact %q is not in %q", f, text)
			}
		}
	})
}

func call(id string) llm.ToolCall {
	return llm.ToolCall{ID: id, Name: "t", Args: json.RawMessage(`{}`)}
}

func TestKeepFromNeverSplitsABatch(t *testing.T) {
	msgs := []llm.Message{
		llm.User("go"),                          // 0
		llm.Assistant("", call("a"), call("b")), // 1
		llm.ToolResult(call("a"), "ra", false),  // 2
		llm.ToolResult(call("b"), "rb", false),  // 3
		llm.Assistant("", call("c")),            // 4
		llm.ToolResult(call("c"), "rc", false),  // 5
		llm.Assistant("done"),                   // 6
		llm.User("more"),                        // 7
		llm.Assistant("", call("d"), call("e")), // 8
		llm.ToolResult(call("d"), "rd", false),  // 9
		llm.ToolResult(call("e"), "re", false),  // 10
	}
	for _, tc := range []struct {
		keep, start, want int
	}{
		{1, 0, 8}, {2, 0, 8}, {3, 0, 8}, {4, 0, 7}, {5, 0, 6}, {6, 0, 4}, {7, 0, 4}, {8, 0, 1}, {9, 0, 1},
		{10, 0, 1}, {11, 0, 0}, {20, 0, 0}, {9, 1, 1},
	} {
		if got := keepFrom(msgs, tc.start, Config{KeepMessages: tc.keep}); got != tc.want {
			t.Errorf("keep %d from %d: cut %d, want %d", tc.keep, tc.start, got, tc.want)
		}
	}
	// Without a window the last 6 are kept (moved back to the batch).
	if got := keepFrom(msgs, 0, Config{}); got != 4 {
		t.Errorf("default keep: cut %d, want 4", got)
	}
	// With a window, the newest tenth of it.
	long := slices.Clone(msgs)
	long[5].Content = strings.Repeat("x", 4000)
	if got := keepFrom(long, 0, Config{Window: 2000}); got != 6 {
		t.Errorf("window keep: cut %d, want 6", got)
	}
}

func TestBalance(t *testing.T) {
	bad := llm.ToolCall{ID: "x", Name: "t", Args: json.RawMessage(`{"a":`)}
	for _, tc := range []struct {
		name string
		in   []llm.Message
		want []string // role:id:text-prefix
	}{
		{"balanced", []llm.Message{llm.User("u"), llm.Assistant("", call("a")), llm.ToolResult(call("a"), "r", false)},
			[]string{"user::u", "assistant::", "tool:a:r"}},
		{"two calls one result", []llm.Message{llm.Assistant("", call("a"), call("b")), llm.ToolResult(call("b"), "r", false), llm.User("next")},
			[]string{"assistant::", "tool:b:r", "tool:a:This tool call did not run", "user::next"}},
		{"malformed call", []llm.Message{llm.Assistant("", bad)},
			[]string{"assistant::", "tool:x:This tool call could not run: its arguments were malformed"}},
		{"orphan result", []llm.Message{llm.User("s"), llm.ToolResult(call("z"), "r", false), llm.User("u")},
			[]string{"user::s", "user::u"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := balance(tc.in)
			var got []string
			for _, m := range out {
				got = append(got, fmt.Sprintf("%s:%s:%s", m.Role, m.ToolCallID, m.Content))
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %q", got)
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tc.want[i]) {
					t.Fatalf("message %d: %q, want %q…", i, got[i], tc.want[i])
				}
			}
			if tc.name == "balanced" && &out[0] != &tc.in[0] {
				t.Fatal("a balanced history was copied")
			}
		})
	}
}

// Whatever the history, balance leaves it balanced and keeps every
// non-tool message in order.
func FuzzBalance(f *testing.F) {
	f.Add([]byte("uacrrtu"))
	f.Add([]byte("rrac"))
	f.Add([]byte("acacrr"))
	f.Fuzz(func(t *testing.T, shape []byte) {
		var msgs []llm.Message
		id := 0
		for i, b := range shape {
			switch b % 4 {
			case 0:
				msgs = append(msgs, llm.User(fmt.Sprint(i)))
			case 1:
				id++
				msgs = append(msgs, llm.Assistant("", call(fmt.Sprint(id)), call(fmt.Sprint(id+1))))
				id++
			case 2:
				msgs = append(msgs, llm.ToolResult(call(fmt.Sprint(int(b)%(id+2))), "r", false))
			case 3:
				msgs = append(msgs, llm.Assistant(fmt.Sprint(i)))
			}
		}
		out := balance(msgs)
		if !balanced(out) {
			t.Fatalf("unbalanced: %+v", out)
		}
		keep := func(ms []llm.Message) []string {
			var s []string
			for _, m := range ms {
				if m.Role != llm.RoleTool {
					s = append(s, string(m.Role)+m.Content)
				}
			}
			return s
		}
		if !slices.Equal(keep(msgs), keep(out)) {
			t.Fatal("non-tool messages changed")
		}
	})
}

func TestIsOverflow(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&llm.APIError{Kind: llm.ErrKindContextLength, Provider: "openai"}, true},
		{&llm.APIError{Kind: llm.ErrKindBadRequest, StatusCode: 400, Message: "prompt is too long: 210000 tokens > 200000 maximum"}, true},
		{&llm.APIError{Kind: llm.ErrKindBadRequest, StatusCode: 413, Message: "request exceeds the limit"}, true},
		{&llm.APIError{Kind: llm.ErrKindBadRequest, StatusCode: 400, Message: "invalid tool name"}, false},
		{&llm.APIError{Kind: llm.ErrKindRateLimit, StatusCode: 429, Message: "too many tokens per minute; context"}, false},
		{fmt.Errorf("call: %w", errors.New("context_length_exceeded: the prompt is too long")), true},
		{errors.New("context deadline exceeded"), false},
		{errors.New("server error"), false},
		{nil, false},
	} {
		if got := IsOverflow(tc.err); got != tc.want {
			t.Errorf("IsOverflow(%v) = %v", tc.err, got)
		}
	}
}

func TestShortenArgs(t *testing.T) {
	long := strings.Repeat("é", 1500) // 3,000 bytes
	args, _ := json.Marshal(map[string]string{"file_path": "/a.txt", "content": long})
	msgs := []llm.Message{llm.Assistant("", llm.ToolCall{ID: "w", Name: "write_file", Args: args}),
		llm.Assistant("", llm.ToolCall{ID: "o", Name: "other", Args: args})}
	out := shortenArgs(msgs)
	var got map[string]string
	if err := json.Unmarshal(out[0].ToolCalls[0].Args, &got); err != nil {
		t.Fatal(err)
	}
	if got["file_path"] != "/a.txt" || got["content"] != strings.Repeat("é", 10)+"...(argument truncated)" || !utf8.ValidString(got["content"]) {
		t.Fatalf("args %v", got)
	}
	if string(out[1].ToolCalls[0].Args) != string(args) || string(msgs[0].ToolCalls[0].Args) != string(args) {
		t.Fatal("another tool's arguments, or the original message, changed")
	}
}

// Applying the same state twice (the middleware bound twice) changes the
// request once.
func TestApplyIsIdempotent(t *testing.T) {
	msgs := []llm.Message{llm.User("a"), llm.Assistant("b"), llm.User("c"), llm.Assistant("d")}
	s := State{Summary: "sum", Cutoff: 2, File: "/conversation_history/x.md"}
	req := &llm.Request{Messages: msgs}
	apply(s, req)
	apply(s, req)
	if len(req.Messages) != 3 || !IsSummary(req.Messages[0]) || req.Messages[1].Content != "c" {
		t.Fatalf("%+v", req.Messages)
	}
	if !strings.Contains(req.Messages[0].Content, "/conversation_history/x.md") || !strings.Contains(req.Messages[0].Content, "<summary>\nsum\n</summary>") {
		t.Fatalf("summary message %q", req.Messages[0].Content)
	}
}

func TestAlignedMapsToTheRunsMessages(t *testing.T) {
	raw := []llm.Message{llm.User("a"), llm.Assistant("", call("x")), llm.User("b"), llm.Assistant("c")}
	prior := State{Summary: "s", Cutoff: 1}
	view := []llm.Message{summaryMessage(prior), raw[1], llm.ToolResult(call("x"), cancelledText, true), raw[2], raw[3]}
	got := aligned(prior, view, raw)
	if len(got) != 4 || got[1].Role != llm.RoleAssistant || got[2].Content != "b" {
		t.Fatalf("balanced view not realigned: %+v", got)
	}
	ok := []llm.Message{summaryMessage(prior), raw[1], raw[2], raw[3]}
	if got := aligned(prior, ok, raw); &got[0] != &ok[0] {
		t.Fatal("an aligned view was rebuilt")
	}
	if got := aligned(State{}, raw[:2], raw); len(got) != 4 {
		t.Fatalf("without a summary the run's messages are used: %d", len(got))
	}
}

func TestSessionIDIsPerAgentInstance(t *testing.T) {
	msgs := []llm.Message{llm.User("task one")}
	a := sessionID("parent / researcher#call_1", msgs)
	if a != sessionID("parent / researcher#call_1", msgs) {
		t.Fatal("not stable")
	}
	if a == sessionID("parent / researcher#call_2", msgs) || a == sessionID("parent / researcher#call_1", []llm.Message{llm.User("task two")}) {
		t.Fatal("two instances share a history file")
	}
	if len(a) != len("session_")+32 || !strings.HasPrefix(a, "session_") || strings.Trim(a[8:], "0123456789abcdef") != "" {
		t.Fatalf("session id %q", a)
	}
}

func TestOffloadedFilesAndTodos(t *testing.T) {
	msgs := []llm.Message{
		llm.User("saved to /conversation_history/ab12.md."),
		llm.ToolResult(call("r"), "Output saved to /large_tool_results/call_7; read it with read_file.", false),
		llm.Assistant("", llm.ToolCall{ID: "q", Name: "read_file", Args: json.RawMessage(`{"file_path":"/large_tool_results/call_7"}`)}),
	}
	got := offloadedFiles([]string{"/large_tool_results/old"}, msgs, "/conversation_history/session_x.md")
	if want := []string{"/large_tool_results/old", "/conversation_history/ab12.md", "/large_tool_results/call_7"}; !slices.Equal(got, want) {
		t.Fatalf("offloaded %q, want %q", got, want)
	}
	for _, tc := range []struct{ raw, want string }{
		{`[{"content":"a","status":"completed"},{"content":"b","status":"in_progress"},{"content":"c","status":"pending"}]`, "[x] a\n[~] b\n[ ] c"},
		{`{"todos":[{"content":"a","status":"pending"}]}`, "[ ] a"},
		{`"free text"`, `"free text"`},
	} {
		st := &agentState{Values: map[string]json.RawMessage{"todos": json.RawMessage(tc.raw)}}
		if got := todoText(st); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.raw, got, tc.want)
		}
	}
	if todoText(&agentState{}) != "" {
		t.Error("no list, yet a block")
	}
}

type agentState = agent.State
