package anthropic

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/deepagents-go/deepagents/llm"
)

func badRequest(msg string) *llm.APIError {
	return &llm.APIError{Kind: llm.ErrKindBadRequest, Provider: ProviderName, Message: msg}
}

// toAPIError classifies err as an *llm.APIError carrying the provider's own
// message. The caller's cancellation is returned as the context's error, so
// it is never mistaken for a network failure and retried.
func toAPIError(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	var ae *llm.APIError
	if errors.As(err, &ae) {
		return err
	}
	var se *anthropic.Error
	if !errors.As(err, &se) {
		// No HTTP response (refused, reset, timed out) or a body that broke
		// off: the request may simply be sent again.
		return &llm.APIError{Kind: llm.ErrKindNetwork, Provider: ProviderName, Message: err.Error(), Err: err}
	}
	out := &llm.APIError{Provider: ProviderName, Message: se.Message, Err: err}
	if out.Message == "" {
		out.Message = strings.TrimSpace(se.RawJSON())
	}
	if out.Message == "" {
		out.Message = http.StatusText(se.StatusCode)
	}
	if se.Response != nil {
		out.RetryAfter = retryAfter(se.Response.Header)
	}
	etype := string(se.Type())
	if se.StatusCode >= 200 && se.StatusCode < 300 {
		// An `error` event inside a 200 event stream: only its type tells.
		out.Kind = kindOfType(etype, out.Message)
		return out
	}
	out.StatusCode = se.StatusCode
	out.Kind = kindOfStatus(se.StatusCode, etype, out.Message)
	return out
}

func kindOfStatus(status int, etype, msg string) llm.ErrorKind {
	switch {
	case status == http.StatusUnauthorized, status == http.StatusForbidden, status == http.StatusPaymentRequired:
		return llm.ErrKindAuth
	case status == http.StatusTooManyRequests:
		return llm.ErrKindRateLimit
	case status == http.StatusNotFound:
		return llm.ErrKindNotFound
	case status == http.StatusRequestEntityTooLarge:
		// The request does not fit; shortening it is the remedy.
		return llm.ErrKindContextLength
	case status == http.StatusRequestTimeout, status == http.StatusConflict, status >= 500:
		return llm.ErrKindServer // 5xx and 529 overloaded
	case status == http.StatusBadRequest || status == http.StatusUnprocessableEntity:
		if contextLengthMessage(msg) {
			return llm.ErrKindContextLength
		}
		return llm.ErrKindBadRequest
	}
	if k := kindOfType(etype, msg); k != llm.ErrKindServer {
		return k
	}
	return llm.ErrKindBadRequest
}

func kindOfType(etype, msg string) llm.ErrorKind {
	switch etype {
	case "authentication_error", "permission_error", "billing_error":
		return llm.ErrKindAuth
	case "rate_limit_error":
		return llm.ErrKindRateLimit
	case "not_found_error":
		return llm.ErrKindNotFound
	case "request_too_large":
		return llm.ErrKindContextLength
	case "invalid_request_error":
		if contextLengthMessage(msg) {
			return llm.ErrKindContextLength
		}
		return llm.ErrKindBadRequest
	}
	// overloaded_error, api_error, timeout_error and anything unknown.
	return llm.ErrKindServer
}

// contextLengthMessage recognises the API's prompt-too-long messages, e.g.
// "prompt is too long: 208310 tokens > 200000 maximum" or "input length and
// `max_tokens` exceed context limit: ...".
func contextLengthMessage(msg string) bool {
	m := strings.ToLower(msg)
	for _, s := range []string{"prompt is too long", "exceed context limit", "exceeds the context", "context window", "context length", "too many tokens"} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

// retryAfter reads retry-after-ms, then retry-after (seconds or an HTTP
// date).
func retryAfter(h http.Header) time.Duration {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > 0 {
			return time.Duration(s * float64(time.Second))
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}
