package anthropictest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/providers/anthropic"
	at "github.com/deepagents-go/deepagents/providers/anthropic/anthropictest"
)

func decode(t *testing.T, body string) *at.MessagesRequest {
	t.Helper()
	var r at.MessagesRequest
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

func TestValidate(t *testing.T) {
	const ok = `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`
	if err := at.Validate(decode(t, ok)); err != nil {
		t.Fatalf("valid request rejected: %v", err)
	}
	good := `{"model":"m","max_tokens":10,
		"tools":[{"name":"t","input_schema":{"type":"object"},"cache_control":{"type":"ephemeral"}}],
		"messages":[
		{"role":"user","content":[{"type":"text","text":"hi"}]},
		{"role":"assistant","content":[{"type":"thinking","thinking":"x","signature":"s"},{"type":"tool_use","id":"a","name":"t","input":{}},{"type":"tool_use","id":"b","name":"t","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"b"},{"type":"tool_result","tool_use_id":"a","content":"r"},{"type":"text","text":"more"}]}]}`
	if err := at.Validate(decode(t, good)); err != nil {
		t.Fatalf("valid tool conversation rejected: %v", err)
	}
	bad := map[string]string{
		"no max_tokens":       `{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
		"temperature":         `{"model":"m","max_tokens":1,"temperature":1,"messages":[{"role":"user","content":"hi"}]}`,
		"assistant first":     `{"model":"m","max_tokens":1,"messages":[{"role":"assistant","content":"hi"}]}`,
		"no alternation":      `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"a"},{"role":"user","content":"b"}]}`,
		"system role":         `{"model":"m","max_tokens":1,"messages":[{"role":"system","content":"a"}]}`,
		"blank text":          `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"  "}]}`,
		"empty content":       `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[]}]}`,
		"unanswered tool_use": `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"tool_use","id":"x","name":"t","input":{}}]},{"role":"user","content":"b"}]}`,
		"orphan tool_result":  `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"x"}]}]}`,
		"result after text":   `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"tool_use","id":"x","name":"t","input":{}}]},{"role":"user","content":[{"type":"text","text":"b"},{"type":"tool_result","tool_use_id":"x"}]}]}`,
		"duplicate id":        `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"tool_use","id":"x","name":"t","input":{}},{"type":"tool_use","id":"x","name":"t","input":{}}]}]}`,
		"bad id":              `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"tool_use","id":"a b","name":"t","input":{}}]}]}`,
		"array input":         `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"tool_use","id":"x","name":"t","input":[]}]}]}`,
		"unsigned thinking":   `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"thinking","thinking":"x"}]}]}`,
		"trailing space":      `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b "}]}`,
		"bad tool name":       `{"model":"m","max_tokens":1,"tools":[{"name":"a b","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"a"}]}`,
		"schema not object":   `{"model":"m","max_tokens":1,"tools":[{"name":"t","input_schema":{"type":"string"}}],"messages":[{"role":"user","content":"a"}]}`,
		"unknown forced tool": `{"model":"m","max_tokens":1,"tools":[{"name":"t","input_schema":{"type":"object"}}],"tool_choice":{"type":"tool","name":"u"},"messages":[{"role":"user","content":"a"}]}`,
		"forced while thinking": `{"model":"m","max_tokens":1,"thinking":{"type":"enabled","budget_tokens":1024},"tools":[{"name":"t","input_schema":{"type":"object"}}],
			"tool_choice":{"type":"any"},"messages":[{"role":"user","content":"a"}]}`,
		"loop without thinking": `{"model":"m","max_tokens":2000,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[
			{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"text","text":"ok"},{"type":"tool_use","id":"x","name":"t","input":{}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"x"}]}]}`,
		"image type": `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/tiff","data":"AAAA"}}]}]}`,
		"image in result without source": `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"tool_use","id":"x","name":"t","input":{}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"x","content":[{"type":"image"}]}]}]}`,
		"five breakpoints": `{"model":"m","max_tokens":1,"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}],"messages":[
			{"role":"user","content":[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}},{"type":"text","text":"b","cache_control":{"type":"ephemeral"}},
			{"type":"text","text":"c","cache_control":{"type":"ephemeral"}},{"type":"text","text":"d","cache_control":{"type":"ephemeral"}}]}]}`,
	}
	// why is what each rejection must say, so a body refused for another
	// reason than the one it was written for does not pass.
	why := map[string]string{
		"no max_tokens":                  "max_tokens: Field required",
		"temperature":                    "temperature: Extra inputs are not permitted",
		"assistant first":                `first message must use the "user" role`,
		"no alternation":                 "roles must alternate",
		"system role":                    "messages.0.role: Input should be 'user' or 'assistant'",
		"blank text":                     "messages.0.content.0: text content blocks must contain non-whitespace text",
		"empty content":                  "messages.0: all messages must have non-empty content",
		"unanswered tool_use":            "`tool_use` ids were found without `tool_result` blocks",
		"orphan tool_result":             "unexpected `tool_use_id` found in `tool_result` blocks: x",
		"result after text":              "tool_result blocks must come before any other content",
		"duplicate id":                   "`tool_use` ids must be unique, found x more than once",
		"bad id":                         "messages.1.content.0.id: String should match pattern",
		"array input":                    "messages.1.content.0.input: Input should be a valid dictionary",
		"unsigned thinking":              "messages.1.content.0.signature: Field required",
		"trailing space":                 "final assistant content cannot end with trailing whitespace",
		"bad tool name":                  "tools.0.name: String should match pattern",
		"schema not object":              "tools.0.input_schema.type: Input should be 'object'",
		"unknown forced tool":            `tool_choice.name: tool "u" is not defined in tools`,
		"forced while thinking":          "Thinking may not be enabled when tool_choice forces tool use",
		"loop without thinking":          "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `text`",
		"image type":                     "messages.0.content.0.source.base64.media_type: Input should be",
		"image in result without source": "messages.2.content.0.content.0.source: Field required",
		"five breakpoints":               "A maximum of 4 blocks with cache_control may be provided. Found 5.",
	}
	for name, body := range bad {
		err := at.Validate(decode(t, body))
		w, ok := why[name]
		if !ok {
			t.Fatalf("%s: no expected reason", name)
		}
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("%s: err = %v, want it to say %q", name, err, w)
		}
	}
}

