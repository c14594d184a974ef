package anthropic

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
	at "github.com/deepagents-go/deepagents/providers/anthropic/anthropictest"
	"github.com/deepagents-go/deepagents/providers/retry"
)

func TestNewValidates(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Fatal("New without a model succeeded")
	}
	if _, err := New(Config{Model: "m", StructuredOutput: "xml"}); err == nil {
		t.Fatal("New with an unknown structured-output mode succeeded")
	}
	m, err := New(Config{Model: "claude-x", APIKey: "k"})
	if err != nil || m.Name() != "claude-x" {
		t.Fatalf("New = %v, %v", m, err)
	}
}

func TestGeneratePlainAnswer(t *testing.T) {
	srv := at.New(t, at.Sequence(at.Reply{
		Text:  "Hello there.",
		Usage: &at.Usage{InputTokens: 10, OutputTokens: 7, CacheReadInputTokens: 20, CacheCreationInputTokens: 5},
		Model: "claude-test-20990101",
	}))
	m := newModel(t, srv, nil)
	req := prompt("Say hello.")
	req.System = "Be brief."
	resp, err := m.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Role != llm.RoleAssistant || resp.Message.Content != "Hello there." || len(resp.Message.ToolCalls) != 0 {
		t.Fatalf("message = %+v", resp.Message)
	}
	if resp.StopReason != llm.StopEnd {
		t.Fatalf("stop = %s", resp.StopReason)
	}
	want := llm.Usage{InputTokens: 35, OutputTokens: 7, CachedInputTokens: 20, CacheWriteTokens: 5}
	if resp.Usage != want {
		t.Fatalf("usage = %+v, want %+v", resp.Usage, want)
	}
	if resp.Model != "claude-test-20990101" {
		t.Fatalf("model = %q", resp.Model)
	}
	if resp.Message.Extra != nil {
		t.Fatalf("Extra set without thinking: %s", resp.Message.Extra)
	}

	got := srv.Last()
	if got.Stream || got.Model != "claude-test" || *got.MaxTokens != DefaultMaxTokens {
		t.Fatalf("request: stream=%v model=%q max_tokens=%d", got.Stream, got.Model, *got.MaxTokens)
	}
	if got.SystemText() != "Be brief." || len(got.Messages) != 1 || got.Messages[0].Role != "user" {
		t.Fatalf("system %q, messages %+v", got.SystemText(), got.Messages)
	}
	if !strings.HasPrefix(got.Header.Get("Authorization"), "Bearer "+testKey) && got.Header.Get("X-Api-Key") != testKey {
		t.Fatalf("no credential sent: %v", got.Header)
	}
}

func TestStreamedAnswer(t *testing.T) {
	text := "Streaming, one small piece at a time — ünïcödé included."
	srv := at.New(t, at.Sequence(at.Reply{Text: text, Chunk: 3,
		Usage: &at.Usage{InputTokens: 12, OutputTokens: 30, CacheReadInputTokens: 100}}))
	m := newModel(t, srv, nil)
	s := drain(m.Stream(context.Background(), prompt("stream please")))
	resp := s.done(t)
	if s.text() != text || resp.Message.Content != text {
		t.Fatalf("deltas %q, final %q, want %q", s.text(), resp.Message.Content, text)
	}
	if n := s.count(llm.EventTextDelta); n < 10 {
		t.Fatalf("only %d text deltas; the server sent ~20", n)
	}
	want := llm.Usage{InputTokens: 112, OutputTokens: 30, CachedInputTokens: 100}
	if resp.Usage != want || resp.StopReason != llm.StopEnd {
		t.Fatalf("usage %+v stop %s", resp.Usage, resp.StopReason)
	}
	if !srv.Last().Stream {
		t.Fatal("request did not ask for a stream")
	}
	// The agent's accumulator must agree with the final response.
	var acc llm.Accumulator
	var final *llm.Response
	for _, ev := range s.events {
		if r := acc.Add(ev); r != nil {
			final = r
		}
	}
	if final == nil || final.Message.Content != text {
		t.Fatalf("accumulated %+v", final)
	}
}

var threeCalls = []at.ToolCall{
	{ID: "toolu_a", Name: "read_file", Input: json.RawMessage(`{"path":"/notes/a.md","offset":0,"limit":200}`)},
	{ID: "toolu_b", Name: "write_file", Input: json.RawMessage(`{"path":"/out/b.txt","content":"line one\nline \"two\"\n"}`)},
	{ID: "toolu_c", Name: "ls", Input: json.RawMessage(`{}`)},
}

