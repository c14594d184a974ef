package ui_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/deepagents-go/deepagents/server/ui"
)

// pacedAPI is a stand-in for the server whose run stream stops half way
// until the test says so: what the page shows at that point is what it
// rendered from the events so far, i.e. live.
func pacedAPI(t *testing.T, release <-chan struct{}) string {
	t.Helper()
	mux := http.NewServeMux()
	js := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	final := map[string]any{"messages": []any{
		map[string]any{"type": "human", "content": "go", "id": "msg-0"},
		map[string]any{"type": "ai", "content": "", "id": "msg-1", "tool_calls": []any{
			map[string]any{"id": "c1", "name": "task", "args": map[string]any{"description": "look it up"}, "type": "tool_call"}}},
		map[string]any{"type": "tool", "content": "Findings: part one, part two.", "id": "msg-2", "tool_call_id": "c1", "name": "task", "status": "success"},
		map[string]any{"type": "ai", "content": "The answer so far, and the rest.", "id": "msg-3"},
	}, "todos": []any{map[string]any{"content": "look it up", "status": "completed"}}}
	mux.HandleFunc("POST /assistants/search", func(w http.ResponseWriter, r *http.Request) {
		js(w, []any{map[string]any{"assistant_id": "a1", "graph_id": "agent", "name": "agent"}})
	})
	mux.HandleFunc("POST /threads/search", func(w http.ResponseWriter, r *http.Request) { js(w, []any{}) })
	mux.HandleFunc("POST /threads", func(w http.ResponseWriter, r *http.Request) {
		js(w, map[string]any{"thread_id": "0000aaaa-0000-0000-0000-000000000001", "status": "idle", "values": map[string]any{}})
	})
	mux.HandleFunc("GET /threads/{id}", func(w http.ResponseWriter, r *http.Request) {
		js(w, map[string]any{"thread_id": r.PathValue("id"), "status": "idle", "values": final, "interrupts": map[string]any{}})
	})
	mux.HandleFunc("GET /threads/{id}/runs", func(w http.ResponseWriter, r *http.Request) { js(w, []any{}) })
	mux.HandleFunc("GET /threads/{id}/runs/{run}", func(w http.ResponseWriter, r *http.Request) {
		js(w, map[string]any{"run_id": r.PathValue("run"), "thread_id": r.PathValue("id"), "status": "success"})
	})
	mux.HandleFunc("POST /threads/{id}/runs/stream", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		seq := 0
		send := func(event string, data any) {
			b, _ := json.Marshal(data)
			seq++
			// CRLF line ends and a comment line: the page must take both.
			fmt.Fprintf(w, ": keep-alive\r\nevent: %s\r\ndata: %s\r\nid: %d\r\n\r\n", event, b, seq)
		}
		ev := func(typ, agent string, extra map[string]any) map[string]any {
			m := map[string]any{"type": typ, "agent": agent, "time": "2026-12-03T12:00:00Z"}
			for k, v := range extra {
				m[k] = v
			}
			return m
		}
		const sub = "agent / general-purpose#c1"
		send("metadata", map[string]any{"run_id": "r1"})
		send("values", map[string]any{"messages": []any{final["messages"].([]any)[0]}})
		send("values", map[string]any{"messages": final["messages"].([]any)[:2]})
		send("custom", ev("run.start", "agent", nil))
		send("custom", ev("subagent.start", "agent", map[string]any{"subagent": map[string]any{
			"name": "general-purpose", "call_id": "c1", "path": sub, "task": "look it up"}}))
		send("custom|task:c1", ev("model.request", sub, map[string]any{"request": map[string]any{"round": 0,
			"context": map[string]any{"system": 10, "tools": 90, "messages": 5, "calibrated": 105}}}))
		send("custom|task:c1", ev("model.delta", sub, map[string]any{"delta": map[string]any{"type": "text_delta", "text": "Findings: part one"}}))
		// The subagent starts one of its own: its card nests in c1's.
		const nested = sub + " / checker#c2"
		send("custom|task:c1", ev("subagent.start", sub, map[string]any{"subagent": map[string]any{
			"name": "checker", "call_id": "c2", "path": nested, "task": "check the sources"}}))
		send("custom|task:c1|task:c2", ev("model.delta", nested, map[string]any{"delta": map[string]any{"type": "text_delta", "text": "Checked."}}))
		send("messages", []any{map[string]any{"type": "AIMessageChunk", "id": "msg-3", "content": "The answer so far"}, map[string]any{}})
		_ = rc.Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		send("custom|task:c1|task:c2", ev("run.end", nested, map[string]any{"run": map[string]any{"status": "ok", "rounds": 1}}))
		send("custom|task:c1", ev("subagent.end", sub, map[string]any{"subagent": map[string]any{
			"name": "checker", "call_id": "c2", "path": nested, "status": "ok", "rounds": 1}}))
		send("custom|task:c1", ev("model.delta", sub, map[string]any{"delta": map[string]any{"type": "text_delta", "text": ", part two."}}))
		send("custom|task:c1", ev("model.response", sub, map[string]any{"response": map[string]any{"round": 0,
			"text": "Findings: part one, part two.", "usage": map[string]any{"input_tokens": 100, "output_tokens": 7}}}))
		send("custom|task:c1", ev("run.end", sub, map[string]any{"run": map[string]any{"status": "ok", "rounds": 1,
			"usage": map[string]any{"input_tokens": 100, "output_tokens": 7}}}))
		send("custom", ev("subagent.end", "agent", map[string]any{"subagent": map[string]any{
			"name": "general-purpose", "call_id": "c1", "path": sub, "status": "ok", "rounds": 1,
			"usage": map[string]any{"input_tokens": 100, "output_tokens": 7}}}))
		send("messages", []any{map[string]any{"type": "AIMessageChunk", "id": "msg-3", "content": ", and the rest."}, map[string]any{}})
		send("values", final)
		_ = rc.Flush()
	})
	mux.Handle("/", ui.Handler())
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	return hs.URL
}

