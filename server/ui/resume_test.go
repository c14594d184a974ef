package ui_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/deepagents-go/deepagents/server/ui"
)

// TestBrowserDecisionsResume: two calls wait, one of the main agent (in
// the chat) and one of a subagent (in its card); the person approves the
// first and rejects the second with a reason while the run's stream is
// still closing; once it has closed the page resumes once, with both
// decisions, each naming its call and agent path. A third call, of a
// subagent without a card, is decided in the chat.
func TestBrowserDecisionsResume(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var bodies []map[string]any
	mux := http.NewServeMux()
	js := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	interrupt := []any{map[string]any{"id": "cp1", "value": map[string]any{
		"action_requests": []any{
			map[string]any{"name": "write_file", "args": map[string]any{"file_path": "/a.md", "content": "a"}, "id": "w1", "path": "agent"},
			map[string]any{"name": "delete", "args": map[string]any{"path": "/b.md"}, "id": "d1", "path": "agent / general-purpose#c1"},
			// A subagent the page has no card for (its events were not
			// streamed): its call is decided in the chat.
			map[string]any{"name": "delete", "args": map[string]any{"path": "/c.md"}, "id": "d2", "path": "agent / other#c9"},
		},
		"review_configs": []any{
			map[string]any{"action_name": "write_file", "allowed_decisions": []string{"approve", "edit", "reject"}},
			map[string]any{"action_name": "delete", "allowed_decisions": []string{"approve", "reject"}},
			map[string]any{"action_name": "delete", "allowed_decisions": []string{"approve", "reject"}},
		},
	}}}
	mux.HandleFunc("POST /assistants/search", func(w http.ResponseWriter, r *http.Request) {
		js(w, []any{map[string]any{"assistant_id": "a1", "graph_id": "agent"}})
	})
	mux.HandleFunc("POST /threads/search", func(w http.ResponseWriter, r *http.Request) { js(w, []any{}) })
	mux.HandleFunc("POST /threads", func(w http.ResponseWriter, r *http.Request) {
		js(w, map[string]any{"thread_id": "0000bbbb-0000-0000-0000-000000000002", "status": "idle"})
	})
	mux.HandleFunc("GET /threads/{id}", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		resumed := len(bodies) > 1
		mu.Unlock()
		if resumed {
			js(w, map[string]any{"status": "idle", "values": map[string]any{}, "interrupts": map[string]any{}})
			return
		}
		js(w, map[string]any{"status": "interrupted", "values": map[string]any{}, "interrupts": map[string]any{"cp1": interrupt}})
	})
	mux.HandleFunc("GET /threads/{id}/runs/{run}", func(w http.ResponseWriter, r *http.Request) {
		js(w, map[string]any{"run_id": r.PathValue("run"), "thread_id": r.PathValue("id"), "status": "interrupted"})
	})
	mux.HandleFunc("POST /threads/{id}/runs/stream", func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &body); err != nil {
			t.Errorf("run request is not JSON: %s", b)
		}
		mu.Lock()
		bodies = append(bodies, body)
		n := len(bodies)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		send := func(event string, data any) {
			b, _ := json.Marshal(data)
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
			_ = rc.Flush()
		}
		send("metadata", map[string]any{"run_id": fmt.Sprintf("r%d", n)})
		if n > 1 {
			send("values", map[string]any{"messages": []any{map[string]any{"type": "ai", "content": "Resumed.", "id": "m9"}}})
			return
		}
		send("custom", map[string]any{"type": "subagent.start", "agent": "agent", "subagent": map[string]any{
			"name": "general-purpose", "call_id": "c1", "path": "agent / general-purpose#c1", "task": "clean up"}})
		send("updates", map[string]any{"__interrupt__": interrupt})
		select { // the stream stays open until the test ends it
		case <-release:
		case <-r.Context().Done():
		}
	})
	mux.Handle("/", ui.Handler())
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	released := false
	t.Cleanup(func() {
		if !released {
			close(release)
		}
	})

	p := page{t, browser(t)}
	const sub = `#lanes details.card[data-ns="task:c1"] .action[data-call="d1"]`
	p.do(
		chromedp.Navigate(hs.URL+"/"),
		waitJS(`document.querySelectorAll('#assistant option').length === 1`),
		chromedp.SendKeys(chromedp.ID("input"), "tidy up"),
		chromedp.Click(chromedp.ID("send")),
		chromedp.WaitVisible(chromedp.CSS(`#chat .action[data-call="w1"] button.approve`)),
		chromedp.WaitVisible(chromedp.CSS(sub+` button.reject`)),
		// delete allows no edit.
		waitJS(`!document.querySelector('`+sub+` button.edit')`),
		waitJS(`!document.querySelector('#chat .action[data-call="d1"]') && !document.querySelector('#lanes .action[data-call="d2"]')`),
		chromedp.Click(chromedp.CSS(`#chat .action[data-call="w1"] button.approve`)),
		waitJS(`document.querySelector('#chat .action[data-call="w1"]').dataset.decided === 'approve'`),
		chromedp.Click(chromedp.CSS(sub+` button.reject`)),
		chromedp.WaitVisible(chromedp.CSS(sub+` input.reason`)),
		chromedp.SendKeys(chromedp.CSS(sub+` input.reason`), "keep b.md"),
		chromedp.Click(chromedp.CSS(sub+` button.reject`)),
		waitJS(`document.querySelector('`+sub+`').dataset.decided === 'reject'`),
		chromedp.Click(chromedp.CSS(`#chat .action[data-call="d2"] button.approve`)),
		// Both are decided while the first run's stream is still open.
		waitJS(`!document.querySelector('#stop').disabled`),
	)
	mu.Lock()
	if len(bodies) != 1 {
		t.Errorf("%d run requests before the first stream ended, want 1", len(bodies))
	}
	mu.Unlock()
	close(release)
	released = true
	p.do(waitJS(`document.querySelector('#chat').textContent.includes('Resumed.')`))
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) != 2 {
		t.Fatalf("%d run requests, want 2 (the turn, one resume)", len(bodies))
	}
	got, _ := json.Marshal(bodies[1]["command"])
	want := `{"resume":{"decisions":[{"call_id":"w1","path":"agent","type":"approve"},{"call_id":"d1","message":"keep b.md","path":"agent / general-purpose#c1","type":"reject"},{"call_id":"d2","path":"agent / other#c9","type":"approve"}]}}`
	if string(got) != want {
		t.Errorf("resume command\n got %s\nwant %s", got, want)
	}
	if bodies[1]["stream_subgraphs"] != true || bodies[1]["input"] != nil {
		t.Errorf("resume request: stream_subgraphs %v, input %v; want true and none", bodies[1]["stream_subgraphs"], bodies[1]["input"])
	}
}
