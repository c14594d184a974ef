package deepagents_test

import (
	"encoding/json"
	"strings"
	"testing"

	deepagents "github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/providers/anthropic"
	at "github.com/deepagents-go/deepagents/providers/anthropic/anthropictest"
	"github.com/deepagents-go/deepagents/subagent"
)

// firstBreakpoint returns the bytes of a Messages API body that the first
// cache breakpoint caches: the tools, then the system blocks, in the API's
// order, up to and including the first block with cache_control.
func firstBreakpoint(t *testing.T, raw []byte) string {
	t.Helper()
	var body struct {
		Tools  []json.RawMessage `json:"tools"`
		System []json.RawMessage `json:"system"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, part := range append(body.Tools, body.System...) {
		b.Write(part)
		if strings.Contains(string(part), `"cache_control"`) {
			return b.String()
		}
	}
	t.Fatalf("no breakpoint in the tools or system: %s", raw)
	return ""
}

// Over the Anthropic wire, with todos on: a fork sends its parent's bytes up
// to the first breakpoint (its own, empty, todo list comes after it, and so
// does the fork spec's own prompt), and two subagents of one type send each
// other's.
func TestForksAndSameTypeSubagentsShareTheCachedPrefix(t *testing.T) {
	type variant struct{ system, forkPrompt string }
	for _, v := range []variant{{"You lead the work.", ""}, {"", ""}, {"You lead the work.", "Stay on part three."}, {"", "Stay on part three."}} {
		system := v.system
		t.Run("system="+system+",fork="+v.forkPrompt, func(t *testing.T) {
			todo := at.Call("write_todos", map[string]any{"todos": []map[string]string{{"content": "Split the work", "status": "in_progress"}}})
			task := func(id, typ string) at.ToolCall {
				c := at.Call("task", map[string]string{"description": "Do part " + id + ".", "subagent_type": typ})
				c.ID = "toolu_" + id
				return c
			}
			router := at.NewRouter().
				On(func(r *at.Request) bool { return strings.Contains(r.LastUserText(), "Do part c3.") }, at.Conversation(at.Text("fork done"))).
				On(at.FirstUserContains("Do part c"), at.Conversation(at.Text("child done"))).
				On(at.FirstUserContains("Start"), at.Conversation(
					at.Calls(todo),
					at.Calls(task("c1", "general-purpose"), task("c2", "general-purpose"), task("c3", "forker")),
					at.Text("all done")))
			srv := at.New(t, router)
			m, err := anthropic.New(anthropic.Config{Model: "claude-test", APIKey: "k", BaseURL: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			a, err := deepagents.New(deepagents.Config{Model: m, SystemPrompt: system, Todos: true,
				Subagents: []subagent.Spec{{Name: "forker", Description: "Continues the work.", Mode: subagent.Fork, SystemPrompt: v.forkPrompt}}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := a.Invoke(t.Context(), agent.Prompt("Start the job.")); err != nil {
				t.Fatal(err)
			}
			var parent, fork, children []*at.Request
			for _, r := range srv.Requests() {
				if r.Invalid != nil {
					t.Fatalf("request %d invalid: %v", r.N, r.Invalid)
				}
				switch {
				case strings.Contains(r.LastUserText(), "Do part c3."):
					fork = append(fork, r)
				case strings.Contains(r.FirstUserText(), "Do part c"):
					children = append(children, r)
				default:
					parent = append(parent, r)
				}
			}
			if len(parent) != 3 || len(fork) != 1 || len(children) != 2 {
				t.Fatalf("%d parent, %d fork, %d child requests", len(parent), len(fork), len(children))
			}
			if !strings.Contains(parent[1].SystemText(), "[~] Split the work") || strings.Contains(fork[0].SystemText(), "Split the work") {
				t.Fatalf("todo lists: parent %q, fork %q", parent[1].SystemText(), fork[0].SystemText())
			}
			p0, p1 := firstBreakpoint(t, parent[0].Raw), firstBreakpoint(t, parent[1].Raw)
			if p0 != p1 {
				t.Fatalf("the parent's prefix changed with its list:\n%s\n%s", p0, p1)
			}
			if f := firstBreakpoint(t, fork[0].Raw); f != p1 {
				t.Fatalf("fork prefix differs from the parent's:\n%s\n%s", f, p1)
			}
			if v.forkPrompt != "" {
				// The fork's own prompt is sent, after the parent's prompt.
				ft := fork[0].SystemText()
				if i := strings.Index(ft, v.forkPrompt); i < 0 || system != "" && i < strings.Index(ft, system) {
					t.Fatalf("fork system text %q lacks its own prompt after the parent's", ft)
				}
				if strings.Contains(parent[0].SystemText(), v.forkPrompt) {
					t.Fatal("the fork's prompt reached the parent")
				}
			}
			if c1, c2 := firstBreakpoint(t, children[0].Raw), firstBreakpoint(t, children[1].Raw); c1 != c2 {
				t.Fatalf("same-type subagents' prefixes differ:\n%s\n%s", c1, c2)
			}
		})
	}
}
