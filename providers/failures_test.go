package providers

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/providers/anthropic"
	at "github.com/deepagents-go/deepagents/providers/anthropic/anthropictest"
	"github.com/deepagents-go/deepagents/providers/gemini"
	gt "github.com/deepagents-go/deepagents/providers/gemini/geminitest"
	"github.com/deepagents-go/deepagents/providers/internal/fakewire"
	"github.com/deepagents-go/deepagents/providers/kit"
	"github.com/deepagents-go/deepagents/providers/openai"
	ot "github.com/deepagents-go/deepagents/providers/openai/openaitest"
	"github.com/deepagents-go/deepagents/providers/retry"
)

// failure is one scripted reply of a fake server, in provider-neutral terms.
type failure struct {
	status int // 0: a successful text reply
	msg    string
	header http.Header
	text   string // the text of a successful reply
}

// wire drives one adapter through its own fake server.
type wire struct {
	name string
	// serve starts the provider's fake answering the n-th request with
	// script[n] and returns its URL and a request counter.
	serve func(t *testing.T, script ...failure) (url string, count func() int)
	// stall starts a fake whose stream sends some text, then stops talking.
	stall func(t *testing.T) string
	model func(t *testing.T, url string, cfg common) llm.Model
}

// common is the configuration every adapter gets in these tests.
type common struct {
	retry         retry.Policy
	request, idle time.Duration
}

var wires = []wire{
	{
		name: "openai",
		serve: func(t *testing.T, script ...failure) (string, func() int) {
			var replies []ot.Reply
			for _, f := range script {
				if f.status == 0 {
					replies = append(replies, ot.Text(f.text))
					continue
				}
				replies = append(replies, ot.Reply{Status: f.status, Error: &ot.Error{Message: f.msg, Type: openaiType(f.status)}, Header: f.header})
			}
			srv := ot.NewServer(t, ot.Sequence(replies...))
			return srv.URL, srv.Count
		},
		stall: func(t *testing.T) string {
			return ot.NewServer(t, ot.Sequence(ot.Reply{Content: "hello there, world", StallAfter: 3})).URL
		},
		model: func(t *testing.T, url string, c common) llm.Model {
			m, err := openai.New(openai.Config{Model: "gpt-test", APIKey: "k", BaseURL: url, Retry: c.retry,
				RequestTimeout: c.request, StreamIdleTimeout: c.idle})
			if err != nil {
				t.Fatal(err)
			}
			return m
		},
	},
	{
		name: "anthropic",
		serve: func(t *testing.T, script ...failure) (string, func() int) {
			var replies []at.Reply
			for _, f := range script {
				if f.status == 0 {
					replies = append(replies, at.Reply{Text: f.text})
					continue
				}
				replies = append(replies, at.Reply{Error: &at.Error{Status: f.status, Type: anthropicType(f.status), Message: f.msg, Header: f.header}})
			}
			srv := at.New(t, at.Sequence(replies...))
			return srv.URL, srv.Count
		},
		stall: func(t *testing.T) string {
			return at.New(t, at.Sequence(at.Reply{Text: "hello there, world", Fault: &at.Fault{After: 5, Hang: true}})).URL
		},
		model: func(t *testing.T, url string, c common) llm.Model {
			m, err := anthropic.New(anthropic.Config{Model: "claude-test", APIKey: "k", BaseURL: url, Retry: c.retry,
				RequestTimeout: c.request, StreamIdleTimeout: c.idle})
			if err != nil {
				t.Fatal(err)
			}
			return m
		},
	},
	{
		name: "gemini",
		serve: func(t *testing.T, script ...failure) (string, func() int) {
			var replies []gt.Reply
			for _, f := range script {
				if f.status == 0 {
					replies = append(replies, gt.Text(f.text))
					continue
				}
				replies = append(replies, gt.Reply{Status: f.status, Message: f.msg, Header: f.header})
			}
			srv := gt.NewServer(t, gt.Sequence(replies...))
			return srv.URL, func() int { return len(srv.Requests()) }
		},
		stall: func(t *testing.T) string {
			return gt.NewServer(t, gt.Sequence(gt.Reply{Text: "hello there, my dear world", StallAfter: 1})).URL
		},
		model: func(t *testing.T, url string, c common) llm.Model {
			m, err := gemini.New(context.Background(), gemini.Config{Model: "gemini-test", APIKey: "k", BaseURL: url, Retry: c.retry,
				RequestTimeout: c.request, StreamIdleTimeout: c.idle})
			if err != nil {
				t.Fatal(err)
			}
			return m
		},
	},
}

