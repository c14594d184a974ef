package temporal_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/subagent"
	"github.com/deepagents-go/deepagents/temporal"
	"github.com/deepagents-go/deepagents/tool"
)

// devServerEnv names the dev server binary (temporal/devserver) that the
// tests against a real Temporal server start.
const devServerEnv = "DEEPAGENTS_TEMPORAL_DEVSERVER"

// recordEnv, set to 1, has TestDelegationOnADevServer write the history it
// recorded to testdata, for the replay test to replay.
const recordEnv = "DEEPAGENTS_TEMPORAL_RECORD"

const delegationHistory = "testdata/delegation.history.json"

// devClient starts the dev server and returns a client of its namespace,
// closed when the test ends.
func devClient(t *testing.T) client.Client {
	t.Helper()
	address, namespace := devServer(t)
	c, err := client.Dial(client.Options{HostPort: address, Namespace: namespace, DataConverter: temporal.DataConverter()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// replayerOf is a replayer of the RunAgent workflows of reg.
func replayerOf(t *testing.T, reg *temporal.Registry) worker.WorkflowReplayer {
	t.Helper()
	r, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{DataConverter: temporal.DataConverter()})
	if err != nil {
		t.Fatal(err)
	}
	reg.RegisterWorkflow(r)
	return r
}

// devServer starts the dev server binary and returns its address and
// namespace; it stops it when the test ends.
func devServer(t *testing.T) (address, namespace string) {
	t.Helper()
	bin := os.Getenv(devServerEnv)
	if bin == "" {
		t.Skipf("%s is not set: build temporal/devserver (cd temporal/devserver && go build -o /tmp/temporal-devserver .) and set it to the binary to run this test against a real Temporal server", devServerEnv)
	}
	cmd := exec.Command(bin)
	cmd.Stderr = os.Stderr
	dieWithTest(cmd)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	type ready struct {
		Address   string `json:"address"`
		Namespace string `json:"namespace"`
	}
	line := make(chan ready, 1)
	go func() {
		var r ready
		if sc := bufio.NewScanner(out); sc.Scan() {
			_ = json.Unmarshal(sc.Bytes(), &r)
		}
		line <- r
	}()
	select {
	case r := <-line:
		if r.Address == "" {
			t.Fatal("the dev server printed no address")
		}
		return r.Address, r.Namespace
	case <-time.After(2 * time.Minute):
		t.Fatal("the dev server did not start within 2 minutes")
	}
	return "", ""
}

// The delegation runs as a RunAgent workflow on a real Temporal server,
// with a worker in this process; its summary is the one of the test
// environment, and its history replays.
func TestDelegationOnADevServer(t *testing.T) {
	c := devClient(t)
	reg, _ := delegation(t, 0)
	w := worker.New(c, "deepagents-test", worker.Options{})
	reg.Register(w)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "delegation", TaskQueue: "deepagents-test"},
		temporal.RunAgentWorkflow, temporal.RunInput{Agent: "parent", Thread: "T", Input: "delegate"})
	if err != nil {
		t.Fatal(err)
	}
	var s temporal.Summary
	if err := run.Get(ctx, &s); err != nil {
		t.Fatal(err)
	}
	if s.Status != agent.StatusOK || s.Text != "all done" || len(s.Files) != 3 || len(s.Children) != 2 {
		t.Fatalf("summary %+v", s)
	}

	h := history(ctx, t, c, run)
	replay(t, h)
	// delegationHistory is of a workflow that ran its subagents in its own
	// code, before they were child workflows: a new run cannot record it
	// again (TestChildWorkflowsOnADevServer records the new one).
}

