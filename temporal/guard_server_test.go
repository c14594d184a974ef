package temporal_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	daotel "github.com/deepagents-go/deepagents/otel"
	"github.com/deepagents-go/deepagents/runner"
	"github.com/deepagents-go/deepagents/temporal"
	"github.com/deepagents-go/deepagents/tool"
)

// Histories recorded by TestRetriesGuardsAndTracingOnADevServer.
const (
	retryHistory   = "testdata/retry.history.json"
	rawArgsHistory = "testdata/rawargs.history.json"
	otelHistory    = "testdata/otel.history.json"
)

// retryRegistry runs a parent whose model fails (by call number, from 1)
// as fail says before it answers "done".
func retryRegistry(t *testing.T, fail func(n int) error) *temporal.Registry {
	t.Helper()
	reg := temporal.NewRegistry()
	m, _ := failing(fail)
	a, err := agent.New(agent.Config{Model: reg.Model("scripted", m)})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Agent("parent", a); err != nil {
		t.Fatal(err)
	}
	return reg
}

// rawArgsRegistry runs a parent whose model calls read with arguments that
// are not valid JSON, then says "sorry".
func rawArgsRegistry(t *testing.T) *temporal.Registry {
	t.Helper()
	reg := temporal.NewRegistry()
	type in struct {
		Path string `json:"path"`
	}
	read := tool.MustFunc("read", "Read a file.", func(context.Context, *tool.Env, in) (string, error) { return "read", nil })
	m := reg.Model("scripted", scripted.New(scripted.Script{"parent": {Steps: []scripted.Step{
		step("", scripted.StepCall{Name: "read", Args: json.RawMessage(`{"path": "/a.txt"`)}), step("sorry")}}}, scripted.Options{}))
	a, err := agent.New(agent.Config{Model: m, Tools: []tool.Tool{reg.Tool("parent", read)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Agent("parent", a); err != nil {
		t.Fatal(err)
	}
	return reg
}

// echoTool answers every call with "echo", as an activity of the parent.
var echoTool = tool.MustFunc("echo", "Echo.", func(context.Context, *tool.Env, struct{}) (string, error) { return "echo", nil })

// echoes is a script of n calls of echo, then "done".
func echoes(n int) scripted.Script {
	var steps []scripted.Step
	for range n {
		steps = append(steps, step("", tc("echo", `{}`)))
	}
	return scripted.Script{"parent": {Steps: append(steps, step("done"))}}
}

// tracedWorkflowName is a workflow that runs the parent of otelRegistry
// with the otel middleware and a recorder that knows when the workflow
// replays, its spans going to the exporter of the tracer provider tp.
const tracedWorkflowName = "deepagents.test.Traced"

func otelRegistry(t *testing.T, tp *sdktrace.TracerProvider) (*temporal.Registry, func(ctx workflow.Context, in temporal.RunInput) (string, error)) {
	t.Helper()
	reg := temporal.NewRegistry()
	m := reg.Model("scripted", scripted.New(echoes(1), scripted.Options{}))
	a, err := agent.New(agent.Config{Model: m, Tools: []tool.Tool{reg.Tool("parent", echoTool)}, Middleware: []agent.Middleware{daotel.Middleware()}})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Agent("parent", a); err != nil {
		t.Fatal(err)
	}
	wf := func(ctx workflow.Context, in temporal.RunInput) (string, error) {
		rt := temporal.NewRuntime(ctx)
		rctx, cancel := rt.Context()
		defer cancel()
		rec := daotel.NewRecorder(context.Background(), daotel.Config{TracerProvider: tp, Model: "m", Replaying: rt.Replaying})
		// Record, not Observe: Observe's deferred Close, which ends the
		// open spans, also runs when the worker tears the workflow down.
		res, err := agent.Drain(a.Run(daotel.WithRecorder(rctx, rec), agent.Prompt(in.Input), agent.WithRuntime(rt)), rec.Record)
		if res == nil {
			return "", err
		}
		return res.FinalText(), nil
	}
	return reg, wf
}

func newTracer(t *testing.T) (*sdktrace.TracerProvider, *tracetest.InMemoryExporter) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, exp
}

func names(exp *tracetest.InMemoryExporter) []string {
	var out []string
	for _, s := range exp.GetSpans() {
		out = append(out, s.Name)
	}
	slices.Sort(out)
	return out
}

// Model retries, the history guard, invalid arguments and tracing, on a
// real server, one server for all: a 429 with Retry-After is retried by
// Temporal after it; a run whose history reaches the registry's limit
// ends unfinished and is finished in process; a tool call with invalid
// JSON reaches the tool; and a traced run on a worker without a sticky
// cache (which replays the workflow at every task) exports each span
// once, its replay none. With DEEPAGENTS_TEMPORAL_RECORD=1 the histories
// are written to testdata.
func TestRetriesGuardsAndTracingOnADevServer(t *testing.T) {
	c := devClient(t)
	start := func(t *testing.T, reg *temporal.Registry, opts worker.Options, extra func(worker.Worker)) func() {
		t.Helper()
		w := worker.New(c, "deepagents-guards", opts)
		reg.Register(w)
		if extra != nil {
			extra(w)
		}
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		return w.Stop
	}
	run := func(t *testing.T, id, wf string, in temporal.RunInput, out any) *historypb.History {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		r, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: "deepagents-guards"}, wf, in)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Get(ctx, out); err != nil {
			t.Fatal(err)
		}
		return history(ctx, t, c, r)
	}

	t.Run("retry", func(t *testing.T) {
		var mu sync.Mutex
		var at []time.Time
		reg := retryRegistry(t, func(n int) error {
			mu.Lock()
			at = append(at, time.Now())
			mu.Unlock()
			if n <= 2 {
				return &llm.APIError{Kind: llm.ErrKindRateLimit, Provider: "p", StatusCode: 429, Message: "slow down", RetryAfter: 3 * time.Second}
			}
			return nil
		})
		defer start(t, reg, worker.Options{}, nil)()
		var s temporal.Summary
		h := run(t, "retry", temporal.RunAgentWorkflow, temporal.RunInput{Agent: "parent", Input: "hi"}, &s)
		if s.Status != agent.StatusOK || s.Text != "done" {
			t.Fatalf("summary %+v", s)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(at) != 3 {
			t.Fatalf("%d calls, want 3", len(at))
		}
		for i := 1; i < len(at); i++ {
			// The policy alone would wait 1s, then 2s.
			if d := at[i].Sub(at[i-1]); d < 3*time.Second || d > 6*time.Second {
				t.Errorf("attempt %d came %v after the one before, want Retry-After's 3s", i+1, d)
			}
		}
		var attempt int32
		for _, ev := range h.Events {
			if ev.GetEventType() == enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED {
				attempt = ev.GetActivityTaskStartedEventAttributes().GetAttempt()
			}
		}
		if attempt != 3 {
			t.Errorf("the history's activity started on attempt %d, want 3", attempt)
		}
		if err := replayerOf(t, retryRegistry(t, func(int) error { return nil })).ReplayWorkflowHistory(nil, h); err != nil {
			t.Fatal(err)
		}
		record(t, retryHistory, h)
	})

	t.Run("history limit", func(t *testing.T) {
		store := openStore(t)
		reg := temporal.NewRegistry()
		reg.Store = store
		reg.MaxHistoryLength = 40
		m := scripted.New(echoes(12), scripted.Options{})
		a, err := agent.New(agent.Config{Model: reg.Model("scripted", m), Tools: []tool.Tool{reg.Tool("parent", echoTool)}})
		if err != nil {
			t.Fatal(err)
		}
		if err := reg.Agent("parent", a); err != nil {
			t.Fatal(err)
		}
		defer start(t, reg, worker.Options{}, nil)()
		var s temporal.Summary
		h := run(t, "history-limit", temporal.RunAgentWorkflow, temporal.RunInput{Agent: "parent", Thread: "T", Input: "go"}, &s)
		if s.Status != agent.StatusError || !strings.Contains(s.Error, "resume its thread") || s.Rounds == 0 || s.Rounds >= 12 {
			t.Fatalf("summary %+v", s)
		}
		t.Logf("stopped after %d rounds, %d events: %s", s.Rounds, len(h.Events), s.Error)
		if n := len(h.Events); n > 60 {
			t.Errorf("the history grew to %d events past its limit of 40", n)
		}
		// The run stopped unfinished: in process, the thread resumes and
		// finishes, its rounds counted on from where the workflow stopped.
		res, err := a.Invoke(context.Background(), agent.Input{}, runner.Checkpoints(store, "T"))
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != agent.StatusOK || res.FinalText() != "done" || res.Rounds != 13 {
			t.Fatalf("the resumed run: %s %q after %d rounds", res.Status, res.FinalText(), res.Rounds)
		}
	})

	t.Run("raw args", func(t *testing.T) {
		defer start(t, rawArgsRegistry(t), worker.Options{}, nil)()
		var s temporal.Summary
		h := run(t, "raw-args", temporal.RunAgentWorkflow, temporal.RunInput{Agent: "parent", Input: "read it"}, &s)
		if s.Status != agent.StatusOK || s.Text != "sorry" {
			t.Fatalf("summary %+v", s)
		}
		if err := replayerOf(t, rawArgsRegistry(t)).ReplayWorkflowHistory(nil, h); err != nil {
			t.Fatal(err)
		}
		record(t, rawArgsHistory, h)
	})

	t.Run("otel", func(t *testing.T) {
		// Without a sticky cache, every workflow task replays the
		// workflow from its start.
		worker.SetStickyWorkflowCacheSize(0)
		defer worker.SetStickyWorkflowCacheSize(10_000)
		tp, exp := newTracer(t)
		reg, wf := otelRegistry(t, tp)
		stop := start(t, reg, worker.Options{}, func(w worker.Worker) {
			w.RegisterWorkflowWithOptions(wf, workflow.RegisterOptions{Name: tracedWorkflowName})
		})
		var text string
		h := run(t, "otel", tracedWorkflowName, temporal.RunInput{Agent: "parent", Input: "go"}, &text)
		stop()
		if text != "done" {
			t.Fatalf("text %q", text)
		}
		if got, want := names(exp), []string{"chat m", "chat m", "execute_tool echo", "invoke_agent parent"}; !slices.Equal(got, want) {
			t.Errorf("the live run exported %v, want %v", got, want)
		}
		replayOtel(t, h)
		record(t, otelHistory, h)
	})
}

// replayOtel replays h, a history of the traced workflow (nil: the
// committed one), and fails unless it replays without exporting a span.
func replayOtel(t *testing.T, h *historypb.History) {
	t.Helper()
	tp, exp := newTracer(t)
	reg, wf := otelRegistry(t, tp)
	r := replayerOf(t, reg)
	r.RegisterWorkflowWithOptions(wf, workflow.RegisterOptions{Name: tracedWorkflowName})
	var err error
	if h != nil {
		err = r.ReplayWorkflowHistory(nil, h)
	} else {
		err = r.ReplayWorkflowHistoryFromJSONFile(nil, otelHistory)
	}
	if err != nil {
		t.Fatal(err)
	}
	if got := names(exp); len(got) != 0 {
		t.Errorf("the replay exported %v", got)
	}
}

// A traced run's committed history replays with the otel middleware and a
// recorder on the agent, and exports no span: the run exported them when
// it ran.
func TestOtelHistoryReplaysWithoutSpans(t *testing.T) { replayOtel(t, nil) }

// The committed history of a model call retried twice by Temporal (a 429
// with Retry-After) replays: the attempt that answered comes back with the
// response, and the retries are told to the run again.
func TestRetryHistoryReplays(t *testing.T) {
	if err := replayerOf(t, retryRegistry(t, func(int) error { return nil })).ReplayWorkflowHistoryFromJSONFile(nil, retryHistory); err != nil {
		t.Fatalf("%s does not replay: %v", retryHistory, err)
	}
}

// The committed history of a tool call with invalid JSON arguments, sent
// to the tool's activity as they are (the deepagents.raw-args change),
// replays.
func TestRawArgsHistoryReplays(t *testing.T) {
	if err := replayerOf(t, rawArgsRegistry(t)).ReplayWorkflowHistoryFromJSONFile(nil, rawArgsHistory); err != nil {
		t.Fatalf("%s does not replay: %v", rawArgsHistory, err)
	}
}
