package anthropic

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/providers/anthropic/anthropictest"
	"github.com/deepagents-go/deepagents/providers/retry"
)

const testKey = "test-key"

// newModel returns a model talking to srv whose retries sleep into sl.
func newModel(t *testing.T, srv *anthropictest.Server, sl *retry.Recorder, edit ...func(*Config)) *Model {
	t.Helper()
	cfg := Config{Model: "claude-test", APIKey: testKey, BaseURL: srv.URL}
	if sl != nil {
		cfg.Retry = retry.Policy{Sleep: sl.Sleep}
	}
	for _, e := range edit {
		e(&cfg)
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func prompt(text string) *llm.Request {
	return &llm.Request{Messages: []llm.Message{llm.User(text)}}
}

// streamed is everything a stream produced.
type streamed struct {
	events []llm.StreamEvent
	err    error
}

func drain(seq func(func(llm.StreamEvent, error) bool)) streamed {
	var s streamed
	for ev, err := range seq {
		if err != nil {
			s.err = err
			break
		}
		s.events = append(s.events, ev)
	}
	return s
}

func (s streamed) text() string {
	var b strings.Builder
	for _, ev := range s.events {
		if ev.Type == llm.EventTextDelta {
			b.WriteString(ev.Text)
		}
	}
	return b.String()
}

func (s streamed) count(typ llm.StreamEventType) int {
	n := 0
	for _, ev := range s.events {
		if ev.Type == typ {
			n++
		}
	}
	return n
}

// done returns the response of the single EventDone, which must be last.
func (s streamed) done(t *testing.T) *llm.Response {
	t.Helper()
	if s.err != nil {
		t.Fatalf("stream failed: %v", s.err)
	}
	if n := s.count(llm.EventDone); n != 1 {
		t.Fatalf("got %d EventDone, want exactly 1", n)
	}
	last := s.events[len(s.events)-1]
	if last.Type != llm.EventDone || last.Response == nil {
		t.Fatalf("last event is %s, want done with a response", last.Type)
	}
	return last.Response
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func compact(t *testing.T, s string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("not JSON: %q: %v", s, err)
	}
	return mustJSON(t, v)
}

func retryPolicy(sl *retry.Recorder, retries int) retry.Policy {
	return retry.Policy{MaxRetries: retries, Sleep: sl.Sleep}
}
