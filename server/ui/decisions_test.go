package ui_test

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/approve"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/server"
	"github.com/deepagents-go/deepagents/server/ui"
)

// TestBrowserRejectShownAsRejected drives the demo as a person does: the
// approval card shows the write's arguments once; the person rejects it
// with a reason; the call is then shown as rejected by a person (not as a
// tool error), the demo's answer does not claim the report was written,
// and no /report.md appears. The chat's header names the thread by its
// title, before and after a reload, never by its id.
func TestBrowserRejectShownAsRejected(t *testing.T) {
	url := demoServer(t, 0)
	p := page{t, browser(t)}
	dir := artifacts(t)
	const approval = `#chat .approval .action`
	p.do(
		chromedp.Navigate(url+"/"),
		waitJS(`document.querySelectorAll('#assistant option').length === 1`),
		chromedp.SendKeys(chromedp.ID("input"), "compare the two topics"),
		chromedp.Click(chromedp.ID("send")),
		chromedp.WaitVisible(chromedp.CSS(approval+` button.reject`)),
		waitJS(`!document.querySelector('#send').disabled`),
		screenshot(t, dir, "1-approval"),
	)
	// The arguments show once on the card (the agent's default
	// description repeats them, so it is left out).
	if n := p.eval(`document.querySelector('` + approval + `').innerText.split('Topic A and topic B, summarised').length - 1`); n != 1 {
		t.Errorf("the approval card shows the arguments %d times, want once:\n%s", n, p.evalString(`document.querySelector('`+approval+`').innerText`))
	}
	title := p.text("thread-title")
	id := p.evalString(`location.hash.slice(1)`)
	if title != "compare the two topics" || id == "" || strings.Contains(title, id) {
		t.Errorf("the header says %q for thread %s; want its title", title, id)
	}
	p.do(
		chromedp.Click(chromedp.CSS(approval+` button.reject`)),
		chromedp.WaitVisible(chromedp.CSS(approval+` input.reason`)),
		chromedp.SendKeys(chromedp.CSS(approval+` input.reason`), "not now"),
		chromedp.Click(chromedp.CSS(approval+` button.reject`)),
		waitJS(`document.querySelector('#chat').textContent.includes('I did not write /report.md')`),
		waitJS(`!document.querySelector('#send').disabled && !document.querySelector('#chat .approval')`),
		screenshot(t, dir, "2-rejected"),
	)
	const box = `#chat details.tool[data-call="write_1"]`
	checkRejected := func(when string) {
		t.Helper()
		status := p.evalString(`(d => d ? d.dataset.status + ': ' + d.querySelector('.badge').textContent : 'none')(document.querySelector('` + box + `'))`)
		if status != "rejected: rejected by a person" {
			t.Errorf("%s: the rejected write is shown as %q, want as rejected by a person", when, status)
		}
		chat := p.text("chat")
		if strings.Contains(chat, "Done: the report is in") {
			t.Errorf("%s: the answer claims the rejected write was done:\n%s", when, chat)
		}
		// The subagents' calls ran: they are not marked.
		if n := p.eval(`document.querySelectorAll('#chat details.tool[data-status="ok"]').length`); n != 2 {
			t.Errorf("%s: %d calls shown ok, want the two task calls", when, n)
		}
	}
	checkRejected("after the rejection")
	p.do(chromedp.Click(chromedp.CSS(`#tabs button[data-tab="files"]`)))
	if files := p.text("files"); strings.Contains(files, "/report.md") {
		t.Errorf("the files list has the rejected write's file:\n%s", files)
	}
	p.do(
		chromedp.Reload(),
		waitJS(`document.querySelector('#chat').textContent.includes('I did not write /report.md')`),
		waitJS(`document.querySelector('`+box+`')`),
		waitJS(`document.querySelector('#thread-title').textContent !== 'loading…'`),
		screenshot(t, dir, "3-after-reload"),
	)
	checkRejected("after a reload")
	if got := p.text("thread-title"); got != "compare the two topics" {
		t.Errorf("after a reload the header says %q", got)
	}
}

