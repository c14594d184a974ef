package temporal_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/fstools"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/subagent"
	"github.com/deepagents-go/deepagents/temporal"
	"github.com/deepagents-go/deepagents/todos"
	"github.com/deepagents-go/deepagents/tool"
	"github.com/deepagents-go/deepagents/vfs"
)

type writeIn struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

var writeTool = temporal.InWorkflow(tool.MustFunc("write", "Write a file.", func(ctx context.Context, env *tool.Env, in writeIn) (string, error) {
	return "wrote " + in.Path, env.Files.Write(ctx, in.Path, in.Content)
}))

var noteTool = temporal.InWorkflow(tool.MustFunc("note", "Take a note.", func(context.Context, *tool.Env, struct{}) (string, error) { return "noted", nil }))

func step(content string, calls ...scripted.StepCall) scripted.Step {
	return scripted.Step{Content: content, ToolCalls: calls}
}

func tc(name, args string) scripted.StepCall {
	return scripted.StepCall{Name: name, Args: json.RawMessage(args)}
}

var start = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// delegation registers, on a fresh registry, the parallel delegation of
// subagent's cooperative runtime test: a parent that starts two subagents
// side by side through the task tool and writes a file itself in the same
// step, each subagent making tool calls of its own. The model is the
// scripted one, registered as an activity; the helper's note tool is an
// activity too, the other tools run in the workflow.
func delegation(t *testing.T, limit int) (*temporal.Registry, *agent.Agent) {
	t.Helper()
	return delegationWith(t, limit, true)
}

// delegationWith is delegation, with the helper's note an activity or
// not.
func delegationWith(t *testing.T, limit int, noteActivity bool) (*temporal.Registry, *agent.Agent) {
	t.Helper()
	reg := temporal.NewRegistry()
	helperNote := noteTool
	if noteActivity {
		helperNote = reg.Tool("helper", noteTool)
	}
	m := reg.Model("scripted", scripted.New(scripted.Script{
		"parent": {Steps: []scripted.Step{
			step("", scripted.StepCall{ID: "t1", Name: "task", Args: json.RawMessage(`{"description":"write a","subagent_type":"general-purpose"}`)},
				scripted.StepCall{ID: "t2", Name: "task", Args: json.RawMessage(`{"description":"write b","subagent_type":"helper"}`)},
				tc("write", `{"path":"/p.txt","content":"parent"}`)),
			step("all done"),
		}},
		"general-purpose": {Steps: []scripted.Step{
			step("", tc("write", `{"path":"/a.txt","content":"a"}`), tc("note", `{}`)),
			step("wrote a"),
		}},
		"helper": {Steps: []scripted.Step{
			step("", tc("write", `{"path":"/b.txt","content":"b"}`)),
			step("", tc("note", `{}`)),
			step("wrote b"),
		}},
	}, scripted.Options{}))
	task, err := subagent.NewTask(subagent.Config{Model: m, BaseTools: []tool.Tool{writeTool}, DefaultTools: []tool.Tool{noteTool},
		Subagents: []subagent.Spec{subagent.GeneralPurpose(), {Name: "helper", Description: "Helps.", Tools: []tool.Tool{helperNote}}}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{Model: m, Tools: []tool.Tool{writeTool, task}, MaxParallel: limit})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Agent("parent", a); err != nil {
		t.Fatal(err)
	}
	return reg, a
}

// traced is RunAgent that also returns the run's events, for tests.
type traced struct {
	Summary *temporal.Summary `json:"summary"`
	Events  []byte            `json:"events"`
}

func tracedWorkflow(agents map[string]*agent.Agent) func(ctx workflow.Context, in temporal.RunInput) (*traced, error) {
	return func(ctx workflow.Context, in temporal.RunInput) (*traced, error) {
		rt := temporal.NewRuntime(ctx)
		rctx, cancel := rt.Context()
		defer cancel()
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		res, err := agent.Drain(agents[in.Agent].Run(rctx, agent.Prompt(in.Input), agent.WithRuntime(rt)), func(ev agent.Event) {
			_ = enc.Encode(ev)
		})
		if res == nil {
			return nil, err
		}
		return &traced{Summary: temporal.Summarize(in.Agent, in.Thread, res), Events: buf.Bytes()}, nil
	}
}

func newEnv(t *testing.T, reg *temporal.Registry) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	env := s.NewTestWorkflowEnvironment()
	env.SetDataConverter(temporal.DataConverter())
	env.SetStartTime(start)
	reg.Register(env)
	return env
}

