package server

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/checkpoint"
)

func TestOkInfoAssistants(t *testing.T) {
	h := newHarness(t, Config{})
	var ok map[string]bool
	h.json("GET", "/ok", nil, 200, &ok)
	if !ok["ok"] {
		t.Fatalf("/ok = %v", ok)
	}
	var info Info
	h.json("GET", "/info", nil, 200, &info)
	if info.Version == "" {
		t.Fatal("/info has no version")
	}
	var list []map[string]any
	hdr := h.json("POST", "/assistants/search", map[string]any{"graph_id": "researcher"}, 200, &list)
	if len(list) != 1 || hdr.Get("X-Pagination-Total") != "1" {
		t.Fatalf("search = %v (total %q)", list, hdr.Get("X-Pagination-Total"))
	}
	a := list[0]
	// UUIDv5 of "researcher" in the URL namespace, computed independently
	// (Python: uuid.uuid5(uuid.NAMESPACE_URL, "researcher")).
	if a["assistant_id"] != "0151bd26-9302-5c8f-9519-dc8635ee7af8" {
		t.Errorf("assistant = %v", a)
	}
	if a["graph_id"] != "researcher" || a["metadata"].(map[string]any)["created_by"] != "system" {
		t.Errorf("assistant = %v", a)
	}
	var byID, byGraph map[string]any
	h.json("GET", "/assistants/"+a["assistant_id"].(string), nil, 200, &byID)
	h.json("GET", "/assistants/researcher", nil, 200, &byGraph)
	if byID["assistant_id"] != a["assistant_id"] || byGraph["assistant_id"] != a["assistant_id"] {
		t.Errorf("get by id %v, by graph %v", byID, byGraph)
	}
	h.json("GET", "/assistants/nobody", nil, 404, nil)
	var none []any
	h.json("POST", "/assistants/search", map[string]any{"graph_id": "other"}, 200, &none)
	if len(none) != 0 {
		t.Errorf("search for another graph = %v", none)
	}
}

func TestThreadsCRUD(t *testing.T) {
	h := newHarness(t, Config{})
	var th Thread
	h.json("POST", "/threads", map[string]any{"metadata": map[string]any{"owner": "ann"}}, 200, &th)
	if th.ThreadID == "" || th.Status != "idle" || th.Metadata["owner"] != "ann" || string(th.Values) != "{}" {
		t.Fatalf("created %+v", th)
	}
	h.json("POST", "/threads", map[string]any{"thread_id": th.ThreadID}, 409, nil)
	h.json("POST", "/threads", map[string]any{"thread_id": th.ThreadID, "if_exists": "do_nothing"}, 200, nil)
	var other Thread
	h.json("POST", "/threads", map[string]any{"thread_id": "t-2", "metadata": map[string]any{"owner": "bob"}}, 200, &other)

	var patched Thread
	h.json("PATCH", "/threads/"+th.ThreadID, map[string]any{"metadata": map[string]any{"topic": "x"}}, 200, &patched)
	if patched.Metadata["owner"] != "ann" || patched.Metadata["topic"] != "x" {
		t.Errorf("patched metadata %v", patched.Metadata)
	}
	var found []Thread
	hdr := h.json("POST", "/threads/search", map[string]any{"metadata": map[string]any{"owner": "bob"}}, 200, &found)
	if len(found) != 1 || found[0].ThreadID != "t-2" || hdr.Get("X-Pagination-Total") != "1" {
		t.Errorf("search owner=bob: %v total %q", found, hdr.Get("X-Pagination-Total"))
	}
	hdr = h.json("POST", "/threads/search", map[string]any{"limit": 1}, 200, &found)
	if len(found) != 1 || hdr.Get("X-Pagination-Total") != "2" {
		t.Errorf("search limit 1: %d threads, total %q", len(found), hdr.Get("X-Pagination-Total"))
	}
	h.json("POST", "/threads/search", map[string]any{"sort_by": "color"}, 422, nil)
	var got Thread
	h.json("GET", "/threads/t-2", nil, 200, &got)
	if got.ThreadID != "t-2" {
		t.Errorf("get = %+v", got)
	}
	var st ThreadState
	h.json("GET", "/threads/t-2/state", nil, 200, &st)
	if string(st.Values) != "{}" || st.Next == nil {
		t.Errorf("state of a new thread = %+v", st)
	}
	h.json("DELETE", "/threads/t-2", nil, 204, nil)
	h.json("GET", "/threads/t-2", nil, 404, nil)
	h.json("DELETE", "/threads/t-2", nil, 404, nil)
	h.json("POST", "/threads", map[string]any{"thread_id": strings.Repeat("x", 300)}, 422, nil)
}

