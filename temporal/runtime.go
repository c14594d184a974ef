package temporal

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/tool"
)

// Runtime is the agent.Runtime of workflow code: the loop's clock is the
// workflow's, its side-by-side tool calls are workflow coroutines, and it
// waits only on workflow primitives, so that a run replays from its
// history. Make one per run with NewRuntime and pass it with
// agent.WithRuntime, together with the context Context returns.
//
// Every coroutine of a workflow has a workflow.Context of its own, which
// its blocking calls must be given; the loop, which knows nothing of them,
// calls the runtime with Go contexts only. Since the workflow runs one
// coroutine at a time, and the loop's coroutines give way only inside this
// runtime's waits, the runtime keeps the context of the coroutine that is
// running: each coroutine sets it when it starts and again each time one of
// its waits returns.
type Runtime struct {
	// wf is the workflow's context: its cancellation is the run's.
	wf workflow.Context
	// cur is the context of the coroutine running now.
	cur workflow.Context

	// sess is the run's session (SessionTool).
	sess sessions
	// host, when set, runs subagent runs as child workflows (see
	// RunChild); version is the workflow's version of that change, read
	// once (versioned); waiting are the children whose runs wait for a
	// person, by path.
	host      *childHost
	version   workflow.Version
	versioned bool
	waiting   map[string]*childWF
}

// NewRuntime returns the runtime of a run in the workflow whose context
// (the workflow function's own) is ctx.
func NewRuntime(ctx workflow.Context) *Runtime {
	// The runtime's coroutines and waits are not cut by the workflow's
	// cancellation: it reaches the loop through the Go context instead,
	// and the loop then ends its calls in its own order.
	cur, _ := workflow.NewDisconnectedContext(ctx)
	return &Runtime{wf: ctx, cur: cur}
}

// Context returns the context.Context the run takes: derived from
// context.Background, so that nothing watches it from a goroutine of its
// own, and cancelled, from workflow code, when the workflow is. cancel
// frees it.
func (r *Runtime) Context() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	workflow.Go(r.wf, func(c workflow.Context) {
		c.Done().Receive(c, nil)
		cancel()
	})
	return ctx, cancel
}

// wait runs block, which may give way to other coroutines, with the running
// coroutine's context, and makes that context current again once it is
// back.
func (r *Runtime) wait(block func(c workflow.Context)) {
	c := r.cur
	block(c)
	r.cur = c
}

// Now is the workflow's time.
func (r *Runtime) Now() time.Time { return workflow.Now(r.wf) }

// CallID is "call_R_I", as in process.
func (*Runtime) CallID(round, index int) string { return fmt.Sprintf("call_%d_%d", round, index) }

// Fanout starts each call as a workflow coroutine.
func (r *Runtime) Fanout(calls []func()) {
	parent := r.cur
	for _, f := range calls {
		workflow.Go(parent, func(c workflow.Context) {
			r.cur = c
			f()
		})
	}
}

// Queue returns a queue whose Next waits with workflow.Await; Put never
// waits.
func (r *Runtime) Queue() agent.Queue { return &queue{r: r} }

// Semaphore returns a semaphore whose Acquire waits with workflow.Await.
func (r *Runtime) Semaphore(n int) agent.Semaphore { return &semaphore{r: r, n: max(n, 1)} }

// Timeout returns a copy of ctx cancelled with cause (nil:
// context.DeadlineExceeded) by a workflow timer of d.
func (r *Runtime) Timeout(ctx context.Context, d time.Duration, cause error) (context.Context, context.CancelFunc) {
	if cause == nil {
		cause = context.DeadlineExceeded
	}
	tctx, cancel := context.WithCancelCause(ctx)
	wc, stop := workflow.WithCancel(r.cur)
	workflow.Go(wc, func(c workflow.Context) {
		if workflow.Sleep(c, d) == nil {
			cancel(cause)
		}
	})
	return tctx, func() {
		stop()
		cancel(context.Canceled)
	}
}

// Model calls next with this runtime in the context, where a model made
// with Registry.Model finds it and runs the provider call as an activity.
func (r *Runtime) Model(ctx context.Context, req *llm.Request, next agent.ModelFunc) (*llm.Response, error) {
	return next(context.WithValue(ctx, runtimeKey{}, r), req)
}

// Tool calls next with this runtime in the context, where a tool made with
// Registry.Tool finds it and runs as an activity.
func (r *Runtime) Tool(ctx context.Context, call *agent.ToolCall, next agent.ToolFunc) (tool.Result, error) {
	return next(context.WithValue(ctx, runtimeKey{}, r), call)
}

type runtimeKey struct{}

// runtimeFrom returns the workflow runtime of a call made in workflow code.
func runtimeFrom(ctx context.Context) (*Runtime, bool) {
	r, ok := ctx.Value(runtimeKey{}).(*Runtime)
	return r, ok
}

type queue struct {
	r      *Runtime
	items  []any
	closed bool
}

func (q *queue) Put(v any) {
	if !q.closed {
		q.items = append(q.items, v)
	}
}

func (q *queue) Next(ctx context.Context) any {
	if len(q.items) == 0 && ctx.Err() == nil {
		q.r.wait(func(c workflow.Context) {
			_ = workflow.Await(c, func() bool { return len(q.items) > 0 || ctx.Err() != nil })
		})
	}
	if len(q.items) == 0 {
		return nil
	}
	v := q.items[0]
	q.items[0] = nil
	q.items = q.items[1:]
	return v
}

func (q *queue) Close() { q.closed, q.items = true, nil }

type semaphore struct {
	r       *Runtime
	n, held int
}

func (s *semaphore) Acquire(ctx context.Context) error {
	if s.held >= s.n && ctx.Err() == nil {
		s.r.wait(func(c workflow.Context) {
			_ = workflow.Await(c, func() bool { return s.held < s.n || ctx.Err() != nil })
		})
	}
	if s.held < s.n {
		s.held++
		return nil
	}
	return context.Cause(ctx)
}

func (s *semaphore) Release() { s.held-- }
