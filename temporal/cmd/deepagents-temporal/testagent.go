package main

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"os"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/subagent"
	"github.com/deepagents-go/deepagents/temporal"
	"github.com/deepagents-go/deepagents/tool"
)

// testAgentEnv, when set to a file path, registers the agent of the
// kill-a-worker test (testAgentName) on the worker: its tools and model
// calls append a line to that file each time they run, which is how the
// test sees what ran where. No flag reaches it.
const testAgentEnv = "DEEPAGENTS_TEMPORAL_TEST_AGENT"

// testAgentName is the agent testAgentEnv registers.
const testAgentName = "test-killworker"

// testAgents registers the test agent when testAgentEnv asks for it, and
// adds its name to names.
func testAgents(reg *temporal.Registry, names *[]string) error {
	path := os.Getenv(testAgentEnv)
	if path == "" {
		return nil
	}
	// A killed worker's activity is then noticed in seconds.
	reg.HeartbeatTimeout = 2 * time.Second
	log := &sideEffects{path: path}
	script := scripted.Script{
		// Round 0 runs record and the helper side by side; the helper's
		// slow call is where the test kills the worker.
		testAgentName: {Steps: []scripted.Step{
			{ToolCalls: []scripted.StepCall{
				{ID: "r1", Name: "record", Args: json.RawMessage(`{"note":"first"}`)},
				{ID: "w1", Name: "write_file", Args: json.RawMessage(`{"file_path":"/a.txt","content":"written by the parent first\n"}`)},
				{ID: "t1", Name: "task", Args: json.RawMessage(`{"description":"do the slow part","subagent_type":"helper"}`)},
			}},
			{ToolCalls: []scripted.StepCall{
				{ID: "r2", Name: "record", Args: json.RawMessage(`{"note":"second"}`)},
				{ID: "w2", Name: "write_file", Args: json.RawMessage(`{"file_path":"/b.txt","content":"written by the parent after the helper\n"}`)},
			}},
			{Content: "all done"},
		}},
		"helper": {Steps: []scripted.Step{
			{ToolCalls: []scripted.StepCall{{ID: "s1", Name: "slow", Args: json.RawMessage(`{"seconds":5}`)}}},
			{ToolCalls: []scripted.StepCall{{ID: "h1", Name: "write_file", Args: json.RawMessage(`{"file_path":"/helper.txt","content":"written by the helper\n"}`)}}},
			{Content: "helped"},
		}},
	}
	m := reg.Model("test", &recordingModel{m: scripted.New(script, scripted.Options{NoUsage: true}), log: log})
	record := tool.MustFunc("record", "Records a note.", func(ctx context.Context, env *tool.Env, in struct {
		Note string `json:"note"`
	}) (string, error) {
		log.add(ctx, "tool %s", env.CallID)
		return "recorded " + in.Note, nil
	})
	slow := tool.MustFunc("slow", "Takes its time.", func(ctx context.Context, env *tool.Env, in struct {
		Seconds float64 `json:"seconds"`
	}) (string, error) {
		log.add(ctx, "tool %s", env.CallID)
		select {
		case <-time.After(time.Duration(in.Seconds * float64(time.Second))):
			return "slept", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})
	a, err := deepagents.New(deepagents.Config{
		Name: testAgentName, Model: m, NoCompaction: true,
		Tools: []tool.Tool{reg.Tool(testAgentName, record)},
		Subagents: []subagent.Spec{{Name: "helper", Description: "Does the slow part.",
			Tools: []tool.Tool{reg.Tool("helper", slow)}}},
	})
	if err != nil {
		return err
	}
	if err := reg.Agent(testAgentName, a); err != nil {
		return err
	}
	*names = append(*names, testAgentName)
	return nil
}

// sideEffects appends one line per model or tool call to a file: what ran,
// and the activity attempt it ran in.
type sideEffects struct {
	mu   sync.Mutex
	path string
}

func (s *sideEffects) add(ctx context.Context, format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	if activity.IsActivity(ctx) {
		line += fmt.Sprintf(" attempt %d", activity.GetInfo(ctx).Attempt)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := os.OpenFile(s.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		panic(err) // the test must not miss a side effect
	}
	defer f.Close()
	if _, err := f.WriteString(line + "\n"); err != nil {
		panic(err)
	}
	if err := f.Sync(); err != nil {
		panic(err)
	}
}

// recordingModel logs each model call (agent path and round) before m
// answers it.
type recordingModel struct {
	m   *scripted.Model
	log *sideEffects
}

func (r *recordingModel) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	ci, _ := llm.CallInfoFrom(ctx)
	r.log.add(ctx, "model %s %d", ci.Path, ci.Round)
	return r.m.Generate(ctx, req)
}

func (r *recordingModel) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.StreamEvent, error] {
	return llm.StreamOf(ctx, req, r.Generate)
}
