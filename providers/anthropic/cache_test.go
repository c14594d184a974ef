package anthropic

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	at "github.com/deepagents-go/deepagents/providers/anthropic/anthropictest"
	"github.com/deepagents-go/deepagents/todos"
)

const todoTail = "<current_todos>\n[ ] Write the parser\n</current_todos>"

// The changing tail of the system prompt is a second system block; the
// static block and the tail each carry a breakpoint, the conversation keeps
// its two, and the request stays within the API's four.
func TestSystemTailIsASecondBlock(t *testing.T) {
	cases := []struct {
		name string
		req  *llm.Request
		edit func(*Config)
		sys  []string
		bp   []string
	}{
		{"static and tail", &llm.Request{System: "sys", SystemTail: todoTail, Messages: conversation(), Tools: specs}, nil,
			[]string{"sys", todoTail}, []string{"system[0]", "system[1]", "messages[4].content[0]", "messages[6].content[0]"}},
		{"tail only", &llm.Request{SystemTail: todoTail, Messages: conversation(), Tools: specs}, nil,
			[]string{todoTail}, []string{"tools[2]", "system[0]", "messages[4].content[0]", "messages[6].content[0]"}},
		{"blank tail", &llm.Request{System: "sys", SystemTail: " \n", Messages: conversation(), Tools: specs}, nil,
			[]string{"sys"}, []string{"system[0]", "messages[4].content[0]", "messages[6].content[0]"}},
		{"structured with tail", &llm.Request{System: "sys", SystemTail: todoTail, Messages: conversation(), Tools: specs,
			Response: &llm.ResponseSchema{Name: "answer", Schema: json.RawMessage(`{"type":"object"}`)}},
			func(c *Config) { c.StructuredOutput = StructuredTool },
			[]string{"sys", todoTail}, []string{"system[0]", "system[1]", "messages[4].content[0]", "messages[6].content[0]"}},
		{"no cache", &llm.Request{System: "sys", SystemTail: todoTail, Messages: conversation(), Tools: specs},
			func(c *Config) { c.NoPromptCache = true }, []string{"sys", todoTail}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var edits []func(*Config)
			if c.edit != nil {
				edits = append(edits, c.edit)
			}
			got := sendAndRecord(t, c.req, edits...)
			if err := at.Validate(&got.MessagesRequest); err != nil {
				t.Fatalf("the API would reject the request: %v", err)
			}
			var texts []string
			for _, b := range got.System {
				texts = append(texts, b.Text)
			}
			if !reflect.DeepEqual(texts, c.sys) {
				t.Fatalf("system blocks %q, want %q", texts, c.sys)
			}
			if bp := got.CacheBreakpoints(); !reflect.DeepEqual(bp, c.bp) {
				t.Fatalf("breakpoints %v, want %v", bp, c.bp)
			}
		})
	}
}

// cachedPrefix returns, from a request body as sent, the bytes the API
// caches at the first breakpoint (tools, then the static system block), the
// system blocks after it, and the rest of the body without system and
// messages.
func cachedPrefix(t *testing.T, raw []byte) (prefix string, tail []string, rest string) {
	t.Helper()
	var body map[string]json.RawMessage
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatal(err)
	}
	var sys []json.RawMessage
	if err := json.Unmarshal(body["system"], &sys); err != nil || len(sys) == 0 {
		t.Fatalf("system %s: %v", body["system"], err)
	}
	if n := strings.Count(string(sys[0]), `"cache_control"`); n != 1 {
		t.Fatalf("the static system block has %d breakpoints", n)
	}
	for _, b := range sys[1:] {
		tail = append(tail, string(b))
	}
	delete(body, "system")
	delete(body, "messages")
	tools := string(body["tools"])
	r, _ := json.Marshal(body)
	return tools + string(sys[0]), tail, string(r)
}

// Three turns of an agent whose todo list changes: the bytes up to the
// first breakpoint are identical in every request, the list changes only
// the tail block after it, and cache_control appears exactly twice in the
// system blocks once there is a list.
func TestTurnsShareTheCachedPrefix(t *testing.T) {
	list := func(first string) map[string]any {
		return map[string]any{"todos": []map[string]string{
			{"content": "Read the spec", "status": first},
			{"content": "Write the parser", "status": "pending"},
		}}
	}
	srv := at.New(t, at.Sequence(
		at.Calls(at.Call("write_todos", list("in_progress"))),
		at.Calls(at.Call("write_todos", list("completed"))),
		at.Text("done"),
	))
	a, err := agent.New(agent.Config{Model: newModel(t, srv, nil), System: "You plan, then work.",
		Middleware: []agent.Middleware{todos.Middleware()}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Invoke(t.Context(), agent.Prompt("Build the parser.")); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	var prefixes, rests []string
	var tails [][]string
	for _, r := range reqs {
		p, tl, rest := cachedPrefix(t, r.Raw)
		prefixes, tails, rests = append(prefixes, p), append(tails, tl), append(rests, rest)
		if err := at.Validate(&r.MessagesRequest); err != nil {
			t.Fatalf("request %d would be rejected: %v", r.N, err)
		}
	}
	for i := 1; i < 3; i++ {
		if prefixes[i] != prefixes[0] {
			t.Fatalf("turn %d's cached prefix differs:\n%s\n%s", i+1, prefixes[0], prefixes[i])
		}
		if rests[i] != rests[0] {
			t.Fatalf("turn %d changed more than the system tail and messages:\n%s\n%s", i+1, rests[0], rests[i])
		}
	}
	if len(tails[0]) != 0 || len(tails[1]) != 1 || len(tails[2]) != 1 {
		t.Fatalf("tail blocks %q", tails)
	}
	if !strings.Contains(tails[1][0], `[~] Read the spec`) || !strings.Contains(tails[2][0], `[x] Read the spec`) {
		t.Fatalf("tails do not follow the list: %q", tails)
	}
	for i := 1; i < 3; i++ {
		sys := reqs[i].System
		n := 0
		for _, b := range sys {
			if b.CacheControl != nil {
				n++
			}
		}
		if len(sys) != 2 || n != 2 {
			t.Fatalf("turn %d: %d system blocks, %d with cache_control", i+1, len(sys), n)
		}
	}
}
