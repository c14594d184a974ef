package gemini

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/providers/gemini/geminitest"
)

func TestGeneratePlainAnswer(t *testing.T) {
	srv := geminitest.NewServer(t, geminitest.Sequence(geminitest.Reply{
		Text:  "Paris is the capital of France.",
		Usage: &geminitest.UsageMetadata{PromptTokenCount: 12, CandidatesTokenCount: 7, ThoughtsTokenCount: 5, CachedContentTokenCount: 4},
	}))
	m, _ := newTestModel(t, srv, func(c *Config) { c.MaxTokens = 256 })
	resp, err := m.Generate(context.Background(), &llm.Request{
		System:   "Answer briefly.",
		Messages: []llm.Message{llm.User("What is the capital of France?")},
		Settings: llm.Settings{Temperature: ptr(0.2), TopP: ptr(0.9), Stop: []string{"END"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Role != llm.RoleAssistant || resp.Message.Content != "Paris is the capital of France." {
		t.Errorf("message = %+v", resp.Message)
	}
	if resp.StopReason != llm.StopEnd {
		t.Errorf("stop = %q", resp.StopReason)
	}
	// Thought tokens count as output and again as reasoning.
	if want := (llm.Usage{InputTokens: 12, OutputTokens: 12, CachedInputTokens: 4, ReasoningTokens: 5}); resp.Usage != want {
		t.Errorf("usage = %+v, want %+v", resp.Usage, want)
	}
	if resp.Model != testModel {
		t.Errorf("model = %q", resp.Model)
	}
	if resp.Message.Extra != nil {
		t.Errorf("a plain answer needs no Extra, got %s", resp.Message.Extra[Provider])
	}

	r := lastRequest(t, srv)
	assertValid(t, srv)
	if r.Model != testModel || r.Stream || r.APIKey != "test-key" {
		t.Errorf("request model=%q stream=%v key=%q", r.Model, r.Stream, r.APIKey)
	}
	if got := r.SystemText(); got != "Answer briefly." {
		t.Errorf("systemInstruction = %q", got)
	}
	if len(r.Body.Contents) != 1 || r.Body.Contents[0].Role != "user" || r.FirstUserText() != "What is the capital of France?" {
		t.Errorf("contents = %s", mustJSON(t, r.Body.Contents))
	}
	g := r.Body.GenerationConfig
	if g == nil || g.MaxOutputTokens != 256 || g.Temperature == nil || *g.Temperature < 0.19 || *g.Temperature > 0.21 ||
		g.TopP == nil || *g.TopP < 0.89 || *g.TopP > 0.91 || !reflect.DeepEqual(g.StopSequences, []string{"END"}) {
		t.Errorf("generationConfig = %s", mustJSON(t, g))
	}
	if len(r.Body.Tools) != 0 || r.Body.ToolConfig != nil {
		t.Errorf("no tools were given, got tools=%s toolConfig=%s", mustJSON(t, r.Body.Tools), mustJSON(t, r.Body.ToolConfig))
	}
}

func TestRequestMaxTokensOverridesConfig(t *testing.T) {
	srv := geminitest.NewServer(t, geminitest.Sequence(geminitest.Text("ok")))
	m, _ := newTestModel(t, srv, func(c *Config) { c.MaxTokens = 256 })
	if _, err := m.Generate(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("hi")}, Settings: llm.Settings{MaxTokens: 32}}); err != nil {
		t.Fatal(err)
	}
	if g := lastRequest(t, srv).Body.GenerationConfig; g == nil || g.MaxOutputTokens != 32 {
		t.Errorf("generationConfig = %s", mustJSON(t, g))
	}
}

func TestStreamAnswer(t *testing.T) {
	text := "The quick brown fox jumps over the lazy dog again and again."
	srv := geminitest.NewServer(t, geminitest.Sequence(geminitest.Reply{Text: text,
		Usage: &geminitest.UsageMetadata{PromptTokenCount: 9, CandidatesTokenCount: 14}}))
	m, _ := newTestModel(t, srv)
	evs, err := collect(m.Stream(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("Tell me a sentence.")}}))
	if err != nil {
		t.Fatal(err)
	}
	var deltas []string
	for _, ev := range evs[:len(evs)-1] {
		if ev.Type != llm.EventTextDelta {
			t.Fatalf("unexpected event %+v", ev)
		}
		deltas = append(deltas, ev.Text)
	}
	if len(deltas) < 2 || strings.Join(deltas, "") != text {
		t.Errorf("deltas = %q", deltas)
	}
	done := evs[len(evs)-1]
	if done.Type != llm.EventDone || done.Response == nil {
		t.Fatalf("last event = %+v", done)
	}
	if done.Response.Message.Content != text || done.Response.StopReason != llm.StopEnd ||
		done.Response.Usage != (llm.Usage{InputTokens: 9, OutputTokens: 14}) {
		t.Errorf("done = %+v", done.Response)
	}
	r := lastRequest(t, srv)
	if !r.Stream || r.Query != "alt=sse" {
		t.Errorf("stream=%v query=%q", r.Stream, r.Query)
	}
	assertValid(t, srv)
}

