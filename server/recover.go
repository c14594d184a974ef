package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
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
// status finds it as GET shows it. A thread whose saved state waits for
// decisions is marked interrupted instead, and a running run that saved
// that interrupt (the checkpoint is newer than the run) interrupted too:
// the server stopped after the interrupt was saved, before it marked them.
// Likewise a running run that saved its end well (an agent does so before
// it sends its last response) is marked success, and its thread idle.
// Threads whose checkpoint lease another live process holds are skipped.
// It runs before the server serves any request: no run of this server is
// going on.
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
	// A thread's saved state says whether its calls wait for decisions (the
	// server stopped after the interrupt was saved, before it marked the
	// run: interrupted, not failed, as a resume answers its calls) or how
	// its last run ended.
	states := map[string]savedState{}
	stateOf := func(thread string) savedState {
		w, ok := states[thread]
		if !ok {
			var err error
			if w, err = s.stoppedState(ctx, thread); err != nil {
				errs = append(errs, fmt.Errorf("thread %q: reading its state: %w", thread, err))
			}
			states[thread] = w
		}
		return w
	}
	finished := map[string]bool{} // threads whose stopped run had ended well
	orphaned := map[string]bool{} // threads with a run marked failed here
	for _, r := range runs {
		if held(r.ThreadID) {
			continue
		}
		w := stateOf(r.ThreadID)
		saved := r.Status == runRunning && !w.at.IsZero() && !w.at.Before(r.CreatedAt)
		var err error
		switch {
		case saved && w.waiting:
			// The run saved the interrupt: it ended as it would have.
			r.Status, r.UpdatedAt = runInterrupted, now()
			err = s.store.PutRun(ctx, r)
		case saved && w.ended == agent.StatusOK:
			// The run saved its end (which it does before it sends its
			// last response): it ended as it would have.
			r.Status, r.UpdatedAt = runSuccess, now()
			err = s.store.PutRun(ctx, r)
			finished[r.ThreadID] = true
		default:
			err = s.failStopped(ctx, r, w.waiting)
			orphaned[r.ThreadID] = true
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("run %s: %w", r.RunID, err))
		}
	}
	for _, th := range busy {
		if held(th.ID) {
			continue
		}
		th.Status, th.Error, th.UpdatedAt = threadError, errOrphan, now()
		switch w := stateOf(th.ID); {
		case w.waiting:
			th.Status, th.Error = threadInterrupted, ""
		case finished[th.ID] || !orphaned[th.ID] && w.ended == agent.StatusOK:
			// Its run ended well: found here, or marked so before the
			// server stopped (the run's record and the thread's are two
			// writes).
			th.Status, th.Error = threadIdle, ""
		}
		if err := s.store.UpdateThread(ctx, th); err != nil && !errors.Is(err, ErrNotFound) {
			errs = append(errs, fmt.Errorf("thread %q: %w", th.ID, err))
		}
	}
	if len(runs)+len(busy) > 0 {
		s.log.Info("recovered what a stopped server left unfinished", "runs", len(runs), "threads", len(busy))
	}
	return errors.Join(errs...)
}

// savedState is whether a thread's saved state waits for decisions, or
// how its last run ended, and the time of the checkpoint that says so.
type savedState struct {
	waiting bool
	ended   agent.Status // the saved end of the thread's last run, if any
	at      time.Time
}

// stoppedState reads whether thread's saved state has calls waiting for
// a decision, or has its last run's end, and since when.
func (s *Server) stoppedState(ctx context.Context, thread string) (savedState, error) {
	rs, err := s.loadState(ctx, thread)
	if err != nil || rs == nil {
		return savedState{}, err
	}
	w := savedState{waiting: rs.Status == agent.StatusInterrupted && len(rs.Loop.Interrupts) > 0}
	if !w.waiting {
		if rs.Status == "" || rs.Status == agent.StatusInterrupted {
			return savedState{}, nil // cut off: nothing saved says how it ended
		}
		w.ended = rs.Status
	}
	cp, err := s.cfg.Saver.Get(ctx, checkpoint.Ref{ThreadID: thread, ID: rs.StepID})
	if err != nil {
		// What the state says holds all the same; when is unknown.
		return w, err
	}
	w.at = cp.Time
	return w, nil
}

// errOrphanWaiting is errOrphan for a run whose thread waits for decisions
// saved before the run was cut off (by the run before it, or by it before
// the time it was created says).
const errOrphanWaiting = "the server stopped while the run was going on; the thread still waits for decisions on its calls: resume it, or send it a new message"

// failStopped marks a run a stopped server left pending or running as
// failed: first its error event, then its record, so that whoever reads
// the record as failed finds the event. waiting says the thread's calls
// wait for decisions, which the error then says.
func (s *Server) failStopped(ctx context.Context, r RunRecord, waiting bool) error {
	msg := errOrphan
	if waiting {
		msg = errOrphanWaiting
	}
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
