package server

import (
	"context"
	"io"
	"iter"
	"net/http"
	"time"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
)

// Executor runs a server's runs somewhere other than this process (the
// temporal module's executor runs each as a workflow on a worker fleet).
// Several servers may then share one Store and one Saver: a run started by
// one is followed, joined and cancelled through any of them, from the
// Store.
type Executor interface {
	// Execute runs one run and returns its agent events, as Config.Run
	// does; the server translates them into stream events and stores them.
	// Cancelling ctx cancels the run. The last top-level run.end event
	// carries the run's result.
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
}

// fleetPoll is how often a server that does not run a run itself reads
// the Store for its new events and its end.
var fleetPoll = 100 * time.Millisecond

// elsewhere says whether rec, a stored run this server does not run, is
// going on in another server of the fleet.
func (s *Server) elsewhere(rec RunRecord) bool {
	return s.cfg.Executor != nil && (rec.Status == runPending || rec.Status == runRunning)
}

// followStored streams a run another server of the fleet runs, reading its
// events from the Store until the run's record says it ended and every
// event is sent.
func (s *Server) followStored(w http.ResponseWriter, r *http.Request, rec RunRecord, after int64, send func([]StoredEvent) error) {
	rc := http.NewResponseController(w)
	tick := time.NewTicker(fleetPoll)
	defer tick.Stop()
	beat := time.NewTicker(s.heartbeat)
	defer beat.Stop()
	for {
		// The record is read before the events: events stored before the
		// run ended are all read after it says so.
		cur, err := s.store.GetRun(r.Context(), rec.ThreadID, rec.RunID)
		if err != nil {
			s.log.Error("reading a run", "run", rec.RunID, "err", err)
			return
		}
		ended := !s.elsewhere(cur)
		s.sendStored(r.Context(), rec.RunID, after, func(evs []StoredEvent) error {
			after = evs[len(evs)-1].Seq
			return send(evs)
		})
		if ended || r.Context().Err() != nil {
			return
		}
		select {
		case <-tick.C:
		case <-beat.C:
			if _, err := io.WriteString(w, ": heartbeat\n\n"); err != nil || rc.Flush() != nil {
				return
			}
		case <-r.Context().Done():
			return
		case <-s.ctx.Done():
			return
		}
	}
}

// awaitStored waits until a run another server of the fleet runs has
// ended, and returns its record.
func (s *Server) awaitStored(ctx context.Context, rec RunRecord) (RunRecord, error) {
	tick := time.NewTicker(fleetPoll)
	defer tick.Stop()
	for s.elsewhere(rec) {
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
// processes, none of which knows the others' numbers. Each event is one
// statement that takes the next number; a writer that lost a race for a
// number (Postgres) tries again.
func (s *SQLStore) AppendNext(ctx context.Context, runID string, evs []StoredEvent) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	q := `INSERT INTO server_events (run_id, seq, event, data)
		SELECT ?, COALESCE(MAX(seq), 0) + 1, ?, ? FROM server_events WHERE run_id = ?`
	if s.pg {
		q = `INSERT INTO server_events (run_id, seq, event, data)
		SELECT $1::text, COALESCE(MAX(seq), 0) + 1, $2::text, $3::bytea FROM server_events WHERE run_id = $4::text`
	}
	for _, e := range evs {
		var err error
		for try := 0; try < 20; try++ {
			if _, err = s.db.ExecContext(ctx, q, runID, e.Event, e.Data, runID); err == nil || ctx.Err() != nil {
				break
			}
			time.Sleep(time.Duration(try+1) * time.Millisecond)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// ErrRunCancelled is the cause with which a run's context is cancelled
// when a client cancels it (and not because the server shuts down): an
// Executor cancels the run where it runs only then.
var ErrRunCancelled = errRunCancelled
