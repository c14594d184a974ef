package server

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/tool"
)

// cutCounts counts what the "cut" agent did, over every server it ran on.
type cutCounts struct {
	model, count, hang atomic.Int64
}

// countTool counts its calls: its side effect.
type countTool struct{ c *cutCounts }

func (countTool) Spec() llm.ToolSpec {
	return llm.ToolSpec{Name: "count", Description: "counts", Parameters: json.RawMessage(`{"type":"object"}`)}
}

func (t countTool) Run(context.Context, *tool.Env, json.RawMessage) (tool.Result, error) {
	return tool.Text(fmt.Sprint("counted ", t.c.count.Add(1))), nil
}

// hangTool hangs until its run is cancelled when hang is set (closing
// started once), else answers at once.
type hangTool struct {
	c       *cutCounts
	hang    bool
	started func()
}

func (hangTool) Spec() llm.ToolSpec {
	return llm.ToolSpec{Name: "hang", Description: "hangs", Parameters: json.RawMessage(`{"type":"object"}`)}
}

func (t hangTool) Run(ctx context.Context, _ *tool.Env, _ json.RawMessage) (tool.Result, error) {
	t.c.hang.Add(1)
	if t.hang {
		t.started()
		<-ctx.Done()
		return tool.Result{}, ctx.Err()
	}
	return tool.Text("went on"), nil
}