var threeCalls = []geminitest.Call{
	{Name: "read_file", Args: map[string]any{"path": "/a.txt"}},
	{Name: "read_file", Args: map[string]any{"path": "/b.txt"}},
	{Name: "ls", Args: nil},
}

func checkThreeCalls(t *testing.T, calls []llm.ToolCall) {
	t.Helper()
	if len(calls) != 3 {
		t.Fatalf("calls = %+v", calls)
	}
	wantArgs := []string{`{"path":"/a.txt"}`, `{"path":"/b.txt"}`, `{}`}
	ids := map[string]bool{}
	for i, c := range calls {
		if c.Name != threeCalls[i].Name || string(c.Args) != wantArgs[i] {
			t.Errorf("call %d = %s %s", i, c.Name, c.Args)
		}
		if c.ID == "" || ids[c.ID] {
			t.Errorf("call %d has an empty or duplicate id %q", i, c.ID)
		}
		ids[c.ID] = true
	}
}

func TestGenerateSeveralFunctionCalls(t *testing.T) {
	srv := geminitest.NewServer(t, geminitest.Sequence(geminitest.Reply{Text: "Let me look.", Calls: threeCalls}))
	m, _ := newTestModel(t, srv)
	resp, err := m.Generate(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("look around")}, Tools: testTools})
	if err != nil {
		t.Fatal(err)
	}
	checkThreeCalls(t, resp.Message.ToolCalls)
	if resp.Message.Content != "Let me look." || resp.StopReason != llm.StopToolCalls {
		t.Errorf("content=%q stop=%q", resp.Message.Content, resp.StopReason)
	}
	// Gemini gave no ids: they are generated, numbered within the conversation.
	for i, c := range resp.Message.ToolCalls {
		if want := "call_" + string(rune('1'+i)); c.ID != want {
			t.Errorf("id %d = %q, want %q", i, c.ID, want)
		}
	}
	assertValid(t, srv)
}

func TestGeneratedIDsAreUniqueInTheConversation(t *testing.T) {
	srv := geminitest.NewServer(t, geminitest.Sequence(geminitest.Calls(geminitest.Call{Name: "ls"})))
	m, _ := newTestModel(t, srv)
	prev := llm.Assistant("", llm.ToolCall{ID: "call_1", Name: "ls", Args: []byte(`{}`)}, llm.ToolCall{ID: "call_3", Name: "ls", Args: []byte(`{}`)})
	resp, err := m.Generate(context.Background(), &llm.Request{Tools: testTools, Messages: []llm.Message{
		llm.User("go"), prev, llm.ToolResult(prev.ToolCalls[0], "a", false), llm.ToolResult(prev.ToolCalls[1], "b", false)}})
	if err != nil {
		t.Fatal(err)
	}
	if id := resp.Message.ToolCalls[0].ID; id != "call_4" {
		t.Errorf("id = %q, want call_4 (after the 2 calls in the history, skipping call_3)", id)
	}
}

