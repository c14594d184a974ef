package server

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/internal/pgtest"
	"github.com/deepagents-go/deepagents/runner"
)

// localExecutor is an Executor that runs runs in this process, shared by
// the servers of a test fleet: what one starts, another cancels.
type localExecutor struct {
	saver checkpoint.Saver
	mu    sync.Mutex
	runs  map[string]context.CancelCauseFunc
}

func (e *localExecutor) Execute(ctx context.Context, run ExecRun) iter.Seq2[agent.Event, error] {
	ctx, cancel := context.WithCancelCause(ctx)
	e.mu.Lock()
	if e.runs[run.RunID] != nil {
		cancel(fmt.Errorf("%w: through another server, before it started", errRunCancelled)) // see Cancel
	}
	e.runs[run.RunID] = cancel
	e.mu.Unlock()
	// Without the thread's lease, as a workflow that has not taken it yet:
	// only the fleet's own check keeps a second run of the thread out.
	opts := []agent.RunOption{runner.Checkpoints(struct{ checkpoint.RunStore }{e.saver}, run.Thread)}
	if len(run.Decisions) > 0 {
		opts = append(opts, agent.WithDecisions(run.Decisions...))
	}
	return func(yield func(agent.Event, error) bool) {
		defer cancel(nil)
		for ev, err := range run.Agent.Run(ctx, agent.Input{Messages: run.Input}, opts...) {
			if !yield(ev, err) {
				return
			}
		}
	}
}

func (e *localExecutor) Cancel(_ context.Context, _, runID string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if c := e.runs[runID]; c != nil {
		c(fmt.Errorf("%w: through another server", errRunCancelled))
	} else {
		// Not started yet: Execute cancels it at once.
		e.runs[runID] = func(error) {}
	}
	return nil
}

// newFleet is two servers on one store, saver and executor.
func newFleet(t *testing.T, stepDelayMS float64) (*harness, *harness) {
	return newFleetWith(t, stepDelayMS, nil)
}