// runWorkflow runs the delegation as a workflow and returns its summary
// and events.
func runWorkflow(t *testing.T, limit int) *traced {
	t.Helper()
	reg, a := delegation(t, limit)
	env := newEnv(t, reg)
	env.RegisterWorkflowWithOptions(tracedWorkflow(map[string]*agent.Agent{"parent": a}), workflow.RegisterOptions{Name: "traced"})
	env.ExecuteWorkflow("traced", temporal.RunInput{Agent: "parent", Thread: "T", Input: "delegate"})
	if !env.IsWorkflowCompleted() {
		t.Fatal("the workflow did not complete")
	}
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var out traced
	if err := env.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	return &out
}

// events decodes a stream of events.
func events(t *testing.T, stream []byte) []agent.Event {
	t.Helper()
	var evs []agent.Event
	for dec := json.NewDecoder(bytes.NewReader(stream)); dec.More(); {
		var ev agent.Event
		if err := dec.Decode(&ev); err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	return evs
}

// byAgent is each agent's events as JSON, sorted: what the run did, not
// in which order the agents' events interleaved.
func byAgent(t *testing.T, stream []byte) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, ev := range events(t, stream) {
		ev.Time = time.Time{}
		if ev.Run != nil {
			ev.Run.Result = nil // its contents are compared through the summary
		}
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		out[ev.Agent.String()] = append(out[ev.Agent.String()], string(b))
	}
	for _, evs := range out {
		slices.Sort(evs)
	}
	return out
}

