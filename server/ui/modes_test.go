package ui_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/deepagents-go/deepagents/approve"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/internal/demoagent"
	"github.com/deepagents-go/deepagents/server"
	"github.com/deepagents-go/deepagents/server/ui"
)

// pickMode chooses a mode in the header's selector as a person does.
func pickMode(mode string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Evaluate[bool](`(() => { const s = document.querySelector('#approval-mode'); s.value = '`+mode+
			`'; s.dispatchEvent(new Event('change')); return true; })()`)(ctx, tg)
		return err
	})
}

// TestBrowserApprovalModeSelector: the header's selector chooses the
// thread's approval mode. In accept-edits the demo's write of /report.md
// runs without an approval card; switched back to manual, the next turn's
// write waits; yolo is said loudly; a mode the server refuses (auto, no
// classifier) puts the selector back with the server's reason.
func TestBrowserApprovalModeSelector(t *testing.T) {
	a, err := demoagent.New("agent", 0)
	if err != nil {
		t.Fatal(err)
	}
	s, err := server.New(server.Config{Agents: []server.AgentSpec{{Name: "agent", Agent: a}},
		Saver: checkpoint.NewMemory(0), UI: ui.Handler(),
		ApprovalModes: &server.ApprovalModes{New: func(m approve.Mode) (*approve.Session, error) {
			return approve.NewSession(m, approve.SessionOptions{Confined: true})
		}}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(func() { hs.Close(); _ = s.Close() })
	p := page{t, browser(t, "422")}
	dir := artifacts(t)
	p.do(
		chromedp.Navigate(hs.URL+"/"),
		waitJS(`document.querySelectorAll('#assistant option').length === 1`),
		chromedp.WaitVisible(chromedp.ID("approval-mode")),
		waitJS(`document.querySelector('#approval-mode').value === 'manual' && document.querySelector('#mode-warn').hidden`),
		pickMode("accept-edits"),
		chromedp.SendKeys(chromedp.ID("input"), "compare the two topics"),
		chromedp.Click(chromedp.ID("send")),
		// The write runs without asking: the answer says the report is in.
		waitJS(`document.querySelector('#chat').textContent.includes('Done: the report is in')`),
		waitJS(`!document.querySelector('#send').disabled`),
		screenshot(t, dir, "1-accept-edits"),
	)
	if n := p.eval(`document.querySelectorAll('#chat .approval').length`); n != 0 {
		t.Errorf("%d approval cards in accept-edits", n)
	}
	id := p.evalString(`location.hash.slice(1)`)
	if got := threadMode(t, hs.URL, id); got != "accept-edits" {
		t.Errorf("the thread's metadata says %q, want accept-edits", got)
	}
	p.do(
		// auto is refused by this server: the selector goes back.
		pickMode("auto"),
		waitJS(`document.querySelector('#error').textContent.includes('needs a model to judge calls with')`),
		waitJS(`document.querySelector('#approval-mode').value === 'accept-edits'`),
		// yolo is said loudly.
		pickMode("yolo"),
		waitJS(`!document.querySelector('#mode-warn').hidden`),
		screenshot(t, dir, "2-yolo"),
		// Back to manual: the next turn's write waits for a person.
		pickMode("manual"),
		waitJS(`document.querySelector('#mode-warn').hidden`),
		chromedp.SendKeys(chromedp.ID("input"), "again"),
		chromedp.Click(chromedp.ID("send")),
		chromedp.WaitVisible(chromedp.CSS(`#chat .approval .action button.approve`)),
		screenshot(t, dir, "3-manual"),
	)
	if got := threadMode(t, hs.URL, id); got != "manual" {
		t.Errorf("the thread's metadata says %q after the switch, want manual", got)
	}
	// A reload shows the thread's mode.
	p.do(chromedp.Reload(), waitJS(`document.querySelector('#approval-mode').value === 'manual'`))
}

// threadMode reads a thread's approval mode from its metadata.
func threadMode(t *testing.T, base, id string) string {
	t.Helper()
	resp, err := http.Get(base + "/threads/" + id)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var th struct {
		Metadata map[string]any `json:"metadata"`
	}
	if err := json.Unmarshal(b, &th); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	m, _ := th.Metadata[server.ModeKey].(string)
	return m
}