func TestStreamSeveralFunctionCallsOverChunks(t *testing.T) {
	srv := geminitest.NewServer(t, geminitest.Sequence(geminitest.Reply{Text: "Let me look at those files.", Calls: threeCalls}))
	m, _ := newTestModel(t, srv)
	evs, err := collect(m.Stream(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("look around")}, Tools: testTools}))
	if err != nil {
		t.Fatal(err)
	}
	var acc llm.Accumulator
	var final *llm.Response
	starts, deltas := 0, 0
	for _, ev := range evs {
		switch ev.Type {
		case llm.EventToolCallStart:
			if ev.Index != starts || ev.ToolCall == nil || ev.ToolCall.Name != threeCalls[starts].Name || ev.ToolCall.ID == "" {
				t.Errorf("start %d = %+v", starts, ev)
			}
			starts++
		case llm.EventToolCallDelta:
			if ev.Index != starts-1 {
				t.Errorf("delta for call %d after start %d", ev.Index, starts-1)
			}
			deltas++
		}
		if r := acc.Add(ev); r != nil {
			final = r
		}
	}
	if starts != 3 || deltas != 3 {
		t.Errorf("starts=%d deltas=%d, want one of each per call", starts, deltas)
	}
	if final == nil {
		t.Fatal("no EventDone")
	}
	checkThreeCalls(t, final.Message.ToolCalls)
	if final.StopReason != llm.StopToolCalls || final.Message.Content != "Let me look at those files." {
		t.Errorf("final = %+v", final)
	}
	// The deltas alone rebuild the same message.
	partial := acc.Partial().Message
	if partial.Content != final.Message.Content || !reflect.DeepEqual(partial.ToolCalls, final.Message.ToolCalls) {
		t.Errorf("deltas rebuild %+v, done says %+v", partial, final.Message)
	}
}

func TestRetryAfterRateLimitThenSuccess(t *testing.T) {
	for _, tc := range []struct {
		name string
		fail geminitest.Reply
		want time.Duration
	}{
		{"header", geminitest.Reply{Status: 429, Message: "Resource has been exhausted (e.g. check quota).",
			Header: http.Header{"Retry-After": {"7"}}}, 7 * time.Second},
		{"retry info", geminitest.Reply{Status: 429, Message: "You exceeded your current quota.",
			Details: []map[string]any{{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "3s"}}}, 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, stream := range []bool{false, true} {
				srv := geminitest.NewServer(t, geminitest.Sequence(tc.fail, geminitest.Text("done")))
				m, sl := newTestModel(t, srv)
				req := &llm.Request{Messages: []llm.Message{llm.User("hi")}}
				var resp *llm.Response
				var err error
				if stream {
					resp, err = llm.Collect(m.Stream(context.Background(), req))
				} else {
					resp, err = m.Generate(context.Background(), req)
				}
				if err != nil {
					t.Fatalf("stream=%v: %v", stream, err)
				}
				if resp.Message.Content != "done" {
					t.Errorf("content = %q", resp.Message.Content)
				}
				if got := sl.Waits(); !reflect.DeepEqual(got, []time.Duration{tc.want}) {
					t.Errorf("stream=%v: sleeps = %v, want [%v]", stream, got, tc.want)
				}
				if n := len(srv.Requests()); n != 2 {
					t.Errorf("requests = %d", n)
				}
			}
		})
	}
}

func TestServerErrorThenSuccess(t *testing.T) {
	for _, stream := range []bool{false, true} {
		srv := geminitest.NewServer(t, geminitest.Sequence(geminitest.Fail(500, "An internal error has occurred."), geminitest.Fail(503, "The model is overloaded."), geminitest.Text("ok")))
		m, sl := newTestModel(t, srv)
		req := &llm.Request{Messages: []llm.Message{llm.User("hi")}}
		var resp *llm.Response
		var err error
		if stream {
			resp, err = llm.Collect(m.Stream(context.Background(), req))
		} else {
			resp, err = m.Generate(context.Background(), req)
		}
		if err != nil || resp.Message.Content != "ok" {
			t.Fatalf("stream=%v: resp=%+v err=%v", stream, resp, err)
		}
		if len(sl.Waits()) != 2 || len(srv.Requests()) != 3 {
			t.Errorf("stream=%v: sleeps=%v requests=%d", stream, sl.Waits(), len(srv.Requests()))
		}
	}
}

