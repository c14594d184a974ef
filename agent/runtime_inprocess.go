package agent

import (
	"context"
	"sync"
	"time"
)

// This file holds the runtimes that schedule in process, with goroutines,
// channels and the wall clock's timers: the default one and Sequential.
// They are the only place of the loop's scheduling where these appear.

// local is the in-process queue, semaphore and timers the default runtime
// and Sequential share.
type local struct{}

// Queue returns a channel-backed queue: a Put waits while 32 values wait to
// be taken.
func (local) Queue() Queue { return &chanQueue{ch: make(chan any, 32), closed: make(chan struct{})} }

// Semaphore returns a channel-backed semaphore.
func (local) Semaphore(n int) Semaphore { return make(chanSemaphore, max(n, 1)) }

// Timeout is context.WithTimeoutCause: the wall clock's timers.
func (local) Timeout(ctx context.Context, d time.Duration, cause error) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, d, cause)
}

type chanQueue struct {
	ch     chan any
	closed chan struct{}
	once   sync.Once
}

func (q *chanQueue) Put(v any) {
	select {
	case q.ch <- v:
	case <-q.closed:
	}
}

func (q *chanQueue) Next(ctx context.Context) any {
	select {
	case v := <-q.ch:
		return v
	default:
	}
	select {
	case v := <-q.ch:
		return v
	case <-ctx.Done():
		return nil
	}
}

func (q *chanQueue) Close() { q.once.Do(func() { close(q.closed) }) }

type chanSemaphore chan struct{}

func (s chanSemaphore) Acquire(ctx context.Context) error {
	select {
	case s <- struct{}{}:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (s chanSemaphore) Release() { <-s }

// inProcess is the default runtime of a run of a.
type inProcess struct {
	direct
	local
	a *Agent
}

func (inProcess) Now() time.Time { return time.Now() }

func (inProcess) CallID(round, index int) string { return defaultCallID(round, index) }

func (p inProcess) Fanout(calls []func()) {
	for _, f := range calls {
		p.a.pool.spawn(f)
	}
}

// workerIdle is how long a worker goroutine waits for its agent's next tool
// call before it ends.
const workerIdle = time.Second

// workers is an agent's pool of worker goroutines for the default runtime.
// Reusing workers keeps their grown stacks, which tool calls (JSON
// decoding, reflection) need. The pool is per Agent, not global, so the
// workers of an agent assembled inside a testing/synctest bubble stay in it.
type workers struct {
	// idle hands a function to a worker waiting for one.
	idle chan func()
}

func newWorkers() workers { return workers{idle: make(chan func())} }

// spawn runs f on one of the idle workers if one is waiting, else on a new
// one that then stays around briefly for the next call.
func (w workers) spawn(f func()) {
	select {
	case w.idle <- f:
	default:
		go w.work(f)
	}
}

func (w workers) work(f func()) {
	t := time.NewTimer(workerIdle)
	defer t.Stop()
	for {
		f()
		t.Reset(workerIdle)
		select {
		case f = <-w.idle:
		case <-t.C:
			return
		}
	}
}

// Sequential returns a deterministic Runtime for tests and replays: its
// clock stands still at start, ids are the default "call_R_I", and a step's
// tool calls run one after the other, in call order, on one goroutine per
// step. With a deterministic model, two runs under fresh Sequential
// runtimes set to the same time give the same event stream, byte for byte.
// Its timers (Timeout) run on the wall clock: they only bound how long a
// cancelled step waits for its subagents.
func Sequential(start time.Time) Runtime { return sequential{now: start} }

// sequential is the runtime Sequential returns.
type sequential struct {
	direct
	local
	now time.Time
}

// Now returns the clock's time.
func (s sequential) Now() time.Time { return s.now }

// CallID returns "call_R_I".
func (sequential) CallID(round, index int) string { return defaultCallID(round, index) }

// Fanout runs the calls one by one, in order, on a new goroutine.
func (sequential) Fanout(calls []func()) {
	go func() {
		for _, f := range calls {
			f()
		}
	}()
}
