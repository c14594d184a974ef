package temporal_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/deepagents-go/deepagents/temporal"
)

// runIn runs f as workflow code on a fresh Runtime and returns what it
// returns.
func runIn(t *testing.T, f func(rt *temporal.Runtime, ctx context.Context) string) string {
	t.Helper()
	env := newEnv(t, temporal.NewRegistry())
	env.RegisterWorkflowWithOptions(func(wctx workflow.Context) (string, error) {
		rt := temporal.NewRuntime(wctx)
		ctx, cancel := rt.Context()
		defer cancel()
		return f(rt, ctx), nil
	}, workflow.RegisterOptions{Name: "f"})
	env.ExecuteWorkflow("f")
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var out string
	if err := env.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

// A Timeout's context is done once its workflow timer fires: the clock
// has moved on by then, and the wait on it ends with nothing taken.
func TestRuntimeTimeoutIsAWorkflowTimer(t *testing.T) {
	got := runIn(t, func(rt *temporal.Runtime, ctx context.Context) string {
		before := rt.Now()
		tctx, cancel := rt.Timeout(ctx, time.Hour, nil)
		defer cancel()
		v := rt.Queue().Next(tctx)
		budget := errors.New("budget")
		bctx, bcancel := rt.Timeout(ctx, time.Minute, budget)
		defer bcancel()
		rt.Queue().Next(bctx)
		return fmt.Sprintf("%v %v %v %v", v, rt.Now().Sub(before) >= time.Hour, errors.Is(context.Cause(tctx), context.DeadlineExceeded),
			context.Cause(bctx) == budget)
	})
	if got != "<nil> true true true" {
		t.Fatalf("got %q, want the wait to end after an hour of workflow time, by the deadline", got)
	}
}

// A Timeout cancelled before its timer fires does not end with a deadline,
// and the run's context is untouched.
func TestRuntimeTimeoutCancelled(t *testing.T) {
	got := runIn(t, func(rt *temporal.Runtime, ctx context.Context) string {
		tctx, cancel := rt.Timeout(ctx, time.Hour, nil)
		cancel()
		return fmt.Sprintf("%v %v", context.Cause(tctx), ctx.Err())
	})
	if got != "context canceled <nil>" {
		t.Fatalf("got %q", got)
	}
}

// Fanout's calls are coroutines: they report through the queue, in the
// order they put, while the caller waits on it; a semaphore of one lets
// one of them in at a time, so each finishes before the next starts; what
// is put after Close is dropped.
func TestRuntimeFanoutQueueAndSemaphore(t *testing.T) {
	got := runIn(t, func(rt *temporal.Runtime, ctx context.Context) string {
		q, sem := rt.Queue(), rt.Semaphore(1)
		var calls []func()
		for i := range 3 {
			calls = append(calls, func() {
				if err := sem.Acquire(ctx); err != nil {
					q.Put(err.Error())
					return
				}
				q.Put(fmt.Sprintf("start %d", i))
				// Give way: another call may run now, but not get in.
				tctx, cancel := rt.Timeout(ctx, time.Minute, nil)
				rt.Queue().Next(tctx)
				cancel()
				q.Put(fmt.Sprintf("end %d", i))
				sem.Release()
			})
		}
		rt.Fanout(calls)
		var got []string
		for range 6 {
			got = append(got, fmt.Sprint(q.Next(ctx)))
		}
		q.Close()
		q.Put("late")
		tctx, cancel := rt.Timeout(ctx, time.Minute, nil)
		defer cancel()
		if v := q.Next(tctx); v != nil {
			got = append(got, fmt.Sprint(v))
		}
		return strings.Join(got, ", ")
	})
	if want := "start 0, end 0, start 1, end 1, start 2, end 2"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