// TestBrowserLiveStreaming: halfway through a run the subagent's card
// already shows the text streamed so far (running), so does the card of the
// subagent it started (nested in its card), and so does the answer in the
// chat; when the rest arrives both are complete and the
// card is done. The stream uses CRLF line ends and comment lines.
func TestBrowserLiveStreaming(t *testing.T) {
	release := make(chan struct{})
	url := pacedAPI(t, release)
	p := page{t, browser(t)}
	dir := artifacts(t)
	released := false
	t.Cleanup(func() {
		if !released {
			close(release)
		}
	})
	const card = `#lanes details.card[data-ns="task:c1"]`
	const nestedCard = card + ` .lane.nested details.card[data-ns="task:c1|task:c2"]`
	p.do(
		chromedp.Navigate(url+"/"),
		waitJS(`document.querySelectorAll('#assistant option').length === 1`),
		chromedp.SendKeys(chromedp.ID("input"), "go"),
		chromedp.Click(chromedp.ID("send")),
		waitJS(`document.querySelector('`+card+` .live') && document.querySelector('`+card+` .live').textContent === 'Findings: part one'`),
		waitJS(`document.querySelector('`+card+`').dataset.status === 'running'`),
		waitJS(`document.querySelector('#chat .streaming') && document.querySelector('#chat .streaming').textContent === 'The answer so far'`),
		waitJS(`!document.querySelector('#stop').disabled`),
		waitJS(`document.querySelector('`+nestedCard+` .live').textContent === 'Checked.' && document.querySelector('`+nestedCard+`').dataset.status === 'running'`),
		screenshot(t, dir, "1-halfway"),
	)
	// A tool box opened by the person stays open while events re-render
	// the chat.
	p.do(waitJS(`(() => { const d = document.querySelector('#chat details.tool[data-call="c1"]'); if (!d) return false; d.open = true; return true; })()`))
	close(release)
	released = true
	p.do(
		waitJS(`document.querySelector('`+card+`').dataset.status === 'ok' && !document.querySelector('`+card+` .live')`),
		waitJS(`document.querySelector('#chat').textContent.includes('The answer so far, and the rest.') && !document.querySelector('#chat .streaming')`),
		waitJS(`document.querySelector('#stop').disabled`),
		waitJS(`document.querySelector('`+nestedCard+`').dataset.status === 'ok' && document.querySelector('`+nestedCard+`').textContent.includes('Checked.')`),
		waitJS(`document.querySelector('#todos').textContent.includes('look it up')`),
		screenshot(t, dir, "2-done"),
		waitJS(`document.querySelector('#chat details.tool[data-call="c1"]').open`),
	)
	if got := p.text("lanes"); !containsAll(got, "Findings: part one, part two.", "100 in · 7 out · 1 round(s)") {
		t.Errorf("the finished card lacks its text or usage:\n%s", got)
	}
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
