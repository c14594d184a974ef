package server

import (
	"context"
	"encoding/json"
	"iter"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/checkpoint/sqlite"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/runner"
)

// goneHolder names a lease holder that is a process of this host that has
// ended: a server started after a run held by it takes the thread over.
func goneHolder(t *testing.T) string {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("a dead process's lease is not told apart here")
	}
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Skip("cannot run a process that ends:", err)
	}
	return runner.LeaseHolderOf(gone.Process.Pid)
}

// leasedAs runs an agent as the server does, its thread's lease in sv
// held as holder.
func leasedAs(sv checkpoint.Saver, holder string) func(context.Context, string, *agent.Agent, agent.Input, ...agent.RunOption) iter.Seq2[agent.Event, error] {
	return func(ctx context.Context, thread string, a *agent.Agent, in agent.Input, opts ...agent.RunOption) iter.Seq2[agent.Event, error] {
		// The server's own Checkpoints option comes first: this one, later,
		// takes its place.
		return a.Run(ctx, in, append(opts, runner.Checkpoints(sv, thread, runner.Lease(holder, 0)))...)
	}
}

// stoppedServer leaves what a server killed mid-run leaves in its SQLite
// files: thread T busy, run `running` going on (its first events stored),
// run `queued` waiting behind it. Server A is still blocked in a model call
// (it stops at the test's end), but a server B started over the same files
// knows nothing of it, as after a kill; B is returned. A's run holds the
// thread's lease as holder, which names a process that is gone unless the
// test says otherwise.
func stoppedServer(t *testing.T, holder string) (hB *harness, st Store, running, queued Run, before time.Time) {
	t.Helper()
	if holder == "" {
		holder = goneHolder(t)
	}
	dir := t.TempDir()
	serve := func() (*harness, Store) {
		sv, st := openFiles(t, dir)
		t.Cleanup(func() { _ = st.Close(); _ = sv.Close() })
		return newHarness(t, Config{Saver: sv, Store: st, Run: leasedAs(sv, holder)}), st
	}
	hA, stA := serve()
	hA.json("POST", "/threads", map[string]any{"thread_id": "T"}, 200, nil)
	slow := map[string]any{"assistant_id": "researcher", "input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "slow please"}}}}
	hA.json("POST", "/threads/T/runs", slow, 200, &running)
	then := map[string]any{"assistant_id": "researcher", "multitask_strategy": "enqueue", "input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "then this"}}}}
	hA.json("POST", "/threads/T/runs", then, 200, &queued)
	ctx := context.Background()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		evs, err := stA.Events(ctx, running.RunID, 0)
		rec, err2 := stA.GetRun(ctx, "T", running.RunID)
		if err == nil && err2 == nil && len(evs) >= 2 && rec.Status == runRunning {
			before = rec.UpdatedAt
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run did not start: %d events, %v %v", len(evs), err, err2)
		}
	}
	hB, st = serve()
	return hB, st, running, queued, before
}

// TestRestartMarksBusyThreadError: the restarted server stores the status
// it reports, so a search by status finds the thread GET shows as error.
func TestRestartMarksBusyThreadError(t *testing.T) {
	h, st, _, _, _ := stoppedServer(t, "")
	var th Thread
	h.json("GET", "/threads/T", nil, 200, &th)
	if th.Status != "error" {
		t.Fatalf("GET: thread status %q, want error", th.Status)
	}
	found := func(status string) bool {
		var ths []Thread
		h.json("POST", "/threads/search", map[string]any{"status": status}, 200, &ths)
		return slices.ContainsFunc(ths, func(th Thread) bool { return th.ThreadID == "T" })
	}
	if !found("error") || found("busy") {
		t.Errorf("search: found by error %v, by busy %v; want error only", found("error"), found("busy"))
	}
	rec, err := st.GetThread(context.Background(), "T")
	if err != nil || rec.Status != threadError || rec.Error != errOrphan {
		t.Errorf("stored thread: status %q, error %q (%v)", rec.Status, rec.Error, err)
	}
}

// TestRestartEndsFailedRunStream: the stream of a run the server stopped
// during ends with an error event, stored once, so a rejoin gets it exactly
// once; the run's updated_at moves to when it was marked failed.
func TestRestartEndsFailedRunStream(t *testing.T) {
	h, _, running, _, before := stoppedServer(t, "")
	loc := "/threads/T/runs/" + running.RunID
	_, all := h.stream("GET", loc+"/stream", nil, "Last-Event-ID", "-1")
	if len(all) < 3 || all[len(all)-1].Event != "error" {
		t.Fatalf("the failed run's stream: %v; want it to end with error", eventNames(all))
	}
	if n := slices.Index(eventNames(all), "error"); n != len(all)-1 {
		t.Errorf("error event at %d of %v", n, eventNames(all))
	}
	var data struct{ Message string }
	if err := json.Unmarshal(all[len(all)-1].Data, &data); err != nil || data.Message != errOrphan {
		t.Errorf("error event %s (%v)", all[len(all)-1].Data, err)
	}
	last := all[len(all)-1].ID
	_, rest := h.stream("GET", loc+"/stream", nil, "Last-Event-ID", strconv.FormatInt(last-1, 10))
	if len(rest) != 1 || rest[0].Event != "error" || rest[0].ID != last {
		t.Errorf("rejoined after %d: %v", last-1, eventNames(rest))
	}
	_, none := h.stream("GET", loc+"/stream", nil, "Last-Event-ID", strconv.FormatInt(last, 10))
	if len(none) != 0 {
		t.Errorf("rejoined after the error event: %v", eventNames(none))
	}
	var run Run
	h.json("GET", loc, nil, 200, &run)
	if run.Status != "error" || !run.UpdatedAt.After(before) {
		t.Errorf("run status %q, updated_at %v; want error, after %v", run.Status, run.UpdatedAt, before)
	}
}

// TestRestartQueuedRunNeverStarted: a queued run the server stopped before
// its turn is marked error saying it never started (not that it stopped
// while going on), in its record and its stream.
func TestRestartQueuedRunNeverStarted(t *testing.T) {
	h, _, _, queued, _ := stoppedServer(t, "")
	loc := "/threads/T/runs/" + queued.RunID
	var run Run
	h.json("GET", loc, nil, 200, &run)
	if run.Status != "error" {
		t.Errorf("queued run status %q, want error", run.Status)
	}
	var res map[string]string
	h.json("GET", loc+"/join", nil, 200, &res)
	if res["__error__"] != errNeverStarted {
		t.Errorf("join: %v; want __error__ %q", res, errNeverStarted)
	}
	_, evs := h.stream("GET", loc+"/stream", nil)
	if len(evs) != 1 || evs[0].Event != "error" || !strings.Contains(string(evs[0].Data), "before the run started") {
		t.Errorf("the queued run's stream: %v", evs)
	}
}

// TestRestartLeavesThreadRunElsewhere: a server starting over a database
// where another live process holds a thread's lease leaves that thread's
// runs and status alone: they may be going on there.
func TestRestartLeavesThreadRunElsewhere(t *testing.T) {
	h, st, running, queued, _ := stoppedServer(t, "elsewhere/1/cafe")
	ctx := context.Background()
	for _, id := range []string{running.RunID, queued.RunID} {
		rec, err := st.GetRun(ctx, "T", id)
		if err != nil || rec.Status == runError {
			t.Errorf("run %s stored as %q (%v); want it untouched", id, rec.Status, err)
		}
		evs, err := st.Events(ctx, id, 0)
		if err != nil || slices.ContainsFunc(evs, func(e StoredEvent) bool { return e.Event == "error" }) {
			t.Errorf("run %s got an error event (%v)", id, err)
		}
	}
	if rec, err := st.GetThread(ctx, "T"); err != nil || rec.Status != threadBusy {
		t.Errorf("thread stored as %q (%v); want busy", rec.Status, err)
	}
	// A new run on it is refused before it is stored.
	h.json("POST", "/threads/T/runs", map[string]any{"assistant_id": "researcher", "input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}}}}, 409, nil)
}

// openFiles opens the checkpoint saver and the run store a server keeps
// in dir/state.db, as a server started over those files would; the caller
// closes them.
func openFiles(t *testing.T, dir string) (*sqlite.Saver, Store) {
	t.Helper()
	sv, err := sqlite.Open(filepath.Join(dir, "state.db"), sqlite.Options{BusyTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	st, err := OpenSQLStore(context.Background(), "sqlite", filepath.Join(dir, "state.db"))
	if err != nil {
		_ = sv.Close()
		t.Fatal(err)
	}
	return sv, st
}

// stoppedFiles writes what a server stopped at a chosen moment leaves in
// its SQLite files: thread and run records as the test sets them, and
// threads run to their end by an agent on the same checkpoints.
type stoppedFiles struct {
	t  *testing.T
	sv *sqlite.Saver
	st Store
	a  *agent.Agent
}

func newStoppedFiles(t *testing.T) *stoppedFiles {
	t.Helper()
	sv, st := openFiles(t, t.TempDir())
	t.Cleanup(func() { _ = st.Close(); _ = sv.Close() })
	a, err := agent.New(agent.Config{Name: "agent", Model: scripted.New(scripted.Script{"agent": {Steps: []scripted.Step{{Content: "done"}}}}, scripted.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	return &stoppedFiles{t: t, sv: sv, st: st, a: a}
}

// busyThread stores thread id as busy since at.
func (f *stoppedFiles) busyThread(id string, at time.Time) {
	f.t.Helper()
	if err := f.st.CreateThread(context.Background(), ThreadRecord{ID: id, CreatedAt: at, UpdatedAt: at, Metadata: map[string]any{}, Status: threadBusy}); err != nil {
		f.t.Fatal(err)
	}
}

// run stores run id of thread with status, created at.
func (f *stoppedFiles) run(id, thread, status string, at time.Time) {
	f.t.Helper()
	r := RunRecord{Run: Run{RunID: id, ThreadID: thread, AssistantID: "researcher", Status: status, CreatedAt: at, UpdatedAt: at, Metadata: map[string]any{}}}
	if err := f.st.PutRun(context.Background(), r); err != nil {
		f.t.Fatal(err)
	}
}

// finish runs thread to its end, saved in the checkpoints.
func (f *stoppedFiles) finish(thread string) {
	f.t.Helper()
	if _, err := f.a.Invoke(context.Background(), agent.Prompt("go"), runner.Checkpoints(f.sv, thread)); err != nil {
		f.t.Fatal(err)
	}
}

// restart starts a server over the files.
func (f *stoppedFiles) restart() *harness {
	return newHarness(f.t, Config{Saver: f.sv, Store: f.st})
}

// TestRestartFindsARunThatSavedItsEnd: a run saves its end before it sends
// its last response, so a server can stop after a run ended in the thread's
// checkpoints but before it marked the run. The restarted server marks that
// run success and its thread idle; a run created after the thread's last
// end (it saved nothing) is still an orphan.
func TestRestartFindsARunThatSavedItsEnd(t *testing.T) {
	f := newStoppedFiles(t)
	at := time.Now().Add(-time.Minute)
	f.busyThread("T", at)
	f.busyThread("U", at)
	// T's run was created before the run that saved the end; U's after.
	f.run("r-t", "T", runRunning, at)
	f.finish("T")
	f.finish("U")
	f.run("r-u", "U", runRunning, time.Now().Add(time.Minute))
	h := f.restart()
	for _, c := range []struct{ thread, run, runStatus, threadStatus string }{
		{"T", "r-t", "success", "idle"},
		{"U", "r-u", "error", "error"},
	} {
		var run Run
		h.json("GET", "/threads/"+c.thread+"/runs/"+c.run, nil, 200, &run)
		var th Thread
		h.json("GET", "/threads/"+c.thread, nil, 200, &th)
		if run.Status != c.runStatus || th.Status != c.threadStatus {
			t.Errorf("thread %s: run %q, thread %q; want %q and %q", c.thread, run.Status, th.Status, c.runStatus, c.threadStatus)
		}
	}
}

// TestRestartIdlesAThreadWhoseRunWasMarked: the server stores a finished
// run's record and then its thread's; stopped between the two, it leaves
// the run success and the thread busy. The restart makes the thread idle,
// not an orphan's error, when its saved state ended well.
func TestRestartIdlesAThreadWhoseRunWasMarked(t *testing.T) {
	f := newStoppedFiles(t)
	at := time.Now().Add(-time.Minute)
	f.busyThread("T", at)
	f.run("r", "T", runSuccess, at)
	f.finish("T")
	var th Thread
	f.restart().json("GET", "/threads/T", nil, 200, &th)
	if th.Status != "idle" || th.Error != "" {
		t.Errorf("thread %q (%q), want idle", th.Status, th.Error)
	}
}