func checkThreeCalls(t *testing.T, calls []llm.ToolCall) {
	t.Helper()
	if len(calls) != 3 {
		t.Fatalf("got %d tool calls, want 3: %+v", len(calls), calls)
	}
	for i, c := range calls {
		w := threeCalls[i]
		if c.ID != w.ID || c.Name != w.Name || compact(t, string(c.Args)) != compact(t, string(w.Input)) {
			t.Errorf("call %d = %s %s %s, want %s %s %s", i, c.ID, c.Name, c.Args, w.ID, w.Name, w.Input)
		}
	}
}

func TestGenerateSeveralToolCalls(t *testing.T) {
	srv := at.New(t, at.Sequence(at.Reply{Text: "Let me look.", ToolCalls: threeCalls}))
	resp, err := newModel(t, srv, nil).Generate(context.Background(), prompt("go"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Content != "Let me look." || resp.StopReason != llm.StopToolCalls {
		t.Fatalf("content %q stop %s", resp.Message.Content, resp.StopReason)
	}
	checkThreeCalls(t, resp.Message.ToolCalls)
}

func TestStreamSeveralToolCallsSplitAcrossDeltas(t *testing.T) {
	srv := at.New(t, at.Sequence(at.Reply{Text: "Let me look.", ToolCalls: threeCalls, Chunk: 2}))
	s := drain(newModel(t, srv, nil).Stream(context.Background(), prompt("go")))
	resp := s.done(t)
	checkThreeCalls(t, resp.Message.ToolCalls)
	if resp.StopReason != llm.StopToolCalls {
		t.Fatalf("stop = %s", resp.StopReason)
	}

	// Starts carry the position among tool calls (0, 1, 2), not the
	// content-block index (1, 2, 3), and precede their deltas.
	args := map[int]*strings.Builder{}
	var starts []int
	deltas := map[int]int{}
	for _, ev := range s.events {
		switch ev.Type {
		case llm.EventToolCallStart:
			starts = append(starts, ev.Index)
			if ev.ToolCall == nil || ev.ToolCall.ID != threeCalls[ev.Index].ID || ev.ToolCall.Name != threeCalls[ev.Index].Name {
				t.Fatalf("start %d = %+v", ev.Index, ev.ToolCall)
			}
			args[ev.Index] = &strings.Builder{}
		case llm.EventToolCallDelta:
			b, ok := args[ev.Index]
			if !ok {
				t.Fatalf("delta for call %d before its start", ev.Index)
			}
			b.WriteString(ev.ArgsDelta)
			deltas[ev.Index]++
		}
	}
	if !reflect.DeepEqual(starts, []int{0, 1, 2}) {
		t.Fatalf("tool-call start indices %v, want [0 1 2]", starts)
	}
	for i := 0; i < 2; i++ {
		if deltas[i] < 10 {
			t.Errorf("call %d arrived in %d deltas; the server split it into many", i, deltas[i])
		}
		if compact(t, args[i].String()) != compact(t, string(threeCalls[i].Input)) {
			t.Errorf("call %d deltas join to %s", i, args[i].String())
		}
	}
	if args[2].String() != "" {
		t.Errorf("empty-input call got deltas %q", args[2].String())
	}
	var acc llm.Accumulator
	for _, ev := range s.events[:len(s.events)-1] {
		acc.Add(ev)
	}
	checkThreeCalls(t, acc.Partial().Message.ToolCalls)
}

func TestRateLimitRetryAfterThenSuccess(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "generate", true: "stream"}[stream], func(t *testing.T) {
			srv := at.New(t, at.Sequence(
				at.Reply{Error: &at.Error{Status: 429, Type: "rate_limit_error", Message: "Number of request tokens has exceeded your per-minute rate limit",
					Header: http.Header{"Retry-After": {"7"}}}},
				at.Reply{Error: &at.Error{Status: 429, Type: "rate_limit_error", Message: "slow down",
					Header: http.Header{"Retry-After-Ms": {"1500"}}}},
				at.Text("finally"),
			))
			var sl retry.Recorder
			m := newModel(t, srv, &sl)
			resp, err := generateOrStream(m, stream, prompt("hi"))
			if err != nil {
				t.Fatal(err)
			}
			if resp.Message.Content != "finally" {
				t.Fatalf("content %q", resp.Message.Content)
			}
			if got := sl.Waits(); !reflect.DeepEqual(got, []time.Duration{7 * time.Second, 1500 * time.Millisecond}) {
				t.Fatalf("waits %v, want [7s 1.5s]", got)
			}
			if srv.Count() != 3 {
				t.Fatalf("server saw %d requests, want 3", srv.Count())
			}
		})
	}
}