// openaiType is the error type OpenAI sends with a status.
func openaiType(status int) string {
	switch {
	case status == 429:
		return "requests"
	case status >= 500:
		return "server_error"
	}
	return "invalid_request_error"
}

// anthropicType is the error type Anthropic sends with a status; empty
// lets the fake derive it.
func anthropicType(status int) string {
	switch status {
	case 408, 409, 422:
		return "invalid_request_error"
	}
	return ""
}

func request() *llm.Request { return &llm.Request{Messages: []llm.Message{llm.User("hi")}} }

// call runs req through Generate or Stream and returns the text and error.
func call(ctx context.Context, m llm.Model, stream bool) (string, error) {
	if !stream {
		resp, err := m.Generate(ctx, request())
		if err != nil {
			return "", err
		}
		return resp.Message.Content, nil
	}
	var text strings.Builder
	for ev, err := range m.Stream(ctx, request()) {
		if err != nil {
			return text.String(), err
		}
		if ev.Type == llm.EventTextDelta {
			text.WriteString(ev.Text)
		}
	}
	return text.String(), nil
}

func modes(t *testing.T, f func(t *testing.T, w wire, stream bool)) {
	for _, w := range wires {
		for _, stream := range []bool{false, true} {
			name := w.name + "/generate"
			if stream {
				name = w.name + "/stream"
			}
			t.Run(name, func(t *testing.T) { f(t, w, stream) })
		}
	}
}

// TestSameFailureSameKind drives every adapter's real error path through
// its fake server: the same HTTP failure must give the same error kind and
// the same retry decision (one retry allowed: two requests when retried,
// one when not), in Generate and in Stream.
func TestSameFailureSameKind(t *testing.T) {
	cases := []struct {
		status int
		msg    string
		want   llm.ErrorKind
	}{
		{400, "messages.0: unexpected field", llm.ErrKindBadRequest},
		{400, "prompt is too long: 210000 tokens > 200000 maximum", llm.ErrKindContextLength},
		{400, "This model's maximum context length is 8192 tokens.", llm.ErrKindContextLength},
		{401, "invalid key", llm.ErrKindAuth},
		{402, "your credit balance is too low", llm.ErrKindAuth},
		{403, "forbidden", llm.ErrKindAuth},
		{404, "no such model", llm.ErrKindNotFound},
		{408, "request timed out", llm.ErrKindNetwork},
		{409, "conflict, try again", llm.ErrKindServer},
		{413, "request too large", llm.ErrKindContextLength},
		{422, "unprocessable", llm.ErrKindBadRequest},
		{429, "slow down", llm.ErrKindRateLimit},
		{500, "internal", llm.ErrKindServer},
		{502, "bad gateway", llm.ErrKindServer},
		{503, "overloaded", llm.ErrKindServer},
		{529, "overloaded", llm.ErrKindServer},
	}
	retried := map[llm.ErrorKind]bool{llm.ErrKindRateLimit: true, llm.ErrKindServer: true, llm.ErrKindNetwork: true}
	modes(t, func(t *testing.T, w wire, stream bool) {
		for _, tc := range cases {
			var rec retry.Recorder
			f := failure{status: tc.status, msg: tc.msg}
			url, count := w.serve(t, f, f)
			m := w.model(t, url, common{retry: retry.Policy{MaxRetries: 1, Sleep: rec.Sleep}})
			_, err := call(context.Background(), m, stream)
			var ae *llm.APIError
			if !errors.As(err, &ae) {
				t.Errorf("%d %q: %v is not an *llm.APIError", tc.status, tc.msg, err)
				continue
			}
			if ae.Kind != tc.want || ae.StatusCode != tc.status || ae.Provider != w.name {
				t.Errorf("%d %q: kind %s, status %d, provider %q; want %s, %d, %q", tc.status, tc.msg, ae.Kind, ae.StatusCode, ae.Provider, tc.want, tc.status, w.name)
			}
			wantRequests := 1
			if retried[tc.want] {
				wantRequests = 2
			}
			if n := count(); n != wantRequests || len(rec.Waits()) != wantRequests-1 {
				t.Errorf("%d %q: %d requests and waits %v, want %d requests", tc.status, tc.msg, n, rec.Waits(), wantRequests)
			}
		}
	})
}

