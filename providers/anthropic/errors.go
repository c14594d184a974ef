package anthropic

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/providers/kit"
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
		out.RetryAfter = kit.RetryAfter(se.Response.Header, time.Now())
	}
	f := kit.Failure{Tags: []string{string(se.Type())}, Message: out.Message}
	if se.StatusCode < 200 || se.StatusCode >= 300 {
		// Not an `error` event inside a 200 event stream, where only the
		// type tells.
		out.StatusCode = se.StatusCode
		f.Status = se.StatusCode
	}
	out.Kind = kit.Classify(f)
	return out
}
