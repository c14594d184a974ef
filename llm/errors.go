package llm

import (
	"errors"
	"fmt"
	"time"
)

// ErrorKind classifies a provider failure so callers can react without
// knowing the provider: re-authenticate, back off, shorten the context, or
// fix the request.
type ErrorKind string

// Error kinds.
const (
	ErrKindAuth          ErrorKind = "auth"           // bad or missing credentials, no permission
	ErrKindRateLimit     ErrorKind = "rate_limit"     // 429 or quota
	ErrKindContextLength ErrorKind = "context_length" // the prompt does not fit the model
	ErrKindBadRequest    ErrorKind = "bad_request"    // the provider rejected the request
	ErrKindNotFound      ErrorKind = "not_found"      // unknown model or endpoint
	ErrKindServer        ErrorKind = "server"         // 5xx, overloaded
	ErrKindNetwork       ErrorKind = "network"        // connection failed or the stream broke
)

// Sentinel errors matched by errors.Is against an *APIError of that kind.
var (
	ErrAuth          = &APIError{Kind: ErrKindAuth}
	ErrRateLimit     = &APIError{Kind: ErrKindRateLimit}
	ErrContextLength = &APIError{Kind: ErrKindContextLength}
	ErrBadRequest    = &APIError{Kind: ErrKindBadRequest}
	ErrNotFound      = &APIError{Kind: ErrKindNotFound}
	ErrServer        = &APIError{Kind: ErrKindServer}
	ErrNetwork       = &APIError{Kind: ErrKindNetwork}
)

// APIError is a provider failure with the provider's own message.
type APIError struct {
	Kind       ErrorKind
	Provider   string        // "openai", "anthropic", "gemini", ...
	StatusCode int           // HTTP status, 0 when none
	Message    string        // the provider's message, verbatim
	RetryAfter time.Duration // the server's Retry-After, 0 when absent
	Err        error         // the underlying SDK error
}

func (e *APIError) Error() string {
	msg := e.Message
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	if e.StatusCode != 0 {
		return fmt.Sprintf("%s: %s error (HTTP %d): %s", e.Provider, e.Kind, e.StatusCode, msg)
	}
	return fmt.Sprintf("%s: %s error: %s", e.Provider, e.Kind, msg)
}

func (e *APIError) Unwrap() error { return e.Err }

// Is matches the sentinels above by kind.
func (e *APIError) Is(target error) bool {
	t, ok := target.(*APIError)
	return ok && t.Provider == "" && t.Message == "" && t.Kind == e.Kind
}

// Retryable reports whether err is worth retrying: rate limits, server errors
// and network failures, but never a response cut off at its limits
// (ErrResponseTooLarge), whatever kind of error carries it.
func Retryable(err error) bool {
	if errors.Is(err, ErrResponseTooLarge) {
		return false
	}
	var ae *APIError
	if !errors.As(err, &ae) {
		return false
	}
	switch ae.Kind {
	case ErrKindRateLimit, ErrKindServer, ErrKindNetwork:
		return true
	}
	return false
}
