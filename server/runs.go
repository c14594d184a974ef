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
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/approve"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/runner"
)

// Run statuses.
const (
	runPending     = "pending"
	runRunning     = "running"
	runSuccess     = "success"
	runError       = "error"
	runInterrupted = "interrupted"
)

// errRunCancelled is the cause of a run stopped by the cancel endpoint.
var errRunCancelled = errors.New("the run was cancelled")

// liveRun is a run this process has accepted and not yet finished: its
// events so far (also in the Store) and the streams that follow it, woken
// when more of them are stored.
type liveRun struct {
	rec       RunRecord
	asst      *assistant
	input     []llm.Message
	decisions []agent.Decision
	modes     map[string]bool
	subgraphs bool
	cancel    context.CancelCauseFunc // set once started
	cancelled bool                    // cancel was asked before it started
	adopted   bool                    // started by a server of the fleet that stopped
	// hold stops renewing the run's lease in a fleet, and releases it
	// with true (see holdRun); nil without an Executor.
	hold func(release bool)
	// cancelOnDisconnect: on_disconnect "cancel" — the run stops when its
	// creating stream's client goes away.
	cancelOnDisconnect bool
	// read is how far a fleet's Executor has read the run (fleetread.go).
	read *readProgress
	// approvalMode is the mode the run's config asks for ("": the
	// thread's; modes.go).
	approvalMode approve.Mode

	mu     sync.Mutex
	events []StoredEvent // events[i].Seq == i+1
	// persisted counts the events stored: only those are sent, so that a
	// client never sees an event a restarted server would not have.
	persisted int64
	// subs are the streams following the run: each gets a token when
	// persisted grows or the run ends (a channel per stream, not one made
	// and closed per event).
	subs      []chan struct{}
	done      bool
	closing   bool          // the run has emitted its last event
	wake      chan struct{} // tells the persister there are new events
	persister chan struct{} // closed when the persister has stored all
	finished  chan struct{}
}

// rejects says whether the run's decisions reject the call callID of the
// agent at path.
func (lr *liveRun) rejects(path, callID string) bool {
	for _, d := range lr.decisions {
		if d.Type == agent.Reject && d.CallID == callID && (len(d.Path) == 0 || d.Path.String() == path) {
			return true
		}
	}
	return false
}

// subscribe registers a stream: its channel gets a token at each change
// after the call; cancel removes it.
func (lr *liveRun) subscribe() (changed <-chan struct{}, cancel func()) {
	c := make(chan struct{}, 1)
	lr.mu.Lock()
	lr.subs = append(lr.subs, c)
	lr.mu.Unlock()
	return c, func() {
		lr.mu.Lock()
		defer lr.mu.Unlock()
		if i := slices.Index(lr.subs, c); i >= 0 {
			lr.subs = slices.Delete(lr.subs, i, i+1)
		}
	}
}

