package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/tool"
	"github.com/deepagents-go/deepagents/vfs"
)

// waitTool's calls block until their context ends: a call that is still
// running when the run is cancelled.
var waitTool = tool.MustFunc("wait", "Wait until cancelled.", func(ctx context.Context, _ *tool.Env, _ struct{}) (string, error) {
	<-ctx.Done()
	return "", ctx.Err()
})

type writeIn struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

var writeTool = tool.MustFunc("write", "Write a file.", func(ctx context.Context, env *tool.Env, in writeIn) (string, error) {
	return "wrote " + in.Path, env.Files.Write(ctx, in.Path, in.Content)
})

func call(name, args string) scripted.StepCall {
	return scripted.StepCall{Name: name, Args: json.RawMessage(args)}
}

func steps(s ...scripted.Step) scripted.AgentScript { return scripted.AgentScript{Steps: s} }

func newAgent(t *testing.T, cfg agent.Config) *agent.Agent {
	t.Helper()
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// warningOf runs a once and returns the types of its events and its
// last warning, if any.
func warningOf(t *testing.T, a *agent.Agent) ([]agent.EventType, *agent.WarningInfo) {
	t.Helper()
	var types []agent.EventType
	var warn *agent.WarningInfo
	if _, err := agent.Drain(a.Run(t.Context(), agent.Prompt("go")), func(ev agent.Event) {
		types = append(types, ev.Type)
		if ev.Type == agent.Warning {
			warn = ev.Warning
		}
	}); err != nil {
		t.Fatal(err)
	}
	return types, warn
}

func toolMessages(msgs []llm.Message) []llm.Message {
	var out []llm.Message
	for _, m := range msgs {
		if m.Role == llm.RoleTool {
			out = append(out, m)
		}
	}
	return out
}

func TestMaxStepsEndsWithLimit(t *testing.T) {
	loop := scripted.Step{ToolCalls: []scripted.StepCall{call("write", `{"path":"/x","content":"1"}`)}}
	m := scripted.New(scripted.Script{"parent": steps(loop, loop, loop, loop, loop)}, scripted.Options{})
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{writeTool}, MaxSteps: 3})
	res, err := a.Invoke(t.Context(), agent.Prompt("go"))
	if res == nil {
		t.Fatalf("a run cut at its limit must still return its result (err %v)", err)
	}
	if res.Status != agent.StatusLimit || res.Rounds != 3 {
		t.Fatalf("status %s after %d rounds, want limit after 3", res.Status, res.Rounds)
	}
	// A caller who checks only err must not take the cut-off run for a
	// finished one.
	if !errors.Is(err, agent.ErrLimit) || err.Error() != "stopped after 3 model calls (the step limit)" {
		t.Errorf("err = %v, want ErrLimit with the text %q", err, "stopped after 3 model calls (the step limit)")
	}
	if !errors.Is(res.Err(), agent.ErrLimit) || res.Err() != err {
		t.Errorf("Result.Err() = %v, want the error Invoke returned (%v)", res.Err(), err)
	}
	if n := len(res.State.Messages); n != 7 {
		t.Errorf("transcript so far should hold 7 messages (user + 3×(call, result)), got %d", n)
	}
	if res.State.Files["/x"].Content != "1" {
		t.Errorf("work done before the limit must be kept")
	}
}

func TestCancellationStopsPromptly(t *testing.T) {
	m := scripted.New(scripted.Script{"parent": steps(
		scripted.Step{ToolCalls: []scripted.StepCall{call("wait", `{}`)}},
		scripted.Step{Content: "never"},
	)}, scripted.Options{NoUsage: true})
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{waitTool}})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan *agent.Result)
	go func() {
		res, _ := agent.Drain(a.Run(ctx, agent.Prompt("go")), func(e agent.Event) {
			if e.Type == agent.ToolStart {
				cancel()
			}
		})
		done <- res
	}()
	select {
	case res := <-done:
		if res.Status != agent.StatusCancelled || !errors.Is(res.Err(), context.Canceled) {
			t.Fatalf("status %s err %v, want cancelled", res.Status, res.Err())
		}
		last := res.State.Messages[len(res.State.Messages)-1]
		if last.Role != llm.RoleTool || !last.IsError {
			t.Errorf("the interrupted call must still be answered (for a valid history), got %+v", last)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not stop after cancellation")
	}
}