func TestRetriesRunOut(t *testing.T) {
	srv := geminitest.NewServer(t, func(*geminitest.Request) geminitest.Reply { return geminitest.Fail(500, "boom") })
	m, sl := newTestModel(t, srv)
	_, err := m.Generate(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("hi")}})
	if !errors.Is(err, llm.ErrServer) {
		t.Fatalf("err = %v", err)
	}
	if len(srv.Requests()) != 4 || len(sl.Waits()) != 3 {
		t.Errorf("requests=%d sleeps=%d, want 4 attempts", len(srv.Requests()), len(sl.Waits()))
	}
}

func TestStreamCutMidwayIsNotRetried(t *testing.T) {
	srv := geminitest.NewServer(t, geminitest.Sequence(
		geminitest.Reply{Text: "one two three four five six seven eight nine", CutAfter: 1},
		geminitest.Text("must not be asked for")))
	m, _ := newTestModel(t, srv)
	evs, err := collect(m.Stream(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("count")}}))
	if !errors.Is(err, llm.ErrNetwork) {
		t.Fatalf("err = %v, want a network error", err)
	}
	if len(evs) == 0 || evs[0].Type != llm.EventTextDelta {
		t.Errorf("events before the cut = %+v", evs)
	}
	for _, ev := range evs {
		if ev.Type == llm.EventDone {
			t.Error("a cut stream must not end with EventDone")
		}
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("requests = %d, want exactly 1 (no retry after output)", n)
	}
}

func TestStreamEndingWithoutFinishIsAnError(t *testing.T) {
	// Output was yielded: a network error, not retried.
	srv := geminitest.NewServer(t, geminitest.Sequence(geminitest.Reply{Text: "a b c d", NoFinish: true}, geminitest.Text("no")))
	m, _ := newTestModel(t, srv)
	evs, err := collect(m.Stream(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("abc")}}))
	if !errors.Is(err, llm.ErrNetwork) || !errors.Is(err, llm.ErrStreamIncomplete) || len(evs) == 0 || len(srv.Requests()) != 1 {
		t.Fatalf("events=%d err=%v requests=%d", len(evs), err, len(srv.Requests()))
	}
	// Nothing was yielded: retried.
	srv = geminitest.NewServer(t, geminitest.Sequence(geminitest.Reply{NoFinish: true}, geminitest.Text("second")))
	m, _ = newTestModel(t, srv)
	resp, err := llm.Collect(m.Stream(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("abc")}}))
	if err != nil || resp.Message.Content != "second" || len(srv.Requests()) != 2 {
		t.Fatalf("resp=%+v err=%v requests=%d", resp, err, len(srv.Requests()))
	}
}

func TestStreamCutAfterTheFinalChunkStillSucceeds(t *testing.T) {
	srv := geminitest.NewServer(t, geminitest.Sequence(geminitest.Reply{Text: "a b c", CutAfter: 3}))
	m, _ := newTestModel(t, srv)
	resp, err := llm.Collect(m.Stream(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("abc")}}))
	if err != nil || resp.Message.Content != "a b c" {
		t.Fatalf("resp=%+v err=%v", resp, err)
	}
}

func TestStreamErrorEventMidwayIsNotRetried(t *testing.T) {
	srv := geminitest.NewServer(t, geminitest.Sequence(
		geminitest.Reply{Text: "one two three four five six", StreamError: &geminitest.ErrorStatus{Code: 500, Status: "INTERNAL", Message: "An internal error has occurred."}},
		geminitest.Text("must not be asked for")))
	m, _ := newTestModel(t, srv)
	evs, err := collect(m.Stream(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("count")}}))
	var ae *llm.APIError
	if !errors.As(err, &ae) || ae.Kind != llm.ErrKindServer || ae.Message != "An internal error has occurred." {
		t.Fatalf("err = %v", err)
	}
	if len(evs) == 0 || len(srv.Requests()) != 1 {
		t.Errorf("events=%d requests=%d", len(evs), len(srv.Requests()))
	}
}

