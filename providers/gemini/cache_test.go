package gemini

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/providers/gemini/geminitest"
	"github.com/deepagents-go/deepagents/todos"
)

// The changing tail is joined after the static prompt (and any system
// messages of the conversation), so it is the last thing in the system
// instruction.
func TestSystemTailIsJoinedLast(t *testing.T) {
	cases := []struct {
		name string
		req  *llm.Request
		want string
	}{
		{"static and tail", &llm.Request{System: "sys", SystemTail: "<current_todos>\n[ ] a\n</current_todos>", Messages: []llm.Message{llm.User("hi")}},
			"sys\n\n<current_todos>\n[ ] a\n</current_todos>"},
		{"with a system message", &llm.Request{System: "sys", SystemTail: "tail", Messages: []llm.Message{llm.System("note"), llm.User("hi")}},
			"sys\n\nnote\n\ntail"},
		{"tail only", &llm.Request{SystemTail: "tail", Messages: []llm.Message{llm.User("hi")}}, "tail"},
		{"blank tail", &llm.Request{System: "sys", SystemTail: " \n", Messages: []llm.Message{llm.User("hi")}}, "sys"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := geminitest.NewServer(t, geminitest.Sequence(geminitest.Text("ok")))
			m, _ := newTestModel(t, srv)
			if _, err := m.Generate(t.Context(), c.req); err != nil {
				t.Fatal(err)
			}
			assertValid(t, srv)
			if got := lastRequest(t, srv).SystemText(); got != c.want {
				t.Fatalf("system %q, want %q", got, c.want)
			}
		})
	}
}

// Three turns of an agent whose todo list changes: the tools and the
// static prompt are the same bytes in every request and the list changes
// only what follows them.
func TestTurnsShareTheCachedPrefix(t *testing.T) {
	list := func(first string) map[string]any {
		return map[string]any{"todos": []any{
			map[string]any{"content": "Read the spec", "status": first},
			map[string]any{"content": "Write the parser", "status": "pending"},
		}}
	}
	srv := geminitest.NewServer(t, geminitest.Sequence(
		geminitest.Calls(geminitest.Call{Name: "write_todos", Args: list("in_progress")}),
		geminitest.Calls(geminitest.Call{Name: "write_todos", Args: list("completed")}),
		geminitest.Text("done"),
	))
	m, _ := newTestModel(t, srv)
	const static = "You plan, then work."
	a, err := agent.New(agent.Config{Model: m, System: static, Middleware: []agent.Middleware{todos.Middleware()}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Invoke(t.Context(), agent.Prompt("Build the parser.")); err != nil {
		t.Fatal(err)
	}
	assertValid(t, srv)
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	var tools []string
	var systems []string
	for _, r := range reqs {
		var body map[string]json.RawMessage
		if err := json.Unmarshal(r.Raw, &body); err != nil {
			t.Fatal(err)
		}
		tools = append(tools, string(body["tools"]))
		systems = append(systems, r.SystemText())
	}
	if tools[0] == "" || tools[1] != tools[0] || tools[2] != tools[0] {
		t.Fatalf("tools changed across turns:\n%s", strings.Join(tools, "\n"))
	}
	if systems[0] != static || !strings.HasPrefix(systems[1], static+"\n\n<current_todos>\n[~] Read the spec") ||
		!strings.HasPrefix(systems[2], static+"\n\n<current_todos>\n[x] Read the spec") {
		t.Fatalf("system instructions %q", systems)
	}
}
