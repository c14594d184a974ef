package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/runner"
)

// Executor runs a server's runs somewhere other than this process (the
// temporal module's executor runs each as a workflow on a worker fleet).
// Several servers may then share one Store and one Saver: a run started by
// one is followed, joined and cancelled through any of them, from the
// Store.
type Executor interface {
	// Execute runs one run and returns its agent events, as Config.Run
	// does; the server translates them into stream events and stores them.
	// The last top-level run.end event carries the run's result.
	//
	// ctx is cancelled for two reasons, told apart by its cause
	// (context.Cause): a cause that wraps ErrRunCancelled (a client
	// cancelled the run) must cancel the run where it runs; any other (this
	// server shuts down, or another server took the run's lease) must only
	// stop following it: the run goes on, and the sequence ends without a
	// result, for another server to adopt (Execute again, with
	// ExecRun.Adopted).
	Execute(ctx context.Context, run ExecRun) iter.Seq2[agent.Event, error]
	// Cancel stops a run that another server started.
	Cancel(ctx context.Context, thread, runID string) error
}

// ExecRun is one run an Executor runs.
type ExecRun struct {
	Thread string
	RunID  string
	// Assistant is the name of the agent (its graph id), Agent the agent.
	Assistant string
	Agent     *agent.Agent
	// Input is the new turn's messages; empty with Decisions (a resume of
	// the calls the thread waits on) or without (a run cut off continues).
	Input     []llm.Message
	Decisions []agent.Decision
	// Adopted is set for a run another server started and stopped
	// following: it goes on where it runs, and is followed from now on.
	Adopted bool
	// Resumed is set for an adopted run whose reading position was
	// stored: Start is where the first server's reading of it began and
	// Read where the events stored so far were made up to (positions in
	// the Executor's own terms, as given to Mark). The Executor yields the
	// run's events from Start on again: the server rebuilds its stream's
	// state from those up to Read, sends none of them again, and numbers
	// the ones after on from the events stored, so the stream has no hole.
	Resumed     bool
	Start, Read int64
	// Mark, when set, is called by the Executor, in the goroutine that
	// ranges over Execute's events, once it has yielded every event up to
	// position pos (first where it starts reading, then increasing): the
	// server stores, with the run, the last position whose events are
	// stored, for a server that adopts the run.
	Mark func(pos int64)
}

// fleetPoll is how often a server that does not run a run itself reads
// the Store for its new events and its end.
var fleetPoll = 100 * time.Millisecond

// elsewhere says whether rec, a stored run this server does not run, is
// going on in another server of the fleet.
func (s *Server) elsewhere(rec RunRecord) bool {
	return s.cfg.Executor != nil && (rec.Status == runPending || rec.Status == runRunning)
}

// adoptEvery is how many polls of a run another server runs pass between
// two checks that its server still runs it.
const adoptEvery = 10

// checkFleetFree refuses a run of a thread whose latest run another server
// of the fleet runs (the thread's lease is taken by the run's workflow a
// moment after the run is accepted; queues are each server's own). A
// pending run no server is going to start is marked failed instead (see
// retirePending). s.mu is held, and no run of this server is on the thread.
func (s *Server) checkFleetFree(ctx context.Context, thread string) error {
	if s.cfg.Executor == nil {
		return nil
	}
	runs, err := s.store.ListRuns(ctx, thread, 1, 0)
	if err != nil {
		return err
	}
	if len(runs) == 1 && s.live[runs[0].RunID] == nil && s.elsewhere(runs[0]) && !s.retirePending(ctx, runs[0]) {
		return errf(http.StatusConflict, "thread %q is busy with run %s on another server of the fleet; wait for it to end, or cancel it", thread, runs[0].RunID)
	}
	return nil
}

// retireFleetRun cancels, in a fleet, the thread's latest run where it
// still waits for decisions (its workflow stays open for them), as its
// thread goes.
func (s *Server) retireFleetRun(ctx context.Context, thread string) {
	if s.cfg.Executor == nil {
		return
	}
	runs, err := s.store.ListRuns(ctx, thread, 1, 0)
	if err != nil || len(runs) == 0 || runs[0].Status != runInterrupted {
		return
	}
	if err := s.cfg.Executor.Cancel(ctx, thread, runs[0].RunID); err != nil {
		s.log.Warn("cancelling the run a deleted thread waited in", "thread", thread, "run", runs[0].RunID, "err", err)
	}
}