// The parallel delegation of subagent's cooperative runtime test runs as
// a workflow: both subagents are in the middle of their runs at once, the
// parent's write ends before either of them, a limit of two makes the write
// wait, every agent does what it does in process, the summary is the one
// of the same run in process, and the stream is the same on every run.
func TestWorkflowRunsParallelDelegation(t *testing.T) {
	first := runWorkflow(t, 0)
	s := first.Summary
	if s.Status != agent.StatusOK || s.Text != "all done" || !slices.Equal(s.Files, []string{"/a.txt", "/b.txt", "/p.txt"}) {
		t.Fatalf("summary %+v", s)
	}
	if len(s.Children) != 2 || s.Children[0].Text != "wrote a" || s.Children[1].Text != "wrote b" {
		t.Fatalf("children %+v", s.Children)
	}

	evs := events(t, first.Events)
	span := map[string][2]int{} // an agent's first and last event
	ends := map[string]int{}
	for i, ev := range evs {
		name := ev.Agent.Last().Name
		sp, ok := span[name]
		if !ok {
			sp[0] = i
		}
		sp[1] = i
		span[name] = sp
		if ev.Type == agent.ToolEnd && name == "parent" {
			key := ev.Tool.CallID
			if ev.Tool.Name == "write" {
				key = "write"
			}
			ends[key] = i
		}
	}
	gp, h := span["general-purpose"], span["helper"]
	if gp[0] > h[1] || h[0] > gp[1] {
		t.Errorf("the subagents ran one after the other: events %v and %v", gp, h)
	}
	if len(ends) != 3 || ends["t1"] < ends["write"] || ends["t2"] < ends["write"] {
		t.Errorf("the parent's tool ends came at %v", ends)
	}

	// In process, on the default runtime.
	_, a := delegation(t, 0)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	res, err := agent.Drain(a.Run(t.Context(), agent.Prompt("delegate"), agent.WithRuntime(agent.Sequential(start))), func(ev agent.Event) {
		_ = enc.Encode(ev)
	})
	if err != nil {
		t.Fatal(err)
	}
	want := temporal.Summarize("parent", "T", res)
	if got, _ := json.Marshal(s); !bytes.Equal(got, mustJSON(t, want)) {
		t.Errorf("summary in the workflow:\n%s\nin process:\n%s", got, mustJSON(t, want))
	}
	inProcess, inWorkflow := byAgent(t, buf.Bytes()), byAgent(t, first.Events)
	for name, evs := range inProcess {
		if !slices.Equal(evs, inWorkflow[name]) {
			t.Errorf("events of %s in process:\n%s\nin the workflow:\n%s", name, strings.Join(evs, "\n"), strings.Join(inWorkflow[name], "\n"))
		}
	}
	if len(inProcess) != len(inWorkflow) {
		t.Errorf("agents in process %d, in the workflow %d", len(inProcess), len(inWorkflow))
	}

	// The test environment runs activities on goroutines and takes their
	// results in the order they come, so two runs may interleave the
	// agents differently (a server records the order in the history, and
	// the replay test holds it): each agent still does the same.
	again := runWorkflow(t, 0)
	if !reflect.DeepEqual(byAgent(t, again.Events), inWorkflow) || !reflect.DeepEqual(again.Summary, first.Summary) {
		t.Errorf("a second run of the workflow did something else:\n%s\n---\n%s", first.Events, again.Events)
	}

	// Two at a time: the write waits for a subagent to end.
	limited := runWorkflow(t, 2)
	ends = map[string]int{}
	for i, ev := range events(t, limited.Events) {
		if ev.Type == agent.ToolEnd && ev.Agent.String() == "parent" {
			key := ev.Tool.CallID
			if ev.Tool.Name == "write" {
				key = "write"
			}
			ends[key] = i
		}
	}
	if len(ends) != 3 || ends["write"] < min(ends["t1"], ends["t2"]) {
		t.Errorf("with a limit of 2 the parent's tool ends came at %v", ends)
	}
	if len(limited.Summary.Files) != 3 {
		t.Errorf("with a limit of 2: files %v", limited.Summary.Files)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// RunAgent runs a registered agent by name and returns its summary; the
// model's calls and the helper's note calls are activities, the other
// tools run in the workflow.
func TestRunAgentRunsTheRegisteredAgent(t *testing.T) {
	reg, _ := delegation(t, 0)
	env := newEnv(t, reg)
	var models, tools int
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		switch info.ActivityType.Name {
		case temporal.ModelActivity:
			models++
		case temporal.ToolActivity:
			tools++
		}
	})
	env.ExecuteWorkflow(temporal.RunAgentWorkflow, temporal.RunInput{Agent: "parent", Thread: "T", Input: "delegate"})
	s := *summary(t, env)
	if s.Status != agent.StatusOK || s.Text != "all done" || s.Thread != "T" || len(s.Children) != 2 {
		t.Fatalf("summary %+v", s)
	}
	// 2 rounds of the parent, 2 of general-purpose, 3 of helper; the
	// helper's one note call (general-purpose's note is not an activity).
	if models != 7 || tools != 1 {
		t.Errorf("%d model and %d tool activities, want 7 and 1", models, tools)
	}
}