// notifyLocked gives every stream a token (one pending is enough); lr.mu
// is held.
func (lr *liveRun) notifyLocked() {
	for _, c := range lr.subs {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

func (lr *liveRun) snapshot(after int64) (evs []StoredEvent, done bool) {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	if after < 0 {
		after = 0
	}
	if after < lr.persisted {
		evs = lr.events[after:lr.persisted]
	}
	return evs, lr.done
}

// knownModes are the stream modes served; "messages" is taken as
// "messages-tuple".
var knownModes = []string{"values", "updates", "messages-tuple", "messages", "custom"}

// unservedModes are LangGraph stream modes that clients may ask for along
// with others; they are accepted and send nothing.
var unservedModes = []string{"events", "debug", "tasks", "checkpoints"}

func parseModes(raw json.RawMessage) (map[string]bool, error) {
	var list []string
	if len(raw) > 0 && string(raw) != "null" {
		var one string
		if err := json.Unmarshal(raw, &one); err == nil {
			list = []string{one}
		} else if err := json.Unmarshal(raw, &list); err != nil {
			return nil, fmt.Errorf("stream_mode must be a string or a list of strings")
		}
	}
	if len(list) == 0 {
		list = []string{"values"}
	}
	modes := map[string]bool{}
	for _, m := range list {
		if slices.Contains(unservedModes, m) {
			continue
		}
		if !slices.Contains(knownModes, m) {
			return nil, fmt.Errorf("stream_mode %q is not served; use values, updates, messages-tuple or custom", m)
		}
		if m == "messages" {
			m = "messages-tuple"
		}
		modes[m] = true
	}
	return modes, nil
}

// submit validates a run request and queues or starts the run.
func (s *Server) submit(r *http.Request) (*liveRun, error) {
	var req RunCreate
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	ctx := r.Context()
	threadID := r.PathValue("thread")
	if req.AssistantID == "" {
		return nil, errf(http.StatusUnprocessableEntity, "assistant_id is required")
	}
	asst, err := s.assistant(req.AssistantID)
	if err != nil {
		return nil, err
	}
	modes, err := parseModes(req.StreamMode)
	if err != nil {
		return nil, errf(http.StatusUnprocessableEntity, "%v", err)
	}
	approvalMode, err := s.runMode(req.Config)
	if err != nil {
		return nil, err
	}
	input, err := parseInput(req.Input)
	if err != nil {
		return nil, errf(http.StatusUnprocessableEntity, "%v", err)
	}
	if req.Command != nil && len(req.Command.unsupported) > 0 {
		return nil, errf(http.StatusUnprocessableEntity, "command %s: not supported; the only command field served is resume (the decisions for the calls an interrupted thread waits on)",
			strings.Join(req.Command.unsupported, ", "))
	}
	var decisions []agent.Decision
	resume := req.Command != nil && len(req.Command.Resume) > 0 && string(req.Command.Resume) != "null"
	if resume {
		// Input and a resume are refused together: a resume answers the
		// calls waiting now, input starts a new turn that drops them.
		if len(input) > 0 {
			return nil, errf(http.StatusUnprocessableEntity, "send either input messages or command.resume decisions, not both: a resume answers the calls an interrupted thread waits on, input starts a new turn")
		}
		th, err := s.store.GetThread(ctx, threadID)
		if errors.Is(err, ErrNotFound) {
			return nil, errf(http.StatusNotFound, "thread %q not found", threadID)
		}
		if err != nil {
			return nil, err
		}
		if err := s.idleHere(threadID, false); err != nil {
			return nil, err
		}
		rs, err := s.loadState(ctx, threadID)
		if err != nil {
			return nil, err
		}
		if rs == nil || rs.Status != agent.StatusInterrupted || len(rs.Loop.Interrupts) == 0 {
			status := th.Status
			if status == threadBusy {
				// Busy with a run this server does not run (see current).
				status = threadError
			}
			return nil, errf(http.StatusUnprocessableEntity, "thread %q is not interrupted (its status is %s): command.resume answers calls waiting for approval, and none are; send input messages to continue the thread", threadID, status)
		}
		decisions, err = parseResume(req.Command.Resume, rs.Loop.Interrupts, rs.StepID)
		if err != nil {
			return nil, errf(http.StatusUnprocessableEntity, "%v", err)
		}
		if err := asst.Spec.Agent.CheckDecisions(decisions, rs.Loop.Interrupts); err != nil {
			return nil, errf(http.StatusUnprocessableEntity, "%v", err)
		}
	}
	if resume && len(decisions) == 0 {
		return nil, errf(http.StatusUnprocessableEntity, "command.resume has no decisions; send one decision per waiting call")
	}
	// No input and no command continues the thread's unfinished run.
	continuing := len(input) == 0 && len(decisions) == 0
	if continuing {
		if err := s.checkContinue(ctx, threadID, req.IfNotExists); err != nil {
			return nil, err
		}
	}
	strategy := req.MultitaskStrategy
	switch strategy {
	case "":
		strategy = "reject"
	case "reject", "enqueue", "interrupt", "rollback":
	default:
		return nil, errf(http.StatusUnprocessableEntity, "multitask_strategy %q is not one of reject, enqueue, interrupt, rollback", strategy)
	}
	switch req.OnDisconnect {
	case "", "continue", "cancel":
	default:
		return nil, errf(http.StatusUnprocessableEntity, "on_disconnect %q is not one of continue, cancel", req.OnDisconnect)
	}
	switch req.IfNotExists {
	case "", "reject", "create":
	default:
		return nil, errf(http.StatusUnprocessableEntity, "if_not_exists %q is not one of reject, create", req.IfNotExists)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx.Err() != nil {
		return nil, errf(http.StatusServiceUnavailable, "the server is shutting down")
	}
	if s.deleting[threadID] {
		return nil, errf(http.StatusConflict, "thread %q is being deleted", threadID)
	}
	th, err := s.store.GetThread(ctx, threadID)
	missing := errors.Is(err, ErrNotFound)
	if missing && req.IfNotExists != "create" {
		return nil, errf(http.StatusNotFound, "thread %q not found", threadID)
	}
	if err != nil && !missing {
		return nil, err
	}
	active := s.active[threadID]
	if len(decisions) > 0 || continuing {
		// Checked again under s.mu: a run may have started since.
		if err := s.idleHereLocked(threadID, continuing); err != nil {
			return nil, err
		}
	}
	if active != nil && strategy == "reject" {
		return nil, errf(http.StatusUnprocessableEntity, "thread %q is busy with run %s; wait for it, cancel it, or send multitask_strategy enqueue", threadID, active.rec.RunID)
	}
	if active == nil {
		// Another process may run the thread (or a dead one hold it).
		if err := s.checkThreadFree(ctx, threadID); err != nil {
			return nil, err
		}
		if err := s.checkFleetFree(ctx, threadID); err != nil {
			return nil, err
		}
	}
	if missing {
		t := now()
		th = ThreadRecord{ID: threadID, CreatedAt: t, UpdatedAt: t, Metadata: map[string]any{}, Status: threadIdle}
		if err := s.store.CreateThread(ctx, th); err != nil {
			return nil, err
		}
	}
	t := now()
	meta := req.Metadata
	if meta == nil {
		meta = map[string]any{}
	}
	lr := &liveRun{
		rec: RunRecord{Run: Run{RunID: uuid.NewString(), ThreadID: threadID, AssistantID: asst.ID, CreatedAt: t, UpdatedAt: t,
			Status: runPending, Metadata: meta, MultitaskStrategy: strategy}},
		asst: asst, input: input, cancelOnDisconnect: req.OnDisconnect == "cancel", decisions: decisions, modes: modes, subgraphs: req.StreamSubgraphs, approvalMode: approvalMode,
		finished: make(chan struct{}),
		wake:     make(chan struct{}, 1), persister: make(chan struct{}),
	}
	if s.cfg.Executor != nil {
		// Taken before the run is stored, held until it ends: while it
		// is held, the fleet takes the run for this server's (see
		// retirePending).
		if lr.hold, err = s.holdRun(lr); err != nil {
			return nil, err
		}
	}
	if err := s.putNewRun(ctx, lr, th); err != nil {
		if lr.hold != nil {
			lr.hold(true)
		}
		return nil, err
	}
	s.live[lr.rec.RunID] = lr
	switch {
	case active == nil:
		s.start(lr)
	case strategy == "interrupt" || strategy == "rollback":
		s.queue[threadID] = append([]*liveRun{lr}, s.queue[threadID]...)
		active.cancel(fmt.Errorf("%w: run %s replaced it", errRunCancelled, lr.rec.RunID))
	default:
		s.queue[threadID] = append(s.queue[threadID], lr)
	}
	return lr, nil
}

// putNewRun stores a run just accepted, and its thread as busy with it.
func (s *Server) putNewRun(ctx context.Context, lr *liveRun, th ThreadRecord) error {
	t := lr.rec.CreatedAt
	asst := lr.asst
	if err := s.store.PutRun(ctx, lr.rec); err != nil {
		return err
	}
	th.Status = threadBusy
	th.UpdatedAt = t
	if th.Metadata == nil {
		th.Metadata = map[string]any{}
	}
	th.Metadata["graph_id"] = asst.Spec.Name
	th.Metadata["assistant_id"] = asst.ID
	return s.store.UpdateThread(ctx, th)
}

// idleHere refuses a resume (or, continuing, a run without input) on a
// thread with a run going on or queued here, whatever the
// multitask_strategy: a running thread has no calls waiting, and its run
// is not cut off.
func (s *Server) idleHere(thread string, continuing bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.idleHereLocked(thread, continuing)
}

// idleHereLocked is idleHere with s.mu held.
func (s *Server) idleHereLocked(thread string, continuing bool) error {
	a := s.active[thread]
	switch {
	case a == nil:
		return nil
	case continuing:
		return errf(http.StatusConflict, "thread %q is busy with run %s; a run without input continues a run that was cut off, and this one is going on: wait for it to end, or send input messages", thread, a.rec.RunID)
	}
	return errf(http.StatusConflict, "thread %q is busy with run %s; a resume answers the calls an interrupted thread waits on: wait for the run to end (or cancel it), then resume if it stopped for approval", thread, a.rec.RunID)
}

// checkContinue refuses a run without input or command on a thread with
// nothing to continue: no checkpoint, a last run that ended, or calls that
// wait for decisions (those take command.resume). A run cut off by a stop
// of the server, or cancelled, is continued from its last checkpoint.
func (s *Server) checkContinue(ctx context.Context, thread, ifNotExists string) error {
	_, err := s.store.GetThread(ctx, thread)
	switch {
	case errors.Is(err, ErrNotFound) && ifNotExists != "create":
		return errf(http.StatusNotFound, "thread %q not found", thread)
	case errors.Is(err, ErrNotFound):
		return errf(http.StatusUnprocessableEntity, "thread %q is new, so it has no run to continue; send input messages", thread)
	case err != nil:
		return err
	}
	if err := s.idleHere(thread, true); err != nil {
		return err
	}
	rs, err := s.loadState(ctx, thread)
	switch {
	case err != nil:
		return err
	case rs == nil:
		return errf(http.StatusUnprocessableEntity, "thread %q has no run to continue (it has no checkpoint yet); send input messages", thread)
	case rs.Status == agent.StatusInterrupted && len(rs.Loop.Interrupts) > 0:
		return errf(http.StatusUnprocessableEntity, "thread %q waits for decisions on %d %s (%s): send them as command.resume, or send input messages to move on",
			thread, len(rs.Loop.Interrupts), plural(len(rs.Loop.Interrupts), "call", "calls"), agent.WaitingNames(rs.Loop.Interrupts))
	case rs.Status != "" && rs.Status != agent.StatusInterrupted:
		return errf(http.StatusUnprocessableEntity, "thread %q has no run to continue: its last run ended with status %s; send input messages", thread, rs.Status)
	}
	return nil
}

// start runs lr in the background; s.mu is held.
func (s *Server) start(lr *liveRun) {
	s.active[lr.rec.ThreadID] = lr
	ctx, cancel := context.WithCancelCause(s.ctx)
	lr.cancel = cancel
	if s.mem != nil {
		// Events go to memory as they are emitted: no persister.
		close(lr.persister)
	} else {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.persist(lr)
		}()
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer cancel(nil)
		s.execute(ctx, lr)
	}()
}

// finish records lr's end, once its events are stored, and starts the
// thread's next queued run.
func (s *Server) finish(lr *liveRun) {
	lr.mu.Lock()
	lr.closing = true
	lr.mu.Unlock()
	lr.poke()
	<-lr.persister
	if lr.hold != nil {
		// Let go once the run's events are stored (and its record, unless
		// this server stops): a server that adopts it reads them all.
		lr.hold(true)
	}
	// The thread is let go before anyone hears the run is over: a client
	// that reads the run's last event and at once sends the next request
	// (a resume, say) finds the thread free (or busy with the next queued
	// run), never still busy with this one. Whoever waits on finished sees
	// the same.
	defer close(lr.finished)
	defer func() {
		lr.mu.Lock()
		lr.done = true
		lr.notifyLocked()
		lr.mu.Unlock()
	}()
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.live, lr.rec.RunID)
	thread := lr.rec.ThreadID
	if s.active[thread] == lr {
		delete(s.active, thread)
	}
	for len(s.queue[thread]) > 0 && s.active[thread] == nil {
		next := s.queue[thread][0]
		s.queue[thread] = s.queue[thread][1:]
		if next.cancelled || s.ctx.Err() != nil {
			s.abandon(next)
			continue
		}
		s.start(next)
	}
	if len(s.queue[thread]) == 0 {
		delete(s.queue, thread)
	}
}

// abandon ends a queued run that never started; s.mu is held.
func (s *Server) abandon(lr *liveRun) {
	lr.rec.Status = runInterrupted
	lr.rec.UpdatedAt = now()
	lr.rec.CancelReason = "cancelled before it started"
	_ = s.store.PutRun(context.Background(), lr.rec)
	if hold := lr.hold; hold != nil {
		// Not under s.mu: the saver's time.
		s.wg.Go(func() { hold(true) })
	}
	delete(s.live, lr.rec.RunID)
	lr.mu.Lock()
	lr.done = true
	lr.notifyLocked()
	lr.mu.Unlock()
	close(lr.finished)
}

// emit numbers one event of lr and hands it to the persister; streams
// send it once it is stored. The run does not wait for the database (but
// stores it itself in a MemoryStore).
func (s *Server) emit(lr *liveRun, event string, data any) {
	b, err := json.Marshal(data)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"error": "encoding the event: " + err.Error()})
	}
	lr.mu.Lock()
	lr.events = append(lr.events, StoredEvent{Seq: int64(len(lr.events)) + 1, Event: event, Data: b})
	if s.mem != nil {
		// A MemoryStore never blocks: the event is stored and published
		// here, without a hand-off to a persister goroutine.
		_ = s.mem.AppendEvents(context.Background(), lr.rec.RunID, lr.events[lr.persisted:])
		lr.persisted = int64(len(lr.events))
		lr.notifyLocked()
		lr.mu.Unlock()
		return
	}
	lr.mu.Unlock()
	lr.poke()
}

