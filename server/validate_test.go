package server

import (
	"fmt"
	"testing"
)

// TestBadValuesRefused: a value outside its field's choices is a 422 that
// names the choices, and changes nothing, rather than being taken as the
// default or matching nothing: if_exists, a thread search's status,
// sort_order, limit and offset, a run's if_not_exists and command fields
// other than resume, and a cancel's action.
func TestBadValuesRefused(t *testing.T) {
	h := newHarness(t, Config{})
	h.wantError("POST", "/threads", map[string]any{"thread_id": "a", "if_exists": "bogus"}, 422, "raise, do_nothing")
	h.json("GET", "/threads/a", nil, 404, nil)
	h.json("POST", "/threads", map[string]any{"thread_id": "a", "if_exists": "raise"}, 200, nil)
	h.json("POST", "/threads", map[string]any{"thread_id": "a", "if_exists": "raise"}, 409, nil)
	h.json("POST", "/threads", map[string]any{"thread_id": "a", "if_exists": "do_nothing"}, 200, nil)

	for i := range 11 {
		h.json("POST", "/threads", map[string]any{"thread_id": fmt.Sprint("t", i)}, 200, nil)
	}
	for body, says := range map[string]string{
		`{"status": "bogus"}`:                         "idle, busy, interrupted, error",
		`{"sort_order": "up"}`:                        "asc, desc",
		`{"sort_by": "size"}`:                         "created_at",
		`{"limit": 0}`:                                "at least 1",
		`{"limit": -3}`:                               "at least 1",
		`{"offset": -1}`:                              "offset",
		`{"status": "Idle"}`:                          "idle, busy",
		`{"sort_order": "DESC"}`:                      "asc, desc",
		`{"limit": 1, "offset": 0, "status": "nope"}`: "nope",
	} {
		h.wantError("POST", "/threads/search", rawJSON(body), 422, says)
	}
	var ths []Thread
	hdr := h.json("POST", "/threads/search", nil, 200, &ths)
	if len(ths) != 10 || hdr.Get("X-Pagination-Total") != "12" {
		t.Errorf("search without a limit: %d threads of %s; want 10 of 12", len(ths), hdr.Get("X-Pagination-Total"))
	}
	h.json("POST", "/threads/search", map[string]any{"limit": 5000, "status": "idle", "sort_order": "asc"}, 200, &ths)
	if len(ths) != 12 {
		t.Errorf("search with limit 5000: %d threads, want 12", len(ths))
	}

	msg := map[string]any{"messages": []any{map[string]any{"role": "user", "content": "go"}}}
	h.wantError("POST", "/threads/a/runs", map[string]any{"assistant_id": "researcher", "input": msg, "if_not_exists": "maybe"}, 422, "reject, create")
	h.json("POST", "/threads/a/runs/wait", map[string]any{"assistant_id": "researcher", "input": msg}, 200, nil)
	for _, cmd := range []map[string]any{
		{"goto": "tools"},
		{"resume": []any{map[string]any{"type": "approve"}}, "goto": "tools"},
		{"update": map[string]any{"x": 1}},
	} {
		h.wantError("POST", "/threads/a/runs", map[string]any{"assistant_id": "researcher", "command": cmd}, 422, "not supported", "resume")
	}
	var runs []Run
	h.json("GET", "/threads/a/runs", nil, 200, &runs)
	if len(runs) != 1 {
		t.Fatalf("refused requests stored runs: %d runs, want 1", len(runs))
	}
	var th Thread
	h.json("GET", "/threads/a", nil, 200, &th)
	if th.Status != "interrupted" {
		t.Errorf("thread status %q after refused commands; want still interrupted", th.Status)
	}

	var slow Run
	h.json("POST", "/threads", map[string]any{"thread_id": "s"}, 200, nil)
	h.json("POST", "/threads/s/runs", map[string]any{"assistant_id": "researcher",
		"input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "slow please"}}}}, 200, &slow)
	h.wantError("POST", "/threads/s/runs/"+slow.RunID+"/cancel?action=bogus", nil, 422, "interrupt, rollback")
	var got Run
	h.json("GET", "/threads/s/runs/"+slow.RunID, nil, 200, &got)
	if got.Status != "running" && got.Status != "pending" {
		t.Errorf("the refused cancel stopped the run: status %q", got.Status)
	}
	h.json("POST", "/threads/s/runs/"+slow.RunID+"/cancel?action=interrupt&wait=1", nil, 202, nil)
	h.json("GET", "/threads/s/runs/"+slow.RunID, nil, 200, &got)
	if got.Status != "interrupted" {
		t.Errorf("cancelled run status %q, want interrupted", got.Status)
	}
}

// rawJSON is a request body sent as it is written.
type rawJSON string

func (r rawJSON) MarshalJSON() ([]byte, error) { return []byte(r), nil }

// TestBadPageRefused: POST /assistants/search and GET /threads/{id}/runs
// answer 422 for a limit below 1, a negative offset or one that is not a
// whole number (or too large for one), as the thread search does, rather
// than take the default; good ones page as asked.
func TestBadPageRefused(t *testing.T) {
	var agents []AgentSpec
	for _, name := range []string{"one", "two", "three"} {
		a, err := DemoAgent(name, 0)
		if err != nil {
			t.Fatal(err)
		}
		agents = append(agents, AgentSpec{Name: name, Agent: a})
	}
	h := newHarness(t, Config{Agents: agents})
	for body, says := range map[string]string{
		`{"limit": 0}`: "at least 1", `{"limit": -1}`: "at least 1", `{"limit": 2.5}`: "limit", `{"limit": "ten"}`: "limit",
		`{"limit": 99999999999999999999}`: "limit", `{"offset": -1}`: "not be negative", `{"offset": 1.5}`: "offset",
		`{"limit": 1, "offset": -2}`: "offset",
	} {
		h.wantError("POST", "/assistants/search", rawJSON(body), 422, says)
	}
	var found []Assistant
	hdr := h.json("POST", "/assistants/search", rawJSON(`{"limit": 1, "offset": 1}`), 200, &found)
	if len(found) != 1 || found[0].Name != "two" || hdr.Get("X-Pagination-Total") != "3" {
		t.Errorf("limit 1 offset 1: %+v of %s; want two of 3", found, hdr.Get("X-Pagination-Total"))
	}
	h.json("POST", "/assistants/search", nil, 200, &found)
	if len(found) != 3 {
		t.Errorf("no limit: %d assistants, want 3", len(found))
	}

	msg := map[string]any{"messages": []any{map[string]any{"role": "user", "content": "go"}}}
	for range 3 {
		h.json("POST", "/threads/r/runs/wait", map[string]any{"assistant_id": "one", "if_not_exists": "create", "input": msg}, 200, nil)
	}
	for q, says := range map[string]string{
		"limit=0": "at least 1", "limit=-1": "at least 1", "limit=abc": "not a whole number", "limit=2.5": "not a whole number",
		"limit=99999999999999999999": "not a whole number", "offset=-1": "not be negative", "offset=x": "offset",
		"limit=1&offset=-2": "offset",
	} {
		h.wantError("GET", "/threads/r/runs?"+q, nil, 422, says)
	}
	var runs []Run
	h.json("GET", "/threads/r/runs?limit=2&offset=2", nil, 200, &runs)
	if len(runs) != 1 {
		t.Errorf("limit 2 offset 2: %d runs, want 1", len(runs))
	}
	h.json("GET", "/threads/r/runs?limit=5000&offset=", nil, 200, &runs)
	if len(runs) != 3 {
		t.Errorf("limit 5000: %d runs, want 3", len(runs))
	}
}