// eventNames lists the events' names in order.
func eventNames(evs []sseEvent) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Event)
	}
	return out
}

func TestStreamInterruptResume(t *testing.T) {
	h := newHarness(t, Config{})
	var th Thread
	h.json("POST", "/threads", nil, 200, &th)
	resp, evs := h.stream("POST", "/threads/"+th.ThreadID+"/runs/stream", map[string]any{
		"assistant_id": "researcher", "input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "compare A and B"}}},
		"stream_mode": []string{"values", "updates", "messages-tuple", "custom"}, "stream_subgraphs": true,
	})
	loc := resp.Header.Get("Content-Location")
	if !strings.HasPrefix(loc, "/threads/"+th.ThreadID+"/runs/") {
		t.Fatalf("Content-Location %q", loc)
	}
	names := eventNames(evs)
	if names[0] != "metadata" {
		t.Fatalf("first event %q", names[0])
	}
	for i, e := range evs {
		if e.ID != int64(i+1) {
			t.Fatalf("event %d has id %d; ids must count up from 1", i, e.ID)
		}
	}
	for _, want := range []string{"messages|task:task_a_1", "messages|task:task_b_1", "values|task:task_a_1", "updates", "custom|task:task_b_1"} {
		if !slices.Contains(names, want) {
			t.Errorf("no %q event in %v", want, names)
		}
	}
	last := evs[len(evs)-1]
	if last.Event != "values" {
		t.Fatalf("last event %q, want values", last.Event)
	}
	var final struct {
		Messages  []LCMessage `json:"messages"`
		Interrupt []struct {
			ID    string `json:"id"`
			Value struct {
				ActionRequests []struct {
					Name string `json:"name"`
					ID   string `json:"id"`
				} `json:"action_requests"`
			} `json:"value"`
		} `json:"__interrupt__"`
	}
	if err := json.Unmarshal(last.Data, &final); err != nil {
		t.Fatal(err)
	}
	if len(final.Interrupt) != 1 || len(final.Interrupt[0].Value.ActionRequests) != 1 || final.Interrupt[0].Value.ActionRequests[0].Name != "write_file" {
		t.Fatalf("final values' interrupts: %s", last.Data)
	}
	runID := loc[strings.LastIndex(loc, "/")+1:]
	var run Run
	h.json("GET", loc, nil, 200, &run)
	if run.Status != "interrupted" || run.RunID != runID {
		t.Errorf("run = %+v", run)
	}
	var got Thread
	h.json("GET", "/threads/"+th.ThreadID, nil, 200, &got)
	if got.Status != "interrupted" || len(got.Interrupts) != 1 {
		t.Errorf("thread status %q, interrupts %v", got.Status, got.Interrupts)
	}

	for name, resume := range map[string]any{
		"unknown type": map[string]any{"decisions": []any{map[string]any{"type": "maybe"}}},
		"unknown call": []any{map[string]any{"type": "approve", "id": "nope"}},
		"edit no args": []any{map[string]any{"type": "edit", "id": "write_1"}},
	} {
		resp, b := h.do("POST", "/threads/"+th.ThreadID+"/runs", map[string]any{"assistant_id": "researcher", "command": map[string]any{"resume": resume}})
		if resp.StatusCode != 422 {
			t.Errorf("resume with %s: status %d (%s)", name, resp.StatusCode, b)
		}
	}

	// Resume with LangChain's decision shape: no call id, answered in order.
	var res map[string]json.RawMessage
	h.json("POST", "/threads/"+th.ThreadID+"/runs/wait", map[string]any{
		"assistant_id": "researcher", "command": map[string]any{"resume": map[string]any{"decisions": []any{map[string]any{"type": "approve"}}}},
	}, 200, &res)
	var msgs []LCMessage
	if err := json.Unmarshal(res["messages"], &msgs); err != nil {
		t.Fatalf("wait result %s: %v", res["messages"], err)
	}
	if lastMsg := msgs[len(msgs)-1]; lastMsg.Type != "ai" || lastMsg.Content != "Done: the report is in /report.md." {
		t.Errorf("last message %+v", lastMsg)
	}
	if _, ok := res["__interrupt__"]; ok {
		t.Errorf("the finished run still has interrupts: %s", res["__interrupt__"])
	}
	var files map[string]struct {
		Content string `json:"content"`
	}
	if err := json.Unmarshal(res["files"], &files); err != nil || !strings.Contains(files["/report.md"].Content, "# Report") {
		t.Errorf("files %s (%v)", res["files"], err)
	}
	h.json("GET", "/threads/"+th.ThreadID, nil, 200, &got)
	if got.Status != "idle" {
		t.Errorf("thread status after resume %q", got.Status)
	}
	var runs []Run
	h.json("GET", "/threads/"+th.ThreadID+"/runs", nil, 200, &runs)
	if len(runs) != 2 || runs[0].Status != "success" || runs[1].RunID != runID {
		t.Errorf("runs %+v", runs)
	}
	var hist []ThreadState
	h.json("POST", "/threads/"+th.ThreadID+"/history", map[string]any{"limit": 3}, 200, &hist)
	if len(hist) != 3 || hist[0].Checkpoint.CheckpointID == "" || hist[0].ParentCheckpoint == nil ||
		hist[0].ParentCheckpoint.CheckpointID != hist[1].Checkpoint.CheckpointID {
		t.Errorf("history %+v", hist)
	}

	// A join may narrow the modes.
	_, narrow := h.stream("GET", loc+"/stream?stream_mode=updates", nil, "Last-Event-ID", "-1")
	for _, e := range narrow {
		if e.Event != "metadata" && !strings.HasPrefix(e.Event, "updates") {
			t.Fatalf("a join for updates sent %q", e.Event)
		}
	}
	if len(narrow) < 3 {
		t.Errorf("a join for updates sent %v", eventNames(narrow))
	}

	// Join the first run's stream after event 3: the rest, once each.
	_, rest := h.stream("GET", loc+"/stream", nil, "Last-Event-ID", "3")
	if len(rest) != len(evs)-3 || rest[0].ID != 4 || rest[len(rest)-1].ID != evs[len(evs)-1].ID {
		t.Errorf("join after 3 gave %d events (first id %d); want %d from id 4", len(rest), rest[0].ID, len(evs)-3)
	}
}