func TestStreamCutBeforeFirstByteIsRetried(t *testing.T) {
	srv := geminitest.NewServer(t, geminitest.Sequence(geminitest.Reply{Hangup: true}, geminitest.Text("second time lucky")))
	m, sl := newTestModel(t, srv)
	resp, err := llm.Collect(m.Stream(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("hi")}}))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Content != "second time lucky" || len(srv.Requests()) != 2 || len(sl.Waits()) != 1 {
		t.Errorf("content=%q requests=%d sleeps=%v", resp.Message.Content, len(srv.Requests()), sl.Waits())
	}
}

func TestGenerateHangupIsRetried(t *testing.T) {
	srv := geminitest.NewServer(t, geminitest.Sequence(geminitest.Reply{Hangup: true}, geminitest.Text("ok")))
	m, _ := newTestModel(t, srv)
	resp, err := m.Generate(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("hi")}})
	if err != nil || resp.Message.Content != "ok" || len(srv.Requests()) != 2 {
		t.Fatalf("resp=%+v err=%v requests=%d", resp, err, len(srv.Requests()))
	}
}

func TestNetworkErrorWhenServerIsGone(t *testing.T) {
	srv := geminitest.NewServer(t, geminitest.Sequence())
	m, sl := newTestModel(t, srv)
	srv.Close()
	_, err := m.Generate(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("hi")}})
	if !errors.Is(err, llm.ErrNetwork) || len(sl.Waits()) != 3 {
		t.Fatalf("err=%v sleeps=%v", err, sl.Waits())
	}
}

func TestAuthErrors(t *testing.T) {
	t.Run("invalid key", func(t *testing.T) {
		srv := geminitest.NewServer(t, geminitest.Sequence(geminitest.Text("never")), geminitest.WithAPIKey("the-right-key"))
		m, sl := newTestModel(t, srv)
		for _, stream := range []bool{false, true} {
			req := &llm.Request{Messages: []llm.Message{llm.User("hi")}}
			var err error
			if stream {
				_, err = llm.Collect(m.Stream(context.Background(), req))
			} else {
				_, err = m.Generate(context.Background(), req)
			}
			var ae *llm.APIError
			if !errors.Is(err, llm.ErrAuth) || !errors.As(err, &ae) {
				t.Fatalf("stream=%v: err = %v", stream, err)
			}
			if ae.Message != "API key not valid. Please pass a valid API key." || ae.StatusCode != 400 || ae.Provider != "gemini" {
				t.Errorf("stream=%v: error = %+v", stream, ae)
			}
		}
		if len(sl.Waits()) != 0 || len(srv.Requests()) != 2 {
			t.Errorf("auth errors must not be retried: sleeps=%v requests=%d", sl.Waits(), len(srv.Requests()))
		}
	})
	t.Run("permission denied", func(t *testing.T) {
		msg := "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API."
		srv := geminitest.NewServer(t, geminitest.Sequence(geminitest.Fail(403, msg)))
		m, _ := newTestModel(t, srv)
		_, err := m.Generate(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("hi")}})
		var ae *llm.APIError
		if !errors.Is(err, llm.ErrAuth) || !errors.As(err, &ae) || ae.Message != msg || ae.StatusCode != 403 {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestRequestErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply geminitest.Reply
		want  error
	}{
		{"context length", geminitest.Fail(400, "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)."), llm.ErrContextLength},
		{"bad request", geminitest.Fail(400, "* GenerateContentRequest.contents: contents is not specified"), llm.ErrBadRequest},
		{"not found", geminitest.Fail(404, "models/gemini-9 is not found for API version v1beta, or is not supported for generateContent."), llm.ErrNotFound},
		{"plain text body", geminitest.Reply{Status: 502, RawBody: "<html>Bad Gateway</html>"}, llm.ErrServer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := geminitest.NewServer(t, func(*geminitest.Request) geminitest.Reply { return tc.reply })
			m, _ := newTestModel(t, srv)
			for _, stream := range []bool{false, true} {
				req := &llm.Request{Messages: []llm.Message{llm.User("hi")}}
				var err error
				if stream {
					_, err = llm.Collect(m.Stream(context.Background(), req))
				} else {
					_, err = m.Generate(context.Background(), req)
				}
				var ae *llm.APIError
				if !errors.Is(err, tc.want) || !errors.As(err, &ae) {
					t.Fatalf("stream=%v: err = %v, want %v", stream, err, tc.want)
				}
				want := tc.reply.Message
				if tc.reply.RawBody != "" {
					want = tc.reply.RawBody
				}
				if ae.Message != want || ae.StatusCode != tc.reply.Status {
					t.Errorf("stream=%v: message %q status %d", stream, ae.Message, ae.StatusCode)
				}
			}
		})
	}
}

