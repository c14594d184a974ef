package kit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/llm"
)

// streamBody reads a response body through the kit client, as a stream
// attempt, and reports the events (lines) it saw.
func streamBody(ctx context.Context, t Timeouts, c *http.Client, url string) iter.Seq2[llm.StreamEvent, error] {
	return Stream(ctx, t, "test", func(ctx context.Context) iter.Seq2[llm.StreamEvent, error] {
		return func(yield func(llm.StreamEvent, error) bool) {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			resp, err := c.Do(req)
			if err != nil {
				yield(llm.StreamEvent{}, err)
				return
			}
			defer resp.Body.Close()
			buf := make([]byte, 64)
			for {
				n, err := resp.Body.Read(buf)
				if n > 0 && !yield(llm.StreamEvent{Type: llm.EventTextDelta, Text: string(buf[:n])}, nil) {
					return
				}
				if err == io.EOF {
					return
				}
				if err != nil {
					yield(llm.StreamEvent{}, err)
					return
				}
			}
		}
	})
}

// A stream that keeps sending is not cut by the request timeout, which
// only covers the wait for its headers.
func TestSteadyStreamOutlivesRequestTimeout(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f := w.(http.Flusher)
		for i := range 6 {
			fmt.Fprintf(w, "event %d\n", i)
			f.Flush()
			time.Sleep(30 * time.Millisecond) // a slow but steady server
		}
	}))
	defer srv.Close()
	start := time.Now()
	var got strings.Builder
	for ev, err := range streamBody(context.Background(), Timeouts{Request: 50 * time.Millisecond, Idle: 5 * time.Second}, Client(nil), srv.URL) {
		if err != nil {
			t.Fatalf("after %v: %v", time.Since(start), err)
		}
		got.WriteString(ev.Text)
	}
	if !strings.Contains(got.String(), "event 5") {
		t.Errorf("got %q", got.String())
	}
}

// The caller's own cancellation stays a cancellation, never a timeout.
func TestCallerCancelIsNotATimeout(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	_, err := Call(ctx, Timeouts{Request: time.Hour}, "test", func(ctx context.Context) (int, error) {
		cancel()
		<-ctx.Done()
		return 0, context.Cause(ctx)
	})
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrTimeout) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// A call that outlives its request timeout fails with a network error that
// names the timeout; the work sees its context end.
func TestCallTimesOut(t *testing.T) {
	_, err := Call(context.Background(), Timeouts{Request: 20 * time.Millisecond}, "test", func(ctx context.Context) (int, error) {
		<-ctx.Done()
		return 0, context.Cause(ctx)
	})
	var ae *llm.APIError
	if !errors.As(err, &ae) || ae.Kind != llm.ErrKindNetwork || !errors.Is(err, ErrTimeout) || ae.Provider != "test" {
		t.Fatalf("err = %#v", err)
	}
	if want := "request timeout: no answer from the server within 20ms"; ae.Message != want {
		t.Errorf("message %q, want %q", ae.Message, want)
	}
	if !llm.Retryable(err) {
		t.Error("a timeout must be retryable")
	}
}

// A negative timeout means no limit; success is passed through untouched.
func TestNoLimitAndSuccess(t *testing.T) {
	v, err := Call(context.Background(), Timeouts{Request: -1}, "test", func(ctx context.Context) (int, error) {
		if _, ok := ctx.Deadline(); ok {
			t.Error("a deadline was set")
		}
		return 7, nil
	})
	if v != 7 || err != nil {
		t.Fatalf("%d, %v", v, err)
	}
}

func TestClientCopies(t *testing.T) {
	orig := &http.Client{Timeout: time.Minute}
	c := Client(orig)
	if c == orig || orig.Transport != nil || c.Timeout != time.Minute {
		t.Fatalf("Client changed its argument or lost its settings: %+v", c)
	}
	if again := Client(c); again.Transport != c.Transport {
		t.Error("wrapping twice stacked two transports")
	}
}

// A caller that takes its time over an event does not make the stream look
// idle: the idle clock stops while the event is being handled.
func TestSlowConsumerIsNotIdle(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f := w.(http.Flusher)
		fmt.Fprint(w, "first\n")
		f.Flush()
		<-release
		fmt.Fprint(w, "second\n")
	}))
	defer srv.Close()
	var got strings.Builder
	first := true
	for ev, err := range streamBody(context.Background(), Timeouts{Request: time.Minute, Idle: 200 * time.Millisecond}, Client(nil), srv.URL) {
		if err != nil {
			t.Fatalf("after %q: %v", got.String(), err)
		}
		got.WriteString(ev.Text)
		if first {
			first = false
			// Busy far longer than the idle timeout, measured by the idle
			// timer itself: wait until a fresh timer of the same length
			// has fired twice.
			for range 2 {
				<-time.NewTimer(200 * time.Millisecond).C
			}
			close(release)
		}
	}
	if got.String() != "first\nsecond\n" {
		t.Errorf("got %q", got.String())
	}
}