// An agent whose model would be called from workflow code is not
// registered.
func TestRegistryRefusesAModelThatIsNotAnActivity(t *testing.T) {
	a, err := agent.New(agent.Config{Model: scripted.New(scripted.Script{}, scripted.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	if err := temporal.NewRegistry().Agent("parent", a); err == nil || !strings.Contains(err.Error(), "the model of parent was not made with Registry.Model") {
		t.Fatalf("error %v", err)
	}
	// Nor one whose subagent's model would.
	reg := temporal.NewRegistry()
	task, err := subagent.NewTask(subagent.Config{Model: reg.Model("m", scripted.New(scripted.Script{}, scripted.Options{})),
		Subagents: []subagent.Spec{{Name: "helper", Description: "Helps.", Model: scripted.New(scripted.Script{}, scripted.Options{})}}})
	if err != nil {
		t.Fatal(err)
	}
	a, err = agent.New(agent.Config{Model: reg.Model("m", scripted.New(scripted.Script{}, scripted.Options{})), Tools: []tool.Tool{task}})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Agent("parent", a); err == nil || !strings.Contains(err.Error(), "the model of parent / helper was not made") {
		t.Fatalf("error %v", err)
	}
}

// A tool that would run in workflow code, where a replay runs it again, is
// refused unless it is an activity, marked InWorkflow, or one of the file
// and todo tools over the run's own files; so is a backend of the agent's
// own, whose I/O would run there.
func TestRegistryRefusesToolsThatWouldRunInWorkflowCode(t *testing.T) {
	reg := temporal.NewRegistry()
	model := reg.Model("m", scripted.New(scripted.Script{}, scripted.Options{}))
	shell := tool.MustFunc("shell", "Run a command.", func(context.Context, *tool.Env, struct{}) (string, error) { return "", nil })
	for _, tc := range []struct {
		name  string
		cfg   agent.Config
		wants string // in the error; empty: accepted
	}{
		{"unmarked", agent.Config{Model: model, Tools: []tool.Tool{shell}}, "tool shell of parent would run in workflow code"},
		{"activity", agent.Config{Model: model, Tools: []tool.Tool{reg.Tool("parent", shell)}}, ""},
		{"marked", agent.Config{Model: model, Tools: []tool.Tool{temporal.InWorkflow(shell)}}, ""},
		{"file and todo tools", agent.Config{Model: model, Tools: append(fstools.Tools(), todos.Tool(), todos.UpdateTool())}, ""},
		{"a backend of its own", agent.Config{Model: model, Backend: vfs.NewMemory(nil)}, "keeps its files on a backend of its own"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := agent.New(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			err = reg.Agent("parent", a)
			if tc.wants == "" && err != nil || tc.wants != "" && (err == nil || !strings.Contains(err.Error(), tc.wants)) {
				t.Fatalf("error %v, want %q", err, tc.wants)
			}
		})
	}
	// A subagent's tools are checked too.
	task, err := subagent.NewTask(subagent.Config{Model: model,
		Subagents: []subagent.Spec{{Name: "helper", Description: "Helps.", Tools: []tool.Tool{shell}}}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{Model: model, Tools: []tool.Tool{task}})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Agent("parent", a); err == nil || !strings.Contains(err.Error(), "tool shell of parent / helper") {
		t.Fatalf("error %v", err)
	}
}

// A tool that runs agents of its own cannot be an activity.
func TestRegistryToolRefusesANestedTool(t *testing.T) {
	reg := temporal.NewRegistry()
	task, err := subagent.NewTask(subagent.Config{Model: reg.Model("m", scripted.New(scripted.Script{}, scripted.Options{})), Subagents: []subagent.Spec{subagent.GeneralPurpose()}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), `"task" runs agents of its own`) {
			t.Fatalf("recovered %v", r)
		}
	}()
	reg.Tool("parent", task)
}

// An agent not registered on the worker is refused, and the workflow fails
// without retrying.
func TestRunAgentRefusesAnUnknownAgent(t *testing.T) {
	reg, _ := delegation(t, 0)
	env := newEnv(t, reg)
	env.ExecuteWorkflow(temporal.RunAgentWorkflow, temporal.RunInput{Agent: "nobody", Input: "hi"})
	if err := env.GetWorkflowError(); err == nil || !strings.Contains(err.Error(), `no agent "nobody" is registered`) {
		t.Fatalf("error %v", err)
	}
}

// A request too large for a payload, even compressed, is refused before
// it is scheduled: the run fails with an error that says why.
func TestModelCallOverThePayloadLimitIsRefused(t *testing.T) {
	// Random-looking text, so that it does not compress away.
	var b strings.Builder
	for x := uint64(1); b.Len() < 2600<<10; {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b.WriteString(strconv.FormatUint(x, 36))
	}
	big := temporal.InWorkflow(tool.MustFunc("big", "Read a big file.", func(context.Context, *tool.Env, struct{}) (string, error) { return b.String(), nil }))
	reg := temporal.NewRegistry()
	m := reg.Model("scripted", scripted.New(scripted.Script{"parent": {Steps: []scripted.Step{step("", tc("big", `{}`)), step("read")}}}, scripted.Options{}))
	a, err := agent.New(agent.Config{Model: m, Tools: []tool.Tool{big}})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Agent("parent", a); err != nil {
		t.Fatal(err)
	}
	env := newEnv(t, reg)
	// The loop handles a 2.6 MB result in well under the second workflow
	// code may run without giving way, but not under the race detector.
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: 20 * time.Second})
	env.ExecuteWorkflow(temporal.RunAgentWorkflow, temporal.RunInput{Agent: "parent", Input: "read it"})
	s := *summary(t, env)
	if s.Status != agent.StatusError || !strings.Contains(s.Error, "over the 1572864 a payload may have") || !strings.Contains(s.Error, "model call 2 of parent") {
		t.Fatalf("summary %+v", s)
	}
}

// onCall is a model that calls hook before each call it passes on to m.
type onCall struct {
	llm.Model
	hook func(ctx context.Context, ci llm.CallInfo) error
}

func (o onCall) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	ci, _ := llm.CallInfoFrom(ctx)
	if err := o.hook(ctx, ci); err != nil {
		return nil, err
	}
	return o.Model.Generate(ctx, req)
}

