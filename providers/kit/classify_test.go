package kit

import (
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/llm"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    Failure
		want llm.ErrorKind
	}{
		{"401", Failure{Status: 401, Message: "Incorrect API key provided"}, llm.ErrKindAuth},
		{"402 billing", Failure{Status: 402, Tags: []string{"billing_error"}}, llm.ErrKindAuth},
		{"403", Failure{Status: 403, Tags: []string{"PERMISSION_DENIED"}}, llm.ErrKindAuth},
		{"404", Failure{Status: 404, Message: "model not found"}, llm.ErrKindNotFound},
		{"408", Failure{Status: 408}, llm.ErrKindNetwork},
		{"409", Failure{Status: 409, Tags: []string{"ABORTED"}}, llm.ErrKindServer},
		{"413", Failure{Status: 413, Tags: []string{"invalid_request_error"}}, llm.ErrKindContextLength},
		{"429", Failure{Status: 429, Tags: []string{"requests", "rate_limit_exceeded"}}, llm.ErrKindRateLimit},
		{"429 quota", Failure{Status: 429, Tags: []string{"insufficient_quota"}}, llm.ErrKindRateLimit},
		{"500", Failure{Status: 500}, llm.ErrKindServer},
		{"529 overloaded", Failure{Status: 529, Tags: []string{"overloaded_error"}}, llm.ErrKindServer},
		{"400 plain", Failure{Status: 400, Message: "messages: field required"}, llm.ErrKindBadRequest},
		{"400 context message", Failure{Status: 400, Tags: []string{"invalid_request_error"}, Message: "prompt is too long: 210000 tokens > 200000 maximum"}, llm.ErrKindContextLength},
		{"400 context code", Failure{Status: 400, Tags: []string{"invalid_request_error", "context_length_exceeded"}, Message: "too long"}, llm.ErrKindContextLength},
		{"400 gemini tokens", Failure{Status: 400, Tags: []string{"INVALID_ARGUMENT"}, Message: "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)."}, llm.ErrKindContextLength},
		{"400 gemini bad key", Failure{Status: 400, Tags: []string{"INVALID_ARGUMENT", "API_KEY_INVALID"}, Message: "API key not valid. Please pass a valid API key."}, llm.ErrKindAuth},
		{"400 bad key message only", Failure{Status: 400, Message: "API key not valid."}, llm.ErrKindAuth},
		{"422", Failure{Status: 422, Message: "unprocessable"}, llm.ErrKindBadRequest},
		{"499 cancelled", Failure{Status: 499, Tags: []string{"CANCELLED"}}, llm.ErrKindBadRequest},
		{"stream overloaded", Failure{Tags: []string{"overloaded_error"}, Message: "Overloaded"}, llm.ErrKindServer},
		{"stream rate limit", Failure{Tags: []string{"rate_limit_error"}}, llm.ErrKindRateLimit},
		{"stream invalid", Failure{Tags: []string{"invalid_request_error"}, Message: "bad"}, llm.ErrKindBadRequest},
		{"stream context", Failure{Message: "This model's maximum context length is 8192 tokens"}, llm.ErrKindContextLength},
		{"stream unknown", Failure{Message: "something broke"}, llm.ErrKindServer},
		{"stream auth", Failure{Tags: []string{"", "authentication_error"}}, llm.ErrKindAuth},
		{"imitated rate limit", Failure{Tags: []string{"RateLimitError"}}, llm.ErrKindRateLimit},
		{"imitated context", Failure{Status: 400, Tags: []string{"BadRequestError", "context_length_error"}}, llm.ErrKindContextLength},
		{"imitated auth", Failure{Tags: []string{"AuthenticationFailed"}}, llm.ErrKindAuth},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Classify(tc.f); got != tc.want {
				t.Errorf("Classify(%+v) = %s, want %s", tc.f, got, tc.want)
			}
		})
	}
}

func TestContextLengthMessage(t *testing.T) {
	for msg, want := range map[string]bool{
		"This model's maximum context length is 128000 tokens.":                       true,
		"input length and `max_tokens` exceed context limit: 190000 + 20000 > 200000": true,
		"the request exceeds the available context size, try increasing it":           true,
		"Request payload size exceeds the limit: 20971520 bytes.":                     true,
		"PROMPT IS TOO LONG":             true,
		"max_tokens: must be at least 1": false,
		"":                               false,
	} {
		if got := ContextLengthMessage(msg); got != want {
			t.Errorf("ContextLengthMessage(%q) = %v, want %v", msg, got, want)
		}
	}
}

// FuzzClassifyMessage checks that the message matching is total and
// consistent: any message gives a valid kind; an explicit status keeps its
// kind whatever the message says; and a message that names a context-length
// problem makes a 400 a context-length error, in any letter case.
func FuzzClassifyMessage(f *testing.F) {
	f.Add(400, "invalid_request_error", "prompt is too long: 300000 tokens")
	f.Add(0, "overloaded_error", "Overloaded")
	f.Add(400, "INVALID_ARGUMENT", "API key not valid")
	f.Add(429, "", "maximum context length")
	f.Add(0, "", "\xff\xfe")
	valid := map[llm.ErrorKind]bool{llm.ErrKindAuth: true, llm.ErrKindRateLimit: true, llm.ErrKindContextLength: true,
		llm.ErrKindBadRequest: true, llm.ErrKindNotFound: true, llm.ErrKindServer: true, llm.ErrKindNetwork: true}
	fixed := map[int]llm.ErrorKind{401: llm.ErrKindAuth, 402: llm.ErrKindAuth, 403: llm.ErrKindAuth, 404: llm.ErrKindNotFound,
		408: llm.ErrKindNetwork, 409: llm.ErrKindServer, 413: llm.ErrKindContextLength, 429: llm.ErrKindRateLimit, 500: llm.ErrKindServer, 503: llm.ErrKindServer}
	f.Fuzz(func(t *testing.T, status int, tag, msg string) {
		k := Classify(Failure{Status: status, Tags: []string{tag}, Message: msg})
		if !valid[k] {
			t.Fatalf("Classify(%d, %q, %q) = %q, not a known kind", status, tag, msg, k)
		}
		if want, ok := fixed[status]; ok && k != want {
			t.Fatalf("status %d classified %s, want %s (tag %q, message %q)", status, k, want, tag, msg)
		}
		if ContextLengthMessage(msg) != ContextLengthMessage(strings.ToUpper(msg)) && strings.ToLower(strings.ToUpper(msg)) == strings.ToLower(msg) {
			t.Fatalf("context-length matching depends on letter case for %q", msg)
		}
		if ContextLengthMessage(msg) && tag == "" && status == 400 && !authMessage(msg) && k != llm.ErrKindContextLength {
			t.Fatalf("400 %q classified %s, want context_length", msg, k)
		}
	})
}
