// Package kit is what the three provider adapters (openai, anthropic,
// gemini) share about failures: one classifier that maps an HTTP status and
// the provider's error type and message to an llm.ErrorKind, one parser of
// the server's Retry-After headers, per-attempt timeouts (time to an
// answer, and silence in the middle of a stream), and the response limits
// of llm.ResponseLimits (every stream's events counted, and what is read
// from the server capped in proportion; see AnswerFactor). Sharing them
// means the same failure gets the same kind, and the same retry decision,
// whichever provider reported it.
package kit

import (
	"net/http"
	"strings"

	"github.com/deepagents-go/deepagents/llm"
)

// Failure is an error response as an adapter sees it.
type Failure struct {
	// Status is the HTTP status; 0 for an error that arrived inside a
	// streamed 200 response, which only its tags and message describe.
	Status int
	// Tags are the machine-readable labels the provider attached: error
	// type, error code, google.rpc status, ErrorInfo reasons. Case and
	// order do not matter.
	Tags []string
	// Message is the provider's human-readable message.
	Message string
}

// Classify returns the kind of f. The HTTP status decides when it is
// unambiguous (401/402/403 auth, 404 not found, 408 network, 409 and 5xx
// server, 413 context length, 429 rate limit); a 400-class status or none
// at all falls back to the tags, then to the message.
func Classify(f Failure) llm.ErrorKind {
	switch s := f.Status; {
	case s == http.StatusUnauthorized, s == http.StatusPaymentRequired, s == http.StatusForbidden:
		// 402 is a billing problem: like a bad key, waiting will not fix it.
		return llm.ErrKindAuth
	case s == http.StatusNotFound:
		return llm.ErrKindNotFound
	case s == http.StatusRequestTimeout:
		return llm.ErrKindNetwork
	case s == http.StatusConflict:
		// A transient conflict (OpenAI's lock contention, Google's ABORTED):
		// the same request may succeed when sent again.
		return llm.ErrKindServer
	case s == http.StatusRequestEntityTooLarge:
		return llm.ErrKindContextLength
	case s == http.StatusTooManyRequests:
		return llm.ErrKindRateLimit
	case s >= 500:
		return llm.ErrKindServer
	}
	if k, ok := kindOfTags(f.Tags, f.Message); ok {
		return k
	}
	if ContextLengthMessage(f.Message) {
		return llm.ErrKindContextLength
	}
	if authMessage(f.Message) {
		return llm.ErrKindAuth
	}
	if f.Status == 0 {
		// An error in the middle of a stream with no recognisable type is
		// the server's failure, not the request's.
		return llm.ErrKindServer
	}
	return llm.ErrKindBadRequest
}

// tagKinds maps lower-cased error types, codes and statuses to kinds.
var tagKinds = map[string]llm.ErrorKind{
	// Anthropic error types.
	"authentication_error": llm.ErrKindAuth,
	"permission_error":     llm.ErrKindAuth,
	"billing_error":        llm.ErrKindAuth,
	"rate_limit_error":     llm.ErrKindRateLimit,
	"not_found_error":      llm.ErrKindNotFound,
	"request_too_large":    llm.ErrKindContextLength,
	"overloaded_error":     llm.ErrKindServer,
	"api_error":            llm.ErrKindServer,
	"timeout_error":        llm.ErrKindServer,
	// OpenAI types and codes (and compatible servers').
	"invalid_api_key":           llm.ErrKindAuth,
	"rate_limit_exceeded":       llm.ErrKindRateLimit,
	"context_length_exceeded":   llm.ErrKindContextLength,
	"exceed_context_size_error": llm.ErrKindContextLength,
	"model_not_found":           llm.ErrKindNotFound,
	"server_error":              llm.ErrKindServer,
	// google.rpc status codes and ErrorInfo reasons.
	"unauthenticated":    llm.ErrKindAuth,
	"permission_denied":  llm.ErrKindAuth,
	"api_key_invalid":    llm.ErrKindAuth,
	"resource_exhausted": llm.ErrKindRateLimit,
	"not_found":          llm.ErrKindNotFound,
	"aborted":            llm.ErrKindServer,
	"internal":           llm.ErrKindServer,
	"unavailable":        llm.ErrKindServer,
	"deadline_exceeded":  llm.ErrKindServer,
}

// badRequestTags are types that mean "the request is wrong", unless the
// message says it is only too long.
var badRequestTags = map[string]bool{
	"invalid_request_error": true,
	"invalid_argument":      true,
	"failed_precondition":   true,
	"out_of_range":          true,
}

// kindOfTags returns the most specific kind the tags name. Auth wins over
// everything (a bad key is reported as INVALID_ARGUMENT + API_KEY_INVALID),
// then the tags in order.
func kindOfTags(tags []string, msg string) (llm.ErrorKind, bool) {
	var found llm.ErrorKind
	bad := false
	for _, t := range tags {
		t = strings.ToLower(strings.TrimSpace(t))
		k, ok := tagKinds[t]
		if !ok {
			k, ok = tagFamily(t)
		}
		if ok {
			if k == llm.ErrKindAuth {
				return k, true
			}
			if found == "" {
				found = k
			}
		} else if badRequestTags[t] {
			bad = true
		}
	}
	if found != "" {
		return found, true
	}
	if bad {
		if ContextLengthMessage(msg) {
			return llm.ErrKindContextLength, true
		}
		if authMessage(msg) {
			return llm.ErrKindAuth, true
		}
		return llm.ErrKindBadRequest, true
	}
	return "", false
}

// tagFamily recognises tags that only resemble the known ones, as servers
// that imitate a provider write them ("RateLimitError",
// "context_length_error", "authentication_failed").
func tagFamily(t string) (llm.ErrorKind, bool) {
	t = strings.NewReplacer("_", "", "-", "", " ", "").Replace(t)
	switch {
	case strings.Contains(t, "ratelimit"):
		return llm.ErrKindRateLimit, true
	case strings.Contains(t, "contextlength"), strings.Contains(t, "contextsize"):
		return llm.ErrKindContextLength, true
	case strings.Contains(t, "authentication"), strings.Contains(t, "permission"), strings.Contains(t, "unauthorized"):
		return llm.ErrKindAuth, true
	}
	return "", false
}

// contextLengthPhrases are what the providers and the servers that imitate
// them say when a prompt does not fit: OpenAI and vLLM ("maximum context
// length"), llama.cpp ("exceeds the available context size"), Anthropic
// ("prompt is too long", "exceed context limit"), Gemini ("exceeds the
// maximum number of tokens", "request payload size exceeds").
var contextLengthPhrases = []string{
	"maximum context length",
	"context length exceeded",
	"context_length_exceeded",
	"context length",
	"context window",
	"context limit",
	"exceeds the available context size",
	"exceeds the context",
	"prompt is too long",
	"too many tokens",
	"exceeds the maximum number of tokens",
	"request payload size exceeds",
}

// ContextLengthMessage reports whether a provider message says the request
// does not fit the model's context.
func ContextLengthMessage(msg string) bool {
	return containsAny(strings.ToLower(msg), contextLengthPhrases)
}

var authPhrases = []string{
	"api key not valid",
	"api key expired",
	"invalid api key",
	"incorrect api key",
	"invalid x-api-key",
}

func authMessage(msg string) bool {
	return containsAny(strings.ToLower(msg), authPhrases)
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
