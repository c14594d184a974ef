package agent

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// The package's sentinel errors. The first five say how a run ended: every
// run that does not end with StatusOK returns a non-nil error (from Invoke,
// Drain, Result.Err and with the RunEnd event) that wraps exactly one of
// them, so a caller who checks only the error never mistakes a cut-off
// answer for a finished one:
//
//	res, err := a.Invoke(ctx, in)
//	switch {
//	case errors.Is(err, agent.ErrLimit):     // res holds the work done so far
//	case errors.Is(err, agent.ErrCancelled): // also matches context.Canceled
//	case errors.Is(err, agent.ErrRefused):   // the model declined; Result.Refusal says why
//	case err != nil:                         // agent.ErrFailed
//	}
var (
	// ErrFailed is wrapped by the error of a run that ended with StatusError:
	// a model call failed for good, a tool failed fatally (tool.ErrFatal), a
	// hook returned an error, or no valid structured response came.
	ErrFailed = errors.New("the run failed")
	// ErrLimit is wrapped by the error of a run that ended with StatusLimit:
	// it used up its step budget, or its own time budget (WithTimeout; then
	// the error also matches context.DeadlineExceeded), or a budget a
	// middleware keeps: a BeforeModel hook that returns an error wrapping
	// ErrLimit stops the run before that model call with StatusLimit (not
	// StatusError), its work kept, and the hook's error as the reason.
	ErrLimit = errors.New("the run stopped at a limit")
	// ErrCancelled is wrapped by the error of a run that ended with
	// StatusCancelled because its context ended. The error also matches the
	// context's cause (context.Canceled, context.DeadlineExceeded, or the
	// cause given to context.WithCancelCause).
	ErrCancelled = errors.New("the run was cancelled")
	// ErrRefused is wrapped by the error of a run that ended with
	// StatusRefused: the model declined to answer (a safety refusal), so
	// there is no answer to return. Result.Refusal holds the model's
	// explanation.
	ErrRefused = errors.New("the model declined to answer")
	// ErrInterrupted is wrapped by the error of a run that ended with
	// StatusInterrupted: tool calls wait for a person's decision
	// (Result.Interrupts). Resume the thread with WithDecisions.
	ErrInterrupted = errors.New("the run is waiting for approval")

	// ErrNoStructuredResponse ends a run whose agent has a ResponseFormat
	// but finished without a valid call of its response tool (with
	// ErrFailed).
	ErrNoStructuredResponse = errors.New("the agent finished without a valid structured response")
	// ErrRecorderUnavailable is matched by a Recorder's error when its
	// store could not take the record for now (a database restarting, a
	// network cut), not because the record was wrong.
	ErrRecorderUnavailable = errors.New("the run's recorder is unavailable")
	// ErrBadPath is wrapped by every error of ParsePath.
	ErrBadPath = errors.New("not an agent path")
)

// RunError is the error of a run that did not end with StatusOK. Its text is
// the reason alone (as in Result.Error); errors.Is matches both the sentinel
// of its status and the underlying cause.
type RunError struct {
	// Agent is the path of the run, e.g. "parent".
	Agent Path
	// Status is how the run ended; never StatusOK.
	Status Status
	// Err is the cause.
	Err error
}

func (e *RunError) Error() string {
	if e.Err == nil {
		return "the run ended with status " + string(e.Status)
	}
	return e.Err.Error()
}

// Unwrap returns the status's sentinel and the cause.
func (e *RunError) Unwrap() []error {
	errs := []error{statusSentinel(e.Status)}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	return errs
}

// statusSentinel returns the sentinel a run error of status s wraps.
func statusSentinel(s Status) error {
	switch s {
	case StatusLimit:
		return ErrLimit
	case StatusCancelled:
		return ErrCancelled
	case StatusRefused:
		return ErrRefused
	case StatusInterrupted:
		return ErrInterrupted
	}
	return ErrFailed
}

// ConfigError is an assembly-time rejection of a configuration, returned by
// New here and by the constructors built on it (subagent.NewTask,
// deepagents.New), so one errors.As finds them all. Its message is the
// exact text users see.
type ConfigError struct {
	// Subagent names the subagent spec at fault; empty when the fault is in
	// the top-level configuration.
	Subagent string
	// Msg is the whole message.
	Msg string
	// Err is an underlying error, when there is one (a schema that does not
	// compile, say).
	Err error
}

func (e *ConfigError) Error() string { return e.Msg }

func (e *ConfigError) Unwrap() error { return e.Err }

func configErr(format string, args ...any) error {
	return &ConfigError{Msg: fmt.Sprintf(format, args...)}
}

// timeoutError is the cancellation cause of a run whose WithTimeout budget ran
// out. It matches context.DeadlineExceeded.
type timeoutError struct{ d time.Duration }

func (e *timeoutError) Error() string { return fmt.Sprintf("timed out after %s", e.d) }

func (e *timeoutError) Is(target error) bool { return target == context.DeadlineExceeded }

// refusalError is the cause of a refused run: the model's own words.
type refusalError struct{ text string }

func (e *refusalError) Error() string {
	if e.text == "" {
		return "the model declined to answer"
	}
	return "the model declined to answer: " + e.text
}
