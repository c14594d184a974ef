package temporal_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/temporal"
	"github.com/deepagents-go/deepagents/tool"
)

// noise is n bytes of random-looking text, which does not compress away.
func noise(n int) string {
	var b strings.Builder
	for x := uint64(1); b.Len() < n; {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b.WriteString(strconv.FormatUint(x, 36))
	}
	return b.String()
}

// lastToolResult is a middleware that keeps the content of the last tool
// message of each request.
func lastToolResult(seen *[]string) agent.Middleware {
	return agent.Middleware{WrapModel: func(ctx context.Context, req *llm.Request, next agent.ModelFunc) (*llm.Response, error) {
		if last := req.Messages[len(req.Messages)-1]; last.Role == llm.RoleTool {
			*seen = append(*seen, last.Content)
		}
		return next(ctx, req)
	}}
}

// A tool activity whose result is over the payload limit fails the call in
// the activity, with an error the model reads as the call's result: the
// activity itself completes, and the run goes on.
func TestToolResultOverThePayloadLimitIsTheCallsError(t *testing.T) {
	reg := temporal.NewRegistry()
	big := tool.MustFunc("big", "Read a big file.", func(context.Context, *tool.Env, struct{}) (string, error) { return noise(2600 << 10), nil })
	m := reg.Model("scripted", scripted.New(scripted.Script{"parent": {Steps: []scripted.Step{step("", tc("big", `{}`)), step("too big")}}}, scripted.Options{}))
	var seen []string
	a, err := agent.New(agent.Config{Model: m, Tools: []tool.Tool{reg.Tool("parent", big)}, Middleware: []agent.Middleware{lastToolResult(&seen)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Agent("parent", a); err != nil {
		t.Fatal(err)
	}
	env := newEnv(t, reg)
	failed := 0
	env.SetOnActivityCompletedListener(func(_ *activity.Info, _ converter.EncodedValue, err error) {
		if err != nil {
			failed++
		}
	})
	env.ExecuteWorkflow(temporal.RunAgentWorkflow, temporal.RunInput{Agent: "parent", Input: "read it"})
	s := summary(t, env)
	if s.Status != agent.StatusOK || s.Text != "too big" || failed != 0 {
		t.Fatalf("summary %+v, %d failed activities", s, failed)
	}
	if len(seen) != 1 || !strings.Contains(seen[0], "over the 1572864 a Temporal activity may return") || !strings.Contains(seen[0], "result of big") {
		t.Fatalf("the model read %.300q", seen)
	}
}

// A model response over the payload limit fails the model call in the
// activity, without retries, with a PayloadError in workflow code.
func TestModelResponseOverThePayloadLimitFailsTheCall(t *testing.T) {
	reg := temporal.NewRegistry()
	calls := 0
	m := reg.Model("scripted", onCall{Model: scripted.New(scripted.Script{"parent": {Steps: []scripted.Step{step(noise(2600 << 10))}}}, scripted.Options{}),
		hook: func(context.Context, llm.CallInfo) error { calls++; return nil }})
	var got error
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
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: 20 * time.Second})
	env.ExecuteWorkflow(temporal.RunAgentWorkflow, temporal.RunInput{Agent: "parent", Input: "say a lot"})
	s := summary(t, env)
	var pe *temporal.PayloadError
	if s.Status != agent.StatusError || !errors.As(got, &pe) || !pe.Output || pe.Activity != temporal.ModelActivity || pe.Size <= temporal.MaxPayload {
		t.Fatalf("summary %+v, error %#v", s, got)
	}
	if !strings.Contains(s.Error, "activity's output is") || calls != 1 {
		t.Errorf("error %q after %d calls", s.Error, calls)
	}
}

// A tool call whose arguments are not valid JSON reaches the tool's
// activity as it is, and the tool says what is wrong, rather than the
// encoder failing the call before it is scheduled.
func TestInvalidToolArgumentsReachTheTool(t *testing.T) {
	reg := temporal.NewRegistry()
	type in struct {
		Path string `json:"path"`
	}
	ran := 0
	read := tool.MustFunc("read", "Read a file.", func(context.Context, *tool.Env, in) (string, error) { ran++; return "read", nil })
	m := reg.Model("scripted", scripted.New(scripted.Script{"parent": {Steps: []scripted.Step{
		step("", scripted.StepCall{Name: "read", Args: json.RawMessage(`{"path": "/a.txt"`)}), step("sorry")}}}, scripted.Options{}))
	var seen []string
	a, err := agent.New(agent.Config{Model: m, Tools: []tool.Tool{reg.Tool("parent", read)}, Middleware: []agent.Middleware{lastToolResult(&seen)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Agent("parent", a); err != nil {
		t.Fatal(err)
	}
	env := newEnv(t, reg)
	var args []string
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, a converter.EncodedValues) {
		if info.ActivityType.Name == temporal.ToolActivity {
			var run temporal.ToolRun
			if err := a.Get(&run); err != nil {
				t.Error(err)
			}
			if run.RawArgs != nil {
				args = append(args, *run.RawArgs)
			}
		}
	})
	env.ExecuteWorkflow(temporal.RunAgentWorkflow, temporal.RunInput{Agent: "parent", Input: "read it"})
	s := summary(t, env)
	if s.Status != agent.StatusOK || ran != 0 {
		t.Fatalf("summary %+v, the tool's function ran %d times", s, ran)
	}
	if len(args) != 1 || args[0] != `{"path": "/a.txt"` {
		t.Errorf("the activity was given %q", args)
	}
	if len(seen) != 1 || !strings.Contains(seen[0], "not valid JSON") {
		t.Errorf("the model read %q", seen)
	}
}