func (lr *liveRun) poke() {
	select {
	case lr.wake <- struct{}{}:
	default:
	}
}

// persist stores lr's events in order, as many at a time as have come,
// and wakes the streams after each write, until the run has ended and all
// are stored.
func (s *Server) persist(lr *liveRun) {
	defer close(lr.persister)
	for {
		lr.mu.Lock()
		batch := lr.events[lr.persisted:]
		closing := lr.closing
		lr.mu.Unlock()
		if len(batch) == 0 {
			s.saveRead(lr)
			if closing {
				return
			}
			<-lr.wake
			continue
		}
		if err := s.appendEvents(lr.rec.RunID, batch); err != nil {
			// The events are still sent: a client should not stall on a
			// database error, though a rejoin after a restart may miss them.
			s.log.Error("storing run events", "run", lr.rec.RunID, "events", len(batch), "err", err)
		}
		lr.mu.Lock()
		lr.persisted += int64(len(batch))
		lr.notifyLocked()
		lr.mu.Unlock()
		s.saveRead(lr)
	}
}

// appendRetries are the pauses before each further try of a batch of
// events the store failed to take (a database busy for a moment, a dropped
// connection).
var appendRetries = []time.Duration{20 * time.Millisecond, 100 * time.Millisecond, 500 * time.Millisecond}