func generateOrStream(m *Model, stream bool, req *llm.Request) (*llm.Response, error) {
	if stream {
		return llm.Collect(m.Stream(context.Background(), req))
	}
	return m.Generate(context.Background(), req)
}

func TestServerErrorsAreRetried(t *testing.T) {
	cases := []struct {
		name string
		fail at.Reply
	}{
		{"500", at.Fail(500, "api_error", "Internal server error")},
		{"529 overloaded", at.Fail(529, "overloaded_error", "Overloaded")},
		{"503", at.Reply{Error: &at.Error{Status: 503, Message: "upstream unavailable"}}},
	}
	for _, tc := range cases {
		for _, stream := range []bool{false, true} {
			t.Run(tc.name+map[bool]string{false: "/generate", true: "/stream"}[stream], func(t *testing.T) {
				srv := at.New(t, at.Sequence(tc.fail, at.Text("recovered")))
				var sl retry.Recorder
				resp, err := generateOrStream(newModel(t, srv, &sl), stream, prompt("hi"))
				if err != nil {
					t.Fatal(err)
				}
				if resp.Message.Content != "recovered" || srv.Count() != 2 || len(sl.Waits()) != 1 {
					t.Fatalf("content %q, %d requests, waits %v", resp.Message.Content, srv.Count(), sl.Waits())
				}
			})
		}
	}
}

func TestServerErrorGivesUpAfterRetries(t *testing.T) {
	srv := at.New(t, at.HandlerFunc(func(*at.Request) at.Reply { return at.Fail(529, "overloaded_error", "Overloaded") }))
	var sl retry.Recorder
	_, err := newModel(t, srv, &sl).Generate(context.Background(), prompt("hi"))
	var ae *llm.APIError
	if !errors.As(err, &ae) || !errors.Is(err, llm.ErrServer) || ae.StatusCode != 529 || ae.Message != "Overloaded" || ae.Provider != "anthropic" {
		t.Fatalf("err = %#v", err)
	}
	if srv.Count() != 4 || len(sl.Waits()) != 3 {
		t.Fatalf("%d requests, %d waits; want 4 and 3", srv.Count(), len(sl.Waits()))
	}
}

func TestStreamCutMidwayIsNotRetried(t *testing.T) {
	srv := at.New(t, at.Sequence(
		at.Reply{Text: "This answer will be cut off in the middle.", Chunk: 4, Fault: &at.Fault{After: 6, Drop: true}},
		at.Text("a retry must not happen"),
	))
	var sl retry.Recorder
	s := drain(newModel(t, srv, &sl).Stream(context.Background(), prompt("hi")))
	if s.err == nil {
		t.Fatal("a cut stream ended without an error")
	}
	if !errors.Is(s.err, llm.ErrNetwork) {
		t.Fatalf("err = %v, want a network error", s.err)
	}
	if s.text() == "" || s.count(llm.EventDone) != 0 {
		t.Fatalf("text %q, %d done events", s.text(), s.count(llm.EventDone))
	}
	if srv.Count() != 1 || len(sl.Waits()) != 0 {
		t.Fatalf("server saw %d requests (waits %v); output was streamed so there must be no retry", srv.Count(), sl.Waits())
	}
}

func TestStreamCutBeforeOutputIsRetried(t *testing.T) {
	cases := map[string]*at.Fault{
		"before the first byte":     {After: 0, Drop: true},
		"after message_start, ping": {After: 2, Drop: true},
		"overloaded error event":    {After: 2, Error: &at.Error{Type: "overloaded_error", Message: "Overloaded"}},
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			srv := at.New(t, at.Sequence(at.Reply{Text: "lost", Fault: f}, at.Text("second time lucky")))
			var sl retry.Recorder
			s := drain(newModel(t, srv, &sl).Stream(context.Background(), prompt("hi")))
			resp := s.done(t)
			if resp.Message.Content != "second time lucky" || s.text() != "second time lucky" {
				t.Fatalf("content %q, deltas %q", resp.Message.Content, s.text())
			}
			if srv.Count() != 2 || len(sl.Waits()) != 1 {
				t.Fatalf("server saw %d requests, %d waits; want 2 and 1", srv.Count(), len(sl.Waits()))
			}
		})
	}
}

