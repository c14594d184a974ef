package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
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
	probe := probeHolder()
	_, err := s.cfg.Saver.Acquire(ctx, thread, probe, time.Now(), probeTTL)
	var le *checkpoint.LeasedError
	if errors.As(err, &le) && agent.LeaseHolderGone(le.Holder) {
		s.log.Info("releasing the lease of a process that is gone", "thread", thread, "holder", le.Holder)
		if err := s.cfg.Saver.Release(ctx, thread, le.Holder); err != nil {
			return fmt.Errorf("releasing thread %q from %s, a process that is gone: %w", thread, le.Holder, err)
		}
		_, err = s.cfg.Saver.Acquire(ctx, thread, probe, time.Now(), probeTTL)
	}
	if errors.As(err, &le) {
		return errf(http.StatusConflict, "thread %q is being run by another process (%s) until %s; wait for it to finish or for its lease to expire",
			thread, le.Holder, le.Expires.UTC().Format(time.RFC3339))
	}
	if err != nil {
		return fmt.Errorf("checking thread %q is free: %w", thread, err)
	}
	return s.cfg.Saver.Release(context.WithoutCancel(ctx), thread, probe)
}

// probeHolder names a lease probe of this process as the agent names its
// runs' holders, so that a probe left behind by a crash is recognised as a
// dead process's by whoever comes next.
func probeHolder() string { return agent.LeaseHolder() }

// runElsewhere says whether another live process holds thread's checkpoint
// lease, so runs of the thread may be going on there: recovery must leave
// them alone (several servers on one database are not coordinated, but
// one starting must not cut off another's runs).
func (s *Server) runElsewhere(ctx context.Context, thread string) (bool, error) {
	probe := probeHolder()
	_, err := s.cfg.Saver.Acquire(ctx, thread, probe, time.Now(), probeTTL)
	var le *checkpoint.LeasedError
	if errors.As(err, &le) {
		return !agent.LeaseHolderGone(le.Holder), nil
	}
	if err != nil {
		return false, err
	}
	return false, s.cfg.Saver.Release(context.WithoutCancel(ctx), thread, probe)
}
