package openai

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	sdk "github.com/openai/openai-go/v3"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/providers/openai/openaitest"
)

func TestNewValidates(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Fatal("New without a model name succeeded")
	}
	if _, err := NewCompatible("", "m", Config{}); err == nil {
		t.Fatal("NewCompatible without a base URL succeeded")
	}
	m, err := NewCompatible("http://localhost:11434/v1", "qwen3", Config{Provider: "ollama"})
	if err != nil {
		t.Fatal(err)
	}
	if m.Name() != "qwen3" || m.Provider() != "ollama" {
		t.Fatalf("got %q/%q", m.Name(), m.Provider())
	}
	m, _ = New(Config{Model: "x"})
	if m.Provider() != DefaultProvider {
		t.Fatalf("default provider %q", m.Provider())
	}
}

func TestGeneratePlainAnswer(t *testing.T) {
	srv := openaitest.NewServer(t, openaitest.Sequence(openaitest.Reply{
		Content: "Hello there.", Model: "gpt-test-2025", Usage: &openaitest.Usage{Prompt: 42, Completion: 7, Cached: 30},
	}))
	m, _ := newModel(t, srv, Config{})
	resp, err := m.Generate(testCtx(t), userReq("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Role != llm.RoleAssistant || resp.Message.Content != "Hello there." || len(resp.Message.ToolCalls) != 0 {
		t.Fatalf("message %+v", resp.Message)
	}
	if resp.StopReason != llm.StopEnd {
		t.Errorf("stop %q", resp.StopReason)
	}
	if resp.Model != "gpt-test-2025" {
		t.Errorf("model %q", resp.Model)
	}
	if want := (llm.Usage{InputTokens: 42, OutputTokens: 7, CachedInputTokens: 30}); resp.Usage != want {
		t.Errorf("usage %+v, want %+v", resp.Usage, want)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if r.Model != "gpt-test" || r.Stream || r.StreamOptions != nil {
		t.Errorf("request model %q stream %v options %v", r.Model, r.Stream, r.StreamOptions)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer sk-test" {
		t.Errorf("authorization %q", got)
	}
	if len(r.Messages) != 1 || r.Messages[0].Role != "user" || r.Messages[0].Text() != "hi" {
		t.Errorf("messages %+v", r.Messages)
	}
	if len(r.Tools) != 0 || r.ToolChoice != nil || r.ParallelToolCalls != nil {
		t.Errorf("tool fields sent without tools: %s", r.Body)
	}
}

func TestGenerateToolCallsAndReasoning(t *testing.T) {
	srv := openaitest.NewServer(t, openaitest.Sequence(openaitest.Reply{
		Reasoning: "I should look both up.",
		ToolCalls: []openaitest.Call{
			{ID: "call_a", Name: "lookup", Args: `{"q":"alpha"}`},
			{ID: "call_b", Name: "ping", Args: ``},
		},
	}))
	m, _ := newModel(t, srv, Config{})
	req := userReq("look up alpha")
	req.Tools = []llm.ToolSpec{{Name: "lookup", Parameters: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)}, {Name: "ping"}}
	resp, err := m.Generate(testCtx(t), req)
	if err != nil {
		t.Fatal(err)
	}
	calls := resp.Message.ToolCalls
	if len(calls) != 2 || calls[0].ID != "call_a" || calls[0].Name != "lookup" || string(calls[0].Args) != `{"q":"alpha"}` ||
		calls[1].ID != "call_b" || string(calls[1].Args) != `{}` {
		t.Fatalf("calls %+v", calls)
	}
	if resp.StopReason != llm.StopToolCalls {
		t.Errorf("stop %q", resp.StopReason)
	}
	if resp.Message.ReasoningText() != "I should look both up." {
		t.Errorf("reasoning %q", resp.Message.ReasoningText())
	}
}

func TestFinishReasons(t *testing.T) {
	for _, tc := range []struct {
		finish string
		calls  bool
		want   llm.StopReason
	}{
		{"stop", false, llm.StopEnd},
		{"", false, llm.StopEnd},
		{"stop", true, llm.StopToolCalls}, // servers that say stop while calling tools
		{"tool_calls", true, llm.StopToolCalls},
		{"function_call", true, llm.StopToolCalls},
		{"length", false, llm.StopMaxTokens},
		{"content_filter", false, llm.StopFiltered},
		{"something_new", false, llm.StopOther},
	} {
		if got := stopReason(tc.finish, tc.calls); got != tc.want {
			t.Errorf("stopReason(%q, %v) = %q, want %q", tc.finish, tc.calls, got, tc.want)
		}
	}
	// End to end, for both transports.
	srv := openaitest.NewServer(t, openaitest.Sequence(
		openaitest.Reply{Content: "cut sh", FinishReason: "length"},
		openaitest.Reply{Content: "cut sh", FinishReason: "length"},
		openaitest.Reply{Refusal: "I can't help with that."},
		openaitest.Reply{Refusal: "I can't help with that."},
	))
	m, _ := newModel(t, srv, Config{})
	resp, err := m.Generate(testCtx(t), userReq("x"))
	if err != nil || resp.StopReason != llm.StopMaxTokens {
		t.Fatalf("generate: %v %+v", err, resp)
	}
	resp, err = llm.Collect(m.Stream(testCtx(t), userReq("x")))
	if err != nil || resp.StopReason != llm.StopMaxTokens || resp.Message.Content != "cut sh" {
		t.Fatalf("stream: %v %+v", err, resp)
	}
	// A refusal is its own field and stop reason, not answer text.
	resp, err = m.Generate(testCtx(t), userReq("x"))
	if err != nil || resp.StopReason != llm.StopRefusal || resp.Refusal != "I can't help with that." || resp.Message.Content != "" {
		t.Fatalf("refusal generate: %v %+v", err, resp)
	}
	resp, err = llm.Collect(m.Stream(testCtx(t), userReq("x")))
	if err != nil || resp.StopReason != llm.StopRefusal || resp.Refusal != "I can't help with that." || resp.Message.Content != "" {
		t.Fatalf("refusal stream: %v %+v", err, resp)
	}
}

func TestStreamedAnswer(t *testing.T) {
	srv := openaitest.NewServer(t, openaitest.Sequence(openaitest.Reply{
		Content: "Streaming, ünïcode and all.", Reasoning: "think", ChunkSize: 4,
		Usage: &openaitest.Usage{Prompt: 11, Completion: 5, Cached: 2},
	}))
	m, _ := newModel(t, srv, Config{})
	evs, err := collect(m.Stream(testCtx(t), userReq("hi")))
	if err != nil {
		t.Fatal(err)
	}
	var text, reasoning strings.Builder
	textEvents, done := 0, 0
	var final *llm.Response
	for i, ev := range evs {
		switch ev.Type {
		case llm.EventTextDelta:
			textEvents++
			text.WriteString(ev.Text)
		case llm.EventReasoningDelta:
			reasoning.WriteString(ev.Text)
		case llm.EventDone:
			done++
			final = ev.Response
			if i != len(evs)-1 {
				t.Errorf("EventDone at %d of %d", i, len(evs))
			}
		default:
			t.Errorf("unexpected event %+v", ev)
		}
	}
	if done != 1 || final == nil {
		t.Fatalf("%d done events", done)
	}
	if textEvents < 3 {
		t.Errorf("only %d text deltas: the answer was not streamed in pieces", textEvents)
	}
	if text.String() != "Streaming, ünïcode and all." || final.Message.Content != text.String() {
		t.Errorf("text %q, final %q", text.String(), final.Message.Content)
	}
	if reasoning.String() != "think" || final.Message.ReasoningText() != "think" {
		t.Errorf("reasoning %q / %q", reasoning.String(), final.Message.ReasoningText())
	}
	if want := (llm.Usage{InputTokens: 11, OutputTokens: 5, CachedInputTokens: 2}); final.Usage != want {
		t.Errorf("usage %+v", final.Usage)
	}
	if final.StopReason != llm.StopEnd || final.Model != "gpt-test" {
		t.Errorf("stop %q model %q", final.StopReason, final.Model)
	}
	r := srv.Requests()[0]
	if !r.Stream || r.StreamOptions == nil || !r.StreamOptions.IncludeUsage {
		t.Errorf("stream %v options %+v", r.Stream, r.StreamOptions)
	}
	if got := r.Header.Get("Accept"); !strings.Contains(got, "text/event-stream") {
		t.Errorf("accept %q", got)
	}
}

func TestStreamedToolCallsSplitAcrossChunks(t *testing.T) {
	args := []string{
		`{"path":"/notes/a.md","content":"first file, with \"quotes\" and ünïcode"}`,
		`{"query":"second","limit":10}`,
		`{}`,
	}
	srv := openaitest.NewServer(t, openaitest.Sequence(openaitest.Reply{
		Content:   "Doing three things.",
		ChunkSize: 2,
		ToolCalls: []openaitest.Call{{ID: "call_1", Name: "write", Args: args[0]}, {ID: "call_2", Name: "search", Args: args[1]}, {ID: "call_3", Name: "noop", Args: args[2]}},
	}))
	m, _ := newModel(t, srv, Config{})
	req := userReq("go")
	req.Tools = []llm.ToolSpec{{Name: "write"}, {Name: "search"}, {Name: "noop"}}
	evs, err := collect(m.Stream(testCtx(t), req))
	if err != nil {
		t.Fatal(err)
	}
	starts := map[int]*llm.ToolCall{}
	frags := map[int]int{}
	got := map[int]*strings.Builder{}
	var acc llm.Accumulator
	var final *llm.Response
	for _, ev := range evs {
		switch ev.Type {
		case llm.EventToolCallStart:
			if starts[ev.Index] != nil {
				t.Errorf("second start for call %d", ev.Index)
			}
			starts[ev.Index] = ev.ToolCall
			got[ev.Index] = &strings.Builder{}
		case llm.EventToolCallDelta:
			if starts[ev.Index] == nil {
				t.Fatalf("delta for call %d before its start", ev.Index)
			}
			frags[ev.Index]++
			got[ev.Index].WriteString(ev.ArgsDelta)
		}
		if r := acc.Add(ev); r != nil {
			final = r
		}
	}
	if len(starts) != 3 {
		t.Fatalf("%d tool call starts", len(starts))
	}
	for i, want := range []struct{ id, name string }{{"call_1", "write"}, {"call_2", "search"}, {"call_3", "noop"}} {
		if starts[i].ID != want.id || starts[i].Name != want.name {
			t.Errorf("start %d = %+v", i, starts[i])
		}
		if got[i].String() != args[i] {
			t.Errorf("call %d args reassembled to %q, want %q", i, got[i].String(), args[i])
		}
		if !json.Valid([]byte(got[i].String())) {
			t.Errorf("call %d args not JSON", i)
		}
	}
	if frags[0] < 10 {
		t.Errorf("call 0 arrived in %d fragments; the test wants many", frags[0])
	}
	if final == nil || len(final.Message.ToolCalls) != 3 || final.StopReason != llm.StopToolCalls || final.Message.Content != "Doing three things." {
		t.Fatalf("final %+v", final)
	}
	for i, c := range final.Message.ToolCalls {
		if string(c.Args) != args[i] {
			t.Errorf("final call %d args %s", i, c.Args)
		}
	}
}

// A server that numbers every streamed tool call 0 but gives each its own id
// still yields separate calls.
func TestStreamToolCallsSharingAnIndex(t *testing.T) {
	var st streamState
	chunk := func(js string) {
		t.Helper()
		var c sdk.ChatCompletionChunk
		if err := json.Unmarshal([]byte(js), &c); err != nil {
			t.Fatal(err)
		}
		st.add(&c)
	}
	chunk(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"f","arguments":"{\"x\":"}}]}}]}`)
	chunk(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]}}]}`)
	chunk(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"b","type":"function","function":{"name":"g","arguments":"{}"}}]}}]}`)
	chunk(`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`)
	resp := st.response()
	if len(resp.Message.ToolCalls) != 2 || resp.Message.ToolCalls[0].ID != "a" || string(resp.Message.ToolCalls[0].Args) != `{"x":1}` ||
		resp.Message.ToolCalls[1].ID != "b" || resp.Message.ToolCalls[1].Name != "g" {
		t.Fatalf("calls %+v", resp.Message.ToolCalls)
	}
}

func TestConcurrentUse(t *testing.T) {
	srv := openaitest.NewServer(t, openaitest.Script(openaitest.Conversation{
		Replies: []openaitest.Reply{{Content: "ok"}},
	}))
	m, _ := newModel(t, srv, Config{})
	errs := make(chan error, 16)
	for i := range 16 {
		go func() {
			var err error
			if i%2 == 0 {
				_, err = m.Generate(context.Background(), userReq("hi"))
			} else {
				_, err = llm.Collect(m.Stream(context.Background(), userReq("hi")))
			}
			errs <- err
		}()
	}
	for range 16 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if srv.Count() != 16 {
		t.Fatalf("%d requests", srv.Count())
	}
}

func TestRequestErrorsAreNotSent(t *testing.T) {
	srv := openaitest.NewServer(t, openaitest.Sequence())
	m, _ := newModel(t, srv, Config{})
	bad := []*llm.Request{
		{Messages: []llm.Message{{Role: "wizard", Content: "x"}}},
		{Messages: []llm.Message{llm.User("x")}, Tools: []llm.ToolSpec{{Name: "t", Parameters: json.RawMessage(`{not json`)}}},
		{Messages: []llm.Message{llm.User("x")}, Tools: []llm.ToolSpec{{Name: "t"}}, ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceTool}},
		{Messages: []llm.Message{llm.User("x")}, Response: &llm.ResponseSchema{Name: "r", Schema: json.RawMessage(`[1]`)}},
		{Messages: []llm.Message{{Role: llm.RoleTool, Content: "orphan"}}},
	}
	for i, req := range bad {
		_, err := m.Generate(testCtx(t), req)
		if !errors.Is(err, llm.ErrBadRequest) {
			t.Errorf("request %d: Generate error %v, want bad request", i, err)
		}
		_, err = llm.Collect(m.Stream(testCtx(t), req))
		if !errors.Is(err, llm.ErrBadRequest) {
			t.Errorf("request %d: Stream error %v, want bad request", i, err)
		}
	}
	if srv.Count() != 0 {
		t.Fatalf("%d invalid requests reached the server", srv.Count())
	}
}

func TestAPIKeyFromEnvironment(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-from-env")
	srv := openaitest.NewServer(t, openaitest.Script(openaitest.Conversation{Replies: []openaitest.Reply{openaitest.Text("ok")}}))
	m, err := New(Config{Model: "m", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Generate(testCtx(t), userReq("hi")); err != nil {
		t.Fatal(err)
	}
	c, err := NewCompatible(srv.URL, "m", Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Generate(testCtx(t), userReq("hi")); err != nil {
		t.Fatal(err)
	}
	c2, _ := NewCompatible(srv.URL, "m", Config{APIKey: "local-key"})
	if _, err := c2.Generate(testCtx(t), userReq("hi")); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if got := reqs[0].Header.Get("Authorization"); got != "Bearer sk-from-env" {
		t.Errorf("New: authorization %q", got)
	}
	if got := reqs[1].Header.Get("Authorization"); got != "" {
		t.Errorf("NewCompatible sent the environment's key: %q", got)
	}
	if got := reqs[2].Header.Get("Authorization"); got != "Bearer local-key" {
		t.Errorf("NewCompatible: authorization %q", got)
	}
}

func TestArgumentsAsObject(t *testing.T) {
	// Some compatible servers send arguments as an object, not a string.
	m, _ := sseServer(t, "application/json", `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":{"path":"/a","n":2}}}]},"finish_reason":"tool_calls"}]}`)
	resp, err := m.Generate(testCtx(t), userReq("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(resp.Message.ToolCalls[0].Args); got != `{"path":"/a","n":2}` {
		t.Fatalf("args %s", got)
	}
	var st streamState
	var c sdk.ChatCompletionChunk
	_ = json.Unmarshal([]byte(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":{"a":1}}}]},"finish_reason":"tool_calls"}]}`), &c)
	st.add(&c)
	if got := string(st.response().Message.ToolCalls[0].Args); got != `{"a":1}` {
		t.Fatalf("streamed args %s", got)
	}
}
