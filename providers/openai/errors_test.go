package openai

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/providers/openai/openaitest"
	"github.com/deepagents-go/deepagents/providers/retry"
)

func apiError(t *testing.T, err error) *llm.APIError {
	t.Helper()
	var ae *llm.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("error %v (%T) is not an *llm.APIError", err, err)
	}
	return ae
}

func TestRateLimitHonoursRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		name   string
		header http.Header
		policy retry.Policy
		want   func(d time.Duration) bool
	}{
		{"seconds", http.Header{"Retry-After": {"7"}}, retry.Policy{},
			func(d time.Duration) bool { return d == 7*time.Second }},
		{"milliseconds win", http.Header{"Retry-After": {"7"}, "Retry-After-Ms": {"1500"}}, retry.Policy{},
			func(d time.Duration) bool { return d == 1500*time.Millisecond }},
		{"http date", http.Header{"Retry-After": {time.Now().Add(20 * time.Second).UTC().Format(http.TimeFormat)}}, retry.Policy{},
			func(d time.Duration) bool { return d > 17*time.Second && d <= 20*time.Second }},
		{"capped by the policy", http.Header{"Retry-After": {"600"}}, retry.Policy{Max: 5 * time.Second},
			func(d time.Duration) bool { return d == 5*time.Second }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			limited := openaitest.RateLimited("")
			limited.Header = tc.header
			srv := openaitest.NewServer(t, openaitest.Sequence(limited, openaitest.Text("finally"), limited, openaitest.Text("finally")))
			m, sl := newModel(t, srv, Config{Retry: tc.policy})
			resp, err := m.Generate(testCtx(t), userReq("hi"))
			if err != nil || resp.Message.Content != "finally" {
				t.Fatalf("generate: %v %+v", err, resp)
			}
			resp, err = llm.Collect(m.Stream(testCtx(t), userReq("hi")))
			if err != nil || resp.Message.Content != "finally" {
				t.Fatalf("stream: %v %+v", err, resp)
			}
			waits := sl.Waits()
			if len(waits) != 2 || !tc.want(waits[0]) || !tc.want(waits[1]) {
				t.Fatalf("waits %v", waits)
			}
			if srv.Count() != 4 {
				t.Fatalf("%d requests", srv.Count())
			}
		})
	}
}

func TestRateLimitErrorCarriesRetryAfter(t *testing.T) {
	srv := openaitest.NewServer(t, openaitest.Sequence(openaitest.RateLimited("3")))
	m, sl := newModel(t, srv, Config{Retry: retry.Policy{MaxRetries: -1}})
	_, err := m.Generate(testCtx(t), userReq("hi"))
	if !errors.Is(err, llm.ErrRateLimit) {
		t.Fatalf("error %v", err)
	}
	ae := apiError(t, err)
	if ae.RetryAfter != 3*time.Second || ae.StatusCode != 429 || ae.Provider != "openai" ||
		ae.Message != "Rate limit reached for requests. Please try again later." {
		t.Fatalf("%+v", ae)
	}
	if len(sl.Waits()) != 0 || srv.Count() != 1 {
		t.Fatalf("retried with retries disabled")
	}
}

func TestServerErrorThenSuccess(t *testing.T) {
	srv := openaitest.NewServer(t, openaitest.Sequence(openaitest.ServerError(), openaitest.Text("ok"),
		openaitest.ErrorReply(503, "server_error", "", "overloaded"), openaitest.Text("ok")))
	m, sl := newModel(t, srv, Config{})
	if resp, err := m.Generate(testCtx(t), userReq("hi")); err != nil || resp.Message.Content != "ok" {
		t.Fatalf("generate: %v", err)
	}
	if resp, err := llm.Collect(m.Stream(testCtx(t), userReq("hi"))); err != nil || resp.Message.Content != "ok" {
		t.Fatalf("stream: %v", err)
	}
	waits := sl.Waits()
	if len(waits) != 2 || srv.Count() != 4 {
		t.Fatalf("waits %v, %d requests", waits, srv.Count())
	}
	for _, w := range waits {
		// Full jitter on a 500 ms base: between 250 and 500 ms for the first retry.
		if w < 250*time.Millisecond || w > 500*time.Millisecond {
			t.Errorf("backoff %v", w)
		}
	}
}