// appendEvents stores a batch of a run's events, trying again after a
// pause when the store fails: a batch can be stored twice (events are keyed
// by run and number), so a failure that passes loses nothing.
func (s *Server) appendEvents(runID string, batch []StoredEvent) error {
	err := s.store.AppendEvents(context.Background(), runID, batch)
	for _, pause := range appendRetries {
		if err == nil {
			return nil
		}
		s.log.Warn("storing run events failed; trying again", "run", runID, "in", pause, "err", err)
		time.Sleep(pause)
		err = s.store.AppendEvents(context.Background(), runID, batch)
	}
	return err
}

// execute runs lr to its end, translating its events.
func (s *Server) execute(ctx context.Context, lr *liveRun) {
	defer s.finish(lr)
	if s.cfg.Executor != nil && !lr.adopted {
		s.saveRunInfo(lr)
	}
	bg := context.Background()
	s.update(lr, func(r *RunRecord) { r.Status = runRunning })
	s.mu.Lock()
	if th, err := s.store.GetThread(bg, lr.rec.ThreadID); err == nil && th.Status != threadBusy {
		// A queued run starts after the one before set the thread's status.
		th.Status, th.Error, th.UpdatedAt = threadBusy, "", now()
		_ = s.store.UpdateThread(bg, th)
	}
	s.mu.Unlock()
	if !lr.adopted {
		s.emit(lr, "metadata", map[string]any{"run_id": lr.rec.RunID, "thread_id": lr.rec.ThreadID, "attempt": 1})
	}
	tr, err := s.newTranslator(bg, lr)
	if err == nil {
		ctx, err = s.withMode(ctx, lr)
	}
	var res *agent.Result
	var runErr error
	if err == nil {
		opts := []agent.RunOption{runner.Checkpoints(s.cfg.Saver, lr.rec.ThreadID)}
		if len(lr.decisions) > 0 {
			opts = append(opts, agent.WithDecisions(lr.decisions...))
		}
		var events iter.Seq2[agent.Event, error]
		if ex := s.cfg.Executor; ex != nil {
			events = ex.Execute(ctx, s.execRun(lr, tr))
		} else {
			events = s.cfg.Run(ctx, lr.rec.ThreadID, lr.asst.Spec.Agent, agent.Input{Messages: lr.input}, opts...)
		}
		for ev, e := range events {
			if e != nil {
				runErr = e
			}
			if ev.Type == "" {
				continue
			}
			tr.handle(ev)
			if ev.Type == agent.RunEnd && !tr.nested(ev) && ev.Run != nil && ev.Run.Result != nil {
				res = ev.Run.Result
			}
		}
	} else {
		runErr = err
	}
	if s.cfg.Executor != nil && (res == nil && s.ctx.Err() != nil && !errors.Is(context.Cause(ctx), errRunCancelled) ||
		errors.Is(context.Cause(ctx), errLeaseLost)) {
		// This server stops; the run goes on in the fleet, stored running,
		// for another server to adopt once its lease is let go. Or another
		// server took its lease: the run, and its record, are that one's.
		return
	}
	status, threadStatus, msg := runSuccess, threadIdle, ""
	switch {
	case res != nil && res.Status == agent.StatusOK:
	case res != nil && res.Status == agent.StatusInterrupted:
		status, threadStatus = runInterrupted, threadInterrupted
	case errors.Is(context.Cause(ctx), errRunCancelled) || res != nil && res.Status == agent.StatusCancelled:
		status, msg = runInterrupted, "cancelled"
		if c := context.Cause(ctx); c != nil {
			msg = c.Error()
		}
	default:
		status, threadStatus = runError, threadError
		if runErr != nil {
			msg = runErr.Error()
		} else if res != nil {
			msg = res.Error
		}
	}
	if tr != nil {
		tr.final(res)
	}
	if status == runError {
		s.emit(lr, "error", map[string]string{"error": "RunError", "message": msg})
	}
	if s.cfg.Executor != nil {
		// Other servers stream the run until its record says it ended.
		s.stored(lr)
	}
	s.update(lr, func(r *RunRecord) {
		r.Status = status
		if status == runInterrupted && msg != "" {
			r.CancelReason = msg
		}
		if status == runError {
			r.Error = msg
		}
	})
	s.mu.Lock()
	if th, err := s.store.GetThread(bg, lr.rec.ThreadID); err == nil {
		th.Status = threadStatus
		s.noteMode(lr.rec.ThreadID, th.Metadata)
		th.Error = ""
		if threadStatus == threadError {
			th.Error = msg
		}
		th.UpdatedAt = now()
		_ = s.store.UpdateThread(bg, th)
	}
	s.mu.Unlock()
}

