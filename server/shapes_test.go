package server

import (
	"encoding/json"
	"testing"
)

// TestWireShapes checks that responses carry every field the LangGraph
// SDK's TypeScript types declare as required (written out from the SDK's
// schema.d.ts: Assistant, Thread, Run, ThreadState, Checkpoint).
func TestWireShapes(t *testing.T) {
	h := newHarness(t, Config{})
	msg := map[string]any{"messages": []any{map[string]any{"role": "user", "content": "go"}}}
	var run map[string]any
	h.json("POST", "/threads/w/runs", map[string]any{"assistant_id": "researcher", "input": msg, "if_not_exists": "create"}, 200, &run)
	h.json("GET", "/threads/w/runs/"+run["run_id"].(string)+"/join", nil, 200, nil)

	get := func(path string) map[string]any {
		var m map[string]any
		h.json("GET", path, nil, 200, &m)
		return m
	}
	require := func(what string, m map[string]any, keys ...string) {
		t.Helper()
		for _, k := range keys {
			if _, ok := m[k]; !ok {
				b, _ := json.Marshal(m)
				t.Errorf("%s has no %q: %.300s", what, k, b)
			}
		}
	}
	require("assistant", get("/assistants/researcher"), "assistant_id", "graph_id", "config", "context", "created_at", "updated_at", "metadata", "version", "name")
	require("thread", get("/threads/w"), "thread_id", "created_at", "updated_at", "state_updated_at", "metadata", "status", "values", "interrupts")
	require("run", get("/threads/w/runs/"+run["run_id"].(string)), "run_id", "thread_id", "assistant_id", "created_at", "updated_at", "status", "metadata", "multitask_strategy")
	st := get("/threads/w/state")
	require("thread state", st, "values", "next", "checkpoint", "metadata", "created_at", "parent_checkpoint", "tasks")
	require("checkpoint", st["checkpoint"].(map[string]any), "thread_id", "checkpoint_ns", "checkpoint_id")
	tasks := st["tasks"].([]any)
	if len(tasks) != 1 {
		t.Fatalf("tasks %v", tasks)
	}
	require("task", tasks[0].(map[string]any), "id", "name", "interrupts")
	values := st["values"].(map[string]any)
	msgs := values["messages"].([]any)
	for _, m := range msgs {
		require("message", m.(map[string]any), "type", "content", "id")
	}
	ai := msgs[1].(map[string]any)
	calls := ai["tool_calls"].([]any)
	require("tool call", calls[0].(map[string]any), "id", "name", "args", "type")
	tool := msgs[2].(map[string]any)
	require("tool message", tool, "tool_call_id", "status")
}