func TestCancellation(t *testing.T) {
	srv := geminitest.NewServer(t, geminitest.Sequence(geminitest.Reply{Text: "late", Delay: 10 * time.Second},
		geminitest.Reply{Text: "late", Delay: 10 * time.Second}))
	m, sl := newTestModel(t, srv)
	req := &llm.Request{Messages: []llm.Message{llm.User("hi")}}
	for _, stream := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(50*time.Millisecond, cancel)
		start := time.Now()
		var err error
		if stream {
			_, err = llm.Collect(m.Stream(ctx, req))
		} else {
			_, err = m.Generate(ctx, req)
		}
		if !errors.Is(err, context.Canceled) {
			t.Errorf("stream=%v: err = %v", stream, err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("stream=%v: took %v to stop", stream, d)
		}
		cancel()
	}
	if len(sl.Waits()) != 0 {
		t.Errorf("a cancelled call must not be retried: %v", sl.Waits())
	}
}

func TestStreamCancelledMidway(t *testing.T) {
	srv := geminitest.NewServer(t, geminitest.Sequence(geminitest.Text("one two three four five six seven eight nine")))
	m, _ := newTestModel(t, srv)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var err error
	n := 0
	for ev, e := range m.Stream(ctx, &llm.Request{Messages: []llm.Message{llm.User("count")}}) {
		if e != nil {
			err = e
			break
		}
		if ev.Type == llm.EventTextDelta {
			n++
			cancel()
		}
	}
	if n != 1 || !errors.Is(err, context.Canceled) {
		t.Errorf("deltas after cancel = %d, err = %v", n, err)
	}
	if len(srv.Requests()) != 1 {
		t.Errorf("requests = %d", len(srv.Requests()))
	}
}

func TestConsumerStopsStreamEarly(t *testing.T) {
	srv := geminitest.NewServer(t, geminitest.Sequence(geminitest.Text("one two three four five six seven eight nine")))
	m, _ := newTestModel(t, srv)
	for range m.Stream(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("count")}}) {
		break
	}
	if len(srv.Requests()) != 1 {
		t.Errorf("requests = %d", len(srv.Requests()))
	}
}

