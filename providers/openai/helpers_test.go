package openai

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/providers/openai/openaitest"
	"github.com/deepagents-go/deepagents/providers/retry"
)

// newModel returns a Model talking to srv whose retries never sleep.
func newModel(t *testing.T, srv *openaitest.Server, cfg Config) (*Model, *retry.Recorder) {
	t.Helper()
	sl := &retry.Recorder{}
	if cfg.Model == "" {
		cfg.Model = "gpt-test"
	}
	cfg.BaseURL = srv.URL
	if cfg.APIKey == "" {
		cfg.APIKey = "sk-test"
	}
	if cfg.Retry.Sleep == nil {
		cfg.Retry.Sleep = sl.Sleep
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
