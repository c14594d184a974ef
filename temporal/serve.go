package temporal

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net"
	"net/http"
	"reflect"
	"slices"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	sdktemporal "go.temporal.io/sdk/temporal"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/server"
)

// This file puts the server in front of a fleet: an Executor runs each of
// the server's runs as a RunAgent workflow on its thread, and feeds the
// server the agent events the fleet's workers publish (events.go), which
// the server translates into its streams and stores as it does in process.

// ExecutorOptions configure an Executor.
type ExecutorOptions struct {
	// Client is a client of the fleet's namespace, made with
	// DataConverter. Required.
	Client client.Client
	// TaskQueue is the workers' task queue ("deepagents" when empty).
	TaskQueue string
	// Store is the server store the servers and the workers' Events share
	// (server.OpenSQLStore on the same database). Required.
	Store server.Store
	// Poll is how often a run's published events and its workflow's
	// waiting calls are read (100 ms when 0).
	Poll time.Duration
}

// Executor is a server.Executor that runs runs as RunAgent workflows. Every
// server of a fleet has one, on the same namespace, task queue and store;
// every worker has a Registry with the same agents under the servers'
// assistant names, Registry.Store on the servers' checkpoint database and
// Registry.Events on their server store (StoreEvents).
type Executor struct {
	c     client.Client
	queue string
	store server.Store
	poll  time.Duration
}

// NewExecutor checks o and returns the executor.
func NewExecutor(o ExecutorOptions) (*Executor, error) {
	if o.Client == nil || o.Store == nil {
		return nil, errors.New("temporal executor: a client and a server store are required")
	}
	x := &Executor{c: o.Client, queue: o.TaskQueue, store: o.Store, poll: o.Poll}
	if x.queue == "" {
		x.queue = "deepagents"
	}
	if x.poll <= 0 {
		x.poll = 100 * time.Millisecond
	}
	return x, nil
}

// callTimeout bounds each call to the Temporal service.
const callTimeout = 30 * time.Second

// Execute implements server.Executor: it starts the run's workflow (or,
// with decisions, sends them to the workflow that waits for them) and
// yields the events the workers publish for the thread until the workflow
// ends or waits for decisions. Cancelling ctx with the server's
// ErrRunCancelled cancels the workflow; a server that shuts down leaves it
// running.
func (x *Executor) Execute(ctx context.Context, run server.ExecRun) iter.Seq2[agent.Event, error] {
	return func(yield func(agent.Event, error) bool) {
		res, err := x.execute(ctx, run, yield)
		if err != nil {
			yield(agent.Event{}, err)
			return
		}
		if res != nil {
			yield(agent.Event{Type: agent.RunEnd, Agent: agent.RootPath(run.Agent.Name()),
				Run: &agent.RunInfo{Status: res.Status, Error: res.Error, Rounds: res.Rounds, Usage: res.Usage, Result: res}}, nil)
		}
	}
}

// pendingEvery is how many reads of a run's events pass between two
// queries of its workflow's waiting calls while none of its calls was seen
// waiting.
const pendingEvery = 20

// attemptKey names one model call of a workflow's run.
type attemptKey struct {
	workflow, path string
	round          int
}

// ended is what a workflow's end says of its run.
type ended struct {
	sum *Summary
	err error
}

