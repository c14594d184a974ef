package kit

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"sync"
	"time"

	"github.com/deepagents-go/deepagents/llm"
)

// SDKLineMax is the longest line of an event stream the OpenAI and
// Anthropic client libraries read (their bufio.Scanner's buffer); a longer
// one ends the attempt with an *llm.ResponseTooLargeError whose Wire is
// llm.WireLine, never retried.
const SDKLineMax = bufio.MaxScanTokenSize << 9

// Default timeouts of one model-call attempt.
const (
	// DefaultRequestTimeout bounds the wait for a non-streamed answer, or
	// for the response headers of a stream.
	DefaultRequestTimeout = 10 * time.Minute
	// DefaultIdleTimeout bounds the silence between two reads of a stream.
	DefaultIdleTimeout = 2 * time.Minute
)

// Timeouts bound one attempt of a model call, so that a server that
// accepts the connection and then says nothing cannot hang a run. A
// timeout that fires is a network failure: the attempt is retried like a
// broken connection, and the final error says which timeout fired.
type Timeouts struct {
	// Request bounds a non-streamed call from start to complete body, and a
	// streamed one until its response headers arrive. 0 means
	// DefaultRequestTimeout; negative means no limit.
	Request time.Duration
	// Idle bounds, once a stream has started, the time between two reads
	// that bring data. 0 means DefaultIdleTimeout; negative means no limit.
	Idle time.Duration
}

func (t Timeouts) norm() Timeouts {
	if t.Request == 0 {
		t.Request = DefaultRequestTimeout
	}
	if t.Idle == 0 {
		t.Idle = DefaultIdleTimeout
	}
	return t
}

// ErrTimeout is wrapped by the error of an attempt that a timeout ended; use
// errors.Is(err, kit.ErrTimeout).
var ErrTimeout = errors.New("model call timed out")

// timeoutError is the cause an attempt's context is cancelled with.
type timeoutError struct{ msg string }

func (e *timeoutError) Error() string { return e.msg }
func (e *timeoutError) Unwrap() error { return ErrTimeout }

// watch is the timer state of one attempt. The transport installed by
// Client finds it in the request's context: response headers end the
// request timeout of a stream, every read that brings data restarts its idle
// timeout.
type watch struct {
	t        Timeouts
	stream   bool
	cancel   context.CancelCauseFunc
	idleText string // the message of an idle timeout, made once

	mu      sync.Mutex
	timer   *time.Timer
	fired   error
	body    *capped // the wire caps of the response being read
	done    bool
	started bool // the response headers of a stream arrived
	held    bool // the caller is busy with an event: its time is not idle
	gen     int  // counts arm calls, so a timer replaced while firing stays quiet
}

func (w *watch) arm(d time.Duration, msg string) {
	w.gen++
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
	if d < 0 || w.done {
		return
	}
	gen := w.gen
	w.timer = time.AfterFunc(d, func() {
		w.mu.Lock()
		if w.done || w.fired != nil || w.gen != gen {
			w.mu.Unlock()
			return
		}
		err := &timeoutError{msg: msg}
		w.fired = err
		w.mu.Unlock()
		w.cancel(err)
	})
}

// headers is called when the response headers have arrived, and data
// after every read that brought bytes: both restart the idle timeout of a
// stream.
func (w *watch) headers() {
	if !w.stream {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.started = true
	if !w.held {
		w.armIdle()
	}
}

func (w *watch) data() { w.headers() }

func (w *watch) armIdle() { w.arm(w.t.Idle, w.idleText) }

// hold stops the idle clock while the caller handles an event, so a slow
// consumer is never mistaken for a silent server; release restarts it.
func (w *watch) hold() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started {
		w.held = true
		w.gen++
		if w.timer != nil {
			w.timer.Stop()
			w.timer = nil
		}
	}
}

func (w *watch) release() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.held {
		w.held = false
		w.armIdle()
	}
}

func (w *watch) stop() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.done = true
	if w.timer != nil {
		w.timer.Stop()
	}
	return w.fired
}

type watchKey struct{}

// start begins an attempt: a child context that the timers cancel.
func (t Timeouts) start(ctx context.Context, stream bool) (context.Context, *watch) {
	t = t.norm()
	ctx, cancel := context.WithCancelCause(ctx)
	w := &watch{t: t, stream: stream, cancel: cancel,
		idleText: fmt.Sprintf("stream idle timeout: no data from the server for %s", t.Idle)}
	what := "no answer"
	if stream {
		what = "no response headers"
	}
	w.mu.Lock()
	w.arm(t.Request, fmt.Sprintf("request timeout: %s from the server within %s", what, t.Request))
	w.mu.Unlock()
	return context.WithValue(ctx, watchKey{}, w), w
}

