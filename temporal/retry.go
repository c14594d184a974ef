package temporal

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	sdktemporal "go.temporal.io/sdk/temporal"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm"
)

// DefaultModelRetry is the retry policy of model activities when
// Registry.ModelRetry is nil: six attempts, one second apart at first,
// doubling up to a minute. Only failures a provider call may get over are
// retried (rate limits, server errors, broken connections; see
// llm.Retryable); a Retry-After the provider sent sets the wait.
func DefaultModelRetry() *sdktemporal.RetryPolicy {
	return &sdktemporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 6}
}

// modelRetry is the retry policy model activities are scheduled with.
func (g *Registry) modelRetry() *sdktemporal.RetryPolicy {
	if g.ModelRetry != nil {
		return g.ModelRetry
	}
	return DefaultModelRetry()
}

// ModelResult is the output of the model activity: the model's response,
// and the attempt of the activity that got it when earlier ones failed and
// Temporal retried them. Its JSON is the response's with one more field,
// so that results recorded before it existed read back the same.
type ModelResult struct {
	llm.Response
	Attempt int `json:"activity_attempt,omitempty"`
}

// modelResult is the model activity's output for resp: measured as it
// will be sent (a response over MaxPayload fails the call here, not at the
// activity's completion), and with the attempt that got it.
func (g *Registry) modelResult(ctx context.Context, resp *llm.Response) (*ModelResult, error) {
	if resp == nil {
		resp = &llm.Response{}
	}
	out := &ModelResult{Response: *resp}
	if a := int(activity.GetInfo(ctx).Attempt); a > 1 {
		out.Attempt = a
		activity.GetLogger(ctx).Info("model call succeeded after Temporal retried it", "attempt", a)
	}
	if n, err := g.payloadSize(out); err != nil {
		return nil, sdktemporal.NewNonRetryableApplicationError(err.Error(), payloadType, nil)
	} else if n > MaxPayload {
		pe := &PayloadError{Activity: ModelActivity, Size: n, Output: true}
		return nil, sdktemporal.NewNonRetryableApplicationError(pe.Error(), payloadType, nil, *pe)
	}
	return out, nil
}

// modelFailure is the error the model activity fails with when its model
// failed with err. A provider's error (*llm.APIError) crosses with its kind,
// so that the loop and its middleware react to it as in process (a context
// too long is compacted); a kind worth another attempt (llm.Retryable) is
// retried by Temporal, after the provider's Retry-After when it gave one
// (at most the policy's maximum interval); any other error is not retried.
// The provider's own retries are off inside the activity (retry.ByCaller),
// so these are the only ones.
func (g *Registry) modelFailure(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		// Cancelled or timed out: Temporal knows, and decides.
		return err
	}
	attempt := activity.GetInfo(ctx).Attempt
	var ae *llm.APIError
	if !errors.As(err, &ae) {
		activity.GetLogger(ctx).Warn("model call failed; not retried", "attempt", attempt, "error", err)
		return sdktemporal.NewNonRetryableApplicationError(err.Error(), modelErrorType, nil)
	}
	details := apiError{Kind: ae.Kind, Provider: ae.Provider, StatusCode: ae.StatusCode, Message: ae.Message, RetryAfter: ae.RetryAfter}
	if !llm.Retryable(err) {
		activity.GetLogger(ctx).Warn("model call failed; not retried", "attempt", attempt, "kind", ae.Kind, "error", err)
		return sdktemporal.NewNonRetryableApplicationError(err.Error(), apiErrorType, nil, details)
	}
	opts := sdktemporal.ApplicationErrorOptions{Details: []any{details}}
	if d := ae.RetryAfter; d > 0 {
		if p := activity.GetInfo(ctx).RetryPolicy; p != nil && p.MaximumInterval > 0 {
			d = min(d, p.MaximumInterval)
		} else if p := g.modelRetry(); p.MaximumInterval > 0 {
			d = min(d, p.MaximumInterval)
		}
		opts.NextRetryDelay = d
	}
	activity.GetLogger(ctx).Warn("model call failed; Temporal retries it", "attempt", attempt, "kind", ae.Kind, "retry_after", ae.RetryAfter, "error", err)
	return sdktemporal.NewApplicationErrorWithOptions(err.Error(), apiErrorType, opts)
}

// refFailure is the error the model activity fails with when it could not
// read its messages back from the store: retried when the store was
// unavailable for now (checkpoint.ErrUnavailable), else not (a step that is
// not there will not be there at the next attempt).
func refFailure(err error) error {
	var appErr *sdktemporal.ApplicationError
	switch {
	case errors.As(err, &appErr):
		return err
	case errors.Is(err, checkpoint.ErrUnavailable):
		return sdktemporal.NewApplicationError(err.Error(), unavailableType)
	}
	return sdktemporal.NewNonRetryableApplicationError(err.Error(), "deepagents.MessagesUnreadable", nil)
}

// modelErrorType is the type of the application error of a model call
// that failed with an error other than a provider's.
const modelErrorType = "deepagents.ModelError"

// RetriedError is the error of a model call's attempt that failed and was
// retried by Temporal, as the run's model.retry event tells it: the
// workflow learns of such attempts only from the one that succeeded, so
// the failure itself is in the worker's log (and Temporal's record of the
// activity), not here.
type RetriedError struct {
	// Attempt is the activity attempt that failed (1 for the first).
	Attempt int
}

func (e *RetriedError) Error() string {
	return fmt.Sprintf("attempt %d of the model activity failed and Temporal retried it (the worker's log has its error)", e.Attempt)
}

// noteRetries tells the run, through llm.NotifyRetry, of the attempts
// before the one that got res: one notice each, before the response.
func noteRetries(ctx context.Context, res *ModelResult) {
	for a := 1; a < res.Attempt; a++ {
		llm.NotifyRetry(ctx, llm.Retry{Attempt: a, Err: &RetriedError{Attempt: a}})
	}
}
