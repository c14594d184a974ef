package openai

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/providers/openai/openaitest"
	"github.com/deepagents-go/deepagents/tool"
)

type writeArgs struct {
	Path    string `json:"path" jsonschema:"absolute path of the file"`
	Content string `json:"content" jsonschema:"the text to write"`
	Append  bool   `json:"append,omitempty" jsonschema:"append instead of replacing"`
}

type searchArgs struct {
	Query string   `json:"query"`
	Tags  []string `json:"tags,omitempty"`
	Limit int      `json:"limit,omitempty"`
}

// conversation is a request with every kind of message.
func conversation(t *testing.T) *llm.Request {
	t.Helper()
	ws, err := tool.SchemaFor[writeArgs]()
	if err != nil {
		t.Fatal(err)
	}
	ss, err := tool.SchemaFor[searchArgs]()
	if err != nil {
		t.Fatal(err)
	}
	callA := llm.ToolCall{ID: "call_A", Name: "write_file", Args: json.RawMessage(`{"path":"/a.md","content":"x <b>&</b>"}`)}
	callB := llm.ToolCall{ID: "call_B", Name: "search", Args: json.RawMessage(`{"query":"q"}`)}
	callC := llm.ToolCall{ID: "call_C", Name: "search", Args: nil}
	return &llm.Request{
		System: "You are terse.",
		Messages: []llm.Message{
			llm.User("write and search"),
			llm.Assistant("On it.", callA, callB),
			llm.ToolResult(callA, "wrote /a.md", false),
			llm.ToolResult(callB, "Error: the index is down", true),
			llm.Assistant("Search failed; retrying."),
			llm.User("try again"),
			llm.Assistant("", callC),
			llm.ToolResult(callC, "3 hits", false),
		},
		Tools: []llm.ToolSpec{
			{Name: "write_file", Description: "Write a file. Use <absolute> paths & care.", Parameters: ws.Raw()},
			{Name: "search", Description: "Search.", Parameters: ss.Raw()},
			{Name: "no_args", Description: "Takes nothing."},
		},
	}
}

func TestRequestStructure(t *testing.T) {
	srv := openaitest.NewServer(t, openaitest.Sequence(openaitest.Text("ok"), openaitest.Text("ok")))
	m, _ := newModel(t, srv, Config{})
	req := conversation(t)
	before := mustJSON(t, req)
	if _, err := m.Generate(testCtx(t), req); err != nil {
		t.Fatal(err)
	}
	if _, err := llm.Collect(m.Stream(testCtx(t), req)); err != nil {
		t.Fatal(err)
	}
	if mustJSON(t, req) != before {
		t.Fatal("the request was modified")
	}
	for _, r := range srv.Requests() {
		checkStructure(t, req, r)
	}
}

func checkStructure(t *testing.T, req *llm.Request, r *openaitest.Request) {
	t.Helper()
	if err := openaitest.Validate(r); err != nil {
		t.Errorf("the API would reject the request: %v", err)
	}
	// The system prompt leads, then the messages in order.
	if len(r.Messages) != len(req.Messages)+1 {
		t.Fatalf("%d messages sent for %d", len(r.Messages), len(req.Messages))
	}
	if r.Messages[0].Role != "system" || r.Messages[0].Text() != req.System {
		t.Errorf("first message %+v, want the system prompt", r.Messages[0])
	}
	for i, want := range req.Messages {
		got := r.Messages[i+1]
		if got.Role != string(want.Role) {
			t.Errorf("message %d role %q, want %q", i, got.Role, want.Role)
		}
		if got.Text() != want.Content {
			t.Errorf("message %d content %q, want %q (sent as is, error results included)", i, got.Text(), want.Content)
		}
		if want.Role == llm.RoleAssistant && want.Content == "" && len(want.ToolCalls) > 0 && len(got.Content) > 0 && string(got.Content) != "null" {
			t.Errorf("message %d: empty assistant content sent as %s", i, got.Content)
		}
		if len(got.ToolCalls) != len(want.ToolCalls) {
			t.Fatalf("message %d: %d tool calls, want %d", i, len(got.ToolCalls), len(want.ToolCalls))
		}
		for j, c := range want.ToolCalls {
			g := got.ToolCalls[j]
			wantArgs := string(c.Args)
			if wantArgs == "" {
				wantArgs = "{}"
			}
			if g.ID != c.ID || g.Type != "function" || g.Function.Name != c.Name || g.Function.Arguments != wantArgs {
				t.Errorf("message %d call %d = %+v, want %+v", i, j, g, c)
			}
		}
	}
	// Every tool message follows, through other tool messages only, the
	// assistant message whose call it answers.
	for i, msg := range r.Messages {
		if msg.Role != "tool" {
			continue
		}
		k := i - 1
		for k >= 0 && r.Messages[k].Role == "tool" {
			k--
		}
		if k < 0 || r.Messages[k].Role != "assistant" {
			t.Errorf("tool message %d does not follow an assistant message", i)
			continue
		}
		found := false
		for _, c := range r.Messages[k].ToolCalls {
			found = found || c.ID == msg.ToolCallID
		}
		if !found {
			t.Errorf("tool message %d answers %q, which assistant message %d did not call", i, msg.ToolCallID, k)
		}
	}
	// Tools: function tools, the schema verbatim, and a valid JSON schema.
	if len(r.Tools) != len(req.Tools) {
		t.Fatalf("%d tools sent for %d", len(r.Tools), len(req.Tools))
	}
	for i, spec := range req.Tools {
		got := r.Tools[i]
		if got.Type != "function" || got.Function.Name != spec.Name || got.Function.Description != spec.Description {
			t.Errorf("tool %d = %+v", i, got)
		}
		want := spec.Parameters
		if len(want) == 0 {
			want = json.RawMessage(emptyParameters)
		}
		var compact bytes.Buffer
		_ = json.Compact(&compact, want)
		if string(got.Function.Parameters) != compact.String() {
			t.Errorf("tool %s parameters\n got %s\nwant %s", spec.Name, got.Function.Parameters, compact.String())
		}
		var s jsonschema.Schema
		if err := json.Unmarshal(got.Function.Parameters, &s); err != nil {
			t.Errorf("tool %s parameters are not a JSON schema: %v", spec.Name, err)
			continue
		}
		if _, err := s.Resolve(nil); err != nil {
			t.Errorf("tool %s parameters do not resolve: %v", spec.Name, err)
		}
		if s.Type != "object" {
			t.Errorf("tool %s parameters have type %q", spec.Name, s.Type)
		}
	}
}