func (x *Executor) execute(ctx context.Context, run server.ExecRun, yield func(agent.Event, error) bool) (*agent.Result, error) {
	var err error
	log := ThreadLog(run.Thread)
	var after int64
	if run.Resumed {
		// Read again from where the first server began: the server
		// rebuilds the stream's state from what it sent, and sends the
		// rest, published while no server followed the run.
		after = run.Start
	} else if after, err = x.logEnd(ctx, log); err != nil {
		return nil, err
	}
	mark := func(pos int64) {
		if run.Mark != nil {
			run.Mark(pos)
		}
	}
	mark(after)
	var id string
	var before []agent.Interrupt // the calls waiting before the run
	if run.Adopted {
		// Its workflow goes on (or has ended).
		if id = x.workflowOf(ctx, run.Thread, run.RunID); id == "" {
			return nil, fmt.Errorf("no workflow of run %s of thread %q is found on task queue %s", run.RunID, run.Thread, x.queue)
		}
	} else if len(run.Decisions) > 0 {
		if id, before, err = x.decide(ctx, run); err != nil {
			return nil, err
		}
	} else {
		in := RunInput{Agent: run.Assistant, Thread: run.Thread}
		if text, ok := oneText(run.Input); ok {
			// One user message of text goes in the start request, as it
			// always did: a worker older than InputRef runs it too.
			in.Input = text
		} else if len(run.Input) > 0 {
			// Other messages go through the store, not the start request.
			if err := x.storeInput(ctx, run.RunID, run.Input); err != nil {
				return nil, err
			}
			in.InputRef = run.RunID
		}
		x.retire(ctx, run)
		id = WorkflowID(run.Thread, run.RunID)
		if err := x.start(ctx, id, in); err != nil {
			return nil, err
		}
	}
	// The wait for the workflow's end stops when the run does: a run that
	// ends waiting for decisions leaves its workflow open.
	wctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	done := make(chan ended, 1)
	go func() {
		var s Summary
		err := x.c.GetWorkflow(wctx, id, "").Get(wctx, &s)
		done <- ended{&s, err}
	}()
	attempts := map[attemptKey]int{} // the latest attempt of each model call
	// waits is set once a call of the run waits for a decision: the
	// workflow's pending query is asked from then on (and once every
	// pendingEvery ticks besides).
	waits := run.Adopted || len(run.Decisions) > 0
	// drain yields the events published since the last read.
	drain := func() bool {
		evs, err := x.store.Events(context.WithoutCancel(ctx), log, after)
		if err != nil {
			return true // read again at the next tick
		}
		for seq, e := range decodeEvents(evs) {
			after = seq
			if e.Type == agent.ModelRequest || e.Type == agent.ModelDelta {
				// A chunk of an attempt the model activity has since
				// retried is dropped: the attempt after it streams anew.
				k := attemptKey{e.Workflow, e.Agent.String(), e.Round}
				if e.Attempt < attempts[k] {
					mark(seq)
					continue
				}
				attempts[k] = e.Attempt
			}
			if e.Type == agent.InterruptEvent {
				waits = true
			}
			if !yield(e.agentEvent(), nil) {
				return false
			}
			mark(seq)
		}
		if len(evs) > 0 && after != evs[len(evs)-1].Seq {
			after = evs[len(evs)-1].Seq
			mark(after)
		}
		return true
	}
	tick := time.NewTicker(x.poll)
	defer tick.Stop()
	cancelled, ticks := false, 0
	for {
		select {
		case end := <-done:
			if !drain() {
				return nil, nil
			}
			return resultOf(end)
		case <-ctx.Done():
			if !cancelled && errors.Is(context.Cause(ctx), server.ErrRunCancelled) {
				cancelled = true
				cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), callTimeout)
				err := x.c.CancelWorkflow(cctx, id, "")
				cancel()
				if err != nil {
					return nil, fmt.Errorf("cancelling workflow %s: %w", id, err)
				}
			} else if !cancelled {
				// The server shuts down: the workflow goes on.
				return nil, fmt.Errorf("this server stopped following the run (%v); its workflow %s goes on, for another server to adopt", context.Cause(ctx), id)
			}
			ctx = context.WithoutCancel(ctx)
		case <-tick.C:
		}
		if !drain() {
			return nil, nil
		}
		ticks++
		if !waits && ticks%pendingEvery != 0 {
			continue
		}
		if waiting := x.pending(ctx, id); len(waiting) > 0 && !sameCalls(waiting, before) {
			// The run waits for decisions: its events are all published.
			if !drain() {
				return nil, nil
			}
			return &agent.Result{Status: agent.StatusInterrupted, Interrupts: waiting}, nil
		}
	}
}

// resultOf is the run's result from its workflow's end.
func resultOf(end ended) (*agent.Result, error) {
	var ce *sdktemporal.CanceledError
	if errors.As(end.err, &ce) {
		var s Summary
		if ce.HasDetails() && ce.Details(&s) == nil && s.Status != "" {
			if s.Status == agent.StatusInterrupted {
				s.Status = agent.StatusCancelled
			}
			return summaryResult(&s), nil
		}
		return &agent.Result{Status: agent.StatusCancelled}, nil
	}
	if end.err != nil {
		return nil, end.err
	}
	return summaryResult(end.sum), nil
}

