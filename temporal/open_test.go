package temporal_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/runner"
	"github.com/deepagents-go/deepagents/temporal"
	"github.com/deepagents-go/deepagents/tool"
)

// A thread of 12 MB of messages, made on a laptop, is opened by a workflow
// on a real server: the messages are read in pieces over several workflow
// tasks, since the server refuses a task completion over 4 MB and would
// terminate the workflow.
func TestOpeningABigThreadOnADevServer(t *testing.T) {
	c := devClient(t)
	const rounds, size = 40, 300 << 10
	var steps []scripted.Step
	for i := range rounds {
		steps = append(steps, step("", scripted.StepCall{ID: fmt.Sprintf("c%d", i), Name: "fetch", Args: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}))
	}
	steps = append(steps, step("read it all"), step("still here"))
	reg := temporal.NewRegistry()
	store := openStore(t)
	reg.Store = store
	m := reg.Model("scripted", scripted.New(scripted.Script{"reader": {Steps: steps}}, scripted.Options{}))
	fetch := reg.Tool("reader", tool.MustFunc("fetch", "Fetch a page.", func(_ context.Context, _ *tool.Env, in struct {
		N int `json:"n"`
	}) (string, error) {
		return bigText(fmt.Sprint(in.N), size), nil
	}))
	a := mustAgent(t, agent.Config{Name: "reader", Model: m, Tools: []tool.Tool{fetch}, MaxSteps: rounds + 5})
	if err := reg.Agent("reader", a); err != nil {
		t.Fatal(err)
	}
	// On the laptop.
	res, err := a.Invoke(t.Context(), agent.Prompt("read"), runner.Checkpoints(store, "big"))
	if err != nil || res.Status != agent.StatusOK || res.FinalText() != "read it all" {
		t.Fatalf("laptop run: %v %+v", err, res)
	}

	// On a worker.
	w := worker.New(c, "deepagents-big", worker.Options{})
	reg.Register(w)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "big", TaskQueue: "deepagents-big"}, temporal.RunAgentWorkflow,
		temporal.RunInput{Agent: "reader", Thread: "big", Input: "still there?"})
	if err != nil {
		t.Fatal(err)
	}
	var s temporal.Summary
	if err := run.Get(ctx, &s); err != nil {
		t.Fatalf("the workflow failed: %v", err)
	}
	if s.Status != agent.StatusOK || s.Text != "still here" {
		t.Fatalf("summary %+v", s)
	}
	h := history(ctx, t, c, run)
	tasks := 0
	for _, e := range h.GetEvents() {
		if e.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED {
			tasks++
		}
	}
	// 12 MB in tasks of at most 1 MB, and the model call's.
	if tasks < 6 {
		t.Errorf("%d workflow tasks completed, want the messages read over at least 6", tasks)
	}
	if err := replayerOf(t, reg).ReplayWorkflowHistory(nil, h); err != nil {
		t.Fatalf("the history does not replay: %v", err)
	}
}