func TestToolFailuresAreAnsweredAndTheRunGoesOn(t *testing.T) {
	panicky := tool.MustFunc("boom", "Panics.", func(context.Context, *tool.Env, struct{}) (string, error) {
		panic("kaboom")
	})
	failing := tool.MustFunc("fail", "Fails.", func(context.Context, *tool.Env, struct{}) (string, error) {
		return "", errors.New("disk on fire")
	})
	m := scripted.New(scripted.Script{"parent": steps(
		scripted.Step{ToolCalls: []scripted.StepCall{
			call("boom", `{}`),
			call("nope", `{}`),
			call("write", `{"path":"/a"`),
			call("write", `{"path":3,"content":"x"}`),
			call("write", `{"content":"x"}`),
			call("write", `{"path":"/a","content":"x","extra":1}`),
			call("fail", `{}`),
		}},
		scripted.Step{Content: "recovered"},
	)}, scripted.Options{})
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{writeTool, panicky, failing}})
	var ends []agent.Event
	res, err := agent.Drain(a.Run(t.Context(), agent.Prompt("go")), func(e agent.Event) {
		if e.Type == agent.ToolEnd {
			ends = append(ends, e)
		}
	})
	if err != nil || res.Status != agent.StatusOK {
		t.Fatalf("run must go on: %v %s", err, res.Status)
	}
	want := []string{
		"the boom tool crashed (kaboom)",
		`there is no tool named "nope". Available tools: write, boom, fail.`,
		"Invalid arguments for write: the arguments are not valid JSON",
		`argument "path" must be a string, got the number 3`,
		`missing required argument "path"`,
		`unknown argument "extra"; this tool takes: path, content`,
		"Error: disk on fire",
	}
	tms := toolMessages(res.State.Messages)
	for i, w := range want {
		if !tms[i].IsError || !strings.Contains(tms[i].Content, w) {
			t.Errorf("result %d = %q (error %v), want an error containing %q", i, tms[i].Content, tms[i].IsError, w)
		}
		if strings.Contains(tms[i].Content, "goroutine") || strings.Contains(tms[i].Content, ".go:") {
			t.Errorf("result %d leaks a stack trace to the model: %q", i, tms[i].Content)
		}
	}
	var sawPanic bool
	for _, e := range ends {
		if e.Tool.Name == "boom" && strings.Contains(e.Tool.Panic, "goroutine") {
			sawPanic = true
		}
		if !e.Tool.IsError {
			t.Errorf("tool.end for %s should record the error", e.Tool.Name)
		}
	}
	if !sawPanic {
		t.Error("the panic's stack must be in the tool.end event (nothing hidden)")
	}
}

func TestFatalToolErrorStopsTheRun(t *testing.T) {
	fatal := tool.MustFunc("fatal", "Stops everything.", func(context.Context, *tool.Env, struct{}) (string, error) {
		return "", tool.Fatal(errors.New("credentials revoked"))
	})
	m := scripted.New(scripted.Script{"parent": steps(
		scripted.Step{ToolCalls: []scripted.StepCall{{ID: "f1", Name: "fatal", Args: json.RawMessage(`{}`)}, call("write", `{"path":"/ok","content":"kept"}`)}},
		scripted.Step{Content: "never"},
	)}, scripted.Options{})
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{fatal, writeTool}})
	var ends []agent.ToolInfo
	res, err := agent.Drain(a.Run(t.Context(), agent.Prompt("go")), func(e agent.Event) {
		if e.Type == agent.ToolEnd {
			ends = append(ends, *e.Tool)
		}
	})
	if !errors.Is(err, tool.ErrFatal) || !errors.Is(err, agent.ErrFailed) || res.Status != agent.StatusError {
		t.Fatalf("err %v status %s, want a fatal error", err, res.Status)
	}
	if res.Rounds != 1 {
		t.Errorf("no model call may follow a fatal error; rounds = %d", res.Rounds)
	}
	// The fatal call is answered with its own error (so the saved history
	// stays valid and says what happened), and its sibling with its result.
	tms := toolMessages(res.State.Messages)
	const fatalText = "Error: fatal tool error: credentials revoked"
	if len(tms) != 2 || tms[0].Content != fatalText || !tms[0].IsError || tms[1].Content != "wrote /ok" || tms[1].IsError {
		t.Errorf("tool results = %+v, want [%q (error), \"wrote /ok\"]", tms, fatalText)
	}
	var fatalEnd *agent.ToolInfo
	for i := range ends {
		if ends[i].Name == "fatal" {
			fatalEnd = &ends[i]
		}
	}
	if fatalEnd == nil || fatalEnd.Result != fatalText || !fatalEnd.IsError {
		t.Errorf("tool.end of the fatal call = %+v", fatalEnd)
	}
	if want := "tool fatal (call f1) failed fatally: fatal tool error: credentials revoked"; err.Error() != want {
		t.Errorf("run error = %q, want %q", err, want)
	}
	if res.State.Files["/ok"].Content != "kept" {
		t.Error("the sibling call's work should be merged before stopping")
	}
}

