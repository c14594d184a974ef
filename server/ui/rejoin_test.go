package ui_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/deepagents-go/deepagents/server/ui"
)

// TestBrowserRejoin: the run's stream closes early while the run goes on;
// the page rejoins it after the last event id it received and shows the
// rest, once.
func TestBrowserRejoin(t *testing.T) {
	var mu sync.Mutex
	var joins []string // Last-Event-ID of each rejoin
	finished := false
	mux := http.NewServeMux()
	js := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	human := map[string]any{"type": "human", "content": "hi", "id": "msg-0"}
	answer := map[string]any{"type": "ai", "content": "The whole answer.", "id": "msg-1"}
	mux.HandleFunc("POST /assistants/search", func(w http.ResponseWriter, r *http.Request) {
		js(w, []any{map[string]any{"assistant_id": "a1", "graph_id": "agent"}})
	})
	mux.HandleFunc("POST /threads/search", func(w http.ResponseWriter, r *http.Request) { js(w, []any{}) })
	mux.HandleFunc("POST /threads", func(w http.ResponseWriter, r *http.Request) {
		js(w, map[string]any{"thread_id": "0000cccc-0000-0000-0000-000000000003", "status": "idle"})
	})
	mux.HandleFunc("GET /threads/{id}", func(w http.ResponseWriter, r *http.Request) {
		js(w, map[string]any{"status": "idle", "values": map[string]any{"messages": []any{human, answer}}, "interrupts": map[string]any{}})
	})
	mux.HandleFunc("GET /threads/{id}/runs/{run}", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		status := "running"
		if finished {
			status = "success"
		}
		js(w, map[string]any{"run_id": r.PathValue("run"), "status": status})
	})
	sse := func(w http.ResponseWriter, id int, event string, data any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\nid: %d\n\n", event, b, id)
	}
	mux.HandleFunc("POST /threads/{id}/runs/stream", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		sse(w, 1, "metadata", map[string]any{"run_id": "r1"})
		sse(w, 2, "values", map[string]any{"messages": []any{human}})
		sse(w, 3, "custom", map[string]any{"type": "subagent.start", "agent": "agent", "subagent": map[string]any{
			"name": "general-purpose", "call_id": "c1", "path": "agent / general-purpose#c1", "task": "dig"}})
		// The connection ends here, as if a proxy had cut it.
	})
	mux.HandleFunc("GET /threads/{id}/runs/{run}/stream", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		joins = append(joins, r.Header.Get("Last-Event-ID"))
		finished = true
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		sse(w, 4, "custom", map[string]any{"type": "subagent.end", "agent": "agent", "subagent": map[string]any{
			"name": "general-purpose", "call_id": "c1", "path": "agent / general-purpose#c1", "status": "ok", "rounds": 1}})
		sse(w, 5, "messages", []any{map[string]any{"type": "AIMessageChunk", "id": "msg-1", "content": "The whole answer."}, map[string]any{}})
		sse(w, 6, "values", map[string]any{"messages": []any{human, answer}})
	})
	mux.Handle("/", ui.Handler())
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)

	p := page{t, browser(t)}
	p.do(
		chromedp.Navigate(hs.URL+"/"),
		waitJS(`document.querySelectorAll('#assistant option').length === 1`),
		chromedp.SendKeys(chromedp.ID("input"), "hi"),
		chromedp.Click(chromedp.ID("send")),
		waitJS(`document.querySelector('#chat').textContent.includes('The whole answer.') && !document.querySelector('#send').disabled`),
		waitJS(`document.querySelector('#lanes details.card').dataset.status === 'ok'`),
	)
	if n := p.eval(`document.querySelectorAll('#lanes details.card').length`); n != 1 {
		t.Errorf("%d subagent cards, want 1", n)
	}
	if n := p.eval(`[...document.querySelectorAll('#chat .msg.ai')].filter(m => m.textContent.includes('The whole answer.')).length`); n != 1 {
		t.Errorf("the answer shows %d times, want once", n)
	}
	if e := p.text("error"); e != "" {
		t.Errorf("the page shows an error: %s", e)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(joins) != 1 || joins[0] != "3" {
		t.Errorf("rejoins with Last-Event-ID %q, want one with \"3\"", joins)
	}
}