func TestRejectConcurrentRunAndCancel(t *testing.T) {
	h := newHarness(t, Config{})
	var th Thread
	h.json("POST", "/threads", nil, 200, &th)
	body := map[string]any{"assistant_id": "researcher", "input": map[string]any{"messages": []any{map[string]any{"type": "human", "content": "slow please"}}}}
	var run Run
	h.json("POST", "/threads/"+th.ThreadID+"/runs", body, 200, &run)
	if run.Status != "pending" && run.Status != "running" {
		t.Fatalf("new run status %q", run.Status)
	}
	h.json("POST", "/threads/"+th.ThreadID+"/runs", body, 422, nil)
	queued := map[string]any{"assistant_id": "researcher", "multitask_strategy": "enqueue",
		"input": map[string]any{"messages": []any{map[string]any{"type": "human", "content": "then this"}}}}
	var second Run
	h.json("POST", "/threads/"+th.ThreadID+"/runs", queued, 200, &second)
	if second.Status != "pending" {
		t.Errorf("queued run status %q", second.Status)
	}
	h.json("POST", "/threads/"+th.ThreadID+"/runs/"+run.RunID+"/cancel?wait=1", nil, 202, nil)
	var got Run
	h.json("GET", "/threads/"+th.ThreadID+"/runs/"+run.RunID, nil, 200, &got)
	if got.Status != "interrupted" {
		t.Errorf("cancelled run status %q", got.Status)
	}
	// The queued run starts once the first is gone, and finishes (at the approval).
	var res map[string]json.RawMessage
	resp, b := h.do("GET", "/threads/"+th.ThreadID+"/runs/"+second.RunID+"/join", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("join: %d %s", resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if _, ok := res["__interrupt__"]; !ok {
		t.Errorf("the queued run did not reach its approval: %s", b)
	}
}

func TestBadRunRequests(t *testing.T) {
	h := newHarness(t, Config{})
	var th Thread
	h.json("POST", "/threads", nil, 200, &th)
	p := "/threads/" + th.ThreadID + "/runs"
	msg := map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}}}
	for name, body := range map[string]any{
		"no assistant":  map[string]any{"input": msg},
		"no input":      map[string]any{"assistant_id": "researcher"},
		"bad mode":      map[string]any{"assistant_id": "researcher", "input": msg, "stream_mode": "telepathy"},
		"bad strategy":  map[string]any{"assistant_id": "researcher", "input": msg, "multitask_strategy": "shout"},
		"bad message":   map[string]any{"assistant_id": "researcher", "input": map[string]any{"messages": []any{map[string]any{"role": "wizard", "content": "x"}}}},
		"system input":  map[string]any{"assistant_id": "researcher", "input": map[string]any{"messages": []any{map[string]any{"role": "system", "content": "x"}}}},
		"nothing waits": map[string]any{"assistant_id": "researcher", "command": map[string]any{"resume": map[string]any{"decisions": []any{map[string]any{"type": "approve", "id": "x"}}}}},
	} {
		resp, b := h.do("POST", p, body)
		if resp.StatusCode != 422 {
			t.Errorf("%s: status %d, want 422 (%s)", name, resp.StatusCode, b)
		}
	}
	h.json("POST", p, map[string]any{"assistant_id": "ghost", "input": msg}, 404, nil)
	h.json("POST", "/threads/nope/runs", map[string]any{"assistant_id": "researcher", "input": msg}, 404, nil)
	h.json("POST", "/threads/nope/runs", map[string]any{"assistant_id": "researcher", "command": map[string]any{"resume": []any{map[string]any{"type": "approve", "id": "x"}}}}, 404, nil)
	var run Run
	h.json("POST", "/threads/fresh/runs/wait", map[string]any{"assistant_id": "researcher", "input": msg, "if_not_exists": "create"}, 200, &run)
	h.json("GET", "/threads/fresh", nil, 200, nil)
}

