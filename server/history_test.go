package server

import (
	"fmt"
	"testing"
)

// TestHistoryPaging: history pages by before in every shape LangGraph's
// SDKs send it (a config with configurable.checkpoint_id, a checkpoint, an
// id), by GET's before parameter, filters by metadata, and refuses a limit
// that is not a positive number.
func TestHistoryPaging(t *testing.T) {
	h := newHarness(t, Config{})
	msg := map[string]any{"messages": []any{map[string]any{"role": "user", "content": "go"}}}
	h.json("POST", "/threads/s/runs/wait", map[string]any{"assistant_id": "researcher", "input": msg, "if_not_exists": "create"}, 200, nil)
	h.json("POST", "/threads/s/runs/wait", map[string]any{"assistant_id": "researcher", "command": map[string]any{"resume": []any{map[string]any{"type": "approve"}}}}, 200, nil)
	h.json("POST", "/threads/s/runs/wait", map[string]any{"assistant_id": "researcher", "input": msg}, 200, nil)
	var all []ThreadState
	h.json("POST", "/threads/s/history", map[string]any{"limit": 1000}, 200, &all)
	if len(all) < 6 {
		t.Fatalf("history has %d checkpoints; the test needs 6", len(all))
	}
	ids := func(sts []ThreadState) []string {
		var out []string
		for _, st := range sts {
			out = append(out, st.Checkpoint.CheckpointID)
		}
		return out
	}
	mark := all[2].Checkpoint.CheckpointID
	want := fmt.Sprint(ids(all[3:5]))
	for name, before := range map[string]any{
		"js config":     map[string]any{"configurable": map[string]any{"checkpoint_id": mark}},
		"config, ns":    map[string]any{"configurable": map[string]any{"thread_id": "s", "checkpoint_ns": "", "checkpoint_id": mark}},
		"checkpoint":    map[string]any{"thread_id": "s", "checkpoint_ns": "", "checkpoint_id": mark},
		"python string": mark,
	} {
		var got []ThreadState
		h.json("POST", "/threads/s/history", map[string]any{"limit": 2, "before": before}, 200, &got)
		if fmt.Sprint(ids(got)) != want {
			t.Errorf("before as %s: %v, want %s", name, ids(got), want)
		}
	}
	var got []ThreadState
	h.json("GET", "/threads/s/history?limit=2&before="+mark, nil, 200, &got)
	if fmt.Sprint(ids(got)) != want {
		t.Errorf("GET before=%s: %v, want %s", mark, ids(got), want)
	}

	// Metadata: a string pair (the saver's filter) and step (a number).
	source, _ := all[1].Metadata["source"].(string)
	var n int
	for _, st := range all {
		if st.Metadata["source"] == source {
			n++
		}
	}
	h.json("POST", "/threads/s/history", map[string]any{"limit": 1000, "metadata": map[string]any{"source": source}}, 200, &got)
	if len(got) != n || n == len(all) {
		t.Errorf("metadata source=%q: %d checkpoints, want %d of %d", source, len(got), n, len(all))
	}
	for _, st := range got {
		if st.Metadata["source"] != source {
			t.Errorf("metadata source=%q returned %s with source %v", source, st.Checkpoint.CheckpointID, st.Metadata["source"])
		}
	}
	step := all[3].Metadata["step"]
	h.json("POST", "/threads/s/history", map[string]any{"limit": 1, "metadata": map[string]any{"step": step}}, 200, &got)
	if fmt.Sprint(ids(got)) != fmt.Sprint(ids(all[3:4])) {
		t.Errorf("metadata step=%v: %v, want %v", step, ids(got), ids(all[3:4]))
	}
	h.json("POST", "/threads/s/history", map[string]any{"metadata": map[string]any{"source": "nowhere"}}, 200, &got)
	if len(got) != 0 {
		t.Errorf("metadata source=nowhere: %v", ids(got))
	}

	for _, l := range []string{"0", "-5", "abc"} {
		h.json("GET", "/threads/s/history?limit="+l, nil, 422, nil)
	}
	for _, l := range []any{0, -5, "abc"} {
		h.json("POST", "/threads/s/history", map[string]any{"limit": l}, 422, nil)
	}
	h.json("POST", "/threads/s/history", map[string]any{"before": map[string]any{"configurable": map[string]any{"thread_id": "s"}}}, 422, nil)
	h.json("POST", "/threads/s/history", map[string]any{"before": map[string]any{"checkpoint_id": mark, "thread_id": "other"}}, 422, nil)
	h.json("POST", "/threads/s/history", map[string]any{"before": "99999999"}, 404, nil)
}
