package kit

import (
	"context"
	"errors"
	"io"
	"iter"
	"net/http"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/llm"
)

// refEventMax is the largest server-sent event in b, line ends included,
// found the plain way: split into lines ("\r\n", "\n" or "\r"), an empty
// line ending the event.
func refEventMax(b []byte) int64 {
	var best, cur int64
	for i := 0; i < len(b); {
		j := i
		for j < len(b) && b[j] != '\n' && b[j] != '\r' {
			j++
		}
		term := 0
		if j < len(b) {
			term = 1
			if b[j] == '\r' && j+1 < len(b) && b[j+1] == '\n' {
				term = 2
			}
		}
		if j == i && term > 0 {
			cur = 0
		} else {
			cur += int64(j - i + term)
			best = max(best, cur)
		}
		i = j + term
	}
	return best
}

// eventMax feeds b to an eventSize in pieces of step bytes and returns the
// largest event it reported.
func eventMax(b []byte, step int) int64 {
	var e eventSize
	var best int64
	for i := 0; i < len(b); i += step {
		best = max(best, e.feed(b[i:min(i+step, len(b))]))
	}
	return best
}

func TestEventSize(t *testing.T) {
	for in, want := range map[string]int64{
		"":                                  0,
		"data: a\n\n":                       8,
		"data: a\ndata: bb\n\ndata: c\n":    17,
		"data: a\r\n\r\ndata: bc\r\n":       10,
		"data: a\r\rdata: bcd\r":            10,
		"\n\n\r\n\r\r":                      0,
		": ping\n\n: ping\n\n":              7,
		"data: " + strings.Repeat("x", 100): 106,
	} {
		for _, step := range []int{1, 2, 3, 1000} {
			if got := eventMax([]byte(in), step); got != want {
				t.Errorf("%q in pieces of %d: %d, want %d", in, step, got, want)
			}
		}
		if ref := refEventMax([]byte(in)); ref != want {
			t.Errorf("%q: the reference says %d, want %d", in, ref, want)
		}
	}
}

// Fed in any pieces, eventSize finds the largest event the plain reading
// finds.
func FuzzEventSize(f *testing.F) {
	f.Add([]byte("data: a\r\n\r\ndata: bc\r\n"), uint8(1))
	f.Add([]byte("event: x\ndata: {}\n\n: ping\r\r\ndata: y"), uint8(3))
	f.Fuzz(func(t *testing.T, b []byte, step uint8) {
		if got, want := eventMax(b, int(step)+1), refEventMax(b); got != want {
			t.Fatalf("%q in pieces of %d: %d, want %d", b, int(step)+1, got, want)
		}
	})
}

// endlessBody repeats a pattern without end.
type endlessBody struct {
	pattern string
	at      int
}

func (b *endlessBody) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], b.pattern[b.at:])
		n += c
		b.at = (b.at + c) % len(b.pattern)
	}
	return n, nil
}

func (b *endlessBody) Close() error { return nil }

// endlessServer answers every request with an endless body of the given
// type.
type endlessServer struct{ contentType, pattern string }

func (s endlessServer) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {s.contentType}},
		Body: &endlessBody{pattern: s.pattern}, Request: req}, nil
}

// readAll reads the body of a request to srv through the kit client, as an
// SDK would, and wraps a failure as an adapter might.
func readAll(ctx context.Context, srv endlessServer) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://model.invalid/", nil)
	resp, err := Client(&http.Client{Transport: srv}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return &llm.APIError{Kind: llm.ErrKindNetwork, Provider: "test", Message: "the body broke", Err: err}
	}
	return nil
}

// What the server sends is capped in proportion to the byte limit of the
// context: a non-streamed answer at 4 times it, one server-sent event at 2
// times it, an event stream at 64 times it (each with its floor). The
// attempt's error is the cap's, however the reader wrapped it, and is not
// retryable.
func TestWireCaps(t *testing.T) {
	ctx := llm.WithResponseLimits(context.Background(), llm.ResponseLimits{MaxBytes: 1 << 20})
	cases := []struct {
		srv  endlessServer
		wire string
		max  int64
	}{
		{endlessServer{"application/json", `{"text":"xxxxxxxx`}, wireAnswer, 4 << 20},
		{endlessServer{"text/event-stream", "data: xxxxxxxxxxxxxxxx\n"}, wireEvent, 2 << 20},
		{endlessServer{"text/event-stream; charset=utf-8", ": keep-alive " + strings.Repeat(".", 4000) + "\n\n"}, wireStream, 64 << 20},
	}
	for _, c := range cases {
		_, err := Call(ctx, Timeouts{}, "test", func(ctx context.Context) (int, error) { return 0, readAll(ctx, c.srv) })
		var tl *llm.ResponseTooLargeError
		if !errors.As(err, &tl) || tl.Wire != c.wire || tl.Max != c.max || tl.Got <= tl.Max || llm.Retryable(err) {
			t.Errorf("%s: %v (%+v), want the %s cap of %d", c.srv.contentType, err, tl, c.wire, c.max)
		}
	}
	// A small limit keeps the floors; no limit reads on (here, a body that
	// ends).
	small := llm.WithResponseLimits(context.Background(), llm.ResponseLimits{MaxBytes: 10})
	_, err := Call(small, Timeouts{}, "test", func(ctx context.Context) (int, error) {
		return 0, readAll(ctx, endlessServer{"application/json", "x"})
	})
	var tl *llm.ResponseTooLargeError
	if !errors.As(err, &tl) || tl.Max != 1<<20 {
		t.Errorf("a 10-byte limit: %v, want the 1 MiB floor", err)
	}
	none := llm.WithResponseLimits(context.Background(), llm.ResponseLimits{MaxBytes: -1})
	req, _ := http.NewRequestWithContext(none, http.MethodGet, "http://model.invalid/", nil)
	if caps := newCapped(req, &http.Response{Header: http.Header{}}); caps != nil {
		t.Errorf("no limit still caps: %+v", caps)
	}
}

// Stream counts the events of every adapter's stream against the limits
// of the context, and checks the final response: past them it stops the
// stream with the limit's error.
func TestStreamHoldsTheLimits(t *testing.T) {
	ctx := llm.WithResponseLimits(context.Background(), llm.ResponseLimits{MaxBytes: 1000, MaxToolCalls: 2})
	stopped := false
	text := func(ctx context.Context) iter.Seq2[llm.StreamEvent, error] {
		return func(yield func(llm.StreamEvent, error) bool) {
			for yield(llm.StreamEvent{Type: llm.EventTextDelta, Text: "0123456789"}, nil) {
			}
			stopped = true
		}
	}
	n := 0
	var last error
	for _, err := range Stream(ctx, Timeouts{}, "test", text) {
		if err != nil {
			last = err
			break
		}
		n++
	}
	var tl *llm.ResponseTooLargeError
	if !errors.As(last, &tl) || tl.Limit != llm.LimitBytes || n != 100 || !stopped {
		t.Errorf("after %d events: %v (stopped %v), want the byte limit after 100", n, last, stopped)
	}
	done := func(ctx context.Context) iter.Seq2[llm.StreamEvent, error] {
		return func(yield func(llm.StreamEvent, error) bool) {
			yield(llm.StreamEvent{Type: llm.EventDone, Response: &llm.Response{Message: llm.Assistant(""), Refusal: strings.Repeat("r", 1001)}}, nil)
		}
	}
	for _, err := range Stream(ctx, Timeouts{}, "test", done) {
		if !errors.As(err, &tl) || tl.Limit != llm.LimitBytes {
			t.Errorf("a final response of 1,001 bytes: %v", err)
		}
	}
}
