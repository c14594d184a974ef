package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/tool"
)

// Runtime is where a run takes the time, makes ids, runs a step's tool
// calls side by side and waits for them. The loop uses nothing else for
// these: no goroutine, channel or select of its own. So another runtime can
// drive the same loop: a deterministic one for tests, a durable-execution
// engine whose code may only block on its own primitives. Pass one with
// WithRuntime; subagent runs inherit it. Without one a run uses the
// in-process default: the wall clock, ids "call_R_I", and the agent's pool
// of worker goroutines.
//
// A run's time budget (WithTimeout) runs on the runtime's timers too. The
// bound on saving a run's end and a Hold losing its thread still use the
// wall clock.
type Runtime interface {
	// Now is the time events are stamped with and durations measured by.
	// It may be called from any goroutine.
	Now() time.Time
	// CallID names the index-th tool call of model call round (0-based)
	// when the model sent the call without an id.
	CallID(round, index int) string
	// Fanout runs a step's tool calls: each function once, none of them on
	// the caller's goroutine (the caller reads what they report, through a
	// Queue, while they run). It may return before they finish.
	Fanout(calls []func())
	// Queue returns an empty queue through which a step's calls report to
	// the loop.
	Queue() Queue
	// Semaphore returns a limit of n holders at a time (n ≥ 1): the
	// parallelism of a step's calls.
	Semaphore(n int) Semaphore
	// Timeout returns a copy of ctx that is also done once d has passed on
	// the runtime's timers, with cause as its cause (nil:
	// context.DeadlineExceeded); cancel frees them. A run's time budget
	// runs on it, and the loop waits with it for the subagents of a step it
	// cancelled.
	Timeout(ctx context.Context, d time.Duration, cause error) (context.Context, context.CancelFunc)
	// Model makes one model call; next is the call through the agent's
	// middleware. A durable-execution runtime records its outcome here.
	Model(ctx context.Context, req *llm.Request, next ModelFunc) (*llm.Response, error)
	// Tool runs one tool call; next runs it through the agent's middleware.
	Tool(ctx context.Context, call *ToolCall, next ToolFunc) (tool.Result, error)
}

// Replayer is a Runtime that may run a run's code again to rebuild where
// the run was (a durable-execution engine replaying its history).
// Replaying reports whether it is doing so now: what the code sees then
// already happened once, and was reported when it did, so middleware that
// report to the outside (tracing) stay quiet. Middleware read it as
// StepInfo.Replaying.
type Replayer interface {
	Replaying() bool
}

// Queue carries what a step's running calls report (events, their ends)
// to the loop, which takes them one at a time, in the order they were put.
type Queue interface {
	// Put adds v (never nil). Any of the step's calls may put; Put may wait
	// while the loop is behind, but never once the queue is closed: v is
	// then dropped.
	Put(v any)
	// Next takes the next value put, waiting for one until ctx is done
	// (then it returns nil). A value already waiting is taken even when
	// ctx is done. Only the loop calls Next.
	Next(ctx context.Context) any
	// Close drops whatever is put from now on and frees the Puts waiting.
	Close()
}

// Semaphore lets a bounded number of holders in at a time.
type Semaphore interface {
	// Acquire waits for a place; it returns context.Cause(ctx) if ctx is
	// done first, and then holds no place.
	Acquire(ctx context.Context) error
	// Release gives back a place taken by Acquire.
	Release()
}

// direct is embedded by the runtimes that make model and tool calls in
// process: its Model and Tool call next.
type direct struct{}

// Model calls next.
func (direct) Model(ctx context.Context, req *llm.Request, next ModelFunc) (*llm.Response, error) {
	return next(ctx, req)
}

// Tool calls next.
func (direct) Tool(ctx context.Context, call *ToolCall, next ToolFunc) (tool.Result, error) {
	return next(ctx, call)
}

func defaultCallID(round, index int) string { return fmt.Sprintf("call_%d_%d", round, index) }
