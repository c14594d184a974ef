package gemini

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/providers/internal/fakewire"
	"github.com/deepagents-go/deepagents/providers/retry"
)

// An answer with no candidate and no block reason is a server failure,
// retried, streamed or not (the non-streamed one used to end "ok" with an
// empty answer, the streamed one as a cut connection).
func TestNoCandidatesIsAServerErrorStreamedOrNot(t *testing.T) {
	fakewire.Watchdog(t, fakewire.TestTimeout)
	var requests atomic.Int32
	usage := []byte(`{"usageMetadata":{"promptTokenCount":3,"totalTokenCount":3},"modelVersion":"m"}`)
	srv := fakewire.Start(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if strings.HasSuffix(r.URL.Path, ":streamGenerateContent") {
			sse := fakewire.StartSSE(w, nil, "\r\n")
			_ = sse.Event("", usage)
			return
		}
		fakewire.WriteRaw(w, 200, nil, "application/json", usage)
	}))
	t.Cleanup(srv.Close)
	for _, stream := range []bool{false, true} {
		requests.Store(0)
		var rec retry.Recorder
		m, err := New(context.Background(), Config{Model: "m", APIKey: "k", BaseURL: srv.URL, Retry: retry.Policy{MaxRetries: 1, Sleep: rec.Sleep}})
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
		if !errors.As(err, &ae) || ae.Kind != llm.ErrKindServer || ae.Message != "the response has no candidates" {
			t.Errorf("stream=%v: err %v, want a server error saying there were no candidates", stream, err)
		}
		if requests.Load() != 2 || len(rec.Waits()) != 1 {
			t.Errorf("stream=%v: %d requests, waits %v: want one retry", stream, requests.Load(), rec.Waits())
		}
	}
}
