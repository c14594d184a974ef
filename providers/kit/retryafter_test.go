package kit

import (
	"net/http"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		h    http.Header
		want time.Duration
	}{
		{nil, 0},
		{http.Header{}, 0},
		{http.Header{"Retry-After": {"12"}}, 12 * time.Second},
		{http.Header{"Retry-After": {" 1.5 "}}, 1500 * time.Millisecond},
		{http.Header{"Retry-After": {"0"}}, 0},
		{http.Header{"Retry-After": {"-3"}}, 0},
		{http.Header{"Retry-After": {"soon"}}, 0},
		{http.Header{"Retry-After": {"NaN"}}, 0},
		{http.Header{"Retry-After": {"1e400"}}, 24 * time.Hour},
		{http.Header{"Retry-After": {"99999999999"}}, 24 * time.Hour},
		{http.Header{"Retry-After": {"Sun, 01 Jun 2025 12:00:30 GMT"}}, 30 * time.Second},
		{http.Header{"Retry-After": {"Sunday, 01-Jun-25 12:01:00 GMT"}}, time.Minute},
		{http.Header{"Retry-After": {"Sun, 01 Jun 2025 11:59:00 GMT"}}, 0},
		{http.Header{"Retry-After-Ms": {"250"}}, 250 * time.Millisecond},
		{http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"9"}}, 250 * time.Millisecond},
		{http.Header{"Retry-After-Ms": {"junk"}, "Retry-After": {"9"}}, 9 * time.Second},
		{http.Header{"Retry-After-Ms": {"-20"}, "Retry-After": {"9"}}, 9 * time.Second},
		{http.Header{"Retry-After-Ms": {"1500.5"}}, 1500*time.Millisecond + 500*time.Microsecond},
		{http.Header{"Retry-After": {"-0"}}, 0},
		{http.Header{"Retry-After": {"Inf"}}, 0},
		{http.Header{"Retry-After": {"+Inf"}}, 0},
		{http.Header{"Retry-After": {"0x10"}}, 0},
		{http.Header{"Retry-After": {"1_000"}}, 0},
		{http.Header{"Retry-After": {"30s"}}, 0},
		{http.Header{"Retry-After": {"Sun, 01 Jun 2125 12:00:00 GMT"}}, 24 * time.Hour},
	} {
		if got := RetryAfter(tc.h, now); got != tc.want {
			t.Errorf("RetryAfter(%v) = %v, want %v", tc.h, got, tc.want)
		}
	}
}

func FuzzRetryAfter(f *testing.F) {
	f.Add("", "30")
	f.Add("1500", "")
	f.Add("", "Sun, 01 Jun 2025 12:00:30 GMT")
	f.Add("-1", "1e400")
	f.Add("NaN", "Inf")
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, ms, ra string) {
		h := http.Header{}
		if ms != "" {
			h.Set("Retry-After-Ms", ms)
		}
		if ra != "" {
			h.Set("Retry-After", ra)
		}
		d := RetryAfter(h, now)
		if d < 0 || d > 24*time.Hour {
			t.Fatalf("RetryAfter(%q, %q) = %v", ms, ra, d)
		}
		// Only the header that was used matters: the same value alone
		// gives the same wait.
		if ms == "" {
			alone := RetryAfter(http.Header{"Retry-After": {ra}}, now)
			if alone != d {
				t.Fatalf("RetryAfter(%q) = %v alone, %v with an empty retry-after-ms", ra, alone, d)
			}
		}
	})
}
