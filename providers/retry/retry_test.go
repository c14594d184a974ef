package retry

import (
	"context"
	"errors"
	"iter"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/llm"
)

func recordSleeps(p *Policy) *Recorder {
	rec := &Recorder{}
	p.Sleep = rec.Sleep
	return rec
}

func TestDoRetriesRetryableErrorsOnly(t *testing.T) {
	p := Policy{MaxRetries: 3, Base: 100 * time.Millisecond}
	waits := recordSleeps(&p)
	calls := 0
	v, err := Do(context.Background(), p, func(context.Context) (int, error) {
		calls++
		switch calls {
		case 1:
			return 0, &llm.APIError{Kind: llm.ErrKindRateLimit, RetryAfter: 7 * time.Second}
		case 2:
			return 0, &llm.APIError{Kind: llm.ErrKindServer}
		}
		return 42, nil
	})
	if err != nil || v != 42 || calls != 3 {
		t.Fatalf("v %d err %v calls %d", v, err, calls)
	}
	if w := waits.Waits(); w[0] != 7*time.Second || w[1] < 100*time.Millisecond || w[1] > 200*time.Millisecond {
		t.Errorf("waits %v: want Retry-After, then jittered backoff in [base, 2*base]", w)
	}
	calls = 0
	_, err = Do(context.Background(), p, func(context.Context) (int, error) { calls++; return 0, &llm.APIError{Kind: llm.ErrKindAuth} })
	if calls != 1 || !errors.Is(err, llm.ErrAuth) {
		t.Errorf("auth error retried: %d calls", calls)
	}
	calls = 0
	_, err = Do(context.Background(), p, func(context.Context) (int, error) { calls++; return 0, &llm.APIError{Kind: llm.ErrKindServer} })
	if calls != 4 || err == nil {
		t.Errorf("bounded retries: %d calls", calls)
	}
	if d := (Policy{Max: time.Second}).Backoff(0, &llm.APIError{Kind: llm.ErrKindRateLimit, RetryAfter: time.Hour}); d != time.Second {
		t.Errorf("Retry-After must be capped at Max: %v", d)
	}
	calls = 0
	_, _ = Do(context.Background(), Policy{MaxRetries: -1}, func(context.Context) (int, error) { calls++; return 0, &llm.APIError{Kind: llm.ErrKindServer} })
	if calls != 1 {
		t.Errorf("MaxRetries -1 must disable retries: %d calls", calls)
	}
}

func TestStreamNeverRetriesAfterOutput(t *testing.T) {
	p := Policy{MaxRetries: 3}
	recordSleeps(&p)
	cut := &llm.APIError{Kind: llm.ErrKindNetwork}
	opens := 0
	open := func(failBeforeFirst bool) func(context.Context) iter.Seq2[llm.StreamEvent, error] {
		return func(context.Context) iter.Seq2[llm.StreamEvent, error] {
			return func(yield func(llm.StreamEvent, error) bool) {
				opens++
				if failBeforeFirst && opens == 1 {
					yield(llm.StreamEvent{}, cut)
					return
				}
				if !yield(llm.StreamEvent{Type: llm.EventTextDelta, Text: "x"}, nil) {
					return
				}
				if !failBeforeFirst {
					yield(llm.StreamEvent{}, cut)
					return
				}
				yield(llm.StreamEvent{Type: llm.EventDone, Response: &llm.Response{}}, nil)
			}
		}
	}
	var got []string
	for ev, err := range Stream(context.Background(), p, open(true)) {
		if err != nil {
			t.Fatalf("a cut before the first byte must be retried: %v", err)
		}
		got = append(got, string(ev.Type))
	}
	if opens != 2 || len(got) != 2 {
		t.Errorf("opens %d events %v", opens, got)
	}
	opens = 0
	var last error
	for _, err := range Stream(context.Background(), p, open(false)) {
		last = err
	}
	if opens != 1 || !errors.Is(last, llm.ErrNetwork) {
		t.Errorf("a cut after output was retried: %d opens, %v", opens, last)
	}
}