func TestModelErrorAndScriptExhaustion(t *testing.T) {
	m := scripted.New(scripted.Script{"parent": steps(scripted.Step{ToolCalls: []scripted.StepCall{call("write", `{"path":"/a","content":"x"}`)}})}, scripted.Options{})
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{writeTool}})
	res, err := a.Invoke(t.Context(), agent.Prompt("go"))
	if err == nil || res.Status != agent.StatusError {
		t.Fatalf("want an error, got %v %s", err, res.Status)
	}
	if !strings.Contains(err.Error(), `agent "parent" has no step for round 1`) {
		t.Errorf("the error must name the agent and the round: %v", err)
	}
}

func TestConsumerStopCancelsRun(t *testing.T) {
	m := scripted.New(scripted.Script{"parent": steps(
		scripted.Step{ToolCalls: []scripted.StepCall{call("wait", `{}`)}},
	)}, scripted.Options{NoUsage: true})
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{waitTool}})
	done := make(chan struct{})
	go func() {
		for ev := range a.Run(t.Context(), agent.Prompt("go")) {
			if ev.Type == agent.ToolStart {
				break
			}
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("breaking out of the event loop must end the run")
	}
}

func TestEventsDescribeEveryStep(t *testing.T) {
	m := scripted.New(scripted.Script{"parent": steps(
		scripted.Step{ToolCalls: []scripted.StepCall{call("write", `{"path":"/n.md","content":"hello"}`)}},
		scripted.Step{Content: "done"},
	)}, scripted.Options{})
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{writeTool}, System: "Be brief."})
	var types []string
	var req *agent.RequestInfo
	var file *agent.FileInfo
	var end *agent.RunInfo
	_, err := agent.Drain(a.Run(t.Context(), agent.Prompt("go")), func(e agent.Event) {
		types = append(types, string(e.Type))
		if e.Agent.String() != "parent" {
			t.Errorf("event %s has agent %q", e.Type, e.Agent)
		}
		switch e.Type {
		case agent.ModelRequest:
			if req == nil {
				req = e.Request
			}
		case agent.FileWrite:
			file = e.File
		case agent.RunEnd:
			end = e.Run
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "run.start model.request model.response tool.start tool.end file.write model.request model.response run.end"
	if got := strings.Join(types, " "); got != want {
		t.Errorf("events:\n got %s\nwant %s", got, want)
	}
	if req.MessageCount != 1 || req.SystemChars != 9 || len(req.Tools) != 1 || req.ToolTokens == 0 {
		t.Errorf("model.request = %+v", req)
	}
	if file.Path != "/n.md" || file.Bytes != 5 || file.CallID == "" {
		t.Errorf("file.write = %+v", file)
	}
	if end.Status != agent.StatusOK || end.Rounds != 2 || end.Usage.InputTokens == 0 || end.Usage.OutputTokens == 0 {
		t.Errorf("run.end = %+v", end)
	}
}

func TestMiddlewareHooks(t *testing.T) {
	var mu sync.Mutex
	var wrapped []string
	extra := tool.MustFunc("extra", "From middleware.", func(context.Context, *tool.Env, struct{}) (string, error) { return "x", nil })
	mw := agent.Middleware{
		Name:   "test",
		Tools:  []tool.Tool{extra},
		Prompt: "Section from middleware.",
		BeforeModel: func(_ context.Context, step agent.StepInfo, req *llm.Request) error {
			req.System += fmt.Sprintf(" [round %d]", step.Round)
			return nil
		},
		WrapTool: func(ctx context.Context, c *agent.ToolCall, next agent.ToolFunc) (tool.Result, error) {
			mu.Lock()
			wrapped = append(wrapped, c.Call.Name) // calls of one step run concurrently
			mu.Unlock()
			if c.Call.Name == "write" {
				return tool.Errorf("denied by policy"), nil
			}
			return next(ctx, c)
		},
	}
	m := scripted.New(scripted.Script{"parent": steps(
		scripted.Step{ToolCalls: []scripted.StepCall{call("write", `{"path":"/a","content":"x"}`), call("extra", `{}`)}},
		scripted.Step{Content: "done"},
	)}, scripted.Options{})
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{writeTool}, System: "Own.", Middleware: []agent.Middleware{mw}})
	res, err := a.Invoke(t.Context(), agent.Prompt("go"))
	if err != nil {
		t.Fatal(err)
	}
	recs := m.Records()
	if recs[0].Request.System != "Own.\n\nSection from middleware. [round 0]" || recs[1].Request.System != "Own.\n\nSection from middleware. [round 1]" {
		t.Errorf("system prompts: %q / %q", recs[0].Request.System, recs[1].Request.System)
	}
	if names := a.ToolSpecs(); len(names) != 2 || names[1].Name != "extra" {
		t.Errorf("middleware tool not bound: %v", names)
	}
	if _, ok := res.State.Files["/a"]; ok {
		t.Error("WrapTool denial must skip the tool")
	}
	if len(wrapped) != 2 {
		t.Errorf("WrapTool saw %v", wrapped)
	}
}