// followStored streams a run another server of the fleet runs, reading its
// events from the Store until the run's record says it ended and every
// event is sent. When the run's server has stopped, this one adopts the
// run and returns it, to be followed live after *after. due pushes the
// stream's write deadline back, before each heartbeat as send does before
// each write of events.
func (s *Server) followStored(w http.ResponseWriter, r *http.Request, rec RunRecord, after *int64, due func(), send func([]StoredEvent) error) *liveRun {
	rc := http.NewResponseController(w)
	tick := time.NewTicker(fleetPoll)
	defer tick.Stop()
	beat := time.NewTicker(s.heartbeat)
	defer beat.Stop()
	for polls := 0; ; polls++ {
		// The record is read before the events: events stored before the
		// run ended are all read after it says so.
		cur, err := s.store.GetRun(r.Context(), rec.ThreadID, rec.RunID)
		if err != nil {
			s.log.Error("reading a run", "run", rec.RunID, "err", err)
			return nil
		}
		ended := !s.elsewhere(cur)
		failed := false
		s.sendStored(r.Context(), rec.RunID, *after, func(evs []StoredEvent) error {
			*after = evs[len(evs)-1].Seq
			err := send(evs)
			failed = err != nil
			return err
		})
		if ended || failed || r.Context().Err() != nil {
			return nil
		}
		if polls%adoptEvery == adoptEvery-1 {
			if lr := s.adopt(r.Context(), cur); lr != nil {
				return lr
			}
		}
		select {
		case <-tick.C:
		case <-beat.C:
			due()
			if _, err := io.WriteString(w, ": heartbeat\n\n"); err != nil || rc.Flush() != nil {
				return nil
			}
		case <-r.Context().Done():
			return nil
		case <-s.ctx.Done():
			return nil
		}
	}
}

// stored waits until every event lr has emitted is stored: another server
// of the fleet streaming the run reads them all once its record says it
// ended.
func (s *Server) stored(lr *liveRun) {
	for {
		lr.mu.Lock()
		all := lr.persisted >= int64(len(lr.events))
		lr.mu.Unlock()
		if all {
			return
		}
		lr.poke()
		time.Sleep(2 * time.Millisecond)
	}
}

// awaitStored waits until a run another server of the fleet runs has
// ended (adopting it if its server stopped), and returns its record.
func (s *Server) awaitStored(ctx context.Context, rec RunRecord) (RunRecord, error) {
	tick := time.NewTicker(fleetPoll)
	defer tick.Stop()
	for polls := 0; s.elsewhere(rec); polls++ {
		if polls%adoptEvery == adoptEvery-1 {
			if lr := s.adopt(ctx, rec); lr != nil {
				select {
				case <-lr.finished:
				case <-ctx.Done():
					return rec, ctx.Err()
				}
			}
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return rec, ctx.Err()
		case <-s.ctx.Done():
			return rec, errf(http.StatusServiceUnavailable, "the server is shutting down")
		}
		var err error
		if rec, err = s.store.GetRun(ctx, rec.ThreadID, rec.RunID); err != nil {
			return rec, err
		}
	}
	return rec, nil
}

// AppendNext stores evs after the run's last event, numbering them itself
// (their Seq is ignored): for several writers of one log, in several
// processes, none of which knows the others' numbers.
func (m *MemoryStore) AppendNext(_ context.Context, runID string, evs []StoredEvent) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range evs {
		e.Seq = int64(len(m.events[runID])) + 1
		m.events[runID] = append(m.events[runID], e)
	}
	return nil
}

// AppendNext stores evs after the run's last event, numbering them itself
// (their Seq is ignored): for several writers of one log, in several
// processes, none of which knows the others' numbers. The batch is one
// transaction, whose events each take the next number: a writer that lost
// a race for a number (a unique-key conflict in PostgreSQL, a busy
// database in SQLite) tries the whole batch again, a few times, as long as
// ctx lasts. Any other error is returned at once. A failure stores none of
// the batch, except when the commit itself fails to answer (a lost
// connection): the batch may then be stored, and the caller cannot tell.
func (s *SQLStore) AppendNext(ctx context.Context, runID string, evs []StoredEvent) error {
	if len(evs) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	q := `INSERT INTO server_events (run_id, seq, event, data)
		SELECT ?, COALESCE(MAX(seq), 0) + 1, ?, ? FROM server_events WHERE run_id = ?`
	if s.pg {
		q = `INSERT INTO server_events (run_id, seq, event, data)
		SELECT $1::text, COALESCE(MAX(seq), 0) + 1, $2::text, $3::bytea FROM server_events WHERE run_id = $4::text`
	}
	for try := 1; ; try++ {
		err := s.appendNextOnce(ctx, q, runID, evs)
		if err == nil || try == appendNextTries || !lostNumberRace(err) {
			return err
		}
		pause := time.NewTimer(time.Duration(try) * time.Millisecond)
		select {
		case <-ctx.Done():
			pause.Stop()
			return fmt.Errorf("%w (after: %w)", ctx.Err(), err)
		case <-pause.C:
		}
	}
}

