package temporal_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/checkpoint/postgres"
	"github.com/deepagents-go/deepagents/checkpoint/sqlite"
	"github.com/deepagents-go/deepagents/internal/demoagent"
	"github.com/deepagents-go/deepagents/internal/pgtest"
	"github.com/deepagents-go/deepagents/runner"
	"github.com/deepagents-go/deepagents/temporal"
)

// The deepagents-temporal binary is built by the tests that run it, from
// the source under test, into the test's temporary directory: `go test`
// alone then runs them, no binary built earlier can be stale, and the
// build cache makes the build cheap after the first.

// buildBinary builds cmd/deepagents-temporal and returns its path.
func buildBinary(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to build cmd/deepagents-temporal: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "deepagents-temporal")
	cmd := exec.Command(goBin, "build", "-o", bin, "./cmd/deepagents-temporal")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/deepagents-temporal: %v\n%s", err, out)
	}
	return bin
}

// testAgentEnv and testAgent are how the binary's worker registers the
// agent of the kill-a-worker test: an environment variable naming the file
// its calls append their side effects to (see
// cmd/deepagents-temporal/testagent.go).
const (
	testAgentEnv = "DEEPAGENTS_TEMPORAL_TEST_AGENT"
	testAgent    = "test-killworker"
)

// workerProc is a worker process of the binary.
type workerProc struct {
	cmd    *exec.Cmd
	stderr *syncBuffer
	done   chan struct{}
}

// startWorker starts `deepagents-temporal worker` with args and waits
// for its ready line; the process is killed when the test ends, if it is
// still running.
func startWorker(t *testing.T, bin string, env []string, args ...string) *workerProc {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"worker"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	dieWithTest(cmd)
	w := &workerProc{cmd: cmd, stderr: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stderr = w.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			ready <- sc.Text()
		}
		close(ready)
		_, _ = io.Copy(io.Discard, out)
	}()
	go func() { _ = cmd.Wait(); close(w.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-w.done
		if t.Failed() {
			t.Logf("worker %d stderr:\n%s", cmd.Process.Pid, w.stderr)
		}
	})
	select {
	case line, ok := <-ready:
		if !ok || !strings.Contains(line, "ready on") {
			<-w.done
			t.Fatalf("the worker did not get ready (%q); stderr:\n%s", line, w.stderr)
		}
	case <-time.After(time.Minute):
		t.Fatalf("the worker printed no ready line within a minute; stderr:\n%s", w.stderr)
	}
	return w
}

// syncBuffer is a process's stderr, read while it writes.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// sideEffectLines reads the side-effect file: one line per model or tool
// call that ran, "model PATH ROUND attempt N" or "tool CALLID attempt N".
func sideEffectLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// sideEffectKey is what a side-effect line ran, without its attempt.
func sideEffectKey(line string) string {
	key, _, _ := strings.Cut(line, " attempt ")
	return key
}

// activityKey is the side-effect key of the activity a history schedules.
func activityKey(t *testing.T, attrs *historypb.ActivityTaskScheduledEventAttributes) string {
	t.Helper()
	dc := temporal.DataConverter()
	switch attrs.GetActivityType().GetName() {
	case temporal.ModelActivity:
		var in temporal.ModelCall
		if err := dc.FromPayloads(attrs.GetInput(), &in); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("model %s %d", in.CallInfo.Path, in.CallInfo.Round)
	case temporal.ToolActivity:
		var in temporal.ToolRun
		if err := dc.FromPayloads(attrs.GetInput(), &in); err != nil {
			t.Fatal(err)
		}
		return "tool " + in.CallID
	}
	t.Fatalf("unexpected activity %s", attrs.GetActivityType().GetName())
	return ""
}

// activityRecord is what a history says about one activity.
type activityRecord struct {
	key       string
	identity  string // the worker that started its last attempt
	completed bool
	timedOut  bool
}

