package gemini

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/deepagents-go/deepagents/llm"
)

func TestErrorKind(t *testing.T) {
	for _, tc := range []struct {
		code int
		ge   genai.APIError
		want llm.ErrorKind
	}{
		{400, genai.APIError{Status: "INVALID_ARGUMENT", Message: "The input token count (1048577) exceeds the maximum number of tokens allowed (1048576)."}, llm.ErrKindContextLength},
		{400, genai.APIError{Status: "INVALID_ARGUMENT", Message: "Request payload size exceeds the limit: 20971520 bytes."}, llm.ErrKindContextLength},
		{400, genai.APIError{Status: "INVALID_ARGUMENT", Message: "Invalid value at 'contents[0].parts[0]'"}, llm.ErrKindBadRequest},
		{400, genai.APIError{Status: "FAILED_PRECONDITION", Message: "User location is not supported for the API use."}, llm.ErrKindBadRequest},
		{400, genai.APIError{Status: "INVALID_ARGUMENT", Message: "API key not valid. Please pass a valid API key."}, llm.ErrKindAuth},
		{400, genai.APIError{Status: "INVALID_ARGUMENT", Message: "x", Details: []map[string]any{{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}}}, llm.ErrKindAuth},
		{401, genai.APIError{Status: "UNAUTHENTICATED"}, llm.ErrKindAuth},
		{403, genai.APIError{Status: "PERMISSION_DENIED"}, llm.ErrKindAuth},
		{404, genai.APIError{Status: "NOT_FOUND"}, llm.ErrKindNotFound},
		{429, genai.APIError{Status: "RESOURCE_EXHAUSTED"}, llm.ErrKindRateLimit},
		{0, genai.APIError{Status: "RESOURCE_EXHAUSTED"}, llm.ErrKindRateLimit},
		{408, genai.APIError{}, llm.ErrKindNetwork},
		{500, genai.APIError{Status: "INTERNAL"}, llm.ErrKindServer},
		{503, genai.APIError{Status: "UNAVAILABLE", Message: "The model is overloaded. Please try again later."}, llm.ErrKindServer},
		{504, genai.APIError{Status: "DEADLINE_EXCEEDED"}, llm.ErrKindServer},
		{0, genai.APIError{Status: "INTERNAL"}, llm.ErrKindServer},
		{413, genai.APIError{}, llm.ErrKindContextLength},
		{409, genai.APIError{Status: "ABORTED"}, llm.ErrKindServer},
	} {
		if got := errorKind(tc.code, tc.ge); got != tc.want {
			t.Errorf("%d %+v: %s, want %s", tc.code, tc.ge, got, tc.want)
		}
	}
}

func TestRetryInfoDelay(t *testing.T) {
	info := func(v any) []map[string]any {
		return []map[string]any{
			{"@type": "type.googleapis.com/google.rpc.QuotaFailure"},
			{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": v},
		}
	}
	for _, tc := range []struct {
		details []map[string]any
		want    time.Duration
	}{
		{info("31s"), 31 * time.Second},
		{info("0.250s"), 250 * time.Millisecond},
		{info(map[string]any{"seconds": "2", "nanos": 5e8}), 2500 * time.Millisecond},
		{info("later"), 0},
		{info(nil), 0},
		{nil, 0},
	} {
		if got := retryInfoDelay(tc.details); got != tc.want {
			t.Errorf("%v: %v, want %v", tc.details, got, tc.want)
		}
	}
}

func TestClassifyTransportErrors(t *testing.T) {
	ctx := context.Background()
	sent := &capture{sent: true}
	if err := classify(ctx, fmt.Errorf("doRequest: %w", io.ErrUnexpectedEOF), sent); !errors.Is(err, llm.ErrNetwork) {
		t.Errorf("a transport failure: %v", err)
	}
	if err := classify(ctx, errors.New("partialArgs parameter is only supported in ..."), &capture{}); !errors.Is(err, llm.ErrBadRequest) {
		t.Errorf("an error before sending: %v", err)
	}
	if err := classify(ctx, fmt.Errorf("x: %w", context.DeadlineExceeded), sent); !errors.Is(err, llm.ErrNetwork) {
		t.Errorf("an HTTP client timeout: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := classify(cctx, errors.New("whatever"), sent); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	// An API error keeps its message and reads Retry-After from the response.
	c := &capture{sent: true, code: 429, header: http.Header{"Retry-After": {"4"}}}
	err := classify(ctx, genai.APIError{Code: 429, Status: "RESOURCE_EXHAUSTED", Message: "quota"}, c)
	var ae *llm.APIError
	if !errors.As(err, &ae) || ae.Kind != llm.ErrKindRateLimit || ae.Message != "quota" || ae.RetryAfter != 4*time.Second || ae.StatusCode != 429 {
		t.Errorf("api error: %+v", ae)
	}
	var ge genai.APIError
	if !errors.As(err, &ge) {
		t.Error("the SDK error should stay reachable with errors.As")
	}
	// A mid-stream error event does not borrow the 200 response's headers.
	c = &capture{sent: true, code: 200, header: http.Header{"Retry-After": {"4"}}}
	err = classify(ctx, genai.APIError{Code: 503, Status: "UNAVAILABLE", Message: "overloaded"}, c)
	if !errors.As(err, &ae) || ae.RetryAfter != 0 || ae.Kind != llm.ErrKindServer {
		t.Errorf("stream error: %+v", ae)
	}
}
