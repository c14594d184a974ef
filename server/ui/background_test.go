package ui_test

import (
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/server"
	"github.com/deepagents-go/deepagents/server/ui"
)

// bgScript: the agent starts two background subagents, cancels the slow
// one, says it waits, and answers once the other one's report is in.
const bgScript = `{
  "agent": [
    {"tool_calls": [
      {"id": "fast", "name": "task", "args": {"description": "quick look", "subagent_type": "general-purpose", "run_in_background": true}},
      {"id": "slow", "name": "task", "args": {"description": "endless search", "subagent_type": "general-purpose", "run_in_background": true}}]},
    {"tool_calls": [{"id": "stop", "name": "task_cancel", "args": {"task_id": "slow"}}], "delay_ms": 1500},
    {"content": "Waiting for the reports."},
    {"content": "All reports are in."},
    {"content": "All reports are in, really."}],
  "general-purpose": {"cases": [
    {"match": "quick", "steps": [{"content": "Quick finding.", "delay_ms": 3000}]},
    {"match": "endless", "steps": [{"content": "Never.", "delay_ms": 60000}]}]}
}`

// bgServer serves an agent running bgScript with the UI.
func bgServer(t *testing.T) string {
	t.Helper()
	var s scripted.Script
	if err := json.Unmarshal([]byte(bgScript), &s); err != nil {
		t.Fatal(err)
	}
	a, err := deepagents.New(deepagents.Config{Name: "agent", Model: scripted.New(s, scripted.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{Agents: []server.AgentSpec{{Name: "agent", Agent: a}}, Saver: checkpoint.NewMemory(0), UI: ui.Handler()})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { hs.Close(); _ = srv.Close() })
	return hs.URL
}

// A thread run by another client (no agent events to build the cards from)
// still shows its background subagents' cards as done and cancelled, from
// the task calls and the messages that brought their reports.
func TestBrowserBackgroundCardsFromCalls(t *testing.T) {
	url := bgServer(t)
	var th struct {
		ThreadID string `json:"thread_id"`
	}
	postJSON(t, url+"/threads", map[string]any{}, &th)
	postJSON(t, url+"/threads/"+th.ThreadID+"/runs/wait", map[string]any{"assistant_id": "agent",
		"input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "search in the background"}}}}, nil)
	p := page{t, browser(t)}
	const fast = `#lanes details.card[data-ns="task:fast"]`
	const slow = `#lanes details.card[data-ns="task:slow"]`
	p.do(
		chromedp.Navigate(url+"/#"+th.ThreadID),
		waitJS(`document.querySelectorAll('#lanes details.card').length === 2`),
		waitJS(`document.querySelector('`+fast+` summary .badge').textContent === 'done' && document.querySelector('`+fast+`').textContent.includes('Quick finding.')`),
		waitJS(`document.querySelector('`+slow+` summary .badge').textContent === 'cancelled'`),
		screenshot(t, artifacts(t), "cards-from-calls"),
	)
}

// TestBrowserBackgroundSubagentCards: a background subagent's card says
// "running in background" while it runs, then "done"; a cancelled one's
// says "cancelled"; the agent's answer after their reports shows in the
// chat.
func TestBrowserBackgroundSubagentCards(t *testing.T) {
	url := bgServer(t)
	p := page{t, browser(t)}
	dir := artifacts(t)
	const fast = `#lanes details.card[data-ns="task:fast"]`
	const slow = `#lanes details.card[data-ns="task:slow"]`
	p.do(
		chromedp.Navigate(url+"/"),
		waitJS(`document.querySelectorAll('#assistant option').length === 1`),
		chromedp.SendKeys(chromedp.ID("input"), "search in the background"),
		chromedp.Click(chromedp.ID("send")),
		waitJS(`document.querySelector('`+fast+`') && document.querySelector('`+fast+`').dataset.background === 'true' && document.querySelector('`+fast+` summary .badge').textContent === 'running in background'`),
		screenshot(t, dir, "1-running-in-background"),
		waitJS(`document.querySelector('`+slow+`') && document.querySelector('`+slow+` summary .badge').textContent === 'cancelled'`),
		waitJS(`document.querySelector('`+fast+` summary .badge').textContent === 'done' && document.querySelector('`+fast+`').textContent.includes('Quick finding.')`),
		waitJS(`document.querySelector('#chat').textContent.includes('All reports are in')`),
		screenshot(t, dir, "2-done-and-cancelled"),
	)
}