// newFleetWith is newFleet with each server's Config changed by change.
func newFleetWith(t *testing.T, stepDelayMS float64, change func(*Config)) (*harness, *harness) {
	st, err := OpenSQLStore(context.Background(), "sqlite", filepath.Join(t.TempDir(), "fleet.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	saver := checkpoint.NewMemory(0)
	ex := &localExecutor{saver: saver, runs: map[string]context.CancelCauseFunc{}}
	a, err := DemoAgent("researcher", stepDelayMS)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Agents: []AgentSpec{{Name: "researcher", Agent: a}}, Saver: saver, Store: st, Executor: ex}
	if change != nil {
		change(&cfg)
	}
	return newHarness(t, cfg), newHarness(t, cfg)
}

// A stream of a run another server runs outlasts the write timeout while
// the run is quiet: each heartbeat pushes the write deadline back.
func TestFleetStreamOutlastsWriteTimeout(t *testing.T) {
	h1, h2 := newFleetWith(t, 400, func(c *Config) {
		c.StreamWriteTimeout = 200 * time.Millisecond
		c.Heartbeat = 50 * time.Millisecond
	})
	var run Run
	h1.json("POST", "/threads/T/runs", map[string]any{"assistant_id": "researcher", "if_not_exists": "create",
		"stream_mode": []string{"values", "updates"}, "input": map[string]any{"messages": []map[string]string{{"role": "user", "content": "hi"}}}}, 200, &run)
	_, other := h2.stream("GET", "/threads/T/runs/"+run.RunID+"/stream", nil)
	_, own := h1.stream("GET", "/threads/T/runs/"+run.RunID+"/stream", nil)
	if len(own) < 5 || !reflect.DeepEqual(other, own) {
		t.Fatalf("the other server streamed %d events, the one that ran it %d", len(other), len(own))
	}
}

// A run one server of a fleet started is streamed, rejoined, joined and
// reported by another from the shared store, as the first streams it.
func TestFleetFollowsARunAnotherServerRuns(t *testing.T) {
	h1, h2 := newFleet(t, 150)
	var run Run
	h1.json("POST", "/threads/T/runs", map[string]any{"assistant_id": "researcher", "if_not_exists": "create",
		"stream_mode": []string{"values", "updates", "messages-tuple"}, "input": map[string]any{"messages": []map[string]string{{"role": "user", "content": "hi"}}}}, 200, &run)
	var got Run
	h2.json("GET", "/threads/T/runs/"+run.RunID, nil, 200, &got)
	if got.Status != runPending && got.Status != runRunning {
		t.Fatalf("the other server reports the run %s while it runs", got.Status)
	}
	h2.json("POST", "/threads/T/runs", map[string]any{"assistant_id": "researcher", "multitask_strategy": "enqueue",
		"input": map[string]any{"messages": []map[string]string{{"role": "user", "content": "more"}}}}, 409, nil)
	_, other := h2.stream("GET", "/threads/T/runs/"+run.RunID+"/stream", nil)
	_, own := h1.stream("GET", "/threads/T/runs/"+run.RunID+"/stream", nil)
	if len(other) < 5 || !reflect.DeepEqual(other, own) {
		t.Fatalf("the other server streamed %d events, the one that ran it %d; they differ", len(other), len(own))
	}
	_, tail := h2.stream("GET", "/threads/T/runs/"+run.RunID+"/stream", nil, "Last-Event-ID", "3")
	if !reflect.DeepEqual(tail, own[3:]) {
		t.Fatalf("a rejoin after event 3 got %d events, want the %d after it", len(tail), len(own)-3)
	}
	h2.json("GET", "/threads/T/runs/"+run.RunID, nil, 200, &got)
	if got.Status != runInterrupted {
		t.Fatalf("the run ended %s on the other server, want interrupted (the demo's write waits)", got.Status)
	}
}

// A run cancelled through another server of the fleet stops.
func TestFleetCancelsThroughAnotherServer(t *testing.T) {
	h1, h2 := newFleet(t, 0)
	var run Run
	h1.json("POST", "/threads/T/runs", map[string]any{"assistant_id": "researcher", "if_not_exists": "create",
		"input": map[string]any{"messages": []map[string]string{{"role": "user", "content": "slow"}}}}, 200, &run)
	h2.json("POST", "/threads/T/runs/"+run.RunID+"/cancel?wait=1", nil, 202, nil)
	var got Run
	h1.json("GET", "/threads/T/runs/"+run.RunID, nil, 200, &got)
	if got.Status != runInterrupted {
		t.Fatalf("the run is %s after a cancel through the other server, want interrupted", got.Status)
	}
}

// Writers that do not know each other's numbers append to one log without
// losing or reordering an event of any of them.
func TestAppendNextNumbersEvents(t *testing.T) {
	st, err := OpenSQLStore(context.Background(), "sqlite", filepath.Join(t.TempDir(), "next.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	stores := map[string]interface {
		Store
		AppendNext(context.Context, string, []StoredEvent) error
	}{"sqlite": st, "memory": NewMemoryStore()}
	if os.Getenv(pgtest.EnvDSN) != "" {
		// Writers race for each number in PostgreSQL: the loser tries again.
		dsn, schema := pgtest.Schema(t)
		pg, err := OpenSQLStore(context.Background(), "postgres", withSearchPath(dsn, schema))
		if err != nil {
			t.Fatal(err)
		}
		defer pg.Close()
		stores["postgres"] = pg
	}
	for name, s := range stores {
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Go(func() {
				for i := range 10 {
					if err := s.AppendNext(context.Background(), "log", []StoredEvent{{Event: fmt.Sprint(w), Data: []byte(fmt.Sprint(i))}}); err != nil {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
		evs, err := s.Events(context.Background(), "log", 0)
		if err != nil {
			t.Fatal(err)
		}
		next := map[string]int{}
		for i, e := range evs {
			if e.Seq != int64(i+1) || string(e.Data) != fmt.Sprint(next[e.Event]) {
				t.Fatalf("%s: event %d is %d %s=%s", name, i, e.Seq, e.Event, e.Data)
			}
			next[e.Event]++
		}
		if len(evs) != 40 {
			t.Fatalf("%s: %d events, want 40", name, len(evs))
		}
	}
}

// shortRunLease sets runLeaseTTL to ttl for one test.
func shortRunLease(t *testing.T, ttl time.Duration) {
	old := runLeaseTTL
	runLeaseTTL = ttl
	t.Cleanup(func() { runLeaseTTL = old })
}

// A pending run that no server of the fleet is going to start (its server
// died before it did: the run's lease is free, and it is old) is marked
// failed: the thread takes a new run, a join of it ends, and the thread
// can be deleted.
func TestFleetRetiresARunNoServerStarted(t *testing.T) {
	h1, h2 := newFleet(t, 0)
	st, ctx := h1.srv.store, context.Background()
	old := now().Add(-2 * runLeaseTTL)
	asst := h1.srv.agents["researcher"].ID
	for _, id := range []string{"T", "U"} {
		if err := st.CreateThread(ctx, ThreadRecord{ID: id, CreatedAt: old, UpdatedAt: old, Metadata: map[string]any{}, Status: threadBusy}); err != nil {
			t.Fatal(err)
		}
		if err := st.PutRun(ctx, RunRecord{Run: Run{RunID: "left-" + id, ThreadID: id, AssistantID: asst, CreatedAt: old, UpdatedAt: old,
			Status: runPending, Metadata: map[string]any{}, MultitaskStrategy: "reject"}}); err != nil {
			t.Fatal(err)
		}
	}
	h2.json("POST", "/threads/T/runs/wait", map[string]any{"assistant_id": "researcher",
		"input": map[string]any{"messages": []map[string]string{{"role": "user", "content": "hi"}}}}, 200, nil)
	var got Run
	h1.json("GET", "/threads/T/runs/left-T", nil, 200, &got)
	if got.Status != runError {
		t.Fatalf("the run left pending is %s, want error", got.Status)
	}
	if rec, err := st.GetRun(ctx, "T", "left-T"); err != nil || rec.Error != errNeverStarted {
		t.Fatalf("the run left pending is stored with error %q (%v), want that it never started", rec.Error, err)
	}
	h1.json("GET", "/threads/U/runs/left-U/join", nil, 200, nil)
	h2.json("GET", "/threads/U/runs/left-U", nil, 200, &got)
	if got.Status != runError {
		t.Fatalf("the run left pending is %s after a join, want error", got.Status)
	}
	h2.json("DELETE", "/threads/U", nil, 204, nil)
}

// A run queued on a live server of the fleet stays pending past
// runLeaseTTL, held by its lease: another server still refuses a run of
// its thread.
func TestFleetKeepsARunQueuedOnALiveServer(t *testing.T) {
	shortRunLease(t, 300*time.Millisecond)
	h1, h2 := newFleet(t, 400)
	msg := map[string]any{"messages": []map[string]string{{"role": "user", "content": "hi"}}}
	h1.json("POST", "/threads/T/runs", map[string]any{"assistant_id": "researcher", "if_not_exists": "create", "input": msg}, 200, nil)
	var queued Run
	h1.json("POST", "/threads/T/runs", map[string]any{"assistant_id": "researcher", "multitask_strategy": "enqueue", "input": msg}, 200, &queued)
	time.Sleep(2 * runLeaseTTL)
	h2.json("POST", "/threads/T/runs", map[string]any{"assistant_id": "researcher", "input": msg}, 409, nil)
	var got Run
	h2.json("GET", "/threads/T/runs/"+queued.RunID, nil, 200, &got)
	if got.Status != runPending {
		t.Fatalf("the queued run is %s, want pending still", got.Status)
	}
}

// A server whose run's lease another server took stops driving the run,
// and leaves its record (running) to that one.
func TestFleetLetsGoOfARunWhoseLeaseIsLost(t *testing.T) {
	shortRunLease(t, 300*time.Millisecond)
	h1, _ := newFleet(t, 300)
	var run Run
	h1.json("POST", "/threads/T/runs", map[string]any{"assistant_id": "researcher", "if_not_exists": "create",
		"input": map[string]any{"messages": []map[string]string{{"role": "user", "content": "hi"}}}}, 200, &run)
	ctx, saver, key := context.Background(), h1.srv.cfg.Saver, runKey(run.RunID)
	deadline := time.Now().Add(10 * time.Second)
	for {
		rec, err := h1.srv.store.GetRun(ctx, "T", run.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Status == runRunning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run is %s, not running", rec.Status)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := saver.Release(ctx, key, h1.srv.holder); err != nil {
		t.Fatal(err)
	}
	if _, err := saver.Acquire(ctx, key, "another server", time.Now(), time.Minute); err != nil {
		t.Fatal(err)
	}
	for {
		h1.srv.mu.Lock()
		lr := h1.srv.live[run.RunID]
		h1.srv.mu.Unlock()
		if lr == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the server still runs a run whose lease it lost")
		}
		time.Sleep(10 * time.Millisecond)
	}
	rec, err := h1.srv.store.GetRun(ctx, "T", run.RunID)
	if err != nil || rec.Status != runRunning {
		t.Fatalf("the run whose lease was lost is stored %s (%v), want running still, for the server that holds it", rec.Status, err)
	}
}

// followingExecutor is an Executor whose runs go on when the server that
// follows one stops, as Execute's doc says: its events stop there, with no
// result.
type followingExecutor struct{ Executor }

func (e followingExecutor) Execute(ctx context.Context, run ExecRun) iter.Seq2[agent.Event, error] {
	return func(yield func(agent.Event, error) bool) {
		for ev, err := range e.Executor.Execute(ctx, run) {
			if ctx.Err() != nil && !errors.Is(context.Cause(ctx), ErrRunCancelled) {
				return
			}
			if !yield(ev, err) {
				return
			}
		}
	}
}

// slowAppends is a Store whose event writes take a while.
type slowAppends struct {
	Store
	pause time.Duration
}

func (s slowAppends) AppendEvents(ctx context.Context, runID string, evs []StoredEvent) error {
	time.Sleep(s.pause)
	return s.Store.AppendEvents(ctx, runID, evs)
}

// releaseWatch is a Saver that counts, as each run's lease is released,
// the run's events stored by then.
type releaseWatch struct {
	checkpoint.Saver
	store Store
	mu    sync.Mutex
	at    map[string]int // run id: events stored when its lease was let go
}

func (w *releaseWatch) Release(ctx context.Context, key, holder string) error {
	if run, ok := strings.CutPrefix(key, runKey("")); ok {
		evs, err := w.store.Events(ctx, run, 0)
		if err != nil {
			return err
		}
		w.mu.Lock()
		w.at[run] = len(evs)
		w.mu.Unlock()
	}
	return w.Saver.Release(ctx, key, holder)
}

// A fleet's server that stops lets a run's lease go only once the run's
// events are stored: the server that adopts it then reads them all.
func TestFleetReleasesARunOnceItsEventsAreStored(t *testing.T) {
	var watch *releaseWatch
	h1, _ := newFleetWith(t, 100, func(c *Config) {
		watch = &releaseWatch{Saver: c.Saver, store: c.Store, at: map[string]int{}}
		c.Saver, c.Store = watch, slowAppends{Store: c.Store, pause: 150 * time.Millisecond}
		c.Executor = followingExecutor{c.Executor}
	})
	var run Run
	h1.json("POST", "/threads/T/runs", map[string]any{"assistant_id": "researcher", "if_not_exists": "create",
		"stream_mode": []string{"values", "updates", "messages-tuple"}, "input": map[string]any{"messages": []map[string]string{{"role": "user", "content": "hi"}}}}, 200, &run)
	time.Sleep(400 * time.Millisecond)
	if err := h1.srv.Close(); err != nil {
		t.Fatal(err)
	}
	evs, err := watch.store.Events(context.Background(), run.RunID, 0)
	if err != nil {
		t.Fatal(err)
	}
	watch.mu.Lock()
	at, released := watch.at[run.RunID]
	watch.mu.Unlock()
	if !released || at != len(evs) {
		t.Fatalf("the run's lease was let go (%v) with %d of its %d events stored", released, at, len(evs))
	}
}

// deafExecutor is an Executor whose Cancel does nothing.
type deafExecutor struct{ Executor }

func (deafExecutor) Cancel(context.Context, string, string) error { return nil }

// A cancel with wait=1 of a run another server runs answers an error when
// it cannot wait for the run's end (this server stops), not an empty 200.
func TestFleetCancelWaitFailsAloud(t *testing.T) {
	h1, h2 := newFleetWith(t, 300, func(c *Config) { c.Executor = deafExecutor{c.Executor} })
	var run Run
	h1.json("POST", "/threads/T/runs", map[string]any{"assistant_id": "researcher", "if_not_exists": "create",
		"input": map[string]any{"messages": []map[string]string{{"role": "user", "content": "hi"}}}}, 200, &run)
	go func() {
		time.Sleep(300 * time.Millisecond)
		_ = h2.srv.Close()
	}()
	h2.json("POST", "/threads/T/runs/"+run.RunID+"/cancel?wait=1", nil, 503, nil)
}

// A batch AppendNext cannot store (an event without data breaks a NOT NULL
// column) is stored not at all, and is not tried again; nor is a batch
// whose context has ended.
func TestAppendNextStoresAWholeBatchOrNone(t *testing.T) {
	st, err := OpenSQLStore(context.Background(), "sqlite", filepath.Join(t.TempDir(), "next.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	stores := map[string]*SQLStore{"sqlite": st}
	if os.Getenv(pgtest.EnvDSN) != "" {
		dsn, schema := pgtest.Schema(t)
		pg, err := OpenSQLStore(context.Background(), "postgres", withSearchPath(dsn, schema))
		if err != nil {
			t.Fatal(err)
		}
		defer pg.Close()
		stores["postgres"] = pg
	}
	for name, s := range stores {
		ctx := context.Background()
		if err := s.AppendNext(ctx, "log", []StoredEvent{{Event: "a", Data: []byte("1")}}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		err := s.AppendNext(ctx, "log", []StoredEvent{{Event: "b", Data: []byte("2")}, {Event: "c"}})
		if err == nil {
			t.Fatalf("%s: a batch with an event without data was stored", name)
		}
		if took := time.Since(start); took > 100*time.Millisecond {
			t.Errorf("%s: a batch that cannot be stored took %s to fail: tried again", name, took)
		}
		done, cancel := context.WithCancel(ctx)
		cancel()
		if err := s.AppendNext(done, "log", []StoredEvent{{Event: "d", Data: []byte("3")}}); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: a batch with its context cancelled: %v", name, err)
		}
		evs, err := s.Events(ctx, "log", 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != 1 || evs[0].Event != "a" {
			t.Fatalf("%s: the log has %d events after the failed batches, want the 1 before", name, len(evs))
		}
	}
}

// countedGetRun is a Store that counts its GetRun calls.
type countedGetRun struct {
	Store
	mu sync.Mutex
	n  int
}

func (c *countedGetRun) GetRun(ctx context.Context, thread, runID string) (RunRecord, error) {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	return c.Store.GetRun(ctx, thread, runID)
}

func (c *countedGetRun) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// Without an Executor, a rejoin of a run that ended reads its record once,
// as before fleets: the fleet's check for a run going on elsewhere is not
// made.
func TestRejoinReadsTheRunOnceWithoutAFleet(t *testing.T) {
	st := &countedGetRun{Store: NewMemoryStore()}
	h := newHarness(t, Config{Store: st})
	h.json("POST", "/threads/T/runs/wait", map[string]any{"assistant_id": "researcher", "if_not_exists": "create",
		"input": map[string]any{"messages": []map[string]string{{"role": "user", "content": "hi"}}}}, 200, nil)
	var runs []Run
	h.json("GET", "/threads/T/runs", nil, 200, &runs)
	if len(runs) != 1 {
		t.Fatalf("%d runs, want 1", len(runs))
	}
	run := runs[0]
	before := st.count()
	if _, evs := h.stream("GET", "/threads/T/runs/"+run.RunID+"/stream", nil); len(evs) == 0 {
		t.Fatal("the rejoin sent no event")
	}
	if n := st.count() - before; n != 1 {
		t.Fatalf("a rejoin read the run's record %d times, want once", n)
	}
}