func TestAuthAndCORS(t *testing.T) {
	h := newHarness(t, Config{Token: "s3cret", CORS: CORS{AllowOrigins: []string{"https://ui.example"}}})
	h.token = ""
	if resp, _ := h.do("GET", "/ok", nil); resp.StatusCode != 200 {
		t.Errorf("/ok without token: %d", resp.StatusCode)
	}
	if resp, _ := h.do("GET", "/info", nil); resp.StatusCode != 401 {
		t.Errorf("/info without token: %d", resp.StatusCode)
	}
	if resp, _ := h.do("GET", "/info", nil, "Authorization", "Bearer wrong"); resp.StatusCode != 401 {
		t.Errorf("/info with a wrong token: %d", resp.StatusCode)
	}
	if resp, _ := h.do("GET", "/info", nil, "Authorization", "Bearer s3cret"); resp.StatusCode != 200 {
		t.Errorf("/info with the token: %d", resp.StatusCode)
	}
	if resp, _ := h.do("GET", "/info", nil, "X-Api-Key", "s3cret"); resp.StatusCode != 200 {
		t.Errorf("/info with x-api-key: %d", resp.StatusCode)
	}
	resp, _ := h.do("OPTIONS", "/threads", nil, "Origin", "https://ui.example", "Access-Control-Request-Method", "POST")
	if resp.StatusCode != 204 || resp.Header.Get("Access-Control-Allow-Origin") != "https://ui.example" ||
		!strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Errorf("preflight: %d %v", resp.StatusCode, resp.Header)
	}
	resp, _ = h.do("OPTIONS", "/threads", nil, "Origin", "https://evil.example", "Access-Control-Request-Method", "POST")
	if resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("another origin was allowed: %v", resp.Header)
	}
}