// TestRetryAfterIsAnnounced checks that a 429 with Retry-After: 30 is
// waited out for 30 s and announced, with that wait and the kind, to the
// caller's OnRetry before the wait, by every adapter.
func TestRetryAfterIsAnnounced(t *testing.T) {
	modes(t, func(t *testing.T, w wire, stream bool) {
		var rec retry.Recorder
		url, count := w.serve(t,
			failure{status: 429, msg: "slow down", header: http.Header{"Retry-After": {"30"}}},
			failure{text: "made it"})
		m := w.model(t, url, common{retry: retry.Policy{MaxRetries: 2, Max: time.Minute, Sleep: rec.Sleep}})
		var notices []llm.Retry
		ctx := llm.WithCallInfo(context.Background(), llm.CallInfo{OnRetry: func(r llm.Retry) {
			notices = append(notices, r)
			if len(rec.Waits()) != 0 {
				t.Error("the notice came after the wait")
			}
		}})
		text, err := call(ctx, m, stream)
		if err != nil || text != "made it" {
			t.Fatalf("got %q, %v", text, err)
		}
		if len(notices) != 1 || notices[0].Attempt != 1 || notices[0].Wait != 30*time.Second || !errors.Is(notices[0].Err, llm.ErrRateLimit) {
			t.Fatalf("notices %+v, want one for attempt 1 waiting 30s after a rate limit", notices)
		}
		if waits := rec.Waits(); len(waits) != 1 || waits[0] != 30*time.Second || count() != 2 {
			t.Fatalf("waits %v after %d requests", waits, count())
		}
	})
}

// TestSilentServerTimesOut points every adapter at a server that accepts
// the connection and never answers: the request timeout ends each attempt,
// the attempt is retried as a network failure, and the final error says
// which timeout fired.
func TestSilentServerTimesOut(t *testing.T) {
	modes(t, func(t *testing.T, w wire, stream bool) {
		var rec retry.Recorder
		m := w.model(t, fakewire.Silent(t), common{retry: retry.Policy{MaxRetries: 1, Sleep: rec.Sleep}, request: 100 * time.Millisecond})
		_, err := call(context.Background(), m, stream)
		if !errors.Is(err, kit.ErrTimeout) || !errors.Is(err, llm.ErrNetwork) {
			t.Fatalf("err = %v, want a network error wrapping kit.ErrTimeout", err)
		}
		if want := "request timeout"; !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "100ms") {
			t.Errorf("error %q does not name the request timeout and its length", err)
		}
		if len(rec.Waits()) != 1 {
			t.Errorf("waits %v, want one retry", rec.Waits())
		}
	})
}

// TestStalledStreamTimesOut: a stream that sends some text and then stops
// talking is ended by the idle timeout (the request timeout, much longer,
// does not apply once headers arrived); the text already passed on stays,
// and the stream is not retried because output went out.
func TestStalledStreamTimesOut(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			var rec retry.Recorder
			m := w.model(t, w.stall(t), common{retry: retry.Policy{MaxRetries: 2, Sleep: rec.Sleep},
				request: time.Hour, idle: 100 * time.Millisecond})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			text, err := call(ctx, m, true)
			if !errors.Is(err, kit.ErrTimeout) || !errors.Is(err, llm.ErrNetwork) || ctx.Err() != nil {
				t.Fatalf("err = %v, want the idle timeout", err)
			}
			if !strings.Contains(err.Error(), "idle timeout") {
				t.Errorf("error %q does not say the stream went idle", err)
			}
			if text == "" || !strings.HasPrefix("hello there, my dear world", text) && !strings.HasPrefix("hello there, world", text) {
				t.Errorf("text before the stall = %q", text)
			}
			if len(rec.Waits()) != 0 {
				t.Errorf("a stream that had yielded output was retried (waits %v)", rec.Waits())
			}
		})
	}
}
