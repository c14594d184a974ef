package gemini

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/providers/gemini/geminitest"
	"github.com/deepagents-go/deepagents/providers/retry"
)

const testModel = "gemini-2.5-flash"

func newTestModel(t *testing.T, srv *geminitest.Server, edit ...func(*Config)) (*Model, *retry.Recorder) {
	t.Helper()
	sl := &retry.Recorder{}
	cfg := Config{Model: testModel, APIKey: "test-key", BaseURL: srv.URL,
		Retry: retry.Policy{Sleep: sl.Sleep, Base: time.Millisecond}}
	for _, e := range edit {
		e(&cfg)
	}
	m, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m, sl
}

// collect drains a stream, returning its events and final error.
func collect(stream func(func(llm.StreamEvent, error) bool)) ([]llm.StreamEvent, error) {
	var evs []llm.StreamEvent
	var last error
	stream(func(ev llm.StreamEvent, err error) bool {
		if err != nil {
			last = err
			return false
		}
		evs = append(evs, ev)
		return true
	})
	return evs, last
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func lastRequest(t *testing.T, srv *geminitest.Server) *geminitest.Request {
	t.Helper()
	reqs := srv.Requests()
	if len(reqs) == 0 {
		t.Fatal("the server saw no request")
	}
	return reqs[len(reqs)-1]
}

func assertValid(t *testing.T, srv *geminitest.Server) {
	t.Helper()
	for _, err := range srv.Invalid() {
		t.Errorf("invalid request: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }
