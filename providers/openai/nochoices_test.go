package openai

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/providers/internal/fakewire"
	"github.com/deepagents-go/deepagents/providers/retry"
)

// An answer without choices is a server failure, retried, whether it was
// streamed or not: a streamed one used to end "ok" with an empty answer.
func TestNoChoicesIsAServerErrorStreamedOrNot(t *testing.T) {
	fakewire.Watchdog(t, fakewire.TestTimeout)
	var requests atomic.Int32
	srv := fakewire.Start(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		var body struct{ Stream bool }
		_ = decodeJSON(r, &body)
		if !body.Stream {
			fakewire.WriteJSON(w, 200, nil, map[string]any{"id": "x", "object": "chat.completion", "model": "m", "choices": []any{}})
			return
		}
		sse := fakewire.StartSSE(w, nil, "\n")
		_ = sse.Event("", []byte(`{"id":"x","object":"chat.completion.chunk","model":"m","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":0}}`))
		_ = sse.Event("", []byte(`[DONE]`))
	}))
	t.Cleanup(srv.Close)
	for _, stream := range []bool{false, true} {
		requests.Store(0)
		var rec retry.Recorder
		m, err := New(Config{Model: "m", APIKey: "k", BaseURL: srv.URL + "/v1", Retry: retry.Policy{MaxRetries: 1, Sleep: rec.Sleep}})
		if err != nil {
			t.Fatal(err)
		}
		req := &llm.Request{Messages: []llm.Message{llm.User("hi")}}
		if stream {
			_, err = llm.Collect(m.Stream(context.Background(), req))
		} else {
			_, err = m.Generate(context.Background(), req)
		}
		var ae *llm.APIError
		if !errors.As(err, &ae) || ae.Kind != llm.ErrKindServer || ae.Message != "the response has no choices" {
			t.Errorf("stream=%v: err %v, want a server error saying there were no choices", stream, err)
		}
		if requests.Load() != 2 || len(rec.Waits()) != 1 {
			t.Errorf("stream=%v: %d requests, waits %v: want one retry", stream, requests.Load(), rec.Waits())
		}
	}
}

func decodeJSON(r *http.Request, v any) error {
	return json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(v)
}