func TestOpenAPI(t *testing.T) {
	h := newHarness(t, Config{})
	var doc struct {
		OpenAPI string                               `json:"openapi"`
		Paths   map[string]map[string]map[string]any `json:"paths"`
	}
	h.json("GET", "/openapi.json", nil, 200, &doc)
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi %q", doc.OpenAPI)
	}
	post := doc.Paths["/threads/{thread_id}/runs/stream"]["post"]
	body, _ := json.Marshal(post["requestBody"])
	for _, field := range []string{"assistant_id", "stream_mode", "multitask_strategy", "command"} {
		if !strings.Contains(string(body), `"`+field+`"`) {
			t.Errorf("the run request schema has no %s: %s", field, body)
		}
	}
	get, _ := json.Marshal(doc.Paths["/threads/{thread_id}"]["get"])
	if !strings.Contains(string(get), `"state_updated_at"`) {
		t.Errorf("the thread schema lacks state_updated_at: %s", get)
	}
	if len(doc.Paths) != 16 {
		t.Errorf("%d paths", len(doc.Paths))
	}
}

// TestShutdownEndsStreams: Shutdown ends an open stream (the client sees
// the end of the body after the events so far) and stops the run, with
// events kept in memory and in SQLite (where a persister goroutine stores
// them).
func TestShutdownEndsStreams(t *testing.T) {
	for _, kind := range []string{"memory", "sqlite"} {
		t.Run(kind, func(t *testing.T) {
			var st Store
			if kind == "sqlite" {
				sq, err := OpenSQLStore(context.Background(), "sqlite", filepath.Join(t.TempDir(), "s.db"))
				if err != nil {
					t.Fatal(err)
				}
				defer sq.Close()
				st = sq
			}
			shutdownEndsStream(t, st)
		})
	}
}