func summaryResult(s *Summary) *agent.Result {
	return &agent.Result{Status: s.Status, Error: s.Error, Rounds: s.Rounds, Usage: s.Usage, Interrupts: s.Interrupts}
}

// oneText is the text of an input that is one plain user message of text,
// the only input RunInput.Input carries (and the only one a worker from
// before RunInput.InputRef reads); ok is false for any other.
func oneText(in []llm.Message) (string, bool) {
	if len(in) == 1 && in[0].Content != "" && reflect.DeepEqual(in[0], llm.Message{Role: llm.RoleUser, Content: in[0].Content}) {
		return in[0].Content, true
	}
	return "", false
}

// start starts workflow id.
func (x *Executor) start(ctx context.Context, id string, in RunInput) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	_, err := x.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: x.queue}, RunAgentWorkflow, in)
	if err != nil {
		return fmt.Errorf("starting workflow %s on task queue %s: %w", id, x.queue, err)
	}
	return nil
}

// logEnd is the number of the thread log's last event.
func (x *Executor) logEnd(ctx context.Context, log string) (int64, error) {
	if l, ok := x.store.(interface {
		LastEvent(context.Context, string) (server.StoredEvent, bool, error)
	}); ok {
		ev, _, err := l.LastEvent(ctx, log)
		if err != nil {
			return 0, fmt.Errorf("reading the thread's published events: %w", err)
		}
		return ev.Seq, nil
	}
	var after int64
	for {
		evs, err := x.store.Events(ctx, log, after)
		if err != nil {
			return 0, fmt.Errorf("reading the thread's published events: %w", err)
		}
		if len(evs) == 0 {
			return after, nil
		}
		after = evs[len(evs)-1].Seq
	}
}

// pending is the calls workflow id waits on (none when it cannot say).
func (x *Executor) pending(ctx context.Context, id string) []agent.Interrupt {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), callTimeout)
	defer cancel()
	v, err := x.c.QueryWorkflow(ctx, id, "", PendingQuery)
	if err != nil || !v.HasValue() {
		return nil
	}
	var in []agent.Interrupt
	if v.Get(&in) != nil {
		return nil
	}
	return in
}

// sameCalls says whether a and b wait on the same calls.
func sameCalls(a, b []agent.Interrupt) bool {
	return slices.EqualFunc(a, b, func(x, y agent.Interrupt) bool { return x.CallID == y.CallID && x.Path.String() == y.Path.String() })
}

// decide sends run's decisions to the workflow that waits for them: that
// of the thread's run before this one. When it no longer waits (its wait
// timed out), a new workflow resumes the thread, waits, and takes them.
// It returns the workflow that goes on with the run, and the calls that
// waited.
func (x *Executor) decide(ctx context.Context, run server.ExecRun) (string, []agent.Interrupt, error) {
	id := ""
	if prev, err := x.previousRun(ctx, run); err != nil {
		return "", nil, err
	} else if prev != "" {
		id = WorkflowID(run.Thread, prev)
	}
	var waiting []agent.Interrupt
	if id != "" {
		waiting = x.pending(ctx, id)
	}
	if len(waiting) == 0 || !x.open(ctx, id) {
		id = WorkflowID(run.Thread, run.RunID)
		if err := x.start(ctx, id, RunInput{Agent: run.Assistant, Thread: run.Thread}); err != nil {
			return "", nil, err
		}
		deadline := time.Now().Add(callTimeout)
		for waiting = x.pending(ctx, id); len(waiting) == 0; waiting = x.pending(ctx, id) {
			if time.Now().After(deadline) || ctx.Err() != nil {
				return "", nil, fmt.Errorf("workflow %s resumed thread %q and does not wait for decisions", id, run.Thread)
			}
			time.Sleep(x.poll)
		}
	}
	uctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	h, err := x.c.UpdateWorkflow(uctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: DecideUpdate,
		Args: []any{run.Decisions}, WaitForStage: client.WorkflowUpdateStageCompleted})
	if err == nil {
		err = h.Get(uctx, nil)
	}
	if err != nil {
		return "", nil, fmt.Errorf("sending the decisions to workflow %s: %w", id, err)
	}
	return id, waiting, nil
}

