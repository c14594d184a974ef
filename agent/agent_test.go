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

type sleepIn struct {
	Name string `json:"name"`
	MS   int    `json:"ms"`
}

// interval records when a tool call ran.
type interval struct {
	name       string
	start, end time.Time
}

type recorder struct {
	mu sync.Mutex
	iv []interval
}

func (r *recorder) add(iv interval) {
	r.mu.Lock()
	r.iv = append(r.iv, iv)
	r.mu.Unlock()
}

// maxOverlap returns how many recorded intervals were open at once.
func (r *recorder) maxOverlap() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	best := 0
	for _, a := range r.iv {
		n := 0
		for _, b := range r.iv {
			if !b.start.After(a.start) && b.end.After(a.start) {
				n++
			}
		}
		best = max(best, n)
	}
	return best
}

func sleepTool(rec *recorder) tool.Tool {
	return tool.MustFunc("sleep", "Sleep for ms milliseconds.", func(ctx context.Context, env *tool.Env, in sleepIn) (string, error) {
		start := time.Now()
		select {
		case <-time.After(time.Duration(in.MS) * time.Millisecond):
		case <-ctx.Done():
			return "", ctx.Err()
		}
		if rec != nil {
			rec.add(interval{in.Name, start, time.Now()})
		}
		return "slept " + in.Name, nil
	})
}

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

func toolMessages(msgs []llm.Message) []llm.Message {
	var out []llm.Message
	for _, m := range msgs {
		if m.Role == llm.RoleTool {
			out = append(out, m)
		}
	}
	return out
}

func TestParallelToolCallsOverlapAndKeepCallOrder(t *testing.T) {
	rec := &recorder{}
	m := scripted.New(scripted.Script{"parent": steps(
		scripted.Step{ToolCalls: []scripted.StepCall{
			call("sleep", `{"name":"slow","ms":120}`),
			call("sleep", `{"name":"mid","ms":60}`),
			call("sleep", `{"name":"fast","ms":1}`),
		}},
		scripted.Step{Content: "done"},
	)}, scripted.Options{NoUsage: true})
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{sleepTool(rec)}})
	var ends []string
	res, err := agent.Drain(a.Run(t.Context(), agent.Prompt("go")), func(e agent.Event) {
		if e.Type == agent.ToolEnd {
			ends = append(ends, e.Tool.Result)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := rec.maxOverlap(); got != 3 {
		t.Errorf("max overlap of tool calls = %d, want 3 (they must run concurrently)", got)
	}
	var got []string
	for _, tm := range toolMessages(res.State.Messages) {
		got = append(got, tm.Content)
	}
	if want := []string{"slept slow", "slept mid", "slept fast"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("results appended in %v, want call order %v", got, want)
	}
	if ends[0] != "slept fast" {
		t.Errorf("tool.end events should arrive as calls finish; first was %q", ends[0])
	}
}

func TestMaxParallelOneRunsSequentially(t *testing.T) {
	rec := &recorder{}
	m := scripted.New(scripted.Script{"parent": steps(
		scripted.Step{ToolCalls: []scripted.StepCall{call("sleep", `{"name":"a","ms":20}`), call("sleep", `{"name":"b","ms":20}`)}},
		scripted.Step{Content: "done"},
	)}, scripted.Options{NoUsage: true})
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{sleepTool(rec)}, MaxParallel: 1})
	if _, err := a.Invoke(t.Context(), agent.Prompt("go")); err != nil {
		t.Fatal(err)
	}
	if got := rec.maxOverlap(); got != 1 {
		t.Errorf("overlap with MaxParallel 1 = %d, want 1", got)
	}
}

func TestMaxStepsEndsWithLimit(t *testing.T) {
	loop := scripted.Step{ToolCalls: []scripted.StepCall{call("write", `{"path":"/x","content":"1"}`)}}
	m := scripted.New(scripted.Script{"parent": steps(loop, loop, loop, loop, loop)}, scripted.Options{})
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{writeTool}, MaxSteps: 3})
	res, err := a.Invoke(t.Context(), agent.Prompt("go"))
	if err != nil {
		t.Fatalf("a limit is not an error: %v", err)
	}
	if res.Status != agent.StatusLimit || res.Rounds != 3 {
		t.Fatalf("status %s after %d rounds, want limit after 3", res.Status, res.Rounds)
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
		scripted.Step{ToolCalls: []scripted.StepCall{call("sleep", `{"name":"long","ms":60000}`)}},
		scripted.Step{Content: "never"},
	)}, scripted.Options{NoUsage: true})
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{sleepTool(nil)}})
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
		scripted.Step{ToolCalls: []scripted.StepCall{call("fatal", `{}`), call("write", `{"path":"/ok","content":"kept"}`)}},
		scripted.Step{Content: "never"},
	)}, scripted.Options{})
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{fatal, writeTool}})
	res, err := a.Invoke(t.Context(), agent.Prompt("go"))
	if !errors.Is(err, tool.ErrFatal) || res.Status != agent.StatusError {
		t.Fatalf("err %v status %s, want a fatal error", err, res.Status)
	}
	if res.Rounds != 1 {
		t.Errorf("no model call may follow a fatal error; rounds = %d", res.Rounds)
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
		scripted.Step{ToolCalls: []scripted.StepCall{call("sleep", `{"name":"x","ms":60000}`)}},
	)}, scripted.Options{NoUsage: true})
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{sleepTool(nil)}})
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
		if e.Agent != "parent" {
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
			if c.status == agent.StatusError && !errors.Is(err, agent.ErrNoStructuredResponse) {
				t.Errorf("err = %v", err)
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
	if _, err := agent.New(agent.Config{}); err == nil {
		t.Error("missing model accepted")
	}
	if _, err := agent.New(agent.Config{Model: m, Tools: []tool.Tool{writeTool, writeTool}}); err == nil || !strings.Contains(err.Error(), `two tools are named "write"`) {
		t.Errorf("duplicate tool names: %v", err)
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