func TestStreamingEmitsDeltas(t *testing.T) {
	m := scripted.New(scripted.Script{"parent": steps(
		scripted.Step{Content: "a rather long answer that arrives in several chunks", ToolCalls: []scripted.StepCall{call("write", `{"path":"/s","content":"streamed"}`)}},
		scripted.Step{Content: "ok"},
	)}, scripted.Options{})
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{writeTool}, Stream: true})
	var text strings.Builder
	deltas := 0
	res, err := agent.Drain(a.Run(t.Context(), agent.Prompt("go")), func(e agent.Event) {
		if e.Type == agent.ModelDelta {
			deltas++
			text.WriteString(e.Delta.Text)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if deltas < 4 || !strings.HasPrefix(text.String(), "a rather long answer") {
		t.Errorf("%d deltas, text %q", deltas, text.String())
	}
	if res.State.Files["/s"].Content != "streamed" {
		t.Error("tool call assembled from streamed argument deltas did not run")
	}
}

type finding struct {
	Answer     int     `json:"answer"`
	Confidence float64 `json:"confidence"`
}

func TestStructuredResponse(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"answer":{"type":"integer"},"confidence":{"type":"number"}},"required":["answer","confidence"],"additionalProperties":false}`)
	rf := &agent.ResponseFormat{Name: "Findings", Schema: schema}
	cases := []struct {
		name   string
		script []scripted.Step
		status agent.Status
		output string
	}{
		{"valid first time", []scripted.Step{
			{ToolCalls: []scripted.StepCall{call("write", `{"path":"/w","content":"x"}`)}},
			{ToolCalls: []scripted.StepCall{call("Findings", `{"answer": 42, "confidence": 0.9}`)}},
		}, agent.StatusOK, `{"answer":42,"confidence":0.9}`},
		{"one repair", []scripted.Step{
			{ToolCalls: []scripted.StepCall{call("Findings", `{"answer":"42"}`)}},
			{ToolCalls: []scripted.StepCall{call("Findings", `{"answer":42,"confidence":1}`)}},
		}, agent.StatusOK, `{"answer":42,"confidence":1}`},
		{"invalid twice", []scripted.Step{
			{ToolCalls: []scripted.StepCall{call("Findings", `{"answer":"42"}`)}},
			{ToolCalls: []scripted.StepCall{call("Findings", `{}`)}},
		}, agent.StatusError, ""},
		{"text then call", []scripted.Step{
			{Content: "it is 42"},
			{ToolCalls: []scripted.StepCall{call("Findings", `{"answer":42,"confidence":0.5}`)}},
		}, agent.StatusOK, `{"answer":42,"confidence":0.5}`},
		{"text twice", []scripted.Step{{Content: "it is 42"}, {Content: "really 42"}}, agent.StatusError, ""},
		{"two valid calls in one step: the first wins", []scripted.Step{
			{ToolCalls: []scripted.StepCall{
				call("Findings", `{"answer":42,"confidence":0.25}`),
				call("Findings", `{"answer":42,"confidence":0.75}`),
			}},
		}, agent.StatusOK, `{"answer":42,"confidence":0.25}`},
		{"invalid then valid in one step", []scripted.Step{
			{ToolCalls: []scripted.StepCall{
				call("Findings", `{"answer":"x"}`),
				call("Findings", `{"answer":42,"confidence":0.5}`),
			}},
		}, agent.StatusOK, `{"answer":42,"confidence":0.5}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := scripted.New(scripted.Script{"parent": steps(c.script...)}, scripted.Options{})
			a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{writeTool}, Response: rf})
			res, err := a.Invoke(t.Context(), agent.Prompt("go"))
			if res.Status != c.status {
				t.Fatalf("status %s (%v), want %s", res.Status, err, c.status)
			}
			if string(res.Output) != c.output {
				t.Errorf("output %s, want %s", res.Output, c.output)
			}
			if c.status == agent.StatusError && (!errors.Is(err, agent.ErrNoStructuredResponse) || !errors.Is(err, agent.ErrFailed)) {
				t.Errorf("err = %v", err)
			}
			if c.status == agent.StatusOK && err != nil {
				t.Errorf("err = %v for an ok run", err)
			}
			if c.output != "" {
				var f finding
				if err := json.Unmarshal(res.Output, &f); err != nil || f.Answer != 42 {
					t.Errorf("output does not decode: %v", err)
				}
			}
		})
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	m := scripted.New(nil, scripted.Options{})
	cases := []struct {
		name string
		cfg  agent.Config
		want string
	}{
		{"no model", agent.Config{}, "agent: Config.Model is required"},
		{"negative steps", agent.Config{Model: m, MaxSteps: -1}, "agent: MaxSteps is -1; it must be 0 (the default, 500) or more"},
		{"negative parallel", agent.Config{Model: m, MaxParallel: -2}, "agent: MaxParallel is -2; it must be 0 (the default, 16) or more"},
		{"duplicate tools", agent.Config{Model: m, Tools: []tool.Tool{writeTool, writeTool}}, `agent: two tools are named "write"`},
		{"nil tool", agent.Config{Model: m, Tools: []tool.Tool{nil}}, "agent: a tool in Config.Tools or a middleware is nil"},
		{"unnamed response", agent.Config{Model: m, Response: &agent.ResponseFormat{Schema: json.RawMessage(`{"type":"object"}`)}}, "agent: a ResponseFormat needs a name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, err := agent.New(c.cfg)
			var ce *agent.ConfigError
			if a != nil || !errors.As(err, &ce) || err.Error() != c.want || ce.Subagent != "" {
				t.Errorf("New = %v, %v; want a *ConfigError %q", a, err, c.want)
			}
		})
	}
	_, err := agent.New(agent.Config{Model: m, Response: &agent.ResponseFormat{Name: "R", Schema: json.RawMessage(`{"type":`)}})
	var ce *agent.ConfigError
	if !errors.As(err, &ce) || !strings.HasPrefix(err.Error(), "agent: response format R: ") || errors.Unwrap(err) == nil {
		t.Errorf("bad schema: %v, want a *ConfigError naming the format with its cause", err)
	}
}

