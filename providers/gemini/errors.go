package gemini

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/genai"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/providers/kit"
)

// capture records, for one attempt, whether a request reached the transport
// and the status and headers of its response: genai.APIError keeps neither
// the Retry-After header nor whether the failure happened on the wire.
type capture struct {
	mu     sync.Mutex
	sent   bool
	code   int
	header http.Header
}

func (c *capture) status() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.code
}

type captureKey struct{}

func withCapture(ctx context.Context, c *capture) context.Context {
	return context.WithValue(ctx, captureKey{}, c)
}

// captureTransport fills the capture found in the request's context.
type captureTransport struct {
	base http.RoundTripper
}

func (t *captureTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.base
	if base == nil {
		base = http.DefaultTransport
	}
	c, _ := req.Context().Value(captureKey{}).(*capture)
	if c != nil {
		c.mu.Lock()
		c.sent = true
		c.mu.Unlock()
	}
	resp, err := base.RoundTrip(req)
	if c != nil && resp != nil {
		c.mu.Lock()
		c.code, c.header = resp.StatusCode, resp.Header.Clone()
		c.mu.Unlock()
	}
	return resp, err
}

// classify turns an SDK or transport error into an *llm.APIError carrying the
// API's own message; a cancelled context is returned as its cause.
func classify(ctx context.Context, err error, c *capture) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	c.mu.Lock()
	sent, code, header := c.sent, c.code, c.header
	c.mu.Unlock()

	var ge genai.APIError
	var gp *genai.APIError
	switch {
	case errors.As(err, &ge):
	case errors.As(err, &gp) && gp != nil:
		ge = *gp
	default:
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			// A deadline of the HTTP client or the SDK, not of the caller.
			return &llm.APIError{Kind: llm.ErrKindNetwork, Provider: Provider, StatusCode: code, Message: err.Error(), Err: err}
		}
		if !sent {
			// The SDK refused the request before sending it.
			return &llm.APIError{Kind: llm.ErrKindBadRequest, Provider: Provider, Message: err.Error(), Err: err}
		}
		// Connection failures, a stream cut mid-way, an unreadable body.
		return &llm.APIError{Kind: llm.ErrKindNetwork, Provider: Provider, StatusCode: code, Message: err.Error(), Err: err}
	}
	status := ge.Code
	if status == 0 && code >= 400 {
		status = code
	}
	ae := &llm.APIError{
		Kind:       errorKind(status, ge),
		Provider:   Provider,
		StatusCode: status,
		Message:    ge.Message,
		Err:        err,
	}
	if ae.Message == "" {
		ae.Message = ge.Status
	}
	if ae.Message == "" {
		ae.Message = http.StatusText(status)
	}
	if header != nil && code == status {
		ae.RetryAfter = kit.RetryAfter(header, time.Now())
	}
	if ae.RetryAfter == 0 {
		ae.RetryAfter = retryInfoDelay(ge.Details)
	}
	return ae
}

// errorKind maps an HTTP status and google.rpc status to an error kind with
// the shared classifier: the rpc status and the ErrorInfo reasons are its
// tags (an invalid key comes back as 400 INVALID_ARGUMENT with reason
// API_KEY_INVALID).
func errorKind(code int, ge genai.APIError) llm.ErrorKind {
	tags := []string{ge.Status}
	for _, d := range ge.Details {
		if strings.HasSuffix(detailType(d), "google.rpc.ErrorInfo") {
			if r, ok := d["reason"].(string); ok {
				tags = append(tags, r)
			}
		}
	}
	return kit.Classify(kit.Failure{Status: code, Tags: tags, Message: ge.Message})
}

func detailType(d map[string]any) string {
	t, _ := d["@type"].(string)
	return t
}

// retryInfoDelay reads the retryDelay of a google.rpc.RetryInfo detail: a
// proto Duration, "31s" in JSON (or {"seconds": 31, "nanos": 0}).
func retryInfoDelay(details []map[string]any) time.Duration {
	for _, d := range details {
		if !strings.HasSuffix(detailType(d), "google.rpc.RetryInfo") {
			continue
		}
		switch v := d["retryDelay"].(type) {
		case string:
			if dur, err := time.ParseDuration(strings.TrimSpace(v)); err == nil && dur > 0 {
				return dur
			}
		case map[string]any:
			secs, _ := toFloat(v["seconds"])
			nanos, _ := toFloat(v["nanos"])
			if total := secs + nanos/1e9; total > 0 && total <= 1e6 {
				return time.Duration(total * float64(time.Second))
			}
		}
	}
	return 0
}

func toFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case string:
		f, err := strconv.ParseFloat(n, 64)
		return f, err == nil
	}
	return 0, false
}
