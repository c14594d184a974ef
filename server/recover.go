package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// errNeverStarted is the error of a queued run (multitask_strategy
// enqueue) that the server stopped before its turn came.
const errNeverStarted = "the server stopped before the run started (it was queued behind another run of the thread); send it again"

// recoverTimeout bounds the recovery a new server does of its store.
const recoverTimeout = time.Minute

// unfinishedRunLister is what a Store may add so that recovery finds the
// runs a stopped server left pending or running on any thread, not only on
// threads stored busy. Both stores of this package have it.
type unfinishedRunLister interface {
	unfinishedRuns(ctx context.Context) ([]RunRecord, error)
}

// lastEventReader is what a Store may add to read a run's last event
// without reading them all.
type lastEventReader interface {
	lastEvent(ctx context.Context, runID string) (StoredEvent, bool, error)
}

// recoverStopped ends, in the store, what a server stopped during (a crash,
// a kill) left unfinished, so that every reader sees the same: each run it
// left running is marked error, with an error event at the end of its
// stream (a rejoin ends with the reason, as a live stream of a failed run
// does); each run it left queued is marked error too, saying it never
// started; each thread it left busy is marked error, so that a search by
// status finds it as GET shows it. Threads whose checkpoint lease another
// live process holds are skipped. It runs before the server serves any
// request: no run of this server is going on.
func (s *Server) recoverStopped(ctx context.Context) error {
	var runs []RunRecord
	if l, ok := s.store.(unfinishedRunLister); ok {
		var err error
		if runs, err = l.unfinishedRuns(ctx); err != nil {
			return fmt.Errorf("listing the runs left unfinished: %w", err)
		}
	}
	const pageSize = 100
	var busy []ThreadRecord
	for off := 0; ; off += pageSize {
		page, _, err := s.store.SearchThreads(ctx, ThreadQuery{Status: threadBusy, Limit: pageSize, Offset: off, SortBy: "thread_id", SortOrder: "asc"})
		if err != nil {
			return fmt.Errorf("listing the threads left busy: %w", err)
		}
		busy = append(busy, page...)
		if len(page) < pageSize {
			break
		}
	}
	if _, ok := s.store.(unfinishedRunLister); !ok {
		// Without the lister: the runs of the threads left busy.
		for _, th := range busy {
			for off := 0; ; off += pageSize {
				page, err := s.store.ListRuns(ctx, th.ID, pageSize, off)
				if err != nil {
					return fmt.Errorf("listing the runs of thread %q: %w", th.ID, err)
				}
				for _, r := range page {
					if r.Status == runPending || r.Status == runRunning {
						runs = append(runs, r)
					}
				}
				if len(page) < pageSize {
					break
				}
			}
		}
	}
	var errs []error
	// Threads another live process holds are left alone: their runs may
	// be going on there.
	elsewhere := map[string]bool{}
	held := func(thread string) bool {
		v, ok := elsewhere[thread]
		if !ok {
			var err error
			if v, err = s.runElsewhere(ctx, thread); err != nil {
				errs = append(errs, fmt.Errorf("thread %q: %w", thread, err))
				v = true // unknown: do not touch it
			}
			elsewhere[thread] = v
		}
		return v
	}
	for _, r := range runs {
		if held(r.ThreadID) {
			continue
		}
		if err := s.failStopped(ctx, r); err != nil {
			errs = append(errs, fmt.Errorf("run %s: %w", r.RunID, err))
		}
	}
	for _, th := range busy {
		if held(th.ID) {
			continue
		}
		th.Status, th.Error, th.UpdatedAt = threadError, errOrphan, now()
		if err := s.store.UpdateThread(ctx, th); err != nil && !errors.Is(err, ErrNotFound) {
			errs = append(errs, fmt.Errorf("thread %q: %w", th.ID, err))
		}
	}
	if len(runs)+len(busy) > 0 {
		s.log.Info("recovered what a stopped server left unfinished", "runs", len(runs), "threads", len(busy))
	}
	return errors.Join(errs...)
}

// failStopped marks a run a stopped server left pending or running as
// failed: first its error event, then its record, so that whoever reads
// the record as failed finds the event.
func (s *Server) failStopped(ctx context.Context, r RunRecord) error {
	msg := errOrphan
	if r.Status == runPending {
		msg = errNeverStarted
	}
	last, found, err := s.lastStoredEvent(ctx, r.RunID)
	if err != nil {
		return err
	}
	if !found || last.Event != "error" {
		data, err := json.Marshal(map[string]string{"error": "RunError", "message": msg})
		if err != nil {
			return err
		}
		if err := s.store.AppendEvents(ctx, r.RunID, []StoredEvent{{Seq: last.Seq + 1, Event: "error", Data: data}}); err != nil {
			return err
		}
	}
	r.Status, r.Error, r.UpdatedAt = runError, msg, now()
	return s.store.PutRun(ctx, r)
}

// lastStoredEvent reads a run's last stored event; found is false when it
// has none.
func (s *Server) lastStoredEvent(ctx context.Context, runID string) (ev StoredEvent, found bool, err error) {
	if l, ok := s.store.(lastEventReader); ok {
		return l.lastEvent(ctx, runID)
	}
	evs, err := s.store.Events(ctx, runID, 0)
	if err != nil || len(evs) == 0 {
		return StoredEvent{}, false, err
	}
	return evs[len(evs)-1], true, nil
}