// TestStopReasons: blocked prompts and answers withheld for safety,
// recitation and the like are refusals with a sentence (the API's own when it
// gave one: the SDK keeps a block reason message, not a finish message),
// streamed or not.
func TestStopReasons(t *testing.T) {
	for _, tc := range []struct {
		reply   geminitest.Reply
		want    llm.StopReason
		refusal string
	}{
		{geminitest.Reply{Text: "cut", FinishReason: "MAX_TOKENS"}, llm.StopMaxTokens, ""},
		{geminitest.Reply{FinishReason: "SAFETY"}, llm.StopRefusal, "Gemini withheld the answer (finish reason SAFETY)."},
		{geminitest.Reply{Text: "quoted", FinishReason: "RECITATION"}, llm.StopRefusal, "Gemini withheld the answer (finish reason RECITATION)."},
		{geminitest.Reply{FinishReason: "PROHIBITED_CONTENT"}, llm.StopRefusal, "Gemini withheld the answer (finish reason PROHIBITED_CONTENT)."},
		{geminitest.Reply{FinishReason: "BLOCKLIST"}, llm.StopRefusal, "Gemini withheld the answer (finish reason BLOCKLIST)."},
		{geminitest.Reply{FinishReason: "SPII"}, llm.StopRefusal, "Gemini withheld the answer (finish reason SPII)."},
		{geminitest.Reply{BlockReason: "SAFETY"}, llm.StopRefusal, "Gemini blocked the prompt (block reason SAFETY)."},
		{geminitest.Reply{BlockReason: "PROHIBITED_CONTENT", BlockReasonMessage: "Prompt blocked."}, llm.StopRefusal, "Prompt blocked."},
		{geminitest.Reply{FinishReason: "MALFORMED_FUNCTION_CALL"}, llm.StopOther, ""},
		{geminitest.Reply{Calls: []geminitest.Call{{Name: "ls"}}}, llm.StopToolCalls, ""},
		{geminitest.Reply{Text: "fine"}, llm.StopEnd, ""},
	} {
		for _, stream := range []bool{false, true} {
			srv := geminitest.NewServer(t, geminitest.Sequence(tc.reply))
			m, _ := newTestModel(t, srv)
			req := &llm.Request{Messages: []llm.Message{llm.User("hi")}, Tools: testTools}
			var resp *llm.Response
			var err error
			if stream {
				resp, err = llm.Collect(m.Stream(context.Background(), req))
			} else {
				resp, err = m.Generate(context.Background(), req)
			}
			if err != nil {
				t.Fatalf("%+v stream=%v: %v", tc.reply, stream, err)
			}
			if resp.StopReason != tc.want || resp.Refusal != tc.refusal {
				t.Errorf("%+v stream=%v: stop = %q refusal %q, want %q %q", tc.reply, stream, resp.StopReason, resp.Refusal, tc.want, tc.refusal)
			}
		}
	}
}

func TestInvalidRequestsFailBeforeSending(t *testing.T) {
	srv := geminitest.NewServer(t, geminitest.Sequence())
	m, _ := newTestModel(t, srv)
	for name, req := range map[string]*llm.Request{
		"nil":            nil,
		"bad schema":     {Messages: []llm.Message{llm.User("hi")}, Tools: []llm.ToolSpec{{Name: "x", Parameters: []byte(`{"type":`)}}},
		"array schema":   {Messages: []llm.Message{llm.User("hi")}, Tools: []llm.ToolSpec{{Name: "x", Parameters: []byte(`[1]`)}}},
		"nameless tool":  {Messages: []llm.Message{llm.User("hi")}, Tools: []llm.ToolSpec{{Parameters: []byte(`{}`)}}},
		"NaN":            {Messages: []llm.Message{llm.User("hi")}, Settings: llm.Settings{Temperature: ptr(nanValue())}},
		"bad response":   {Messages: []llm.Message{llm.User("hi")}, Response: &llm.ResponseSchema{Name: "r", Schema: []byte(`nope`)}},
		"unknown choice": {Messages: []llm.Message{llm.User("hi")}, Tools: testTools, ToolChoice: llm.ToolChoice{Mode: "sometimes"}},
	} {
		_, err := m.Generate(context.Background(), req)
		if !errors.Is(err, llm.ErrBadRequest) {
			t.Errorf("%s: err = %v", name, err)
		}
		if _, err := llm.Collect(m.Stream(context.Background(), req)); !errors.Is(err, llm.ErrBadRequest) {
			t.Errorf("%s (stream): err = %v", name, err)
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests were sent", n)
	}
}

func nanValue() float64 {
	zero := 0.0
	return zero / zero
}

func TestNewConfig(t *testing.T) {
	if _, err := New(context.Background(), Config{APIKey: "k"}); err == nil {
		t.Error("a missing model must be an error")
	}
	t.Setenv("GEMINI_API_KEY", "")
	t.Setenv("GOOGLE_API_KEY", "")
	if _, err := New(context.Background(), Config{Model: testModel}); err == nil {
		t.Error("a missing key must be an error")
	}
	for _, tc := range []struct{ gemini, google, want string }{
		{"from-gemini", "from-google", "from-gemini"},
		{"", "from-google", "from-google"},
	} {
		t.Setenv("GEMINI_API_KEY", tc.gemini)
		t.Setenv("GOOGLE_API_KEY", tc.google)
		srv := geminitest.NewServer(t, geminitest.Sequence(geminitest.Text("ok")))
		m, err := New(context.Background(), Config{Model: testModel, BaseURL: srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Generate(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("hi")}}); err != nil {
			t.Fatal(err)
		}
		if got := lastRequest(t, srv).APIKey; got != tc.want {
			t.Errorf("key = %q, want %q", got, tc.want)
		}
	}
}

func TestCustomHTTPClientIsUsedNotModified(t *testing.T) {
	srv := geminitest.NewServer(t, geminitest.Sequence(geminitest.Text("ok")))
	rt := &countingTransport{base: http.DefaultTransport}
	hc := &http.Client{Transport: rt}
	m, _ := newTestModel(t, srv, func(c *Config) { c.HTTPClient = hc })
	if _, err := m.Generate(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("hi")}}); err != nil {
		t.Fatal(err)
	}
	if rt.n != 1 || hc.Transport != rt {
		t.Errorf("transport calls = %d, transport replaced = %v", rt.n, hc.Transport != rt)
	}
}