// Cancelling the workflow while its two subagents are in the middle of
// their runs cancels the run: the model call in flight is cancelled, the
// loop waits for the subagents on a workflow timer, they stop, and the
// summary keeps both of them, cancelled.
func TestCancellingTheWorkflowCancelsTheRun(t *testing.T) {
	reg := temporal.NewRegistry()
	var env *testsuite.TestWorkflowEnvironment
	var once sync.Once
	m := reg.Model("scripted", onCall{Model: scripted.New(scripted.Script{
		"parent": {Steps: []scripted.Step{
			step("", scripted.StepCall{ID: "t1", Name: "task", Args: json.RawMessage(`{"description":"write a","subagent_type":"helper"}`)},
				scripted.StepCall{ID: "t2", Name: "task", Args: json.RawMessage(`{"description":"write b","subagent_type":"helper"}`)}),
			step("all done"),
		}},
		"helper": {Steps: []scripted.Step{
			step("", tc("write", `{"path":"/x.txt","content":"x"}`)),
			step("", tc("note", `{}`)),
			step("wrote"),
		}},
	}, scripted.Options{}), hook: func(ctx context.Context, ci llm.CallInfo) error {
		if ci.Agent != "helper" || ci.Round != 1 {
			return nil
		}
		// A subagent's second call: the workflow is cancelled while it
		// waits for its answer.
		once.Do(env.CancelWorkflow)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Second):
			return errors.New("the model call was not cancelled")
		}
	}})
	task, err := subagent.NewTask(subagent.Config{Model: m, BaseTools: []tool.Tool{writeTool},
		Subagents: []subagent.Spec{{Name: "helper", Description: "Helps.", Tools: []tool.Tool{noteTool}}}})
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
	env = newEnv(t, reg)
	timers := 0
	env.SetOnTimerScheduledListener(func(string, time.Duration) { timers++ })
	env.ExecuteWorkflow(temporal.RunAgentWorkflow, temporal.RunInput{Agent: "parent", Input: "go"})
	var ce *sdktemporal.CanceledError
	if err := env.GetWorkflowError(); !errors.As(err, &ce) {
		t.Fatalf("the workflow ended with %v, want it cancelled", err)
	}
	var s temporal.Summary
	if err := ce.Details(&s); err != nil {
		t.Fatal(err)
	}
	if s.Status != agent.StatusCancelled || len(s.Children) != 2 {
		t.Fatalf("summary %+v", s)
	}
	for _, c := range s.Children {
		if c.Status != agent.StatusCancelled {
			t.Errorf("child %+v", c)
		}
	}
	if timers == 0 {
		t.Error("the cancelled step did not wait for its subagents on a workflow timer")
	}
}