// history is the whole history of run.
func history(ctx context.Context, t *testing.T, c client.Client, run client.WorkflowRun) *historypb.History {
	t.Helper()
	var h historypb.History
	for it := c.GetWorkflowHistory(ctx, run.GetID(), run.GetRunID(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT); it.HasNext(); {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		h.Events = append(h.Events, ev)
	}
	return &h
}

// record writes h to path when DEEPAGENTS_TEMPORAL_RECORD is 1.
func record(t *testing.T, path string, h *historypb.History) {
	t.Helper()
	if os.Getenv(recordEnv) != "1" {
		return
	}
	b, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s (%d events)", path, len(h.Events))
}

// replayer is a replayer of RunAgent workflows of the delegation, with the
// helper's note an activity or not.
func replayer(t *testing.T, noteActivity bool) worker.WorkflowReplayer {
	t.Helper()
	reg, _ := delegationWith(t, 0, noteActivity)
	return replayerOf(t, reg)
}

func replay(t *testing.T, h *historypb.History) {
	t.Helper()
	if err := replayer(t, true).ReplayWorkflowHistory(nil, h); err != nil {
		t.Fatalf("the history does not replay: %v", err)
	}
}

// The committed history of a delegation replays on the workflow as it is
// now: a change to the loop or the runtime that would make running
// workflows take other steps fails here.
func TestDelegationHistoryReplays(t *testing.T) {
	if err := replayer(t, true).ReplayWorkflowHistoryFromJSONFile(nil, delegationHistory); err != nil {
		t.Fatalf("%s does not replay: %v", delegationHistory, err)
	}
	// The same agent with the helper's note run in the workflow rather
	// than as an activity takes other steps: the replay says so.
	err := replayer(t, false).ReplayWorkflowHistoryFromJSONFile(nil, delegationHistory)
	if err == nil || !strings.Contains(err.Error(), "TMPRL1100") {
		t.Fatalf("a changed workflow replayed with %v, want a nondeterminism error (TMPRL1100)", err)
	}
}

// waitingDelegation registers a parent that delegates to a helper, whose
// one call, of wait, is an activity.
func waitingDelegation(t *testing.T, wait tool.Tool) *temporal.Registry {
	t.Helper()
	reg := temporal.NewRegistry()
	reg.HeartbeatTimeout = 2 * time.Second
	m := reg.Model("scripted", scripted.New(scripted.Script{
		"parent": {Steps: []scripted.Step{step("", tc("task", `{"description":"wait","subagent_type":"helper"}`)), step("done")}},
		"helper": {Steps: []scripted.Step{step("", tc("wait", `{}`)), step("waited")}},
	}, scripted.Options{}))
	task, err := subagent.NewTask(subagent.Config{Model: m,
		Subagents: []subagent.Spec{{Name: "helper", Description: "Helps.", Tools: []tool.Tool{reg.Tool("helper", wait)}}}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{Model: m, Tools: []tool.Tool{task}})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Agent("parent", a); err != nil {
		t.Fatal(err)
	}
	return reg
}

const cancelHistory = "testdata/cancel.history.json"

// On a real server, cancelling the workflow reaches a subagent's tool call
// running in an activity on the worker, through the answer to its
// heartbeat; the run ends cancelled, its subagent too. With
// DEEPAGENTS_TEMPORAL_RECORD=1 its history is written to testdata for the
// replay test.
func TestCancellationReachesARunningToolOnADevServer(t *testing.T) {
	c := devClient(t)
	started, stopped := make(chan struct{}), make(chan error, 1)
	wait := tool.MustFunc("wait", "Wait.", func(ctx context.Context, _ *tool.Env, _ struct{}) (string, error) {
		close(started)
		select {
		case <-ctx.Done():
			stopped <- ctx.Err()
			return "", ctx.Err()
		case <-time.After(time.Minute):
			stopped <- errors.New("not cancelled within a minute")
			return "waited", nil
		}
	})
	reg := waitingDelegation(t, wait)
	w := worker.New(c, "deepagents-cancel", worker.Options{})
	reg.Register(w)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "cancel", TaskQueue: "deepagents-cancel"},
		temporal.RunAgentWorkflow, temporal.RunInput{Agent: "parent", Input: "wait"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("the tool did not start")
	}
	if err := c.CancelWorkflow(ctx, run.GetID(), run.GetRunID()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-stopped:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the tool ended with %v, want its context cancelled", err)
		}
	case <-ctx.Done():
		t.Fatal("the tool did not end")
	}
	var ce *sdktemporal.CanceledError
	if err := run.Get(ctx, nil); !errors.As(err, &ce) {
		t.Fatalf("the workflow ended with %v, want it cancelled", err)
	}
	var s temporal.Summary
	if err := ce.Details(&s); err != nil {
		t.Fatal(err)
	}
	if s.Status != agent.StatusCancelled || len(s.Children) != 1 || s.Children[0].Status != agent.StatusCancelled {
		t.Fatalf("summary %+v", s)
	}
	h := history(ctx, t, c, run)
	replayed := replayerOf(t, waitingDelegation(t, wait))
	if err := replayed.ReplayWorkflowHistory(nil, h); err != nil {
		t.Fatalf("the history does not replay: %v", err)
	}
	record(t, cancelHistory, h)
}

// The committed history of a cancelled delegation replays: the
// cancellation reaches the loop, the activity is cancelled and the parent
// waits for its subagent on a timer, in the same order.
func TestCancelHistoryReplays(t *testing.T) {
	// The tool's body does not matter: its calls are activities, whose
	// outcomes the history holds.
	wait := tool.MustFunc("wait", "Wait.", func(context.Context, *tool.Env, struct{}) (string, error) { return "", nil })
	r := replayerOf(t, waitingDelegation(t, wait))
	if err := r.ReplayWorkflowHistoryFromJSONFile(nil, cancelHistory); err != nil {
		t.Fatalf("%s does not replay: %v", cancelHistory, err)
	}
}

const threadHistory = "testdata/thread.history.json"

// TestLaptopWorkerLaptop with the worker's part on a real Temporal server:
// the thread on a SQLite file moves from a laptop run to a worker and
// back. The history it got replays (with DEEPAGENTS_TEMPORAL_RECORD=1 it
// is written to testdata for TestThreadHistoryReplays).
func TestLaptopWorkerLaptopOnADevServer(t *testing.T) {
	c := devClient(t)
	laptopWorkerLaptop(t, openStore(t), func(reg *temporal.Registry, in temporal.RunInput) temporal.Summary {
		w := worker.New(c, "deepagents-thread", worker.Options{})
		reg.Register(w)
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "thread", TaskQueue: "deepagents-thread"}, temporal.RunAgentWorkflow, in)
		if err != nil {
			t.Fatal(err)
		}
		var s temporal.Summary
		if err := run.Get(ctx, &s); err != nil {
			t.Fatal(err)
		}
		h := history(ctx, t, c, run)
		if err := replayerOf(t, reg).ReplayWorkflowHistory(nil, h); err != nil {
			t.Fatalf("the history does not replay: %v", err)
		}
		record(t, threadHistory, h)
		return s
	})
}