// appendNextTries is how many times AppendNext tries a batch that lost the
// race for its numbers.
const appendNextTries = 20

// appendNextOnce stores evs in one transaction, each with the next number.
func (s *SQLStore) appendNextOnce(ctx context.Context, q, runID string, evs []StoredEvent) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, e := range evs {
		if _, err := tx.ExecContext(ctx, q, runID, e.Event, e.Data, runID); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// lostNumberRace says whether err is a writer's loss of a race for an
// event's number: PostgreSQL's unique violation (SQLSTATE 23505), or
// SQLite's (SQLITE_CONSTRAINT_PRIMARYKEY, _UNIQUE) or its busy database
// (SQLITE_BUSY, with any extended code).
func lostNumberRace(err error) bool {
	var pg interface{ SQLState() string }
	if errors.As(err, &pg) {
		return pg.SQLState() == "23505"
	}
	var lite interface{ Code() int }
	if errors.As(err, &lite) {
		c := lite.Code()
		return c == 1555 || c == 2067 || c&0xff == 5
	}
	return false
}

// ErrRunCancelled is the cause with which a run's context is cancelled
// when a client cancels it (and not because the server shuts down): an
// Executor cancels the run where it runs only then.
var ErrRunCancelled = errRunCancelled

// A fleet's server holds a lease (in the Saver, under runKey) on each run
// it runs, renewed while it runs and released when it ends or the server
// stops: another server of the fleet that finds a run going on whose lease
// is free (its server stopped, or died and the lease expired) adopts it,
// and streams the rest of it from where the stored events stop.

// runLeaseTTL is how long a run's lease outlives a server that died.
var runLeaseTTL = 30 * time.Second

// runKey is the lease key of a fleet's run.
func runKey(runID string) string { return "deepagents-serve-run:" + runID }

// runInfoLog is the event log key under which a fleet's server stores how
// a run is streamed, for the server that may adopt it.
func runInfoLog(runID string) string { return "deepagents-serve-run-info:" + runID }

// RunInputLog is the key of the event log in which an Executor may keep a
// run's input messages, one event each, for the workers to read where the
// run runs (so that no message has to travel in the run's start request).
// Deleting the thread deletes it.
func RunInputLog(runID string) string { return "deepagents-serve-run-input:" + runID }

// ThreadLog is the key of the event log an Executor keeps in the Store for
// a thread's runs (the temporal module's workers publish their agent events
// there). Deleting the thread deletes it, as it does the logs of the
// thread's runs. (The name is the temporal module's, kept for the logs
// already stored.)
func ThreadLog(thread string) string { return "temporal-thread:" + thread }

// runInfo is how a run is streamed.
type runInfo struct {
	Modes     []string `json:"modes"`
	Subgraphs bool     `json:"subgraphs,omitempty"`
}

// holdRun takes lr's lease for this server and renews it until the
// returned func stops renewing it and, with release, lets it go (without,
// another hold of this server keeps it). Should another server take it,
// the run is let go here (see loseRun). A fleet's server takes it as it
// accepts the run, before the run is stored: a pending run whose lease is
// free is not going to start (see retirePending). A lease another holder
// has is refused, and the run is not to start.
func (s *Server) holdRun(lr *liveRun) (stop func(release bool), err error) {
	l := checkpoint.Leaser(s.cfg.Saver)
	key := runKey(lr.rec.RunID)
	call := func(f func(ctx context.Context) error) error {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
		return f(ctx)
	}
	if err := call(func(ctx context.Context) error {
		_, err := runner.TakeLease(ctx, l, key, s.holder, time.Now(), runLeaseTTL)
		return err
	}); err != nil {
		return nil, fmt.Errorf("taking the lease of run %s: %w", lr.rec.RunID, err)
	}
	stopped := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(runLeaseTTL / 3)
		defer t.Stop()
		for {
			select {
			case <-stopped:
				return
			case <-t.C:
				err := call(func(ctx context.Context) error {
					_, err := l.Renew(ctx, key, s.holder, time.Now(), runLeaseTTL)
					return err
				})
				switch {
				case errors.Is(err, checkpoint.ErrNotHeld) || errors.Is(err, checkpoint.ErrLeased):
					// Another server took it (this one could not renew
					// it in time): the run is that one's now. Not waited
					// for here: stop waits for this goroutine under s.mu.
					go s.loseRun(lr, err)
					return
				case err != nil:
					s.log.Error("renewing a run's lease", "run", lr.rec.RunID, "err", err)
				}
			}
		}
	}()
	var once sync.Once
	return func(release bool) {
		once.Do(func() {
			close(stopped)
			<-done
			if !release {
				return
			}
			if err := call(func(ctx context.Context) error { return l.Release(ctx, key, s.holder) }); err != nil {
				s.log.Error("releasing a run's lease", "run", lr.rec.RunID, "err", err)
			}
		})
	}, nil
}