// A provider's error crosses the model activity with its kind, status and
// message, so that the loop and its middleware react to it as in process.
func TestModelActivityKeepsTheProviderError(t *testing.T) {
	reg := temporal.NewRegistry()
	var got error
	m := reg.Model("failing", onCall{Model: scripted.New(scripted.Script{}, scripted.Options{}), hook: func(context.Context, llm.CallInfo) error {
		return &llm.APIError{Kind: llm.ErrKindContextLength, Provider: "p", StatusCode: 400, Message: "too long", Err: errors.New("sdk")}
	}})
	a, err := agent.New(agent.Config{Model: m, Middleware: []agent.Middleware{{WrapModel: func(ctx context.Context, req *llm.Request, next agent.ModelFunc) (*llm.Response, error) {
		resp, err := next(ctx, req)
		got = err
		return resp, err
	}}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Agent("parent", a); err != nil {
		t.Fatal(err)
	}
	env := newEnv(t, reg)
	env.ExecuteWorkflow(temporal.RunAgentWorkflow, temporal.RunInput{Agent: "parent", Input: "hi"})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var ae *llm.APIError
	if !errors.Is(got, llm.ErrContextLength) || !errors.As(got, &ae) || ae.StatusCode != 400 || ae.Message != "too long" || ae.Provider != "p" {
		t.Fatalf("the middleware saw %#v", got)
	}
}

// A tool activity's error is its call's outcome, as in process: the model
// reads it in the tool's result, and the activity is not failed or retried.
func TestToolActivityErrorIsTheCallsOutcome(t *testing.T) {
	reg := temporal.NewRegistry()
	boom := tool.MustFunc("boom", "Fail.", func(context.Context, *tool.Env, struct{}) (string, error) { return "", errors.New("it broke") })
	var seen string
	m := reg.Model("scripted", scripted.New(scripted.Script{"parent": {Steps: []scripted.Step{step("", tc("boom", `{}`)), step("sorry")}}}, scripted.Options{}))
	a, err := agent.New(agent.Config{Model: m, Tools: []tool.Tool{reg.Tool("parent", boom)}, Middleware: []agent.Middleware{{
		WrapModel: func(ctx context.Context, req *llm.Request, next agent.ModelFunc) (*llm.Response, error) {
			if last := req.Messages[len(req.Messages)-1]; last.Role == llm.RoleTool {
				seen = last.Content
			}
			return next(ctx, req)
		}}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Agent("parent", a); err != nil {
		t.Fatal(err)
	}
	env := newEnv(t, reg)
	failed := 0
	env.SetOnActivityCompletedListener(func(info *activity.Info, _ converter.EncodedValue, err error) {
		if err != nil {
			failed++
		}
	})
	env.ExecuteWorkflow(temporal.RunAgentWorkflow, temporal.RunInput{Agent: "parent", Input: "try"})
	s := *summary(t, env)
	if s.Status != agent.StatusOK || s.Text != "sorry" || !strings.Contains(seen, "it broke") || failed != 0 {
		t.Fatalf("summary %+v, the model read %q, %d activities failed", s, seen, failed)
	}
}
