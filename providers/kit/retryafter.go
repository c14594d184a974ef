package kit

import (
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// MaxRetryAfter caps what RetryAfter returns, so that an absurd header
// cannot overflow a time.Duration. The retry policy caps the actual wait
// much lower (retry.Policy.Max).
const MaxRetryAfter = 24 * time.Hour

// RetryAfter reads how long the server asked the client to wait before the
// next attempt: the retry-after-ms header (milliseconds, as OpenAI and
// Anthropic send it) when it holds a usable value, else Retry-After as a
// number of seconds or as an HTTP date relative to now. Fractions are
// allowed. It returns 0 when both are absent, malformed, negative or in the
// past, and at most MaxRetryAfter.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if d, ok := number(h.Get("Retry-After-Ms"), time.Millisecond); ok {
		return d
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if d, ok := number(v, time.Second); ok {
		return d
	}
	if looksNumeric(v) {
		return 0 // a negative or broken number, not a date
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0
	}
	d := t.Sub(now)
	if d <= 0 {
		return 0
	}
	return min(d, MaxRetryAfter)
}

// number parses v as a non-negative decimal count of unit. ok is false when
// v is empty, not a number, negative or NaN.
func number(v string, unit time.Duration) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" || !looksNumeric(v) {
		return 0, false
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, false
	}
	if math.IsNaN(f) || f < 0 || strings.HasPrefix(v, "-") {
		return 0, false
	}
	if math.IsInf(f, 1) || f*float64(unit) >= float64(MaxRetryAfter) {
		return MaxRetryAfter, true
	}
	return time.Duration(f * float64(unit)), true
}

// looksNumeric accepts plain decimal numbers only (digits, one dot, an
// optional sign and exponent), so "Inf", "NaN" and hex floats, which
// strconv would take, are refused.
func looksNumeric(v string) bool {
	if v == "" {
		return false
	}
	digits := false
	for i, r := range v {
		switch {
		case r >= '0' && r <= '9':
			digits = true
		case r == '.', r == 'e', r == 'E':
		case (r == '-' || r == '+') && (i == 0 || v[i-1] == 'e' || v[i-1] == 'E'):
		default:
			return false
		}
	}
	return digits
}