// cutAgent asks for count (c1), then for count (c2) and hang (h1) at once,
// then answers "all done".
func cutAgent(t *testing.T, c *cutCounts, hang bool, started func()) *agent.Agent {
	t.Helper()
	model := scripted.New(nil, scripted.Options{Func: func(_ llm.CallInfo, req *llm.Request) (scripted.Step, error) {
		c.model.Add(1)
		last := req.Messages[len(req.Messages)-1]
		switch {
		case last.Role == llm.RoleUser:
			return scripted.Step{ToolCalls: []scripted.StepCall{{ID: "c1", Name: "count", Args: json.RawMessage(`{}`)}}}, nil
		case last.ToolCallID == "c1":
			return scripted.Step{ToolCalls: []scripted.StepCall{
				{ID: "c2", Name: "count", Args: json.RawMessage(`{}`)},
				{ID: "h1", Name: "hang", Args: json.RawMessage(`{}`)},
			}}, nil
		}
		return scripted.Step{Content: "all done"}, nil
	}})
	a, err := agent.New(agent.Config{Name: "cut", Model: model, Tools: []tool.Tool{countTool{c}, hangTool{c: c, hang: hang, started: started}}})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// cutOffServer leaves what a server killed mid-run leaves in its SQLite
// files: thread T's run has finished c1, and of the step after, c2 (saved)
// while h1 hangs. Server A stays blocked in h1 (it stops at the test's
// end, and its lease names a process that is gone); server B, started over
// the same files with an agent whose hang answers, is returned.
func cutOffServer(t *testing.T, c *cutCounts) *harness {
	t.Helper()
	holder := goneHolder(t)
	dir := t.TempDir()
	serve := func(a *agent.Agent, leased bool) *harness {
		sv, st := openFiles(t, dir)
		t.Cleanup(func() { _ = st.Close(); _ = sv.Close() })
		var run func(context.Context, string, *agent.Agent, agent.Input, ...agent.RunOption) iter.Seq2[agent.Event, error]
		if leased {
			run = leasedAs(sv, holder)
		}
		return newHarness(t, Config{Saver: sv, Store: st, Run: run, Agents: []AgentSpec{{Name: "cut", Agent: a}}})
	}
	hanging := make(chan struct{})
	var once sync.Once
	hA := serve(cutAgent(t, c, true, func() { once.Do(func() { close(hanging) }) }), true)
	hA.json("POST", "/threads/T/runs", map[string]any{"assistant_id": "cut", "if_not_exists": "create",
		"input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "count twice"}}}}, 200, nil)
	select {
	case <-hanging:
	case <-time.After(20 * time.Second):
		t.Fatal("the run did not reach h1")
	}
	// c2's result is saved under the step in progress.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		rs, err := hA.srv.loadState(context.Background(), "T")
		if err == nil && rs != nil && rs.InProgress != nil {
			if _, ok := rs.InProgress.Done["c2"]; ok {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("c2's result was not saved: %+v %v", rs, err)
		}
	}
	if n, m := c.count.Load(), c.model.Load(); n != 2 || m != 2 {
		t.Fatalf("before the cut: count ran %d times, the model %d; want 2 and 2", n, m)
	}
	return serve(cutAgent(t, c, false, nil), false)
}

// cutValues are the final values of the "cut" thread as the tests read them.
type cutValues struct {
	Messages []LCMessage `json:"messages"`
	Error    string      `json:"__error__"`
}

// checkContinued checks the thread's values after its cut-off run was
// continued on the restarted server: c1 and c2 ran once each, h1 ran again
// (it had not finished), the step's model call was not made again, and
// the messages are the whole run's, in order.
func checkContinued(t *testing.T, h *harness, c *cutCounts, v cutValues) {
	t.Helper()
	if v.Error != "" {
		t.Fatalf("the continued run failed: %s", v.Error)
	}
	if n := c.count.Load(); n != 2 {
		t.Errorf("count ran %d times in all, want 2 (c1 and c2, neither again)", n)
	}
	if n := c.hang.Load(); n != 2 {
		t.Errorf("hang ran %d times in all, want 2 (cut off, then again)", n)
	}
	if n := c.model.Load(); n != 3 {
		t.Errorf("the model was called %d times in all, want 3 (the step in progress is not asked for again)", n)
	}
	var got []string
	for _, m := range v.Messages {
		s := m.Type
		for _, tc := range m.ToolCalls {
			s += " " + tc.ID
		}
		if m.ToolCallID != "" {
			s += " " + m.ToolCallID
		}
		if text, ok := m.Content.(string); ok && text != "" {
			s += ": " + text
		}
		got = append(got, s)
	}
	want := []string{"human: count twice", "ai c1", "tool c1: counted 1", "ai c2 h1", "tool c2: counted 2", "tool h1: went on", "ai: all done"}
	if !slices.Equal(got, want) {
		t.Errorf("messages:\n got %q\nwant %q", got, want)
	}
	var th Thread
	h.json("GET", "/threads/T", nil, 200, &th)
	if th.Status != "idle" || th.Error != "" {
		t.Errorf("thread status %q, error %q; want idle", th.Status, th.Error)
	}
	var runs []Run
	h.json("GET", "/threads/T/runs", nil, 200, &runs)
	if len(runs) != 2 || runs[0].Status != "success" || runs[1].Status != "error" {
		t.Errorf("runs %+v; want the continuing run success, then the cut-off one error", runs)
	}
}

// TestContinueCutOffRun: a run without input or command on a thread whose
// run a stop of the server cut off continues that run from its last
// checkpoint on the restarted server, by each of the three run endpoints:
// the finished calls are not run again, the unfinished one is, and the run
// ends with the whole conversation.
func TestContinueCutOffRun(t *testing.T) {
	noInput := map[string]any{"assistant_id": "cut"}
	t.Run("wait", func(t *testing.T) {
		var c cutCounts
		h := cutOffServer(t, &c)
		var v cutValues
		h.json("POST", "/threads/T/runs/wait", noInput, 200, &v)
		checkContinued(t, h, &c, v)
	})
	t.Run("null input", func(t *testing.T) {
		var c cutCounts
		h := cutOffServer(t, &c)
		var v cutValues
		h.json("POST", "/threads/T/runs/wait", map[string]any{"assistant_id": "cut", "input": nil, "command": nil}, 200, &v)
		checkContinued(t, h, &c, v)
	})
	t.Run("stream", func(t *testing.T) {
		var c cutCounts
		h := cutOffServer(t, &c)
		_, evs := h.stream("POST", "/threads/T/runs/stream", noInput)
		if len(evs) < 2 || evs[0].Event != "metadata" || evs[len(evs)-1].Event != "values" {
			t.Fatalf("stream %v; want metadata first and values last", eventNames(evs))
		}
		var v cutValues
		if err := json.Unmarshal(evs[len(evs)-1].Data, &v); err != nil {
			t.Fatal(err)
		}
		checkContinued(t, h, &c, v)
	})
	t.Run("background", func(t *testing.T) {
		var c cutCounts
		h := cutOffServer(t, &c)
		var run Run
		h.json("POST", "/threads/T/runs", noInput, 200, &run)
		var v cutValues
		h.json("GET", "/threads/T/runs/"+run.RunID+"/join", nil, 200, &v)
		checkContinued(t, h, &c, v)
	})
}

// TestContinueRefused: a run without input or command is refused, and not
// stored, where there is nothing to continue: a thread that does not exist
// (404) or was just made, one with no checkpoint, one whose last run
// finished, one that waits for approval (that takes command.resume), and
// one whose run is going on here (409).
func TestContinueRefused(t *testing.T) {
	var c cutCounts
	a := cutAgent(t, &c, false, nil)
	demo, err := DemoAgent("researcher", 0)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, Config{Agents: []AgentSpec{{Name: "cut", Agent: a}, {Name: "researcher", Agent: demo}}})
	msg := func(text string) map[string]any {
		return map[string]any{"messages": []any{map[string]any{"role": "user", "content": text}}}
	}
	noInput := func(asst string) map[string]any { return map[string]any{"assistant_id": asst} }
	runs := func(thread string) int {
		var rs []Run
		h.json("GET", "/threads/"+thread+"/runs", nil, 200, &rs)
		return len(rs)
	}

	h.wantError("POST", "/threads/ghost/runs", noInput("cut"), 404, "not found")
	h.wantError("POST", "/threads/ghost/runs/wait", map[string]any{"assistant_id": "cut", "if_not_exists": "create"}, 422, "no run to continue", "input")
	h.json("GET", "/threads/ghost", nil, 404, nil)

	h.json("POST", "/threads", map[string]any{"thread_id": "empty"}, 200, nil)
	h.wantError("POST", "/threads/empty/runs/stream", noInput("cut"), 422, "no checkpoint", "input messages")
	if n := runs("empty"); n != 0 {
		t.Errorf("thread empty: %d runs stored, want 0", n)
	}

	h.json("POST", "/threads/done/runs/wait", map[string]any{"assistant_id": "cut", "if_not_exists": "create", "input": msg("count")}, 200, nil)
	model := c.model.Load()
	h.wantError("POST", "/threads/done/runs/wait", noInput("cut"), 422, "ended with status ok", "input messages")
	if n := runs("done"); n != 1 {
		t.Errorf("thread done: %d runs stored, want 1", n)
	}
	if c.model.Load() != model {
		t.Errorf("the refused run called the model")
	}

	var res map[string]json.RawMessage
	h.json("POST", "/threads/waits/runs/wait", map[string]any{"assistant_id": "researcher", "if_not_exists": "create", "input": msg("go")}, 200, &res)
	if _, ok := res["__interrupt__"]; !ok {
		t.Fatalf("the demo run did not stop for approval: %v", res)
	}
	h.wantError("POST", "/threads/waits/runs", noInput("researcher"), 422, "waits for decisions", "write_file", "command.resume")
	h.wantError("POST", "/threads/waits/runs", map[string]any{"assistant_id": "researcher", "command": map[string]any{"resume": []any{}}}, 422, "no decisions")
	var th Thread
	h.json("GET", "/threads/waits", nil, 200, &th)
	if th.Status != "interrupted" || runs("waits") != 1 {
		t.Errorf("thread waits: status %q, %d runs; want still interrupted, 1 run", th.Status, runs("waits"))
	}

	var slow Run
	h.json("POST", "/threads/busy/runs", map[string]any{"assistant_id": "researcher", "if_not_exists": "create", "input": msg("slow please")}, 200, &slow)
	for _, strategy := range []string{"reject", "enqueue", "interrupt"} {
		h.wantError("POST", "/threads/busy/runs", map[string]any{"assistant_id": "researcher", "multitask_strategy": strategy}, 409, "is going on")
	}
	var got Run
	h.json("GET", "/threads/busy/runs/"+slow.RunID, nil, 200, &got)
	if got.Status != "running" && got.Status != "pending" {
		t.Errorf("a refused run stopped the running one: status %q", got.Status)
	}
	h.json("POST", "/threads/busy/runs/"+slow.RunID+"/cancel?wait=1", nil, 202, nil)
}