// evalString evaluates a JavaScript expression that yields a string.
func (p page) evalString(expr string) string {
	p.t.Helper()
	s, err := chromedp.Run(p.ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		p.t.Fatal(err)
	}
	return s
}

// lsAndWriteServer serves an agent whose first step lists the files (a
// call that needs no approval) and writes one (a call that does) at once,
// then answers.
func lsAndWriteServer(t *testing.T) string {
	t.Helper()
	model := scripted.New(nil, scripted.Options{Func: func(ci llm.CallInfo, req *llm.Request) (scripted.Step, error) {
		if last := req.Messages[len(req.Messages)-1]; last.Role == llm.RoleUser {
			ls, _ := json.Marshal(map[string]string{"path": "/"})
			w, _ := json.Marshal(map[string]string{"file_path": "/notes.md", "content": "notes\n"})
			return scripted.Step{ToolCalls: []scripted.StepCall{{ID: "ls_1", Name: "ls", Args: ls}, {ID: "write_1", Name: "write_file", Args: w}}}, nil
		}
		return scripted.Step{Content: "Finished."}, nil
	}})
	a, err := deepagents.New(deepagents.Config{Name: "agent", Model: model, Stream: true,
		InterruptOn: map[string]approve.Policy{"write_file": {}}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := server.New(server.Config{Agents: []server.AgentSpec{{Name: "agent", Agent: a}},
		Saver: checkpoint.NewMemory(0), UI: ui.Handler()})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(func() { hs.Close(); _ = s.Close() })
	return hs.URL
}

// TestBrowserOnlyGatedCallsWait: a step calls ls (no approval needed) and
// write_file (approval needed) together. While the write waits, only its
// box says waiting: ls ran and shows its result, from the page's own
// stream, after a reload, and — for a thread another client ran, whose
// runs left no agent events — as not run yet, never as waiting.
func TestBrowserOnlyGatedCallsWait(t *testing.T) {
	url := lsAndWriteServer(t)
	p := page{t, browser(t)}
	dir := artifacts(t)
	status := func(call string) string {
		return p.evalString(`(d => d ? d.dataset.status : 'none')(document.querySelector('#chat details.tool[data-call="` + call + `"]'))`)
	}
	p.do(
		chromedp.Navigate(url+"/"),
		waitJS(`document.querySelectorAll('#assistant option').length === 1`),
		chromedp.SendKeys(chromedp.ID("input"), "list and write"),
		chromedp.Click(chromedp.ID("send")),
		chromedp.WaitVisible(chromedp.CSS(`#chat .approval button.approve`)),
		waitJS(`!document.querySelector('#send').disabled`),
		screenshot(t, dir, "1-waiting"),
	)
	if ls, w := status("ls_1"), status("write_1"); ls != "ok" || w != "waiting" {
		t.Errorf("while the write waits: ls %q, write_file %q; want ok and waiting", ls, w)
	}
	p.do(chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`#chat .approval button.approve`)), waitJS(`document.querySelector('#chat details.tool[data-call="ls_1"]')`))
	if ls, w := status("ls_1"), status("write_1"); ls != "ok" || w != "waiting" {
		t.Errorf("after a reload: ls %q, write_file %q; want ok and waiting", ls, w)
	}
	p.do(
		chromedp.Click(chromedp.CSS(`#chat .approval button.approve`)),
		waitJS(`document.querySelector('#chat').textContent.includes('Finished.') && !document.querySelector('#send').disabled`),
	)
	if ls, w := status("ls_1"), status("write_1"); ls != "ok" || w != "ok" {
		t.Errorf("after the approval: ls %q, write_file %q; want both ok", ls, w)
	}

	// Another client's run: no agent events were stored.
	var th struct {
		ThreadID string `json:"thread_id"`
	}
	postJSON(t, url+"/threads", map[string]any{}, &th)
	postJSON(t, url+"/threads/"+th.ThreadID+"/runs/wait", map[string]any{"assistant_id": "agent",
		"input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "list and write"}}}}, nil)
	p.do(
		chromedp.Navigate(url+"/#"+th.ThreadID),
		chromedp.Reload(),
		chromedp.WaitVisible(chromedp.CSS(`#chat .approval button.approve`)),
		waitJS(`document.querySelector('#chat details.tool[data-call="ls_1"]')`),
		screenshot(t, dir, "2-other-client"),
	)
	if ls, w := status("ls_1"), status("write_1"); ls != "pending" || w != "waiting" {
		t.Errorf("another client's thread: ls %q, write_file %q; want pending and waiting", ls, w)
	}
}

// TestBrowserPhoneWidth: at 360 px wide the page does not scroll
// sideways, and its main controls (the message box, send, the approval
// card's buttons) are on screen, wide enough, not covered, and work: a
// turn is sent, approved and answered.
func TestBrowserPhoneWidth(t *testing.T) {
	url := demoServer(t, 0)
	p := page{t, browser(t)}
	dir := artifacts(t)
	// usable is true when the element is within the screen's width, at
	// least minWidth px wide, and is what a tap at its centre reaches.
	usable := func(sel string, minWidth int) string {
		q, _ := json.Marshal(sel)
		return p.evalString(`(() => {
			const e = document.querySelector(` + string(q) + `);
			if (!e) return 'missing';
			e.scrollIntoView({block: 'center', inline: 'nearest'});
			const r = e.getBoundingClientRect();
			const cw = document.documentElement.clientWidth;
			if (r.left < 0 || r.right > cw + 0.5) return 'off screen: ' + r.left + '..' + r.right + ' of ' + cw;
			if (r.width < ` + itoa(minWidth) + `) return 'too narrow: ' + r.width + 'px';
			const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
			return hit && (hit === e || e.contains(hit)) ? 'ok' : 'covered by ' + (hit ? hit.outerHTML.slice(0, 80) : 'nothing');
		})()`)
	}
	overflow := func() int {
		return p.eval(`Math.max(document.documentElement.scrollWidth, document.body.scrollWidth) - document.documentElement.clientWidth`)
	}
	p.do(
		chromedp.EmulateViewport(360, 740),
		chromedp.Navigate(url+"/"),
		waitJS(`document.querySelectorAll('#assistant option').length === 1`),
		screenshot(t, dir, "1-empty"),
	)
	if n := overflow(); n > 0 {
		t.Errorf("the empty page is %d px wider than the screen", n)
	}
	for sel, min := range map[string]int{"#input": 216, "#send": 40, "#new-thread": 40, "#assistant": 40} {
		if got := usable(sel, min); got != "ok" {
			t.Errorf("%s at 360 px: %s", sel, got)
		}
	}
	p.do(
		chromedp.Click(chromedp.ID("input")),
		chromedp.SendKeys(chromedp.ID("input"), "compare the two topics"),
		chromedp.Click(chromedp.ID("send")),
		chromedp.WaitVisible(chromedp.CSS(`#chat .approval button.approve`)),
		waitJS(`!document.querySelector('#send').disabled`),
		screenshot(t, dir, "2-approval"),
	)
	if n := overflow(); n > 0 {
		t.Errorf("with the approval card the page is %d px wider than the screen", n)
	}
	for _, sel := range []string{"#chat .approval button.approve", "#chat .approval button.edit", "#chat .approval button.reject"} {
		if got := usable(sel, 40); got != "ok" {
			t.Errorf("%s at 360 px: %s", sel, got)
		}
	}
	p.do(
		chromedp.Click(chromedp.CSS(`#chat .approval button.approve`)),
		waitJS(`document.querySelector('#chat').textContent.includes('Done: the report is in /report.md.')`),
		screenshot(t, dir, "3-done"),
	)
	if n := overflow(); n > 0 {
		t.Errorf("after the answer the page is %d px wider than the screen", n)
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