// A write-through backend (one that cannot branch) still reports file events
// with the call that made them.
func TestWriteThroughBackendEvents(t *testing.T) {
	m := scripted.New(scripted.Script{"parent": steps(
		scripted.Step{ToolCalls: []scripted.StepCall{{ID: "w1", Name: "write", Args: json.RawMessage(`{"path":"/a","content":"x"}`)}}},
		scripted.Step{Content: "done"},
	)}, scripted.Options{})
	backend := writeThrough{vfs.NewMemory(nil)}
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{writeTool}, Backend: backend})
	var file *agent.FileInfo
	res, err := agent.Drain(a.Run(t.Context(), agent.Prompt("go")), func(e agent.Event) {
		if e.Type == agent.FileWrite {
			file = e.File
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if file == nil || file.Path != "/a" || file.CallID != "w1" {
		t.Errorf("file.write = %+v", file)
	}
	if res.State.Files != nil || fmt.Sprint(res.Changed) != "[/a]" {
		t.Errorf("state files %v changed %v", res.State.Files, res.Changed)
	}
	if got, _ := backend.Read(t.Context(), "/a"); got != "x" {
		t.Error("the write did not go through")
	}
}

// writeThrough hides Memory's Branch and Apply.
type writeThrough struct{ vfs.Backend }
