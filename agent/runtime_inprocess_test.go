package agent_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/deepagents-go/deepagents/agent"
)

// The in-process queue keeps the order of what is put, hands over what is
// waiting even once the context is done, waits for a Put otherwise, and
// frees a Put waiting on a full queue when it is closed.
func TestInProcessQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := agent.Sequential(time.Time{}).Queue()
		q.Put(1)
		q.Put(2)
		done, cancel := context.WithCancel(t.Context())
		cancel()
		if a, b, c := q.Next(done), q.Next(done), q.Next(done); a != 1 || b != 2 || c != nil {
			t.Fatalf("took %v, %v, %v from a done context; want 1, 2, nil", a, b, c)
		}
		go q.Put(3)
		if v := q.Next(t.Context()); v != 3 {
			t.Fatalf("waited for %v, want 3", v)
		}
		// Fill the queue up: the Put that waits is freed by Close.
		for n := 0; ; n++ {
			put := make(chan struct{})
			go func() {
				q.Put(n)
				close(put)
			}()
			synctest.Wait()
			select {
			case <-put:
				continue
			default:
			}
			if n == 0 {
				t.Fatal("the first Put into an empty queue waits")
			}
			q.Close()
			<-put
			q.Put("after close") // returns at once
			return
		}
	})
}

// A semaphore lets n in; one more waits until a place is given back, or
// gives up with the context's cause.
func TestInProcessSemaphore(t *testing.T) {
	rt := agent.Sequential(time.Time{})
	s := rt.Semaphore(2)
	for range 2 {
		if err := s.Acquire(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	cause := errors.New("gave up")
	ctx, cancel := context.WithCancelCause(t.Context())
	cancel(cause)
	if err := s.Acquire(ctx); !errors.Is(err, cause) {
		t.Fatalf("a third holder on a done context: %v, want its cause", err)
	}
	got := make(chan error)
	go func() { got <- s.Acquire(t.Context()) }()
	s.Release()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}

// A timer's context is done once its time has passed, with the cause it
// was given, or when it is cancelled, and not before.
func TestInProcessTimeout(t *testing.T) {
	rt := agent.Sequential(time.Time{})
	budget := errors.New("the budget ran out")
	ctx, stop := rt.Timeout(t.Context(), time.Millisecond, budget)
	defer stop()
	<-ctx.Done()
	if cause := context.Cause(ctx); cause != budget {
		t.Errorf("cause %v, want the one given", cause)
	}
	plain, stopPlain := rt.Timeout(t.Context(), time.Millisecond, nil)
	defer stopPlain()
	<-plain.Done()
	if cause := context.Cause(plain); cause != context.DeadlineExceeded {
		t.Errorf("cause %v, want context.DeadlineExceeded", cause)
	}
	long, stopLong := rt.Timeout(t.Context(), time.Hour, nil)
	if long.Err() != nil {
		t.Fatalf("an hour's timer is done at once: %v", long.Err())
	}
	stopLong()
	if long.Err() == nil {
		t.Fatal("a cancelled timer's context is not done")
	}
}