type countingTransport struct {
	base http.RoundTripper
	n    int
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n++
	return c.base.RoundTrip(r)
}

func TestConcurrentUse(t *testing.T) {
	srv := geminitest.NewServer(t, func(r *geminitest.Request) geminitest.Reply {
		return geminitest.Text("echo: " + r.FirstUserText())
	})
	m, _ := newTestModel(t, srv)
	errs := make(chan error, 16)
	for i := range 16 {
		go func() {
			q := strings.Repeat("q", i+1)
			req := &llm.Request{Messages: []llm.Message{llm.User(q)}}
			var resp *llm.Response
			var err error
			if i%2 == 0 {
				resp, err = m.Generate(context.Background(), req)
			} else {
				resp, err = llm.Collect(m.Stream(context.Background(), req))
			}
			if err == nil && resp.Message.Content != "echo: "+q {
				err = errors.New("wrong answer " + resp.Message.Content)
			}
			errs <- err
		}()
	}
	for range 16 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

func TestResponseSchemaAndThinking(t *testing.T) {
	srv := geminitest.NewServer(t, geminitest.Sequence(geminitest.Reply{Thought: "Thinking about the weather.", Text: `{"city":"Oslo"}`}))
	m, _ := newTestModel(t, srv, func(c *Config) { c.IncludeThoughts = true; c.ThinkingBudget = ptr(1024) })
	schema := `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`
	resp, err := m.Generate(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("where?")},
		Response: &llm.ResponseSchema{Name: "answer", Schema: json.RawMessage(schema)}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Content != `{"city":"Oslo"}` || resp.Message.ReasoningText() != "Thinking about the weather." {
		t.Errorf("message = %+v", resp.Message)
	}
	g := lastRequest(t, srv).Body.GenerationConfig
	if g == nil || g.ResponseMIMEType != "application/json" || !jsonEqual(g.ResponseJSONSchema, []byte(schema)) {
		t.Errorf("generationConfig = %s", mustJSON(t, g))
	}
	if g.ThinkingConfig == nil || !g.ThinkingConfig.IncludeThoughts || g.ThinkingConfig.ThinkingBudget == nil || *g.ThinkingConfig.ThinkingBudget != 1024 {
		t.Errorf("thinkingConfig = %s", mustJSON(t, g.ThinkingConfig))
	}
	assertValid(t, srv)
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}
