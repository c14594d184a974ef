package vfs

import (
	"context"
	"time"
)

// ExecRequest is one shell command to run in a backend's directory.
type ExecRequest struct {
	// Command is run by the POSIX shell (sh -c Command) with the backend's
	// root as its working directory.
	Command string
	// Timeout bounds the command's run; 0 takes the executor's default,
	// and the executor caps it at its own maximum.
	Timeout time.Duration
}

// ExecResult is what a command did.
type ExecResult struct {
	// Output is what the command wrote to stdout and stderr, interleaved
	// in the order it was written, cut in the middle when longer than the
	// executor's cap (OmittedBytes says how much went).
	Output string
	// OmittedBytes is how many bytes of output were dropped from the middle
	// of Output.
	OmittedBytes int64
	// ExitCode is the command's exit status; 128+N when a signal N ended it.
	// Meaningless when TimedOut.
	ExitCode int
	// TimedOut reports that the command was still running after Timeout and
	// was killed with every process it started.
	TimedOut bool
	// Timeout is the limit the command ran under (after defaults and caps).
	Timeout time.Duration
	// Duration is how long the command ran.
	Duration time.Duration
	// Notice is what the executor says about the run besides the output,
	// for the model: protected paths the command created, which were
	// removed, say. Empty when there is nothing to say; when set, part of
	// what the command did was refused or undone.
	Notice string
}

// Executor is a backend that can run shell commands in its root directory,
// such as a real directory on disk with a sandbox to run them in. A non-zero
// exit status is a normal result, not an error: the error is for a command
// that could not be started at all (or a cancelled context).
type Executor interface {
	Execute(ctx context.Context, req ExecRequest) (ExecResult, error)
}

// AsExecutor returns the executor behind a backend: the backend itself, or
// the one a Tracked view (or any wrapper with an Unwrap() Backend method)
// wraps. ok is false when no layer of b can run commands.
func AsExecutor(b Backend) (ex Executor, ok bool) {
	for range 16 { // wrappers nest a few levels at most; never loop
		if b == nil {
			return nil, false
		}
		if ex, ok := b.(Executor); ok {
			return ex, true
		}
		switch w := b.(type) {
		case *Tracked:
			b = w.Backend
		case *Composite:
			// Commands run in the fallback's directory; mounted routes
			// (skills, memory files) are not part of it.
			b = w.fallback
		case interface{ Unwrap() Backend }:
			b = w.Unwrap()
		default:
			return nil, false
		}
	}
	return nil, false
}