// finish ends an attempt. When the response passed a wire cap, the
// attempt's error (however the SDK and the adapter wrapped it) is that
// cap's *llm.ResponseTooLargeError. When one of its timeouts fired while
// the caller's own context is still alive, the attempt's error is replaced
// by a network error naming the timeout.
func (w *watch) finish(parent context.Context, provider string, err error) error {
	fired := w.stop()
	w.cancel(context.Canceled)
	w.mu.Lock()
	body := w.body
	w.mu.Unlock()
	if tl := body.failed(); tl != nil && err != nil {
		return tl
	}
	if errors.Is(err, bufio.ErrTooLong) {
		// The SDK's reader of the event stream met a line longer than it
		// takes: another attempt would read the same.
		return &llm.ResponseTooLargeError{Limit: llm.LimitBytes, Max: SDKLineMax, Got: SDKLineMax + 1, Wire: llm.WireLine}
	}
	if fired == nil || err == nil || parent.Err() != nil {
		return err
	}
	return &llm.APIError{Kind: llm.ErrKindNetwork, Provider: provider, Message: fired.Error(), Err: fired}
}

// Call runs one non-streamed attempt of a model call under t.Request.
func Call[T any](ctx context.Context, t Timeouts, provider string, fn func(ctx context.Context) (T, error)) (T, error) {
	actx, w := t.start(ctx, false)
	v, err := fn(actx)
	return v, w.finish(ctx, provider, err)
}

// Stream runs one streamed attempt under t: t.Request until the response
// headers arrive, then t.Idle between reads. It also holds the response to
// the limits in ctx (llm.ResponseLimitsFrom): the events are counted as they
// pass (llm.Meter), the final response is checked, and the stream is cut
// off with an *llm.ResponseTooLargeError past a limit.
func Stream(ctx context.Context, t Timeouts, provider string, open func(ctx context.Context) iter.Seq2[llm.StreamEvent, error]) iter.Seq2[llm.StreamEvent, error] {
	return func(yield func(llm.StreamEvent, error) bool) {
		actx, w := t.start(ctx, true)
		defer w.finish(ctx, provider, nil)
		limits := llm.ResponseLimitsFrom(ctx)
		meter := llm.NewMeter(limits)
		for ev, err := range open(actx) {
			if err == nil {
				err = meter.Add(ev)
			}
			if err == nil && ev.Type == llm.EventDone {
				err = limits.Check(ev.Response)
			}
			if err != nil {
				yield(llm.StreamEvent{}, w.finish(ctx, provider, err))
				return
			}
			w.hold()
			if !yield(ev, nil) {
				return
			}
			w.release()
		}
	}
}

// Client returns a copy of c (or of a default client when c is nil) whose
// transport lets the timeouts of Call and Stream see the response headers
// and the reads of the body. The copy has no overall Timeout of its own
// when c had none: Timeouts does that job per attempt.
func Client(c *http.Client) *http.Client {
	out := &http.Client{}
	if c != nil {
		cp := *c
		out = &cp
	}
	if _, ok := out.Transport.(*transport); !ok {
		out.Transport = &transport{base: out.Transport}
	}
	return out
}

type transport struct{ base http.RoundTripper }

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.base
	if base == nil {
		base = http.DefaultTransport
	}
	resp, err := base.RoundTrip(req)
	w, _ := req.Context().Value(watchKey{}).(*watch)
	if err != nil || w == nil || resp == nil {
		return resp, err
	}
	w.headers()
	if resp.Body != nil {
		c := newCapped(req, resp)
		w.mu.Lock()
		w.body = c
		w.mu.Unlock()
		resp.Body = &body{ReadCloser: resp.Body, w: w, caps: c}
	}
	return resp, nil
}

// body reports reads to the attempt's timeouts and holds them to the wire
// caps: past one, Read fails with the cap's *llm.ResponseTooLargeError.
type body struct {
	io.ReadCloser
	w    *watch
	caps *capped // nil: no caps
}

func (b *body) Read(p []byte) (int, error) {
	if err := b.caps.failed(); err != nil {
		return 0, err
	}
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.w.data()
		if b.caps != nil {
			if tl := b.caps.add(p[:n]); tl != nil {
				return 0, tl
			}
		}
	}
	return n, err
}
