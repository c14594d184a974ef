package server

import (
	"bufio"
	"context"
	"iter"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/agent"
)

// TestConfigRunWrapsEachRun checks that Config.Run starts every run (a
// first one and its resume), with the run's thread and the assistant's
// agent, and that the events it yields are the ones streamed.
func TestConfigRunWrapsEachRun(t *testing.T) {
	a, err := DemoAgent("researcher", 0)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var threads []string
	wrap := func(ctx context.Context, thread string, got *agent.Agent, in agent.Input, opts ...agent.RunOption) iter.Seq2[agent.Event, error] {
		if got != a {
			t.Errorf("Config.Run got agent %p, want the assistant's %p", got, a)
		}
		mu.Lock()
		threads = append(threads, thread)
		mu.Unlock()
		return got.Run(ctx, in, opts...)
	}
	h := newHarness(t, Config{Agents: []AgentSpec{{Name: "researcher", Agent: a}}, Run: wrap})
	var th Thread
	h.json("POST", "/threads", nil, 200, &th)
	body := map[string]any{"assistant_id": "researcher", "input": map[string]any{"messages": []any{map[string]any{"type": "human", "content": "hello"}}}}
	_, events := h.stream("POST", "/threads/"+th.ThreadID+"/runs/stream", body)
	var sawValues bool
	for _, ev := range events {
		sawValues = sawValues || ev.Event == "values"
	}
	if !sawValues {
		t.Errorf("no values event streamed from the wrapped run: %+v", events)
	}
	var res map[string]any
	h.json("POST", "/threads/"+th.ThreadID+"/runs/wait", map[string]any{"assistant_id": "researcher",
		"command": map[string]any{"resume": map[string]any{"decisions": []any{map[string]any{"type": "approve"}}}}}, 200, &res)
	mu.Lock()
	defer mu.Unlock()
	if len(threads) != 2 || threads[0] != th.ThreadID || threads[1] != th.ThreadID {
		t.Errorf("Config.Run called for threads %q, want [%s %s]", threads, th.ThreadID, th.ThreadID)
	}
}

// TestEventsFlushedOneByOne: a run stuck in a minute-long model call has
// already delivered its first events, with no heartbeat to push them out
// (the events ready are flushed at once, not when the buffer fills or the
// run moves on).
func TestEventsFlushedOneByOne(t *testing.T) {
	h := newHarness(t, Config{Heartbeat: time.Hour})
	body := `{"assistant_id":"researcher","if_not_exists":"create","input":{"messages":[{"role":"user","content":"slow"}]}}`
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", h.http.URL+"/threads/flush/runs/stream", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("no event arrived while the run waits on its model: %v", err)
	}
	if line != "event: metadata\n" {
		t.Errorf("first line %q, want the metadata event", line)
	}
	var run Run
	h.json("GET", resp.Header.Get("Content-Location"), nil, 200, &run)
	if run.Status != "running" {
		t.Errorf("run status %q while its first model call is under way, want running", run.Status)
	}
	h.json("POST", resp.Header.Get("Content-Location")+"/cancel?wait=1", nil, 202, nil)
}