// activities reads the activities of a history, in the order they were
// scheduled.
func activities(t *testing.T, h *historypb.History) []*activityRecord {
	t.Helper()
	var out []*activityRecord
	byID := map[int64]*activityRecord{}
	for _, ev := range h.GetEvents() {
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			r := &activityRecord{key: activityKey(t, ev.GetActivityTaskScheduledEventAttributes())}
			byID[ev.GetEventId()] = r
			out = append(out, r)
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
			a := ev.GetActivityTaskStartedEventAttributes()
			byID[a.GetScheduledEventId()].identity = a.GetIdentity()
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
			byID[ev.GetActivityTaskCompletedEventAttributes().GetScheduledEventId()].completed = true
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
			byID[ev.GetActivityTaskTimedOutEventAttributes().GetScheduledEventId()].timedOut = true
		}
	}
	return out
}

// threadFiles is the content of each file of a thread's latest checkpoint
// in the SQLite file db.
func threadFiles(t *testing.T, db, thread string) map[string]string {
	t.Helper()
	s, err := sqlite.Open(db, sqlite.Options{BusyTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	return storeFiles(t, s, thread)
}

// storeFiles is the content of each file of a thread's latest checkpoint
// in s.
func storeFiles(t *testing.T, s checkpoint.Reader, thread string) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cp, err := s.Get(ctx, checkpoint.Ref{ThreadID: thread})
	if err != nil {
		t.Fatalf("thread %s: %v", thread, err)
	}
	files := map[string]string{}
	for p, f := range cp.State.Files {
		files[p] = f.Content
	}
	return files
}

// A worker process killed (SIGKILL) in the middle of a run with parallel
// tool calls and a subagent, on the binary's worker with the thread
// database deepagents uses: a second worker process takes the run over and
// finishes it. No activity whose completion the history records ran again
// (each call's own side effect is there once), and the run ends with the
// text, subagent answers and files of the same run left alone.
func TestKillAWorkerOnADevServer(t *testing.T) {
	db := filepath.Join(t.TempDir(), "threads.db")
	killAWorker(t, db, func(thread string) map[string]string { return threadFiles(t, db, thread) })
}

// TestKillAWorkerOnADevServer with the two worker processes on one
// PostgreSQL database, as a fleet's workers are.
func TestKillAWorkerOnPostgres(t *testing.T) {
	dsn, schema := pgtest.Schema(t)
	store, err := postgres.Open(t.Context(), dsn, postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	killAWorker(t, u.String(), func(thread string) map[string]string { return storeFiles(t, store, thread) })
}

// killAWorker is the kill-a-worker test with the workers' --db set to db;
// files reads the files of a thread's latest checkpoint.
func killAWorker(t *testing.T, db string, files func(thread string) map[string]string) {
	address, namespace := devServer(t)
	bin := buildBinary(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	c, err := client.DialContext(ctx, client.Options{HostPort: address, Namespace: namespace, DataConverter: temporal.DataConverter()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	effects := filepath.Join(t.TempDir(), "side-effects")
	env := []string{testAgentEnv + "=" + effects}
	args := []string{"--address", address, "--namespace", namespace, "--task-queue", "killworker", "--db", db, "--demo"}
	a := startWorker(t, bin, env, args...)

	start := func(thread string) client.WorkflowRun {
		t.Helper()
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: thread, TaskQueue: "killworker"},
			temporal.RunAgentWorkflow, temporal.RunInput{Agent: testAgent, Thread: thread, Input: "go"})
		if err != nil {
			t.Fatal(err)
		}
		return run
	}
	get := func(run client.WorkflowRun) temporal.Summary {
		t.Helper()
		var s temporal.Summary
		if err := run.Get(ctx, &s); err != nil {
			t.Fatalf("workflow %s: %v", run.GetID(), err)
		}
		return s
	}

	// The same run, left alone.
	calm := get(start("calm"))
	if calm.Status != agent.StatusOK || calm.Text != "all done" || len(calm.Children) != 1 || calm.Children[0].Text != "helped" {
		t.Fatalf("the run left alone: %+v", calm)
	}
	calmEffects := sideEffectLines(t, effects)
	before := len(calmEffects)

	// The run killed: once the record call of the parent's first step has
	// run and the helper's slow call (in the same step) runs, worker A
	// goes.
	killed := start("killed")
	deadline := time.Now().Add(time.Minute)
	for {
		lines := sideEffectLines(t, effects)[before:]
		keys := make([]string, len(lines))
		for i, l := range lines {
			keys[i] = sideEffectKey(l)
		}
		if slices.Contains(keys, "tool r1") && slices.Contains(keys, "tool s1") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the slow call did not start within a minute; side effects: %q", lines)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-a.done
	b := startWorker(t, bin, env, args...)
	s := get(killed)

	if s.Status != agent.StatusOK || s.Text != calm.Text || !slices.Equal(s.Files, calm.Files) || len(s.Children) != 1 ||
		s.Children[0].Text != calm.Children[0].Text || s.Children[0].Status != calm.Children[0].Status {
		t.Fatalf("the run killed ended with %+v, the run left alone with %+v", s, calm)
	}
	if got, want := files("killed"), files("calm"); !maps.Equal(got, want) || len(got) != 3 {
		t.Fatalf("the files of the run killed are %q, those of the run left alone %q", got, want)
	}

	// What ran: each call once, and the same calls as the run left alone.
	ran := map[string]int{}
	for _, l := range sideEffectLines(t, effects)[before:] {
		ran[sideEffectKey(l)]++
	}
	calmRan := map[string]int{}
	for _, l := range calmEffects {
		calmRan[sideEffectKey(l)]++
	}
	if !maps.Equal(ran, calmRan) {
		t.Errorf("the run killed ran %v, the run left alone %v", ran, calmRan)
	}

	// The subagent's activities are in its child workflow's history.
	var recs []*activityRecord
	for _, h := range historyTree(ctx, t, c, killed.GetID(), killed.GetRunID()) {
		recs = append(recs, activities(t, h)...)
	}
	byA, byB := fmt.Sprintf("%d@", a.cmd.Process.Pid), fmt.Sprintf("%d@", b.cmd.Process.Pid)
	var onA, onB, lost []string
	for _, r := range recs {
		switch {
		case r.completed && ran[r.key] != 1:
			t.Errorf("activity %s completed in the history but ran %d times", r.key, ran[r.key])
		case r.timedOut:
			lost = append(lost, r.key)
		}
		if r.completed && strings.HasPrefix(r.identity, byA) {
			onA = append(onA, r.key)
		}
		if r.completed && strings.HasPrefix(r.identity, byB) {
			onB = append(onB, r.key)
		}
	}
	// The slow call was running on A when it was killed: its activity timed
	// out, and ran once (Temporal does not retry these activities).
	if !slices.Equal(lost, []string{"tool s1"}) || ran["tool s1"] != 1 {
		t.Errorf("activities timed out: %q (want the slow call's alone), which ran %d times", lost, ran["tool s1"])
	}
	if !slices.Contains(onA, "tool r1") || len(onB) == 0 {
		t.Errorf("completed on worker A: %q (want the record call among them); on worker B: %q (want some)", onA, onB)
	}
	t.Logf("completed on A: %q; on B: %q; timed out: %q", onA, onB, lost)
}

// runBinary runs the binary with args and returns its stdout, stderr and
// exit status.
func runBinary(t *testing.T, bin string, args ...string) (stdout, stderr string, status int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		status = ee.ExitCode()
	case err != nil:
		t.Fatalf("%s %q: %v", bin, args, err)
	}
	return out.String(), errOut.String(), status
}

// The binary's commands against a worker of the binary: a run of the demo
// agent waits for its write to be approved (status 3, the call listed); a
// second run on the thread is refused while the first is open; decisions
// that fit no waiting call are refused by the workflow and change
// nothing; approving finishes the run with the demo's answer and its file
// in the thread database; a run whose wait timed out is resumed, waits
// again and is rejected; SIGTERM stops the worker.
func TestBinaryOnADevServer(t *testing.T) {
	address, namespace := devServer(t)
	bin := buildBinary(t)
	db := filepath.Join(t.TempDir(), "threads.db")
	conn := []string{"--address", address, "--namespace", namespace, "--task-queue", "binary"}
	w := startWorker(t, bin, nil, append(conn, "--db", db, "--demo")...)
	// A second worker, on a queue of its own, whose runs wait 6 s for
	// decisions.
	short := []string{"--address", address, "--namespace", namespace, "--task-queue", "binary-short"}
	startWorker(t, bin, nil, append(short, "--db", db, "--demo", "--approval-timeout", "6s")...)

	out, errOut, st := runBinary(t, bin, append(append([]string{"run"}, conn...), "--thread", "T", "--agent", "demo", "write a report")...)
	if st != 3 || !strings.Contains(out, "write_1  write_file") || !strings.Contains(errOut, "approve --thread T") {
		t.Fatalf("run: status %d, stdout %q, stderr %q; want 3 and the write waiting", st, out, errOut)
	}
	_, errOut, st = runBinary(t, bin, append(append([]string{"run"}, conn...), "--thread", "T", "--agent", "demo", "again")...)
	if st != 1 || !strings.Contains(errOut, "thread T has a run in progress (workflow deepagents-thread-T)") {
		t.Fatalf("a second run on the thread: status %d, stderr %q; want it refused", st, errOut)
	}
	bad := filepath.Join(t.TempDir(), "decisions.json")
	if err := os.WriteFile(bad, []byte(`[{"type":"approve","call_id":"nope"}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, st = runBinary(t, bin, append(append([]string{"approve"}, conn...), "--thread", "T", "--decisions", bad)...)
	if st != 1 || !strings.Contains(errOut, `the workflow refused the decisions: no call "nope" is waiting`) {
		t.Fatalf("approve with a wrong call id: status %d, stderr %q; want the validator's refusal", st, errOut)
	}
	out, errOut, st = runBinary(t, bin, append(append([]string{"approve"}, conn...), "--thread", "T", "--list")...)
	if st != 0 || !strings.Contains(out, "write_1  write_file") {
		t.Fatalf("approve --list after a refusal: status %d, stdout %q, stderr %q; want the write still waiting", st, out, errOut)
	}
	out, errOut, st = runBinary(t, bin, append(append([]string{"approve"}, conn...), "--thread", "T", "--approve")...)
	if st != 0 || !strings.Contains(out, "approve write_1\n") || !strings.HasSuffix(out, "Done: the report is in /report.md.\n") {
		t.Fatalf("approve: status %d, stdout %q, stderr %q; want the run finished", st, out, errOut)
	}
	if files := threadFiles(t, db, "T"); !strings.HasPrefix(files["/report.md"], "# Report") {
		t.Fatalf("the thread's files: %q; want /report.md", files)
	}

	// A run on a task queue no worker polls says so.
	out, errOut, st = runBinary(t, bin, "run", "--address", address, "--namespace", namespace, "--task-queue", "nobody",
		"--thread", "N", "--detach", "hello")
	if st != 0 || out != "deepagents-thread-N\n" || !strings.Contains(errOut, "no worker polls task queue nobody") {
		t.Fatalf("run --detach on a queue without workers: status %d, stdout %q, stderr %q", st, out, errOut)
	}

	// A run whose wait for decisions timed out ends interrupted; resume
	// opens its thread again in a new workflow, which waits again.
	_, errOut, st = runBinary(t, bin, append(append([]string{"run"}, short...), "--thread", "R", "--agent", "demo", "--detach", "write a report")...)
	if st != 0 {
		t.Fatalf("run --detach: status %d, stderr %q", st, errOut)
	}
	c, err := client.DialContext(t.Context(), client.Options{HostPort: address, Namespace: namespace, DataConverter: temporal.DataConverter()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var s temporal.Summary
	if err := c.GetWorkflow(ctx, "deepagents-thread-R", "").Get(ctx, &s); err != nil || s.Status != agent.StatusInterrupted {
		t.Fatalf("the run whose wait timed out: %+v, %v; want it interrupted", s, err)
	}
	_, errOut, st = runBinary(t, bin, append(append([]string{"approve"}, short...), "--thread", "R", "--approve")...)
	if st != 1 || !strings.Contains(errOut, "the run of thread R has ended") || !strings.Contains(errOut, "resume --thread R") {
		t.Fatalf("approve after the wait timed out: status %d, stderr %q; want it refused, saying to resume", st, errOut)
	}
	out, errOut, st = runBinary(t, bin, append(append([]string{"resume"}, short...), "--thread", "R", "--agent", "demo")...)
	if st != 3 || !strings.Contains(out, "write_1  write_file") {
		t.Fatalf("resume: status %d, stdout %q, stderr %q; want 3 and the write waiting again", st, out, errOut)
	}
	out, errOut, st = runBinary(t, bin, append(append([]string{"approve"}, short...), "--thread", "R", "--reject", "--message", "no")...)
	if st != 0 || !strings.Contains(out, "I did not write /report.md (you rejected it)") {
		t.Fatalf("approve --reject after resume: status %d, stdout %q, stderr %q", st, out, errOut)
	}

	if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.done:
		if code := w.cmd.ProcessState.ExitCode(); code != 0 {
			t.Fatalf("the worker exited with %d on SIGTERM; stderr:\n%s", code, w.stderr)
		}
	case <-time.After(time.Minute):
		t.Fatal("the worker did not stop within a minute of SIGTERM")
	}
}

// A thread started in process (as `deepagents run --thread L` does, on the
// same SQLite file) and stopped waiting for an approval is resumed by the
// binary's worker, approved through the binary, and finished there; the
// thread then takes another turn in process: one thread, one store.
func TestLaptopThenBinaryOnADevServer(t *testing.T) {
	address, namespace := devServer(t)
	bin := buildBinary(t)
	db := filepath.Join(t.TempDir(), "threads.db")
	store, err := sqlite.Open(db, sqlite.Options{BusyTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	a, err := demoagent.New("demo", 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	res, err := a.Invoke(ctx, agent.Prompt("write a report"), runner.Checkpoints(store, "L"))
	// An interrupted run comes back with an error that says so.
	if res == nil || res.Status != agent.StatusInterrupted {
		t.Fatalf("the laptop's run: %v; want it waiting for the write", err)
	}

	conn := []string{"--address", address, "--namespace", namespace, "--task-queue", "laptop"}
	startWorker(t, bin, nil, append(conn, "--db", db, "--demo")...)
	out, errOut, st := runBinary(t, bin, append(append([]string{"resume"}, conn...), "--thread", "L", "--agent", "demo")...)
	if st != 3 || !strings.Contains(out, "write_1  write_file") {
		t.Fatalf("resume on the worker: status %d, stdout %q, stderr %q; want the laptop's write waiting", st, out, errOut)
	}
	out, errOut, st = runBinary(t, bin, append(append([]string{"approve"}, conn...), "--thread", "L", "--approve")...)
	if st != 0 || !strings.HasSuffix(out, "Done: the report is in /report.md.\n") {
		t.Fatalf("approve: status %d, stdout %q, stderr %q", st, out, errOut)
	}

	res, err = a.Invoke(ctx, agent.Prompt("and again"), runner.Checkpoints(store, "L"))
	if res == nil || res.Status != agent.StatusInterrupted || len(res.Interrupts) != 1 || res.Interrupts[0].CallID != "write_2" {
		t.Fatalf("the laptop's second turn: %v; want it waiting for its own write", err)
	}
	if !strings.HasPrefix(res.State.Files["/report.md"].Content, "# Report") {
		t.Fatalf("the laptop's second turn does not see the report the worker wrote: %q", res.State.Files)
	}
}

// historyTree is the history of the workflow id/runID and those of its
// child workflows, theirs included.
func historyTree(ctx context.Context, t *testing.T, c client.Client, id, runID string) []*historypb.History {
	t.Helper()
	var h historypb.History
	for it := c.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT); it.HasNext(); {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		h.Events = append(h.Events, ev)
	}
	out := []*historypb.History{&h}
	for _, ev := range h.Events {
		if ev.GetEventType() == enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED {
			we := ev.GetChildWorkflowExecutionStartedEventAttributes().GetWorkflowExecution()
			out = append(out, historyTree(ctx, t, c, we.GetWorkflowId(), we.GetRunId())...)
		}
	}
	return out
}