// errLeaseLost is the cause with which a fleet's run is cancelled here
// when another server took its lease: this server stops following it, as
// when it shuts down, and leaves its record to that one.
var errLeaseLost = errors.New("another server of the fleet took the run's lease")

// loseRun lets go of a run whose lease another server took: a running run
// is cancelled with errLeaseLost (execute returns without finishing its
// record), a queued one is dropped without a record.
func (s *Server) loseRun(lr *liveRun, err error) {
	s.log.Error("a run's lease was lost; this server stops following it", "run", lr.rec.RunID, "err", err)
	s.mu.Lock()
	defer s.mu.Unlock()
	if lr.cancel != nil {
		lr.cancel(fmt.Errorf("%w: %v", errLeaseLost, err))
		return
	}
	q := s.queue[lr.rec.ThreadID]
	i := slices.Index(q, lr)
	if i < 0 {
		return // abandoned, or never accepted
	}
	s.queue[lr.rec.ThreadID] = slices.Delete(q, i, i+1)
	if len(s.queue[lr.rec.ThreadID]) == 0 {
		delete(s.queue, lr.rec.ThreadID)
	}
	delete(s.live, lr.rec.RunID)
	lr.mu.Lock()
	lr.done = true
	lr.notifyLocked()
	lr.mu.Unlock()
	close(lr.finished)
}

// retirePending marks failed, as never started, a pending run of the fleet
// that no server is going to start: its lease (taken before it was stored,
// held until it ends) is free, and it was stored more than runLeaseTTL ago
// (a server that predates the lease at acceptance had started it by then).
// It says whether it did. rec does not run here.
func (s *Server) retirePending(ctx context.Context, rec RunRecord) bool {
	if s.cfg.Executor == nil || rec.Status != runPending || time.Since(rec.UpdatedAt) < runLeaseTTL {
		return false
	}
	key := runKey(rec.RunID)
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if _, err := runner.TakeLease(ctx, s.cfg.Saver, key, s.holder, time.Now(), runLeaseTTL); err != nil {
		return false // its server holds it (or the saver cannot say)
	}
	defer func() {
		rctx, rcancel := context.WithTimeout(context.Background(), callTimeout)
		defer rcancel()
		_ = s.cfg.Saver.Release(rctx, key, s.holder)
	}()
	// Read again under the lease: it may have started, or ended, since.
	cur, err := s.store.GetRun(ctx, rec.ThreadID, rec.RunID)
	if err != nil || cur.Status != runPending {
		return false
	}
	w, _ := s.stoppedState(ctx, cur.ThreadID)
	if err := s.failStopped(ctx, cur, w.waiting); err != nil {
		s.log.Error("marking failed a run no server started", "run", cur.RunID, "err", err)
		return false
	}
	s.log.Info("a run no server started is marked failed", "run", cur.RunID, "thread", cur.ThreadID)
	// The thread is as the run before it left it, unless another run came
	// since.
	if runs, err := s.store.ListRuns(ctx, cur.ThreadID, 1, 0); err == nil && len(runs) == 1 && runs[0].RunID == cur.RunID {
		if th, err := s.store.GetThread(ctx, cur.ThreadID); err == nil && th.Status == threadBusy {
			th.Status, th.Error, th.UpdatedAt = threadError, errNeverStarted, now()
			switch {
			case w.waiting:
				th.Status, th.Error = threadInterrupted, ""
			case w.ended == agent.StatusOK:
				th.Status, th.Error = threadIdle, ""
			}
			_ = s.store.UpdateThread(ctx, th)
		}
	}
	return true
}