func TestGenerateConnectionDroppedIsRetried(t *testing.T) {
	srv := at.New(t, at.Sequence(at.Reply{Fault: &at.Fault{Drop: true}}, at.Text("ok")))
	var sl retry.Recorder
	resp, err := newModel(t, srv, &sl).Generate(context.Background(), prompt("hi"))
	if err != nil || resp.Message.Content != "ok" || len(sl.Waits()) != 1 {
		t.Fatalf("resp %+v err %v waits %v", resp, err, sl.Waits())
	}
}

func TestInStreamErrorAfterOutput(t *testing.T) {
	srv := at.New(t, at.Sequence(
		at.Reply{Text: "partial answer here", Fault: &at.Fault{After: 6, Error: &at.Error{Type: "overloaded_error", Message: "Overloaded"}}},
		at.Text("no retry"),
	))
	var sl retry.Recorder
	s := drain(newModel(t, srv, &sl).Stream(context.Background(), prompt("hi")))
	var ae *llm.APIError
	if !errors.As(s.err, &ae) || ae.Kind != llm.ErrKindServer || ae.Message != "Overloaded" {
		t.Fatalf("err = %#v", s.err)
	}
	if s.text() == "" || srv.Count() != 1 {
		t.Fatalf("text %q, %d requests", s.text(), srv.Count())
	}
}

func TestAuthError(t *testing.T) {
	srv := at.New(t, at.Sequence(at.Text("unreachable")), at.WithAPIKey("the-right-key"))
	var sl retry.Recorder
	m := newModel(t, srv, &sl, func(c *Config) { c.APIKey = "a-wrong-key" })
	for _, stream := range []bool{false, true} {
		_, err := generateOrStream(m, stream, prompt("hi"))
		var ae *llm.APIError
		if !errors.Is(err, llm.ErrAuth) || !errors.As(err, &ae) {
			t.Fatalf("stream=%v: err = %v, want an auth error", stream, err)
		}
		if ae.Message != "invalid x-api-key" || ae.StatusCode != 401 || ae.Provider != ProviderName {
			t.Fatalf("stream=%v: %+v", stream, ae)
		}
		if !strings.Contains(err.Error(), "invalid x-api-key") {
			t.Fatalf("Error() = %q", err.Error())
		}
	}
	if srv.Count() != 2 || len(sl.Waits()) != 0 {
		t.Fatalf("auth errors were retried: %d requests, waits %v", srv.Count(), sl.Waits())
	}
}

func TestErrorClassification(t *testing.T) {
	cases := []struct {
		reply  at.Reply
		target error
	}{
		{at.Fail(400, "invalid_request_error", "prompt is too long: 208310 tokens > 200000 maximum"), llm.ErrContextLength},
		{at.Fail(400, "invalid_request_error", "input length and `max_tokens` exceed context limit: 197779 + 21333 > 200000, decrease input length or `max_tokens` and try again"), llm.ErrContextLength},
		{at.Fail(413, "request_too_large", "Request exceeds the maximum allowed number of bytes."), llm.ErrContextLength},
		{at.Fail(400, "invalid_request_error", "messages.1.content.0.tool_use.input: Input should be a valid dictionary"), llm.ErrBadRequest},
		{at.Fail(403, "permission_error", "Your API key does not have permission to use the specified resource."), llm.ErrAuth},
		{at.Fail(404, "not_found_error", "model: claude-nope"), llm.ErrNotFound},
	}
	for _, tc := range cases {
		srv := at.New(t, at.Sequence(tc.reply, at.Text("must not be retried")))
		var sl retry.Recorder
		_, err := newModel(t, srv, &sl).Generate(context.Background(), prompt("hi"))
		var ae *llm.APIError
		if !errors.Is(err, tc.target) || !errors.As(err, &ae) {
			t.Errorf("%d %s: err = %v, want %v", tc.reply.Error.Status, tc.reply.Error.Message, err, tc.target)
			continue
		}
		if ae.Message != tc.reply.Error.Message || ae.StatusCode != tc.reply.Error.Status {
			t.Errorf("message %q status %d, want %q %d", ae.Message, ae.StatusCode, tc.reply.Error.Message, tc.reply.Error.Status)
		}
		if srv.Count() != 1 {
			t.Errorf("%s was retried", tc.reply.Error.Message)
		}
	}
}