func shutdownEndsStream(t *testing.T, st Store) {
	a, err := DemoAgent("researcher", 0)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Agents: []AgentSpec{{Name: "researcher", Agent: a}}, Saver: checkpoint.NewMemory(0), Store: st})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	defer hs.Close()
	body := `{"assistant_id":"researcher","if_not_exists":"create","input":{"messages":[{"role":"user","content":"slow"}]}}`
	resp, err := testClient.Post(hs.URL+"/threads/t/runs/stream", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	// The first event (metadata) arrives: the run is under way.
	if line, err := r.ReadString('\n'); err != nil || line != "event: metadata\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Shutdown(t.Context()) }()
	rest, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("the stream did not end cleanly: %v (read %q)", err, rest)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	resp2, err := testClient.Post(hs.URL+"/threads/t/runs", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
	if resp2.StatusCode != 503 {
		t.Errorf("a run after shutdown: status %d, want 503", resp2.StatusCode)
	}
}

// TestUpdateStateFiles: POST /state changes the thread's files in a new
// checkpoint that the next run starts from.
func TestUpdateStateFiles(t *testing.T) {
	h := newHarness(t, Config{})
	var th Thread
	h.json("POST", "/threads", map[string]any{"thread_id": "f"}, 200, &th)
	h.json("POST", "/threads/f/state", map[string]any{"values": map[string]any{"files": map[string]any{"/a.txt": "x"}}}, 409, nil)
	msg := map[string]any{"messages": []any{map[string]any{"role": "user", "content": "go"}}}
	h.json("POST", "/threads/f/runs/wait", map[string]any{"assistant_id": "researcher", "input": msg}, 200, nil)
	// Waiting for approval: not now.
	h.json("POST", "/threads/f/state", map[string]any{"values": map[string]any{"files": map[string]any{"/a.txt": "x"}}}, 409, nil)
	h.json("POST", "/threads/f/runs/wait", map[string]any{"assistant_id": "researcher",
		"command": map[string]any{"resume": []any{map[string]any{"type": "approve"}}}}, 200, nil)
	for name, values := range map[string]any{
		"messages":  map[string]any{"messages": []any{}},
		"bad path":  map[string]any{"files": map[string]any{"../x": "y"}},
		"bad value": map[string]any{"files": map[string]any{"/x": 3}},
		"no files":  map[string]any{"files": map[string]any{}},
	} {
		if resp, b := h.do("POST", "/threads/f/state", map[string]any{"values": values}); resp.StatusCode != 422 {
			t.Errorf("%s: status %d (%s)", name, resp.StatusCode, b)
		}
	}
	var out struct {
		Checkpoint CheckpointRef `json:"checkpoint"`
	}
	h.json("POST", "/threads/f/state", map[string]any{"values": map[string]any{"files": map[string]any{
		"/notes.md": "hello", "/report.md": nil, "/b.md": map[string]any{"content": "bee"}}}}, 200, &out)
	var st ThreadState
	h.json("GET", "/threads/f/state", nil, 200, &st)
	if st.Checkpoint.CheckpointID != out.Checkpoint.CheckpointID {
		t.Errorf("latest checkpoint %q, update made %q", st.Checkpoint.CheckpointID, out.Checkpoint.CheckpointID)
	}
	var v struct {
		Files map[string]struct {
			Content string `json:"content"`
		} `json:"files"`
		Messages []LCMessage `json:"messages"`
	}
	if err := json.Unmarshal(st.Values, &v); err != nil {
		t.Fatal(err)
	}
	if _, ok := v.Files["/report.md"]; ok || v.Files["/notes.md"].Content != "hello" || v.Files["/b.md"].Content != "bee" {
		t.Errorf("files after the update: %+v", v.Files)
	}
	// The next turn runs on top of the changed files and keeps them.
	var res map[string]json.RawMessage
	h.json("POST", "/threads/f/runs/wait", map[string]any{"assistant_id": "researcher", "input": msg}, 200, &res)
	if !strings.Contains(string(res["files"]), `"/notes.md"`) || len(v.Messages) == 0 {
		t.Errorf("files after the next run: %s", res["files"])
	}
}

// TestInterruptStrategyAndDisconnect: multitask_strategy interrupt cancels
// the running run and starts the new one; on_disconnect cancel stops a run
// whose streaming client went away.
func TestInterruptStrategyAndDisconnect(t *testing.T) {
	h := newHarness(t, Config{})
	slow := map[string]any{"messages": []any{map[string]any{"role": "user", "content": "slow"}}}
	var first Run
	h.json("POST", "/threads/i/runs", map[string]any{"assistant_id": "researcher", "input": slow, "if_not_exists": "create"}, 200, &first)
	var second Run
	h.json("POST", "/threads/i/runs", map[string]any{"assistant_id": "researcher", "multitask_strategy": "interrupt",
		"input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "quick"}}}}, 200, &second)
	var res map[string]json.RawMessage
	h.json("GET", "/threads/i/runs/"+second.RunID+"/join", nil, 200, &res)
	if _, ok := res["__interrupt__"]; !ok {
		t.Errorf("the second run did not run to its approval: %v", res)
	}
	var got Run
	h.json("GET", "/threads/i/runs/"+first.RunID, nil, 200, &got)
	if got.Status != "interrupted" || !strings.Contains(got.CancelReason, second.RunID) {
		t.Errorf("the first run: %+v", got)
	}
	var runs []Run
	h.json("GET", "/threads/i/runs?limit=1", nil, 200, &runs)
	if len(runs) != 1 || runs[0].RunID != second.RunID {
		t.Errorf("runs?limit=1 = %+v", runs)
	}
	h.json("GET", "/threads/i/runs?limit=1&offset=1", nil, 200, &runs)
	if len(runs) != 1 || runs[0].RunID != first.RunID {
		t.Errorf("runs?limit=1&offset=1 = %+v", runs)
	}

	// A streamed run with on_disconnect cancel, whose client leaves after
	// the first event.
	h.json("POST", "/threads", map[string]any{"thread_id": "d"}, 200, nil)
	ctx, cancel := context.WithCancel(t.Context())
	body := `{"assistant_id":"researcher","on_disconnect":"cancel","input":{"messages":[{"role":"user","content":"slow"}]}}`
	req, _ := http.NewRequestWithContext(ctx, "POST", h.http.URL+"/threads/d/runs/stream", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	loc := resp.Header.Get("Content-Location")
	if line, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil || line != "event: metadata\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	cancel()
	resp.Body.Close()
	// Joining waits for the run's end, which the disconnect brings.
	h.json("GET", loc+"/join", nil, 200, nil)
	h.json("GET", loc, nil, 200, &got)
	if got.Status != "interrupted" || !strings.Contains(got.CancelReason, "disconnected") {
		t.Errorf("the run after its client left: %+v", got)
	}
}

func TestStateByCheckpointAndHistoryGet(t *testing.T) {
	h := newHarness(t, Config{})
	msg := map[string]any{"messages": []any{map[string]any{"role": "user", "content": "go"}}}
	h.json("POST", "/threads/s/runs/wait", map[string]any{"assistant_id": "researcher", "input": msg, "if_not_exists": "create"}, 200, nil)
	var hist []ThreadState
	h.json("GET", "/threads/s/history?limit=2", nil, 200, &hist)
	if len(hist) != 2 {
		t.Fatalf("history: %d states", len(hist))
	}
	var older ThreadState
	h.json("GET", "/threads/s/state/"+hist[1].Checkpoint.CheckpointID, nil, 200, &older)
	if older.Checkpoint.CheckpointID != hist[1].Checkpoint.CheckpointID || string(older.Values) != string(hist[1].Values) {
		t.Errorf("state at %s = %+v", hist[1].Checkpoint.CheckpointID, older.Checkpoint)
	}
	h.json("GET", "/threads/s/state/99999999", nil, 404, nil)
	var before []ThreadState
	h.json("POST", "/threads/s/history", map[string]any{"limit": 1, "before": map[string]any{"checkpoint_id": hist[0].Checkpoint.CheckpointID}}, 200, &before)
	if len(before) != 1 || before[0].Checkpoint.CheckpointID != hist[1].Checkpoint.CheckpointID {
		t.Errorf("history before %s = %+v", hist[0].Checkpoint.CheckpointID, before)
	}
	var last ThreadState
	h.json("GET", "/threads/s/state", nil, 200, &last)
	if len(last.Interrupts) != 1 || len(last.Tasks) != 1 || len(last.Next) != 1 {
		t.Errorf("a state waiting for approval: next %v, tasks %+v, interrupts %+v", last.Next, last.Tasks, last.Interrupts)
	}
}

// TestHeartbeat: a stream with nothing to send gets comment lines.
func TestHeartbeat(t *testing.T) {
	h := newHarness(t, Config{Heartbeat: time.Millisecond})
	body := `{"assistant_id":"researcher","if_not_exists":"create","input":{"messages":[{"role":"user","content":"slow"}]}}`
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", h.http.URL+"/threads/hb/runs/stream", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("the stream ended without a heartbeat: %v", err)
		}
		if line == ": heartbeat\n" {
			break
		}
	}
	h.json("POST", resp.Header.Get("Content-Location")+"/cancel?wait=1", nil, 202, nil)
}

// TestSubagentsOverlap: the demo's two subagents run at the same time, as
// their own run.start and run.end events (custom mode) show.
func TestSubagentsOverlap(t *testing.T) {
	a, err := DemoAgent("researcher", 20)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, Config{Agents: []AgentSpec{{Name: "researcher", Agent: a}}})
	_, evs := h.stream("POST", "/threads/p/runs/stream", map[string]any{"assistant_id": "researcher", "if_not_exists": "create",
		"input":       map[string]any{"messages": []any{map[string]any{"role": "user", "content": "go"}}},
		"stream_mode": "custom", "stream_subgraphs": true})
	type span struct{ start, end time.Time }
	spans := map[string]*span{}
	for _, e := range evs {
		task, ok := strings.CutPrefix(e.Event, "custom|")
		if !ok {
			continue
		}
		var ev struct {
			Type string    `json:"type"`
			Time time.Time `json:"time"`
		}
		if err := json.Unmarshal(e.Data, &ev); err != nil {
			t.Fatal(err)
		}
		if spans[task] == nil {
			spans[task] = &span{}
		}
		switch ev.Type {
		case "run.start":
			spans[task].start = ev.Time
		case "run.end":
			spans[task].end = ev.Time
		}
	}
	sa, sb := spans["task:task_a_1"], spans["task:task_b_1"]
	if sa == nil || sb == nil || sa.start.IsZero() || sb.end.IsZero() {
		t.Fatalf("subagent spans %v", spans)
	}
	if !sa.start.Before(sb.end) || !sb.start.Before(sa.end) {
		t.Errorf("the subagents did not overlap: a %v–%v, b %v–%v", sa.start, sa.end, sb.start, sb.end)
	}
}

// TestSubagentState: a finished subagent's transcript is read back by its
// task path (checkpoint_ns), with the message ids its streamed events had.
func TestSubagentState(t *testing.T) {
	h := newHarness(t, Config{})
	_, evs := h.stream("POST", "/threads/ns/runs/stream", map[string]any{"assistant_id": "researcher", "if_not_exists": "create",
		"input":       map[string]any{"messages": []any{map[string]any{"role": "user", "content": "go"}}},
		"stream_mode": "values", "stream_subgraphs": true})
	var streamed struct {
		Messages []LCMessage `json:"messages"`
	}
	for _, e := range evs {
		if e.Event == "values|task:task_a_1" {
			if err := json.Unmarshal(e.Data, &streamed); err != nil {
				t.Fatal(err)
			}
		}
	}
	var st ThreadState
	h.json("GET", "/threads/ns/state?checkpoint_ns=task:task_a_1", nil, 200, &st)
	var v struct {
		Messages []LCMessage `json:"messages"`
	}
	if err := json.Unmarshal(st.Values, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Messages) != 2 || v.Messages[0].Type != "human" || v.Messages[1].Type != "ai" ||
		!strings.Contains(v.Messages[1].Content.(string), "Findings: Research topic A") {
		t.Fatalf("subagent transcript %+v", v.Messages)
	}
	if st.Checkpoint.CheckpointNS != "task:task_a_1" {
		t.Errorf("checkpoint_ns %q", st.Checkpoint.CheckpointNS)
	}
	if len(streamed.Messages) != 2 || streamed.Messages[1].ID != v.Messages[1].ID {
		t.Errorf("streamed ids %+v, stored %+v", streamed.Messages, v.Messages)
	}
	var hist []ThreadState
	h.json("POST", "/threads/ns/history", map[string]any{"checkpoint": map[string]any{"checkpoint_ns": "task:task_b_1"}}, 200, &hist)
	if len(hist) == 0 || hist[0].Checkpoint.CheckpointNS != "task:task_b_1" {
		t.Errorf("subagent history %+v", hist)
	}
	h.json("GET", "/threads/ns/state?checkpoint_ns=task:nope", nil, 404, nil)
	h.json("GET", "/threads/ns/state?checkpoint_ns=%20/%20", nil, 422, nil)
}

// blockedDelete is a MemoryStore whose DeleteThread waits for release.
type blockedDelete struct {
	*MemoryStore
	entered, release chan struct{}
}

func (b *blockedDelete) DeleteThread(ctx context.Context, id string) error {
	close(b.entered)
	<-b.release
	return b.MemoryStore.DeleteThread(ctx, id)
}

// While a thread is being deleted no run starts on it and its state cannot
// be changed: a run started in between would write its run record and
// events back under the deleted thread.
func TestNoRunStartsOnAThreadBeingDeleted(t *testing.T) {
	st := &blockedDelete{MemoryStore: NewMemoryStore(), entered: make(chan struct{}), release: make(chan struct{})}
	h := newHarness(t, Config{Store: st})
	h.json("POST", "/threads", map[string]any{"thread_id": "t-del"}, 200, nil)
	deleted := make(chan int, 1)
	go func() {
		resp, _ := h.do("DELETE", "/threads/t-del", nil)
		deleted <- resp.StatusCode
	}()
	<-st.entered
	released := false
	defer func() {
		if !released {
			close(st.release) // lets the server close after a failure
		}
	}()
	run := map[string]any{"assistant_id": "researcher", "input": map[string]any{"messages": []map[string]any{{"role": "user", "content": "hi"}}}}
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"POST", "/threads/t-del/runs", run},
		{"POST", "/threads/t-del/state", map[string]any{"values": map[string]any{"files": map[string]any{"/a.txt": "x"}}}},
		{"DELETE", "/threads/t-del", nil},
	} {
		if resp, b := h.do(c.method, c.path, c.body); resp.StatusCode != 409 || !strings.Contains(string(b), "being deleted") {
			t.Errorf("%s %s during the delete: %d %s", c.method, c.path, resp.StatusCode, b)
		}
	}
	close(st.release)
	released = true
	if code := <-deleted; code != 204 {
		t.Fatalf("delete answered %d", code)
	}
	st.mu.Lock()
	runs, events := len(st.runs), len(st.events)
	st.mu.Unlock()
	if runs != 0 || events != 0 {
		t.Errorf("after the delete the store holds %d runs and %d event lists", runs, events)
	}
	// Once deleted, the id may be used again.
	run["if_not_exists"] = "create"
	h.json("POST", "/threads/t-del/runs/wait", run, 200, nil)
}