func TestNoSystemMessageWhenEmpty(t *testing.T) {
	srv := openaitest.NewServer(t, openaitest.Sequence(openaitest.Text("ok")))
	m, _ := newModel(t, srv, Config{})
	if _, err := m.Generate(testCtx(t), userReq("hi")); err != nil {
		t.Fatal(err)
	}
	if r := srv.Requests()[0]; r.Messages[0].Role != "user" {
		t.Fatalf("first message %+v", r.Messages[0])
	}
}

func TestToolChoiceAndSettings(t *testing.T) {
	temp, topP, par := 0.25, 0.9, true
	for _, tc := range []struct {
		name   string
		cfg    Config
		req    func(*llm.Request)
		choice string // JSON, "" for absent
		check  func(t *testing.T, r *openaitest.Request)
	}{
		{name: "auto", req: func(r *llm.Request) {}},
		{name: "none", req: func(r *llm.Request) { r.ToolChoice.Mode = llm.ToolChoiceNone }, choice: `"none"`},
		{name: "required", req: func(r *llm.Request) { r.ToolChoice.Mode = llm.ToolChoiceRequired }, choice: `"required"`},
		{name: "named", req: func(r *llm.Request) { r.ToolChoice = llm.ToolChoice{Mode: llm.ToolChoiceTool, Name: "search"} },
			choice: `{"function":{"name":"search"},"type":"function"}`},
		{name: "settings", req: func(r *llm.Request) {
			r.Settings = llm.Settings{MaxTokens: 123, Temperature: &temp, TopP: &topP, Stop: []string{"END", "\n\n"}, ParallelToolCalls: &par}
		}, check: func(t *testing.T, r *openaitest.Request) {
			if r.MaxCompletionTokens == nil || *r.MaxCompletionTokens != 123 || r.MaxTokens != nil {
				t.Errorf("max tokens %v / %v", r.MaxCompletionTokens, r.MaxTokens)
			}
			if r.Temperature == nil || *r.Temperature != temp || r.TopP == nil || *r.TopP != topP {
				t.Errorf("temperature %v top_p %v", r.Temperature, r.TopP)
			}
			if string(r.Stop) != `["END","\n\n"]` {
				t.Errorf("stop %s", r.Stop)
			}
			if r.ParallelToolCalls == nil || !*r.ParallelToolCalls {
				t.Errorf("parallel_tool_calls %v", r.ParallelToolCalls)
			}
		}},
		{name: "config max tokens, legacy field", cfg: Config{MaxTokens: 77, LegacyMaxTokens: true}, req: func(r *llm.Request) {},
			check: func(t *testing.T, r *openaitest.Request) {
				if r.MaxTokens == nil || *r.MaxTokens != 77 || r.MaxCompletionTokens != nil {
					t.Errorf("max tokens %v / %v", r.MaxTokens, r.MaxCompletionTokens)
				}
			}},
		{name: "request max tokens beat config", cfg: Config{MaxTokens: 77}, req: func(r *llm.Request) { r.Settings.MaxTokens = 5 },
			check: func(t *testing.T, r *openaitest.Request) {
				if r.MaxCompletionTokens == nil || *r.MaxCompletionTokens != 5 {
					t.Errorf("max tokens %v", r.MaxCompletionTokens)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := openaitest.NewServer(t, openaitest.Sequence(openaitest.Text("ok")))
			m, _ := newModel(t, srv, tc.cfg)
			req := userReq("hi")
			req.Tools = []llm.ToolSpec{{Name: "search"}}
			tc.req(req)
			if _, err := m.Generate(testCtx(t), req); err != nil {
				t.Fatal(err)
			}
			r := srv.Requests()[0]
			if string(r.ToolChoice) != tc.choice {
				t.Errorf("tool_choice %s, want %s", r.ToolChoice, tc.choice)
			}
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}
}

func TestToolChoiceWithoutTools(t *testing.T) {
	// The API rejects tool_choice and parallel_tool_calls without tools, so
	// they are dropped; the fake server validates this.
	srv := openaitest.NewServer(t, openaitest.Sequence(openaitest.Text("ok")))
	m, _ := newModel(t, srv, Config{NoParallelToolCalls: true})
	req := userReq("hi")
	req.ToolChoice.Mode = llm.ToolChoiceRequired
	if _, err := m.Generate(testCtx(t), req); err != nil {
		t.Fatal(err)
	}
	if r := srv.Requests()[0]; r.ToolChoice != nil || r.ParallelToolCalls != nil {
		t.Fatalf("sent %s", r.Body)
	}
}

func TestNoParallelToolCalls(t *testing.T) {
	srv := openaitest.NewServer(t, openaitest.Sequence(openaitest.Text("ok"), openaitest.Text("ok"), openaitest.Text("ok")),
		openaitest.RejectParallelToolCalls())
	plain, _ := newModel(t, srv, Config{})
	req := userReq("hi")
	req.Tools = []llm.ToolSpec{{Name: "a"}}
	if _, err := plain.Generate(testCtx(t), req); err == nil {
		t.Fatal("the server accepted a request without parallel_tool_calls=false")
	}
	m, _ := newModel(t, srv, Config{NoParallelToolCalls: true})
	yes := true
	req.Settings.ParallelToolCalls = &yes // the switch wins over the request
	if _, err := m.Generate(testCtx(t), req); err != nil {
		t.Fatal(err)
	}
	if _, err := llm.Collect(m.Stream(testCtx(t), req)); err != nil {
		t.Fatal(err)
	}
	for _, r := range srv.Requests()[1:] {
		if r.ParallelToolCalls == nil || *r.ParallelToolCalls {
			t.Errorf("parallel_tool_calls %v", r.ParallelToolCalls)
		}
	}
}

func TestStructuredOutputRequest(t *testing.T) {
	srv := openaitest.NewServer(t, openaitest.Sequence(openaitest.Text(`{"title":"T","score":null}`)))
	m, _ := newModel(t, srv, Config{})
	req := userReq("rate it")
	req.Response = &llm.ResponseSchema{Name: "Rating v2", Description: "A rating.", Schema: json.RawMessage(`{
		"type": "object",
		"properties": {"title": {"type": "string"}, "score": {"type": "integer"}},
		"required": ["title"]
	}`)}
	resp, err := m.Generate(testCtx(t), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Content != `{"title":"T","score":null}` {
		t.Errorf("content %q", resp.Message.Content)
	}
	var rf struct {
		Type       string `json:"type"`
		JSONSchema struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Strict      bool            `json:"strict"`
			Schema      json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	}
	r := srv.Requests()[0]
	if err := json.Unmarshal(r.ResponseFormat, &rf); err != nil {
		t.Fatalf("response_format %s: %v", r.ResponseFormat, err)
	}
	if rf.Type != "json_schema" || !rf.JSONSchema.Strict || rf.JSONSchema.Name != "Rating_v2" || rf.JSONSchema.Description != "A rating." {
		t.Errorf("response_format %s", r.ResponseFormat)
	}
	want := `{"type":"object","properties":{"title":{"type":"string"},"score":{"type":["integer","null"]}},"required":["title","score"],"additionalProperties":false}`
	if string(rf.JSONSchema.Schema) != want {
		t.Errorf("schema\n got %s\nwant %s", rf.JSONSchema.Schema, want)
	}
}

func TestSchemaName(t *testing.T) {
	for in, want := range map[string]string{
		"":                                    "response",
		"Report":                              "Report",
		"my report/v1":                        "my_report_v1",
		"ünï":                                 "_n_",
		string(bytes.Repeat([]byte("a"), 80)): string(bytes.Repeat([]byte("a"), 64)),
	} {
		if got := schemaName(in); got != want {
			t.Errorf("schemaName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestToolParamKeepsOrder(t *testing.T) {
	raw := json.RawMessage(`{ "type": "object", "properties": { "zeta": {"type":"string"}, "alpha": {"type":"number"} }, "required": ["zeta"] }`)
	tp, err := toolParam(llm.ToolSpec{Name: "t", Description: "<d>", Parameters: raw})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(tp)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := `{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"number"}},"required":["zeta"]}`
	if got.Type != "function" || got.Function.Name != "t" || got.Function.Description != "<d>" || string(got.Function.Parameters) != want {
		t.Fatalf("got %s", b)
	}
	if !reflect.DeepEqual(got.Function.Parameters, json.RawMessage(want)) {
		t.Fatal("parameters differ")
	}
}
