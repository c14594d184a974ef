// Package retry is the retry policy every provider adapter shares: bounded
// exponential backoff with full jitter for rate limits, server errors and
// broken connections, honouring the server's Retry-After, and never retrying
// once any output has reached the caller.
package retry

import (
	"context"
	"errors"
	"iter"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/deepagents-go/deepagents/llm"
)

// Policy bounds retries. The zero value retries up to 3 times (4 attempts)
// starting at 500 ms and never waits more than 30 s between attempts.
type Policy struct {
	MaxRetries int           // retries after the first attempt; <0 disables retries
	Base       time.Duration // first backoff
	Max        time.Duration // cap on any single wait, Retry-After included
	// Sleep waits d or until ctx ends; tests replace it to run instantly.
	Sleep func(ctx context.Context, d time.Duration) error
	// Retryable decides whether err is worth another attempt (default
	// llm.Retryable).
	Retryable func(err error) bool
}

func (p Policy) norm() Policy {
	if p.MaxRetries == 0 {
		p.MaxRetries = 3
	}
	if p.Base <= 0 {
		p.Base = 500 * time.Millisecond
	}
	if p.Max <= 0 {
		p.Max = 30 * time.Second
	}
	if p.Sleep == nil {
		p.Sleep = sleep
	}
	if p.Retryable == nil {
		p.Retryable = llm.Retryable
	}
	return p
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Backoff returns the wait before retry number n (0-based) after err: the
// server's Retry-After when it gave one, else full-jitter exponential backoff.
func (p Policy) Backoff(n int, err error) time.Duration {
	p = p.norm()
	var ae *llm.APIError
	if errors.As(err, &ae) && ae.RetryAfter > 0 {
		return min(ae.RetryAfter, p.Max)
	}
	ceil := p.Base << min(n, 20)
	if ceil > p.Max || ceil <= 0 {
		ceil = p.Max
	}
	return time.Duration(rand.Int64N(int64(ceil)/2+1)) + ceil/2
}

type byCallerKey struct{}

// ByCaller returns ctx marking the calls made in it as retried by their
// caller (a durable-execution engine that retries the whole call, with its
// own policy and record of attempts): Do and Stream make one attempt in
// it, whatever their Policy says, so that the two do not multiply.
func ByCaller(ctx context.Context) context.Context {
	return context.WithValue(ctx, byCallerKey{}, true)
}

// RetriedByCaller reports whether ctx was marked with ByCaller.
func RetriedByCaller(ctx context.Context) bool {
	v, _ := ctx.Value(byCallerKey{}).(bool)
	return v
}

// forCall is p as it applies to a call made in ctx: normalised, and
// without retries when the caller retries.
func (p Policy) forCall(ctx context.Context) Policy {
	p = p.norm()
	if RetriedByCaller(ctx) {
		p.MaxRetries = -1
	}
	return p
}

// Do calls fn until it succeeds, fails with a non-retryable error, runs out
// of retries, or ctx ends. In a context marked with ByCaller it calls fn
// once.
func Do[T any](ctx context.Context, p Policy, fn func(ctx context.Context) (T, error)) (T, error) {
	p = p.forCall(ctx)
	for n := 0; ; n++ {
		v, err := fn(ctx)
		if err == nil || ctx.Err() != nil || p.MaxRetries < 0 || n >= p.MaxRetries || !p.Retryable(err) {
			return v, err
		}
		wait := p.Backoff(n, err)
		llm.NotifyRetry(ctx, llm.Retry{Attempt: n + 1, Wait: wait, Err: err})
		if serr := p.Sleep(ctx, wait); serr != nil {
			return v, err
		}
	}
}

// Stream opens a stream with retries: an attempt that fails before it has
// yielded anything is retried like Do; once an event has been passed on, a
// failure is returned to the caller as is. In a context marked with
// ByCaller it opens the stream once.
func Stream(ctx context.Context, p Policy, open func(ctx context.Context) iter.Seq2[llm.StreamEvent, error]) iter.Seq2[llm.StreamEvent, error] {
	p = p.forCall(ctx)
	return func(yield func(llm.StreamEvent, error) bool) {
		for n := 0; ; n++ {
			started := false
			var failed error
			for ev, err := range open(ctx) {
				if err != nil {
					failed = err
					break
				}
				started = true
				if !yield(ev, nil) {
					return
				}
			}
			if failed == nil {
				return
			}
			if started || ctx.Err() != nil || p.MaxRetries < 0 || n >= p.MaxRetries || !p.Retryable(failed) {
				yield(llm.StreamEvent{}, failed)
				return
			}
			wait := p.Backoff(n, failed)
			llm.NotifyRetry(ctx, llm.Retry{Attempt: n + 1, Wait: wait, Err: failed})
			if serr := p.Sleep(ctx, wait); serr != nil {
				yield(llm.StreamEvent{}, failed)
				return
			}
		}
	}
}

// Recorder stands in for Policy.Sleep in tests: it records every wait the
// policy asks for and returns at once (with the context's error, if any).
type Recorder struct {
	mu    sync.Mutex
	waits []time.Duration
}

// Sleep records d; use it as Policy.Sleep.
func (r *Recorder) Sleep(ctx context.Context, d time.Duration) error {
	r.mu.Lock()
	r.waits = append(r.waits, d)
	r.mu.Unlock()
	return ctx.Err()
}

// Waits returns the recorded waits, in order.
func (r *Recorder) Waits() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Duration(nil), r.waits...)
}
