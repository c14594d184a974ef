package openai

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/providers/openai/openaitest"
	"github.com/deepagents-go/deepagents/todos"
	"github.com/deepagents-go/deepagents/tool"
)

var cacheTools = []llm.ToolSpec{
	{Name: "read_file", Description: "Read a file.", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)},
	{Name: "ls", Description: "List files."},
}

// wantKey is the documented key: the first 32 hex digits of sha256 over the
// static system prompt, a zero byte and the tools as JSON.
func wantKey(t *testing.T, system string, tools []llm.ToolSpec) string {
	t.Helper()
	b, err := json.Marshal(tools)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(append(append([]byte(system), 0), b...))
	return hex.EncodeToString(sum[:])[:32]
}

// The tail is sent after the static prompt and a blank line, on both APIs,
// and prompt_cache_key depends on the static prompt and the tools only.
func TestSystemTailAndPromptCacheKey(t *testing.T) {
	for _, api := range []string{APIChat, APIResponses} {
		t.Run(api, func(t *testing.T) {
			send := func(req *llm.Request, edit func(*Config)) *openaitest.Request {
				t.Helper()
				srv := openaitest.NewServer(t, func(*openaitest.Request) openaitest.Reply { return openaitest.Text("ok") })
				cfg := Config{API: api}
				if edit != nil {
					edit(&cfg)
				}
				m, _ := newModel(t, srv, cfg)
				if _, err := m.Generate(t.Context(), req); err != nil {
					t.Fatal(err)
				}
				return srv.Requests()[0]
			}
			system := func(r *openaitest.Request) string {
				if r.Responses != nil {
					return r.Responses.Instructions
				}
				return r.System()
			}
			msgs := []llm.Message{llm.User("hi")}
			base := send(&llm.Request{System: "sys", Messages: msgs, Tools: cacheTools}, nil)
			withTail := send(&llm.Request{System: "sys", SystemTail: "<current_todos>\n[ ] a\n</current_todos>", Messages: msgs, Tools: cacheTools}, nil)
			if got := system(withTail); got != "sys\n\n<current_todos>\n[ ] a\n</current_todos>" {
				t.Fatalf("system %q", got)
			}
			if got := system(send(&llm.Request{SystemTail: "tail", Messages: msgs}, nil)); got != "tail" {
				t.Fatalf("tail-only system %q", got)
			}
			if got := system(send(&llm.Request{System: "sys", SystemTail: "\n ", Messages: msgs}, nil)); got != "sys" {
				t.Fatalf("blank-tail system %q", got)
			}
			want := wantKey(t, "sys", cacheTools)
			if base.PromptCacheKey != want || withTail.PromptCacheKey != want {
				t.Fatalf("keys %q / %q, want %q", base.PromptCacheKey, withTail.PromptCacheKey, want)
			}
			more := append([]llm.ToolSpec{{Name: "grep", Description: "Search."}}, cacheTools...)
			if k := send(&llm.Request{System: "sys", Messages: msgs, Tools: more}, nil).PromptCacheKey; k == want || len(k) != 32 {
				t.Fatalf("key with another tool %q", k)
			}
			if k := send(&llm.Request{System: "sys2", Messages: msgs, Tools: cacheTools}, nil).PromptCacheKey; k == want || len(k) != 32 {
				t.Fatalf("key with another prompt %q", k)
			}
			if r := send(&llm.Request{Messages: msgs}, nil); strings.Contains(string(r.Body), "prompt_cache_key") {
				t.Fatalf("a key for a request with no prompt and no tools: %s", r.Body)
			}
			if r := send(&llm.Request{System: "sys", Messages: msgs}, func(c *Config) { c.NoPromptCacheKey = true }); strings.Contains(string(r.Body), "prompt_cache_key") {
				t.Fatalf("NoPromptCacheKey still sent it: %s", r.Body)
			}
		})
	}
}

// Three turns of an agent whose todo list changes: the tools and the
// static prompt are the same bytes in every request, the list changes only
// what follows them, and the cache key stays put.
func TestTurnsShareTheCachedPrefix(t *testing.T) {
	echo := tool.MustFunc("echo", "Echo a string.", func(_ context.Context, _ *tool.Env, in struct {
		S string `json:"s"`
	}) (string, error) {
		return in.S, nil
	})
	for _, api := range []string{APIChat, APIResponses} {
		t.Run(api, func(t *testing.T) {
			list := func(first string) string {
				return `{"todos":[{"content":"Read the spec","status":"` + first + `"},{"content":"Write the parser","status":"pending"}]}`
			}
			srv := openaitest.NewServer(t, func(r *openaitest.Request) openaitest.Reply {
				switch r.Round() {
				case 0:
					return openaitest.Tools(openaitest.Call{Name: "write_todos", Args: list("in_progress")})
				case 1:
					return openaitest.Tools(openaitest.Call{Name: "write_todos", Args: list("completed")})
				}
				return openaitest.Text("done")
			})
			m, _ := newModel(t, srv, Config{API: api})
			const static = "You plan, then work."
			a, err := agent.New(agent.Config{Model: m, System: static, Tools: []tool.Tool{echo}, Middleware: []agent.Middleware{todos.Middleware()}})
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
			type shape struct {
				Tools json.RawMessage `json:"tools"`
				Key   string          `json:"prompt_cache_key"`
			}
			var first shape
			var systems []string
			for i, r := range reqs {
				var s shape
				if err := json.Unmarshal(r.Body, &s); err != nil {
					t.Fatal(err)
				}
				if i == 0 {
					first = s
				} else if string(s.Tools) != string(first.Tools) || s.Key != first.Key {
					t.Fatalf("turn %d: tools or key changed:\n%s %s\n%s %s", i+1, first.Tools, first.Key, s.Tools, s.Key)
				}
				sys := r.System()
				if r.Responses != nil {
					sys = r.Responses.Instructions
				}
				systems = append(systems, sys)
			}
			if first.Key != wantKey(t, static, a.ToolSpecs()) {
				t.Fatalf("key %q", first.Key)
			}
			if systems[0] != static || !strings.HasPrefix(systems[1], static+"\n\n<current_todos>\n[~] Read the spec") ||
				!strings.HasPrefix(systems[2], static+"\n\n<current_todos>\n[x] Read the spec") {
				t.Fatalf("system prompts %q", systems)
			}
		})
	}
}
