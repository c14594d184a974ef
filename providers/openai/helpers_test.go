package openai

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/providers/openai/openaitest"
)

// sleeps records the waits of a retry policy instead of sleeping.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeps) all() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}

// newModel returns a Model talking to srv whose retries never sleep.
func newModel(t *testing.T, srv *openaitest.Server, cfg Config) (*Model, *sleeps) {
	t.Helper()
	sl := &sleeps{}
	if cfg.Model == "" {
		cfg.Model = "gpt-test"
	}
	cfg.BaseURL = srv.URL
	if cfg.APIKey == "" {
		cfg.APIKey = "sk-test"
	}
	if cfg.Retry.Sleep == nil {
		cfg.Retry.Sleep = sl.sleep
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m, sl
}

// collect drains a stream into its events and final error.
func collect(seq func(func(llm.StreamEvent, error) bool)) ([]llm.StreamEvent, error) {
	var evs []llm.StreamEvent
	for ev, err := range seq {
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
	return evs, nil
}

func userReq(text string) *llm.Request {
	return &llm.Request{Messages: []llm.Message{llm.User(text)}}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}