// saveRunInfo stores how lr is streamed, for a server that adopts it.
func (s *Server) saveRunInfo(lr *liveRun) {
	info := runInfo{Subgraphs: lr.subgraphs}
	for m := range lr.modes {
		info.Modes = append(info.Modes, m)
	}
	b, _ := json.Marshal(info)
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	if err := s.store.AppendEvents(ctx, runInfoLog(lr.rec.RunID), []StoredEvent{{Seq: 1, Event: "run", Data: b}}); err != nil {
		s.log.Error("storing how a run is streamed", "run", lr.rec.RunID, "err", err)
	}
}

// adopt starts following here a run going on in the fleet whose server
// stopped: it takes the run's lease (refused while its server holds it),
// and runs it (the Executor follows the run where it is) after the events
// stored so far. A pending run no server is going to start is marked
// failed (see retirePending). It returns nil when the run is not this
// server's to adopt.
func (s *Server) adopt(ctx context.Context, rec RunRecord) *liveRun {
	if s.cfg.Executor == nil || rec.Status != runRunning && rec.Status != runPending {
		return nil
	}
	s.mu.Lock()
	lr := s.live[rec.RunID]
	s.mu.Unlock()
	if lr != nil {
		return lr
	}
	if rec.Status == runPending {
		s.retirePending(ctx, rec)
		return nil
	}
	asst, err := s.assistant(rec.AssistantID)
	if err != nil {
		return nil
	}
	// The lease and the stored events are read without s.mu held (a
	// database's time); another stream of this server may adopt the run
	// meanwhile, under the same lease.
	lr = &liveRun{rec: rec, asst: asst, modes: map[string]bool{"values": true}, adopted: true,
		finished: make(chan struct{}), wake: make(chan struct{}, 1), persister: make(chan struct{})}
	hold, err := s.holdRun(lr)
	if err != nil {
		return nil // its server holds it (or the saver cannot say)
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if evs, err := s.store.Events(ctx, runInfoLog(rec.RunID), 0); err == nil && len(evs) > 0 {
		var info runInfo
		if json.Unmarshal(evs[0].Data, &info) == nil && len(info.Modes) > 0 {
			lr.modes, lr.subgraphs = map[string]bool{}, info.Subgraphs
			for _, m := range info.Modes {
				lr.modes[m] = true
			}
		}
	}
	lr.read = s.loadRead(ctx, rec.RunID)
	evs, err := s.store.Events(ctx, rec.RunID, 0)
	if lr.read != nil && lr.read.count < int64(len(evs)) {
		// Events stored after the position were made from what is read
		// again after it: made again, they are numbered as before.
		evs = evs[:lr.read.count]
	}
	s.mu.Lock()
	if cur := s.live[rec.RunID]; cur != nil {
		s.mu.Unlock()
		// Adopted by another stream of this server, under the same lease:
		// this hold stops renewing, and leaves the lease to that one.
		hold(false)
		return cur
	}
	if err != nil || s.ctx.Err() != nil || s.active[rec.ThreadID] != nil {
		s.mu.Unlock()
		hold(true)
		return nil
	}
	s.log.Info("adopting a run whose server stopped", "run", rec.RunID, "thread", rec.ThreadID, "events", len(evs))
	lr.events, lr.persisted, lr.hold = evs, int64(len(evs)), hold
	s.live[rec.RunID] = lr
	s.start(lr)
	s.mu.Unlock()
	return lr
}

// adoptStopped adopts the runs going on in the fleet whose servers have
// stopped: a server does so when it starts.
func (s *Server) adoptStopped() {
	l, ok := s.store.(unfinishedRunLister)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, recoverTimeout)
	defer cancel()
	runs, err := l.unfinishedRuns(ctx)
	if err != nil {
		s.log.Error("listing the fleet's runs going on", "err", err)
		return
	}
	for _, r := range runs {
		s.adopt(ctx, r)
	}
}

// LastEvent returns a log's last event; ok is false when it has none.
func (m *MemoryStore) LastEvent(ctx context.Context, runID string) (ev StoredEvent, ok bool, err error) {
	return m.lastEvent(ctx, runID)
}

// LastEvent returns a log's last event; ok is false when it has none.
func (s *SQLStore) LastEvent(ctx context.Context, runID string) (ev StoredEvent, ok bool, err error) {
	return s.lastEvent(ctx, runID)
}