// open says whether workflow id is running.
func (x *Executor) open(ctx context.Context, id string) bool {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	d, err := x.c.DescribeWorkflowExecution(ctx, id, "")
	return err == nil && d.WorkflowExecutionInfo.GetCloseTime() == nil
}

// previousRun is the id of the thread's run before run ("" when none).
func (x *Executor) previousRun(ctx context.Context, run server.ExecRun) (string, error) {
	runs, err := x.store.ListRuns(ctx, run.Thread, 20, 0)
	if err != nil {
		return "", fmt.Errorf("listing the runs of thread %q: %w", run.Thread, err)
	}
	for i, r := range runs {
		if r.RunID == run.RunID && i+1 < len(runs) {
			return runs[i+1].RunID, nil
		}
	}
	return "", nil
}

// Cancel implements server.Executor: it cancels the workflow that runs
// the run, its own or, for a run that resumed a waiting workflow, that of
// a run before it on the thread (a new turn retires a waiting workflow
// before it starts its own, so one is open at a time). A run whose
// workflow is not started yet is waited for.
func (x *Executor) Cancel(ctx context.Context, thread, runID string) error {
	ids := x.candidates(ctx, thread, runID)
	deadline := time.Now().Add(callTimeout)
	for {
		for _, id := range ids {
			if !x.open(ctx, id) {
				continue
			}
			cctx, cancel := context.WithTimeout(ctx, callTimeout)
			err := x.c.CancelWorkflow(cctx, id, "")
			cancel()
			var nf *serviceerror.NotFound
			if errors.As(err, &nf) {
				return nil // it ended meanwhile
			}
			return err
		}
		rec, err := x.store.GetRun(ctx, thread, runID)
		if err != nil {
			return err
		}
		if rec.Status != "pending" && rec.Status != "running" {
			return nil // it ended
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no workflow runs run %s of thread %q: is a server running it?", runID, thread)
		}
		select {
		case <-time.After(x.poll):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// candidates are the workflows that may run a run: its own, then those of
// the thread's runs before it, newest first (a resume goes on in the
// workflow that waited).
func (x *Executor) candidates(ctx context.Context, thread, runID string) []string {
	ids := []string{WorkflowID(thread, runID)}
	if runs, err := x.store.ListRuns(ctx, thread, 20, 0); err == nil {
		for i, r := range runs {
			if r.RunID == runID {
				for _, older := range runs[i+1:] {
					ids = append(ids, WorkflowID(thread, older.RunID))
				}
			}
		}
	}
	return ids
}

// workflowOf is the workflow that runs a run: the first candidate open,
// else the run's own if it ran ("" when none).
func (x *Executor) workflowOf(ctx context.Context, thread, runID string) string {
	ids := x.candidates(ctx, thread, runID)
	for _, id := range ids {
		if x.open(ctx, id) {
			return id
		}
	}
	dctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if _, err := x.c.DescribeWorkflowExecution(dctx, ids[0], ""); err == nil {
		return ids[0]
	}
	return ""
}

// retire cancels the workflow of the thread's run before run when it still
// waits for decisions: a new turn drops the calls it waits on.
func (x *Executor) retire(ctx context.Context, run server.ExecRun) {
	prev, err := x.previousRun(ctx, run)
	if err != nil || prev == "" {
		return
	}
	id := WorkflowID(run.Thread, prev)
	if x.open(ctx, id) {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		_ = x.c.CancelWorkflow(cctx, id, "")
	}
}

// Serve serves cfg's API on addr until ctx ends, with its runs executed
// on the fleet by x; cfg.Store must be the store x reads. It is what a
// `serve --temporal` command runs once it has built the agents, the stores
// and the client.
func Serve(ctx context.Context, addr string, cfg server.Config, x *Executor) error {
	cfg.Executor = x
	s, err := server.New(cfg)
	if err != nil {
		return err
	}
	hs := &http.Server{Addr: addr, Handler: s, ReadHeaderTimeout: 10 * time.Second}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		_ = s.Close()
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	_ = s.Shutdown(sctx)
	return hs.Shutdown(sctx)
}