// TestBackoffIsCappedWithoutRetryAfter: with no Retry-After, the
// exponential backoff grows from Base but no wait ever exceeds Max, however
// many retries, and once the cap is reached every wait is jittered within
// [Max/2, Max].
func TestBackoffIsCappedWithoutRetryAfter(t *testing.T) {
	p := Policy{MaxRetries: 40, Base: time.Millisecond, Max: 8 * time.Millisecond}
	rec := recordSleeps(&p)
	calls := 0
	_, err := Do(context.Background(), p, func(context.Context) (int, error) {
		calls++
		return 0, &llm.APIError{Kind: llm.ErrKindServer}
	})
	if err == nil || calls != 41 {
		t.Fatalf("%d calls, err %v", calls, err)
	}
	waits := rec.Waits()
	if len(waits) != 40 {
		t.Fatalf("%d waits", len(waits))
	}
	for i, w := range waits {
		if w > 8*time.Millisecond {
			t.Errorf("wait %d is %v, above the 8ms cap", i, w)
		}
		if i >= 3 && w < 4*time.Millisecond {
			t.Errorf("wait %d is %v, below half the cap once the cap is reached", i, w)
		}
	}
	// The same holds for the backoff alone, far past any shift overflow.
	for n := range 80 {
		if d := p.Backoff(n, errors.New("x")); d <= 0 || d > 8*time.Millisecond {
			t.Errorf("Backoff(%d) = %v", n, d)
		}
	}
	// A stream that keeps failing before output waits the same way.
	rec2 := recordSleeps(&p)
	for _, err := range Stream(context.Background(), p, func(context.Context) iter.Seq2[llm.StreamEvent, error] {
		return func(yield func(llm.StreamEvent, error) bool) {
			yield(llm.StreamEvent{}, &llm.APIError{Kind: llm.ErrKindNetwork})
		}
	}) {
		if err == nil {
			t.Fatal("the stream succeeded")
		}
	}
	for i, w := range rec2.Waits() {
		if w > 8*time.Millisecond {
			t.Errorf("stream wait %d is %v, above the cap", i, w)
		}
	}
}

// A call its caller retries makes one attempt, in Do and in Stream, even
// for an error the policy would retry; the mark does not leak into a
// context without it.
func TestByCallerMakesOneAttempt(t *testing.T) {
	p := Policy{MaxRetries: 5}
	rec := recordSleeps(&p)
	ctx := ByCaller(context.Background())
	if !RetriedByCaller(ctx) || RetriedByCaller(context.Background()) {
		t.Fatal("the mark is not read back")
	}
	calls := 0
	_, err := Do(ctx, p, func(context.Context) (int, error) {
		calls++
		return 0, &llm.APIError{Kind: llm.ErrKindRateLimit, RetryAfter: time.Second}
	})
	if calls != 1 || !errors.Is(err, llm.ErrRateLimit) {
		t.Errorf("Do: %d calls, %v", calls, err)
	}
	opens := 0
	var last error
	for _, err := range Stream(ctx, p, func(context.Context) iter.Seq2[llm.StreamEvent, error] {
		return func(yield func(llm.StreamEvent, error) bool) {
			opens++
			yield(llm.StreamEvent{}, &llm.APIError{Kind: llm.ErrKindServer})
		}
	}) {
		last = err
	}
	if opens != 1 || !errors.Is(last, llm.ErrServer) {
		t.Errorf("Stream: %d opens, %v", opens, last)
	}
	if w := rec.Waits(); len(w) != 0 {
		t.Errorf("waited %v", w)
	}
	calls = 0
	_, _ = Do(context.Background(), p, func(context.Context) (int, error) { calls++; return 0, &llm.APIError{Kind: llm.ErrKindServer} })
	if calls != 6 {
		t.Errorf("without the mark: %d calls, want 6", calls)
	}
}