func TestRetriesAreBounded(t *testing.T) {
	replies := make([]openaitest.Reply, 10)
	for i := range replies {
		replies[i] = openaitest.ServerError()
	}
	srv := openaitest.NewServer(t, openaitest.Sequence(replies...))
	m, sl := newModel(t, srv, Config{Retry: retry.Policy{MaxRetries: 2}})
	_, err := m.Generate(testCtx(t), userReq("hi"))
	if !errors.Is(err, llm.ErrServer) {
		t.Fatalf("error %v", err)
	}
	if srv.Count() != 3 || len(sl.Waits()) != 2 {
		t.Fatalf("%d requests, waits %v", srv.Count(), sl.Waits())
	}
	ae := apiError(t, err)
	if ae.StatusCode != 500 || ae.Message != "The server had an error while processing your request. Sorry about that!" {
		t.Fatalf("%+v", ae)
	}
}

func TestAuthError(t *testing.T) {
	const msg = "Incorrect API key provided: sk-test. You can find your API key at https://platform.openai.com/account/api-keys."
	for _, status := range []int{401, 403} {
		srv := openaitest.NewServer(t, openaitest.Sequence(openaitest.ErrorReply(status, "invalid_request_error", "invalid_api_key", msg)))
		m, sl := newModel(t, srv, Config{Provider: "acme"})
		_, err := m.Generate(testCtx(t), userReq("hi"))
		if !errors.Is(err, llm.ErrAuth) {
			t.Fatalf("%d: error %v", status, err)
		}
		ae := apiError(t, err)
		if ae.Message != msg || ae.StatusCode != status || ae.Provider != "acme" {
			t.Fatalf("%+v", ae)
		}
		if !strings.HasPrefix(err.Error(), "acme: auth error") || !strings.Contains(err.Error(), msg) {
			t.Errorf("error text %q", err.Error())
		}
		if srv.Count() != 1 || len(sl.Waits()) != 0 {
			t.Fatalf("auth error retried")
		}
		if llm.Retryable(err) {
			t.Fatal("auth error retryable")
		}
	}
}

func TestContextLengthError(t *testing.T) {
	for name, rep := range map[string]openaitest.Reply{
		"openai code": openaitest.ErrorReply(400, "invalid_request_error", "context_length_exceeded",
			"This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens. Please reduce the length of the messages."),
		"message only": openaitest.ErrorReply(400, "invalid_request_error", "",
			"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens."),
		"vllm top-level": {Status: 400, Body: `{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 9000 tokens (8000 in the messages, 1000 in the completion).","type":"BadRequestError","param":null,"code":400}`},
		"llama.cpp":      {Status: 400, Body: `{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9000,"n_ctx":4096}}`},
	} {
		t.Run(name, func(t *testing.T) {
			srv := openaitest.NewServer(t, openaitest.Sequence(rep, rep))
			m, _ := newModel(t, srv, Config{})
			_, err := m.Generate(testCtx(t), userReq("hi"))
			if !errors.Is(err, llm.ErrContextLength) {
				t.Fatalf("Generate error %v", err)
			}
			if ae := apiError(t, err); ae.Message == "" || ae.StatusCode != 400 {
				t.Fatalf("%+v", ae)
			}
			_, err = llm.Collect(m.Stream(testCtx(t), userReq("hi")))
			if !errors.Is(err, llm.ErrContextLength) {
				t.Fatalf("Stream error %v", err)
			}
			if srv.Count() != 2 {
				t.Fatalf("retried: %d requests", srv.Count())
			}
		})
	}
}

func TestErrorKinds(t *testing.T) {
	for _, tc := range []struct {
		name    string
		rep     openaitest.Reply
		kind    llm.ErrorKind
		message string
	}{
		{"model not found", openaitest.ErrorReply(404, "invalid_request_error", "model_not_found", "The model `gpt-9` does not exist or you do not have access to it."),
			llm.ErrKindNotFound, "The model `gpt-9` does not exist or you do not have access to it."},
		{"bad request", openaitest.BadRequest("Invalid value for 'temperature'."), llm.ErrKindBadRequest, "Invalid value for 'temperature'."},
		{"unprocessable", openaitest.Reply{Status: 422, Body: `{"detail":"field required"}`}, llm.ErrKindBadRequest, "field required"},
		{"string error", openaitest.Reply{Status: 400, Body: `{"error":"model 'llama9' not found, try pulling it first"}`}, llm.ErrKindBadRequest, "model 'llama9' not found, try pulling it first"},
		{"html gateway", openaitest.Reply{Status: 502, Body: `<html><body>Bad Gateway</body></html>`}, llm.ErrKindServer, "<html><body>Bad Gateway</body></html>"},
		{"empty body", openaitest.Reply{Status: 503, Body: " "}, llm.ErrKindServer, "Service Unavailable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := openaitest.NewServer(t, openaitest.Sequence(tc.rep, tc.rep, tc.rep, tc.rep, tc.rep, tc.rep, tc.rep, tc.rep))
			m, _ := newModel(t, srv, Config{})
			_, err := m.Generate(testCtx(t), userReq("hi"))
			ae := apiError(t, err)
			if ae.Kind != tc.kind || ae.Message != tc.message || ae.StatusCode != tc.rep.Status {
				t.Fatalf("got %+v, want kind %s message %q", ae, tc.kind, tc.message)
			}
			_, err = llm.Collect(m.Stream(testCtx(t), userReq("hi")))
			if ae := apiError(t, err); ae.Kind != tc.kind || ae.Message != tc.message {
				t.Fatalf("stream: %+v", ae)
			}
		})
	}
}

