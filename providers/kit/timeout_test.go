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
	"testing/synctest"
	"time"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/providers/internal/fakewire"
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
// only covers the wait for its headers: on a fake clock, six reads 30 ms
// apart outlast a request timeout of 50 ms.
func TestSteadyStreamOutlivesRequestTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gap := 30 * time.Millisecond
		rt := &slowTransport{pauses: []time.Duration{0, gap, gap, gap, gap, gap}} // a slow but steady server
		start := time.Now()
		var got strings.Builder
		for ev, err := range streamBody(context.Background(), Timeouts{Request: 50 * time.Millisecond, Idle: 5 * time.Second}, Client(&http.Client{Transport: rt}), "http://model.invalid/") {
			if err != nil {
				t.Fatalf("after %v: %v", time.Since(start), err)
			}
			got.WriteString(ev.Text)
		}
		if got.String() != "xxxxxx" {
			t.Errorf("got %q, want all six reads", got.String())
		}
		if took := time.Since(start); took != 5*gap {
			t.Errorf("the stream took %v, want %v: longer than the request timeout", took, 5*gap)
		}
	})
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

// Success is passed through untouched.
func TestSuccessPassesThrough(t *testing.T) {
	v, err := Call(context.Background(), Timeouts{Request: time.Minute}, "test", func(ctx context.Context) (int, error) {
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
	fakewire.Watchdog(t, fakewire.TestTimeout)
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

// slowTransport answers after headerDelay with a body whose reads each wait
// for the next pause in pauses; every wait gives up when the request's
// context ends. It runs on the fake clock of a synctest bubble.
type slowTransport struct {
	headerDelay time.Duration
	pauses      []time.Duration
}

func (s *slowTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := wait(req.Context(), s.headerDelay); err != nil {
		return nil, err
	}
	return &http.Response{StatusCode: 200, Header: http.Header{}, Body: &slowBody{ctx: req.Context(), pauses: s.pauses}, Request: req}, nil
}

type slowBody struct {
	ctx    context.Context
	pauses []time.Duration
}

func (b *slowBody) Read(p []byte) (int, error) {
	if len(b.pauses) == 0 {
		return 0, io.EOF
	}
	d := b.pauses[0]
	b.pauses = b.pauses[1:]
	if err := wait(b.ctx, d); err != nil {
		return 0, err
	}
	return copy(p, "x"), nil
}

func (b *slowBody) Close() error { return nil }

func wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// A negative timeout means no limit, not the default: on a fake clock, a
// call that takes longer than the default request timeout, and a stream
// whose headers and pauses take longer than both defaults, finish intact.
// (The timeouts are timers, not context deadlines, so only waiting past
// them tells.)
func TestNegativeTimeoutsAreNoLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		long := DefaultRequestTimeout + time.Minute
		v, err := Call(context.Background(), Timeouts{Request: -1}, "test", func(ctx context.Context) (int, error) {
			if err := wait(ctx, long); err != nil {
				return 0, err
			}
			return 7, nil
		})
		if v != 7 || err != nil {
			t.Errorf("a call of %s with no request limit: %d, %v", long, v, err)
		}

		rt := &slowTransport{headerDelay: long, pauses: []time.Duration{0, DefaultIdleTimeout + time.Minute, DefaultIdleTimeout + time.Minute}}
		var got strings.Builder
		for ev, err := range streamBody(context.Background(), Timeouts{Request: -1, Idle: -1}, Client(&http.Client{Transport: rt}), "http://model.invalid/") {
			if err != nil {
				t.Fatalf("a stream with no limits failed after %q: %v", got.String(), err)
			}
			got.WriteString(ev.Text)
		}
		if got.String() != "xxx" {
			t.Errorf("stream read %q, want %q", got.String(), "xxx")
		}

		// The same waits with the limits left at their defaults do time out,
		// so the waits above are long enough to tell.
		_, err = Call(context.Background(), Timeouts{}, "test", func(ctx context.Context) (int, error) {
			return 0, wait(ctx, long)
		})
		if !errors.Is(err, ErrTimeout) {
			t.Errorf("a call of %s with the default limit: %v, want a timeout", long, err)
		}
		rt = &slowTransport{pauses: []time.Duration{0, DefaultIdleTimeout + time.Minute}}
		var last error
		for _, err := range streamBody(context.Background(), Timeouts{}, Client(&http.Client{Transport: rt}), "http://model.invalid/") {
			last = err
		}
		if !errors.Is(last, ErrTimeout) {
			t.Errorf("a pause of %s with the default idle limit: %v, want a timeout", DefaultIdleTimeout+time.Minute, last)
		}
	})
}
