package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/runner"
)

// probeTTL is how long a lease probe may hold a thread should the server
// die between taking and releasing it.
const probeTTL = 5 * time.Second

// checkThreadFree makes sure no other process runs thread before a run of
// it is accepted: a new run would otherwise be stored and then fail on the
// thread's lease. It takes the thread's checkpoint lease for a moment and
// gives it back. A lease held by a process of this host that is gone (a
// zombie too: killed, not yet reaped by its parent) is released, so that a
// server restarted after a crash runs the thread at once; a lease of a live
// holder is a 409. s.mu is held, and no run of this server is on the thread.
func (s *Server) checkThreadFree(ctx context.Context, thread string) error {
	probe := runner.LeaseHolder()
	_, err := runner.TakeLease(ctx, s.cfg.Saver, thread, probe, time.Now(), probeTTL)
	var le *checkpoint.LeasedError
	if errors.As(err, &le) {
		return errf(http.StatusConflict, "thread %q is being run by another process (%s) until %s; wait for it to finish or for its lease to expire",
			thread, le.Holder, le.Expires.UTC().Format(time.RFC3339))
	}
	if err != nil {
		return fmt.Errorf("checking thread %q is free: %w", thread, err)
	}
	return s.cfg.Saver.Release(context.WithoutCancel(ctx), thread, probe)
}

// runElsewhere says whether another live process holds thread's checkpoint
// lease, so runs of the thread may be going on there: recovery must leave
// them alone (several servers on one database are not coordinated, but
// one starting must not cut off another's runs).
func (s *Server) runElsewhere(ctx context.Context, thread string) (bool, error) {
	// Named as runs name their holders, so that a probe a crash left
	// behind is known for a dead process's by whoever comes next.
	probe := runner.LeaseHolder()
	_, err := s.cfg.Saver.Acquire(ctx, thread, probe, time.Now(), probeTTL)
	var le *checkpoint.LeasedError
	if errors.As(err, &le) {
		return !runner.LeaseHolderGone(le.Holder), nil
	}
	if err != nil {
		return false, err
	}
	return false, s.cfg.Saver.Release(context.WithoutCancel(ctx), thread, probe)
}