func TestCacheBreakpointsAndHelpers(t *testing.T) {
	r := decode(t, `{"model":"m","max_tokens":1,"system":[{"type":"text","text":"S","cache_control":{"type":"ephemeral"}}],
		"tools":[{"name":"a","input_schema":{"type":"object"}},{"name":"task","input_schema":{"type":"object"},"cache_control":{"type":"ephemeral"}}],
		"messages":[{"role":"user","content":"first"},{"role":"assistant","content":"x"},{"role":"user","content":[{"type":"text","text":"last","cache_control":{"type":"ephemeral"}}]}]}`)
	if got := strings.Join(r.CacheBreakpoints(), " "); got != "tools[1] system[0] messages[2].content[0]" {
		t.Fatalf("breakpoints %q", got)
	}
	if r.FirstUserText() != "first" || r.LastUserText() != "last" || r.SystemText() != "S" || !r.OffersTool("task") || r.AssistantTurns() != 1 {
		t.Fatalf("helpers: %q %q %q %v %d", r.FirstUserText(), r.LastUserText(), r.SystemText(), r.OffersTool("task"), r.AssistantTurns())
	}
}

func TestSequenceExhaustionAndBadPaths(t *testing.T) {
	srv := at.New(t, at.Sequence(at.Text("one")))
	post := func(path, body string) *http.Response {
		resp, err := http.Post(srv.URL+path, "application/json", bytes.NewReader([]byte(body)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	const body = `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`
	if r := post("/v1/messages", body); r.StatusCode != 200 {
		t.Fatalf("first: %d", r.StatusCode)
	}
	if r := post("/v1/messages", body); r.StatusCode != 400 {
		t.Fatalf("exhausted: %d", r.StatusCode)
	}
	if r := post("/v1/other", body); r.StatusCode != 404 {
		t.Fatalf("bad path: %d", r.StatusCode)
	}
	if r := post("/v1/messages", `{"model":"m","messages":[]}`); r.StatusCode != 400 {
		t.Fatalf("invalid: %d", r.StatusCode)
	}
	if last := srv.Last(); last.Invalid == nil {
		t.Fatal("invalid request not marked")
	}
}

// TestRouterDrivesParentAndChildren shows the routing a delegation test
// needs: the parent (offered a "task" tool) and each child (known by its
// brief, the first user message) follow their own scripts, independent of
// how their requests interleave.
func TestRouterDrivesParentAndChildren(t *testing.T) {
	router := at.NewRouter().
		On(at.OffersTool("task"), at.Conversation(
			at.Calls(at.Call("task", map[string]string{"description": "research Oslo"}), at.Call("task", map[string]string{"description": "research Bergen"})),
			at.Text("Both cities researched."),
		)).
		On(at.FirstUserContains("Oslo"), at.Conversation(at.Text("Oslo: capital."))).
		On(at.FirstUserContains("Bergen"), at.Conversation(at.Text("Bergen: rainy.")))
	srv := at.New(t, router)
	m, err := anthropic.New(anthropic.Config{Model: "claude-test", APIKey: "k", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	taskTool := []llm.ToolSpec{{Name: "task", Description: "Delegate.", Parameters: json.RawMessage(`{"type":"object","properties":{"description":{"type":"string"}}}`)}}
	ctx := context.Background()

	parent := []llm.Message{llm.User("Compare Oslo and Bergen.")}
	resp, err := m.Generate(ctx, &llm.Request{Messages: parent, Tools: taskTool})
	if err != nil || len(resp.Message.ToolCalls) != 2 {
		t.Fatalf("parent round 1: %+v %v", resp, err)
	}
	parent = append(parent, resp.Message)
	var wg sync.WaitGroup
	answers := make([]string, 2)
	for i, c := range resp.Message.ToolCalls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var in struct{ Description string }
			_ = json.Unmarshal(c.Args, &in)
			r, err := m.Generate(ctx, &llm.Request{Messages: []llm.Message{llm.User(in.Description)}})
			if err != nil {
				t.Error(err)
				return
			}
			answers[i] = r.Message.Content
		}()
	}
	wg.Wait()
	if answers[0] != "Oslo: capital." || answers[1] != "Bergen: rainy." {
		t.Fatalf("children answered %q", answers)
	}
	for i, c := range resp.Message.ToolCalls {
		parent = append(parent, llm.ToolResult(c, answers[i], false))
	}
	final, err := m.Generate(ctx, &llm.Request{Messages: parent, Tools: taskTool})
	if err != nil || final.Message.Content != "Both cities researched." {
		t.Fatalf("parent round 2: %+v %v", final, err)
	}
	if srv.Count() != 4 {
		t.Fatalf("%d requests", srv.Count())
	}
	// Tool ids the server generated are unique across conversations.
	if a, b := resp.Message.ToolCalls[0].ID, resp.Message.ToolCalls[1].ID; a == b || !strings.HasPrefix(a, "toolu_") {
		t.Fatalf("ids %q %q", a, b)
	}
}

// The server fails requests that send back thinking it did not hand out as
// is, and accepts what it signed.
func TestServerChecksThinkingSignatures(t *testing.T) {
	srv := at.New(t, at.Sequence(
		at.Reply{Thinking: []at.Thinking{{Text: "plan"}, {Redacted: "UkVE"}}, ToolCalls: []at.ToolCall{{ID: "toolu_1", Name: "t", Input: json.RawMessage(`{}`)}}},
		at.Text("ok"), at.Text("ok"), at.Text("ok"), at.Text("ok"),
	))
	post := func(body string) int {
		resp, err := http.Post(srv.URL+"/v1/messages", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	const head = `{"model":"m","max_tokens":4000,"thinking":{"type":"enabled","budget_tokens":1024},"tools":[{"name":"t","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"a"}`
	if st := post(head + `]}`); st != 200 {
		t.Fatalf("first request: %d", st)
	}
	turn := func(blocks string) string {
		return head + `,{"role":"assistant","content":[` + blocks + `{"type":"tool_use","id":"toolu_1","name":"t","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1"}]}]}`
	}
	sig := at.Sign("plan")
	cases := []struct {
		name   string
		blocks string
		status int
	}{
		{"as handed out", `{"type":"thinking","thinking":"plan","signature":"` + sig + `"},{"type":"redacted_thinking","data":"UkVE"},`, 200},
		{"text changed", `{"type":"thinking","thinking":"plan!","signature":"` + sig + `"},{"type":"redacted_thinking","data":"UkVE"},`, 400},
		{"unknown redacted", `{"type":"thinking","thinking":"plan","signature":"` + sig + `"},{"type":"redacted_thinking","data":"T1RIRVI="},`, 400},
		{"redacted missing", `{"type":"thinking","thinking":"plan","signature":"` + sig + `"},`, 400},
	}
	for _, tc := range cases {
		if st := post(turn(tc.blocks)); st != tc.status {
			t.Errorf("%s: status %d, want %d (%v)", tc.name, st, tc.status, srv.Last().Invalid)
		}
	}
}