func TestConnectionErrors(t *testing.T) {
	// Nothing listens: connection refused, retried, then a network error.
	dead := httptest.NewServer(http.NotFoundHandler())
	url := dead.URL
	dead.Close()
	sl := &retry.Recorder{}
	m, err := New(Config{Model: "m", BaseURL: url + "/v1", APIKey: "k", Retry: retry.Policy{MaxRetries: 2, Sleep: sl.Sleep}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Generate(testCtx(t), userReq("hi"))
	if !errors.Is(err, llm.ErrNetwork) {
		t.Fatalf("error %v", err)
	}
	if len(sl.Waits()) != 2 {
		t.Fatalf("waits %v", sl.Waits())
	}
	_, err = llm.Collect(m.Stream(testCtx(t), userReq("hi")))
	if !errors.Is(err, llm.ErrNetwork) {
		t.Fatalf("stream error %v", err)
	}

	// A dropped connection before any byte is retried.
	srv := openaitest.NewServer(t, openaitest.Sequence(openaitest.Reply{Hangup: true}, openaitest.Text("ok")))
	m2, sl2 := newModel(t, srv, Config{})
	if resp, err := m2.Generate(testCtx(t), userReq("hi")); err != nil || resp.Message.Content != "ok" {
		t.Fatalf("after a hangup: %v", err)
	}
	if srv.Count() != 2 || len(sl2.Waits()) != 1 {
		t.Fatalf("%d requests, waits %v", srv.Count(), sl2.Waits())
	}
}

func TestParseErrorBody(t *testing.T) {
	for _, tc := range []struct {
		body, msg, code, typ string
	}{
		{``, "", "", ""},
		{`{"error":{"message":"m","type":"t","param":null,"code":"c"}}`, "m", "c", "t"},
		{`{"error":{"message":"m","type":"t","code":500}}`, "m", "500", "t"},
		{`{"error":"just text"}`, "just text", "", ""},
		{`{"error":null,"message":"top"}`, "top", "", ""},
		{`{"object":"error","message":"vllm says","type":"BadRequestError","code":400}`, "vllm says", "400", "BadRequestError"},
		{`{"detail":"fastapi says"}`, "fastapi says", "", ""},
		{`{"detail":[{"loc":["body","model"],"msg":"field required"}]}`, `[{"loc":["body","model"],"msg":"field required"}]`, "", ""},
		{`"a JSON string"`, "a JSON string", "", ""},
		{`[1,2]`, "[1,2]", "", ""},
		{`upstream connect error`, "upstream connect error", "", ""},
	} {
		msg, code, typ := parseErrorBody([]byte(tc.body))
		if msg != tc.msg || code != tc.code || typ != tc.typ {
			t.Errorf("parseErrorBody(%s) = %q %q %q, want %q %q %q", tc.body, msg, code, typ, tc.msg, tc.code, tc.typ)
		}
	}
	long := strings.Repeat("é", 3000)
	if msg, _, _ := parseErrorBody([]byte(long)); len(msg) > maxBodyMessage+len("…") || !strings.HasSuffix(msg, "…") || !strings.HasPrefix(msg, "é") {
		t.Errorf("long body message has %d bytes", len(msg))
	}
}

func TestIsNetwork(t *testing.T) {
	if isNetwork(errors.New("json: cannot unmarshal")) {
		t.Error("a decoding error counted as a network error")
	}
	for _, s := range []string{"read tcp 127.0.0.1:1->127.0.0.1:2: read: connection reset by peer", "unexpected EOF", "http2: stream closed"} {
		if !isNetwork(errors.New(s)) {
			t.Errorf("%q not a network error", s)
		}
	}
}