// update changes lr's record and stores it.
func (s *Server) update(lr *liveRun, change func(*RunRecord)) {
	s.mu.Lock()
	change(&lr.rec)
	lr.rec.UpdatedAt = now()
	rec := lr.rec
	s.mu.Unlock()
	if err := s.store.PutRun(context.Background(), rec); err != nil {
		s.log.Error("saving a run", "run", rec.RunID, "err", err)
	}
}

// lookup finds a run of the request's thread: live first, then stored.
func (s *Server) lookup(r *http.Request) (*liveRun, RunRecord, error) {
	thread, runID := r.PathValue("thread"), r.PathValue("run")
	s.mu.Lock()
	lr := s.live[runID]
	var live RunRecord
	if lr != nil {
		live = lr.rec
	}
	s.mu.Unlock()
	if lr != nil && live.ThreadID == thread {
		return lr, live, nil
	}
	rec, err := s.store.GetRun(r.Context(), thread, runID)
	if errors.Is(err, ErrNotFound) {
		return nil, rec, errf(http.StatusNotFound, "run %q of thread %q not found", runID, thread)
	}
	return nil, s.current(rec), err
}

func (s *Server) createRun(w http.ResponseWriter, r *http.Request) {
	lr, err := s.submit(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	s.mu.Lock()
	rec := lr.rec.Run
	s.mu.Unlock()
	w.Header().Set("Content-Location", runPath(rec.ThreadID, rec.RunID))
	writeJSON(w, 200, rec)
}

func runPath(thread, run string) string { return "/threads/" + thread + "/runs/" + run }

func (s *Server) streamRun(w http.ResponseWriter, r *http.Request) {
	release, ok := s.streamSlot(w)
	if !ok {
		return // refused before the run is made: nothing runs
	}
	defer release()
	lr, err := s.submit(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	w.Header().Set("Content-Location", runPath(lr.rec.ThreadID, lr.rec.RunID))
	w.Header().Set("Location", runPath(lr.rec.ThreadID, lr.rec.RunID)+"/stream")
	s.follow(w, r, lr, lr.rec.RunID, 0, nil)
	if lr.cancelOnDisconnect && r.Context().Err() != nil {
		s.cancelLive(lr, fmt.Errorf("%w: the client disconnected", errRunCancelled))
	}
}

// defaultHeartbeat is how often a quiet stream gets a comment line.
const defaultHeartbeat = 10 * time.Second

// defaultStreamWriteTimeout is how long one write of a stream may wait for
// its client when Config.StreamWriteTimeout is 0.
const defaultStreamWriteTimeout = time.Minute

// lastEventID reads the Last-Event-ID header: the stream continues after
// that event (all events when it is absent, -1 or not a number).
func lastEventID(r *http.Request) int64 {
	v := r.Header.Get("Last-Event-ID")
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

func (s *Server) joinStream(w http.ResponseWriter, r *http.Request) {
	release, ok := s.streamSlot(w)
	if !ok {
		return
	}
	defer release()
	lr, rec, err := s.lookup(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	w.Header().Set("Content-Location", runPath(rec.ThreadID, rec.RunID))
	w.Header().Set("Location", runPath(rec.ThreadID, rec.RunID)+"/stream")
	var only map[string]bool
	// An empty stream_mode (the Python client sends "stream_mode=" when
	// none is given) is no narrowing: the run's own modes.
	q := slices.DeleteFunc(r.URL.Query()["stream_mode"], func(m string) bool { return strings.TrimSpace(m) == "" })
	if len(q) > 0 {
		// A join may narrow the run's modes; events of other modes are
		// skipped (their ids still count).
		raw, _ := json.Marshal(q)
		modes, err := parseModes(raw)
		if err != nil {
			s.fail(w, errf(http.StatusUnprocessableEntity, "%v", err))
			return
		}
		only = modes
	}
	s.follow(w, r, lr, rec.RunID, lastEventID(r), only)
}

// eventsPage is how many stored events a stream of a finished run reads
// at a time.
var eventsPage = 1000

// sendStored sends a finished run's stored events after seq `after`, a
// page at a time when the store can (a long run's events need not fit in
// memory at once, nor in one query's time).
func (s *Server) sendStored(ctx context.Context, runID string, after int64, send func([]StoredEvent) error) {
	pager, paged := s.store.(EventPager)
	for {
		var evs []StoredEvent
		var err error
		if paged {
			evs, err = pager.EventsPage(ctx, runID, after, eventsPage)
		} else {
			evs, err = s.store.Events(ctx, runID, after)
		}
		if err != nil {
			s.log.Error("reading run events", "run", runID, "err", err)
			return
		}
		if len(evs) > 0 && send(evs) != nil {
			return
		}
		if !paged || len(evs) < eventsPage || ctx.Err() != nil {
			return
		}
		after = evs[len(evs)-1].Seq
	}
}

// follow writes a run's events after seq `after` as server-sent events,
// flushing whenever it has written those ready, until the run ends, the
// client leaves or the server shuts down.
func (s *Server) follow(w http.ResponseWriter, r *http.Request, lr *liveRun, runID string, after int64, only map[string]bool) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	rc := http.NewResponseController(w)
	// Every write must be taken within the timeout: a client that stops
	// reading would otherwise hold the stream, its slot and this goroutine
	// for as long as its connection stays open. The deadline is cleared at
	// the end, for the connection's next request.
	wait := s.cfg.StreamWriteTimeout
	if wait == 0 {
		wait = defaultStreamWriteTimeout
	}
	due := func() {
		if wait > 0 {
			_ = rc.SetWriteDeadline(time.Now().Add(wait))
		}
	}
	if wait > 0 {
		defer rc.SetWriteDeadline(time.Time{})
	}
	due()
	w.WriteHeader(http.StatusOK)
	_ = rc.Flush()
	// The events ready are written together and flushed once: none waits
	// for a later one, and a stream that fell behind catches up in few
	// writes.
	var buf []byte
	send := func(evs []StoredEvent) error {
		buf = buf[:0]
		wrote := false
		for i, ev := range evs {
			if only == nil || wanted(ev.Event, only) {
				buf = appendEvent(buf, ev)
			}
			if len(buf) == 0 || len(buf) < sendChunk && i < len(evs)-1 {
				continue
			}
			due()
			if _, err := w.Write(buf); err != nil {
				return err
			}
			buf, wrote = buf[:0], true
		}
		if cap(buf) > 4*sendChunk {
			buf = nil // one large event: do not keep its buffer
		}
		if !wrote {
			return nil
		}
		return rc.Flush()
	}
	if lr == nil && s.cfg.Executor == nil {
		s.sendStored(r.Context(), runID, after, send)
		return
	}
	if lr == nil {
		rec, err := s.store.GetRun(r.Context(), r.PathValue("thread"), runID)
		if err != nil || !s.elsewhere(rec) {
			s.sendStored(r.Context(), runID, after, send)
			return
		}
		// Another server of the fleet runs it (until this one adopts it).
		if lr = s.followStored(w, r, rec, &after, due, send); lr == nil {
			return
		}
	}
	// A comment line now and then keeps proxies from closing a quiet
	// stream (a long model call) and tells clients it is alive.
	beat := time.NewTicker(s.heartbeat)
	defer beat.Stop()
	changed, unsubscribe := lr.subscribe()
	defer unsubscribe()
	for {
		evs, done := lr.snapshot(after)
		if len(evs) > 0 {
			if send(evs) != nil {
				return
			}
			after = evs[len(evs)-1].Seq
		}
		if done {
			if len(evs) == 0 {
				return
			}
			continue
		}
		select {
		case <-changed:
		case <-beat.C:
			due()
			if _, err := io.WriteString(w, ": heartbeat\n\n"); err != nil || rc.Flush() != nil {
				return
			}
		case <-r.Context().Done():
			return
		case <-s.ctx.Done():
			// Shutdown: send what is there, then end the stream.
			evs, _ := lr.snapshot(after)
			_ = send(evs)
			return
		}
	}
}

// wanted says whether an event belongs to one of modes; metadata and
// error events always do.
func wanted(event string, modes map[string]bool) bool {
	base, _, _ := strings.Cut(event, "|")
	switch base {
	case "metadata", "error":
		return true
	case "messages":
		return modes["messages-tuple"]
	}
	return modes[base]
}

// sendChunk is how many bytes of events a stream gathers before it writes
// them out.
const sendChunk = 64 << 10

// appendEvent appends ev to b as one server-sent event.
func appendEvent(b []byte, ev StoredEvent) []byte {
	b = append(b, "event: "...)
	b = append(b, ev.Event...)
	b = append(b, "\ndata: "...)
	b = append(b, ev.Data...)
	b = append(b, "\nid: "...)
	b = strconv.AppendInt(b, ev.Seq, 10)
	return append(b, "\n\n"...)
}

// result is the final values of a finished run's thread, with its
// interrupts under "__interrupt__", as /runs/wait and /join return them.
func (s *Server) result(ctx context.Context, thread string) (map[string]any, error) {
	rs, err := s.loadState(ctx, thread)
	if err != nil || rs == nil {
		return map[string]any{}, err
	}
	v := values(rs)
	if in := interruptsOf(rs); len(in) > 0 {
		v["__interrupt__"] = in
	}
	return v, nil
}

func (s *Server) waitRun(w http.ResponseWriter, r *http.Request) {
	lr, err := s.submit(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	w.Header().Set("Content-Location", runPath(lr.rec.ThreadID, lr.rec.RunID))
	select {
	case <-lr.finished:
	case <-r.Context().Done():
		return
	}
	s.writeResult(w, r, lr.rec.ThreadID, lr.rec.RunID)
}

func (s *Server) writeResult(w http.ResponseWriter, r *http.Request, thread, runID string) {
	rec, err := s.store.GetRun(r.Context(), thread, runID)
	if err != nil {
		s.fail(w, err)
		return
	}
	rec = s.current(rec)
	if rec.Status == runError {
		writeJSON(w, 200, map[string]string{"__error__": rec.Error})
		return
	}
	v, err := s.result(r.Context(), thread)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, 200, v)
}

func (s *Server) joinRun(w http.ResponseWriter, r *http.Request) {
	lr, rec, err := s.lookup(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	if lr != nil {
		select {
		case <-lr.finished:
		case <-r.Context().Done():
			return
		case <-s.ctx.Done():
			s.fail(w, errf(http.StatusServiceUnavailable, "the server is shutting down"))
			return
		}
	} else if rec, err = s.awaitStored(r.Context(), rec); err != nil {
		s.fail(w, err)
		return
	}
	s.writeResult(w, r, rec.ThreadID, rec.RunID)
}

func (s *Server) listRuns(w http.ResponseWriter, r *http.Request) {
	if _, err := s.thread(r); err != nil {
		s.fail(w, err)
		return
	}
	q := r.URL.Query()
	l, err := queryInt(q, "limit")
	if err != nil {
		s.fail(w, err)
		return
	}
	o, err := queryInt(q, "offset")
	if err != nil {
		s.fail(w, err)
		return
	}
	limit, offset := 10, 0
	if o != nil {
		offset = *o
	}
	if err := checkPage(l, offset); err != nil {
		s.fail(w, err)
		return
	}
	if l != nil {
		limit = min(*l, maxRunsList)
	}
	recs, err := s.store.ListRuns(r.Context(), r.PathValue("thread"), limit, offset)
	if err != nil {
		s.fail(w, err)
		return
	}
	out := []Run{}
	for _, rec := range recs {
		out = append(out, s.current(rec).Run)
	}
	writeJSON(w, 200, out)
}

// maxRunsList caps the runs of one list; a larger limit returns this many.
const maxRunsList = 1000

// current is the freshest record of a run: the live one when it runs here.
// A stored run that says it is pending or running but does not run here was
// cut off by a stop of the server: it is reported as an error.
func (s *Server) current(rec RunRecord) RunRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	if lr := s.live[rec.RunID]; lr != nil {
		return lr.rec
	}
	if s.elsewhere(rec) {
		return rec
	}
	switch rec.Status {
	case runPending:
		rec.Status, rec.Error = runError, errNeverStarted
	case runRunning:
		rec.Status, rec.Error = runError, errOrphan
	}
	return rec
}

// errOrphan is the error of a run the server stopped during.
// A resume is refused: nothing waits for a decision (see recoverStopped
// for a thread that does); a run without input continues the cut-off run,
// a new message starts a new turn.
const errOrphan = "the server stopped while the run was going on; create a run without input to continue it from its last checkpoint, or send the thread a new message"

func (s *Server) getRun(w http.ResponseWriter, r *http.Request) {
	_, rec, err := s.lookup(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, 200, s.current(rec).Run)
}

// cancelRun is POST …/runs/{run}/cancel. action is interrupt (the
// default) or rollback; both stop the run, which ends interrupted, and
// rollback removes nothing (its run and checkpoints are kept). Any other
// action is refused.
func (s *Server) cancelRun(w http.ResponseWriter, r *http.Request) {
	switch a := r.URL.Query().Get("action"); a {
	case "", "interrupt", "rollback":
	default:
		s.fail(w, errf(http.StatusUnprocessableEntity, "action %q is not one of interrupt, rollback", a))
		return
	}
	lr, rec, err := s.lookup(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	if lr == nil && s.elsewhere(rec) {
		// Run by another server of the fleet.
		if err := s.cfg.Executor.Cancel(r.Context(), rec.ThreadID, rec.RunID); err != nil {
			s.fail(w, err)
			return
		}
		if wait := r.URL.Query().Get("wait"); wait == "1" || wait == "true" {
			if _, err := s.awaitStored(r.Context(), rec); err != nil {
				if r.Context().Err() == nil {
					s.fail(w, err) // a store error, or this server stops
				}
				return
			}
		}
	}
	if lr == nil {
		// Finished, or cut off by a stop of the server: nothing to stop.
		w.WriteHeader(http.StatusAccepted)
		return
	}
	s.cancelLive(lr, errRunCancelled)
	if r.URL.Query().Get("wait") == "1" || r.URL.Query().Get("wait") == "true" {
		select {
		case <-lr.finished:
		case <-r.Context().Done():
			return
		}
	}
	w.WriteHeader(http.StatusAccepted)
}

// cancelLive stops a running run, or drops a queued one.
func (s *Server) cancelLive(lr *liveRun, cause error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if lr.cancel != nil {
		lr.cancel(cause)
	} else if !lr.cancelled {
		lr.cancelled = true
		q := s.queue[lr.rec.ThreadID]
		if i := slices.Index(q, lr); i >= 0 {
			s.queue[lr.rec.ThreadID] = slices.Delete(q, i, i+1)
			s.abandon(lr)
		}
	}
}

// cancelThreadRuns cancels every run of a thread, running or queued.
func (s *Server) cancelThreadRuns(thread, reason string) {
	s.mu.Lock()
	var wait []*liveRun
	if a := s.active[thread]; a != nil {
		a.cancel(fmt.Errorf("%w: %s", errRunCancelled, reason))
		wait = append(wait, a)
	}
	for _, q := range s.queue[thread] {
		q.cancelled = true
	}
	s.mu.Unlock()
	for _, lr := range wait {
		<-lr.finished
	}
}

func (s *Server) lockThread(string) func() {
	s.mu.Lock()
	return s.mu.Unlock
}