func TestConnectionRefusedIsNetwork(t *testing.T) {
	srv := at.New(t, at.Sequence())
	url := srv.URL
	srv.Close()
	var sl retry.Recorder
	m, err := New(Config{Model: "m", APIKey: "k", BaseURL: url, Retry: retryPolicy(&sl, 1)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Generate(context.Background(), prompt("hi"))
	if !errors.Is(err, llm.ErrNetwork) || len(sl.Waits()) != 1 {
		t.Fatalf("err %v, waits %v", err, sl.Waits())
	}
}

func TestCancellationStopsPromptly(t *testing.T) {
	t.Run("stream", func(t *testing.T) {
		srv := at.New(t, at.Sequence(at.Reply{Text: "a long answer that never finishes", Fault: &at.Fault{After: 5, Hang: true}}))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var sl retry.Recorder
		start := time.Now()
		var err error
		deltas := 0
		for ev, e := range newModel(t, srv, &sl).Stream(ctx, prompt("hi")) {
			if e != nil {
				err = e
				break
			}
			if ev.Type == llm.EventTextDelta {
				deltas++
				cancel()
			}
		}
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		if d := time.Since(start); d > 3*time.Second || deltas == 0 {
			t.Fatalf("took %v with %d deltas", d, deltas)
		}
		if len(sl.Waits()) != 0 || srv.Count() != 1 {
			t.Fatalf("cancelled stream was retried: %v", sl.Waits())
		}
	})
	t.Run("generate", func(t *testing.T) {
		srv := at.New(t, at.Sequence(at.Reply{Text: "never", Fault: &at.Fault{Hang: true}}))
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		var sl retry.Recorder
		start := time.Now()
		_, err := newModel(t, srv, &sl).Generate(ctx, prompt("hi"))
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want the deadline", err)
		}
		if d := time.Since(start); d > 3*time.Second || len(sl.Waits()) != 0 {
			t.Fatalf("took %v, waits %v", d, sl.Waits())
		}
	})
	t.Run("consumer stops early", func(t *testing.T) {
		srv := at.New(t, at.Sequence(at.Reply{Text: "plenty of text to stream here", Chunk: 1}))
		n := 0
		for range newModel(t, srv, nil).Stream(context.Background(), prompt("hi")) {
			n++
			if n == 3 {
				break
			}
		}
		if n != 3 {
			t.Fatalf("got %d events", n)
		}
	})
}

func TestStopReasons(t *testing.T) {
	cases := map[string]llm.StopReason{
		"end_turn": llm.StopEnd, "stop_sequence": llm.StopEnd, "max_tokens": llm.StopMaxTokens,
		"model_context_window_exceeded": llm.StopMaxTokens, "refusal": llm.StopRefusal, "pause_turn": llm.StopOther,
	}
	for wire, want := range cases {
		srv := at.New(t, at.Sequence(at.Reply{Text: "x", StopReason: wire}, at.Reply{Text: "x", StopReason: wire}))
		m := newModel(t, srv, nil)
		for _, stream := range []bool{false, true} {
			resp, err := generateOrStream(m, stream, prompt("hi"))
			if err != nil || resp.StopReason != want {
				t.Errorf("%s (stream=%v): %v %v, want %s", wire, stream, resp, err, want)
			}
		}
	}
}

func TestInStreamErrorTypes(t *testing.T) {
	cases := map[string]llm.ErrorKind{
		"overloaded_error": llm.ErrKindServer, "api_error": llm.ErrKindServer, "timeout_error": llm.ErrKindServer,
		"rate_limit_error": llm.ErrKindRateLimit, "authentication_error": llm.ErrKindAuth, "permission_error": llm.ErrKindAuth,
		"billing_error": llm.ErrKindAuth, "not_found_error": llm.ErrKindNotFound, "invalid_request_error": llm.ErrKindBadRequest,
		"request_too_large": llm.ErrKindContextLength, "something_new": llm.ErrKindServer,
	}
	for typ, want := range cases {
		srv := at.New(t, at.Sequence(at.Reply{Text: "some output first", Fault: &at.Fault{After: 5, Error: &at.Error{Type: typ, Message: "in-stream " + typ}}}))
		s := drain(newModel(t, srv, nil).Stream(context.Background(), prompt("hi")))
		var ae *llm.APIError
		if !errors.As(s.err, &ae) || ae.Kind != want || ae.Message != "in-stream "+typ || ae.StatusCode != 0 {
			t.Errorf("%s: err %#v, want kind %s", typ, s.err, want)
		}
	}
	srv := at.New(t, at.Sequence(at.Reply{Text: "some output first", Fault: &at.Fault{After: 5, Error: &at.Error{Type: "invalid_request_error", Message: "prompt is too long: 300000 tokens > 200000 maximum"}}}))
	s := drain(newModel(t, srv, nil).Stream(context.Background(), prompt("hi")))
	if !errors.Is(s.err, llm.ErrContextLength) {
		t.Errorf("in-stream prompt too long: %v", s.err)
	}
}
