package ui_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/approve"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/server"
	"github.com/deepagents-go/deepagents/server/ui"
)

// subagentApprovalServer serves an agent whose first subagent writes a file,
// a call that waits for approval inside the subagent, while the second
// subagent just answers; the parent then answers "All done.".
func subagentApprovalServer(t *testing.T) string {
	t.Helper()
	model := scripted.New(nil, scripted.Options{Func: func(ci llm.CallInfo, req *llm.Request) (scripted.Step, error) {
		last := req.Messages[len(req.Messages)-1]
		if ci.Instance != "" {
			if strings.Contains(ci.Task, "write") && last.Role == llm.RoleUser {
				b, _ := json.Marshal(map[string]string{"file_path": "/notes.md", "content": "draft from the subagent\n"})
				return scripted.Step{ToolCalls: []scripted.StepCall{{ID: "write_sub", Name: "write_file", Args: b}}}, nil
			}
			return scripted.Step{Content: "Subagent finished: " + ci.Task}, nil
		}
		if last.Role == llm.RoleUser {
			args := func(task string) json.RawMessage {
				b, _ := json.Marshal(map[string]string{"description": task, "subagent_type": "general-purpose"})
				return b
			}
			return scripted.Step{ToolCalls: []scripted.StepCall{
				{ID: "task_w", Name: "task", Args: args("write the notes")},
				{ID: "task_r", Name: "task", Args: args("read the sources")},
			}}, nil
		}
		return scripted.Step{Content: "All done."}, nil
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

// TestBrowserSubagentApprovalEditAndReload: a subagent's call waits for
// approval in the subagent's own card; its arguments are edited there and
// approved; the run finishes; the file holds the edited text and the diff
// between checkpoints shows the change; the file is edited and saved from
// the files panel; after a reload the subagent cards are rebuilt from the
// stored run events and still readable, and the file has the saved text.
func TestBrowserSubagentApprovalEditAndReload(t *testing.T) {
	url := subagentApprovalServer(t)
	p := page{t, browser(t)} // after the server: the browser closes first
	dir := artifacts(t)
	const card = `#lanes details.card[data-ns="task:task_w"]`
	p.do(
		chromedp.Navigate(url+"/"),
		waitJS(`document.querySelectorAll('#assistant option').length === 1`),
		chromedp.SendKeys(chromedp.ID("input"), "prepare notes"),
		chromedp.Click(chromedp.ID("send")),
		// The approval shows in the writing subagent's card, not the chat's.
		chromedp.WaitVisible(chromedp.CSS(card+` .approval button.edit`)),
		waitJS(`!document.querySelector('#send').disabled`),
		waitJS(`!document.querySelector('#chat .approval') && document.querySelector('#chat').textContent.includes('wait for approval in their cards')`),
		waitJS(`document.querySelector('`+card+`').dataset.status === 'waiting'`),
		// The parent's task call whose subagent waits is waiting too; the
		// other one needs no decision: its subagent has answered.
		waitJS(`document.querySelector('#chat details.tool[data-call="task_w"]').dataset.status === 'waiting'`),
		waitJS(`document.querySelector('#chat details.tool[data-call="task_r"]').dataset.status === 'ok'`),
		waitJS(`document.querySelector('#lanes details.card[data-ns="task:task_r"]').dataset.status === 'ok'`),
		screenshot(t, dir, "1-subagent-approval"),
		chromedp.Click(chromedp.CSS(card+` .approval button.edit`)),
		chromedp.WaitVisible(chromedp.CSS(card+` .approval textarea[name="content"]`)),
		chromedp.SetValue(chromedp.CSS(card+` .approval textarea[name="content"]`), "edited by the reviewer\n"),
		chromedp.Click(chromedp.CSS(card+` .approval button.edit-save`)),
		waitJS(`document.querySelector('#chat').textContent.includes('All done.')`),
		waitJS(`!document.querySelector('#send').disabled`),
		waitJS(`document.querySelector('`+card+`').dataset.status === 'ok'`),
		chromedp.Click(chromedp.CSS(`#tabs button[data-tab="files"]`)),
		waitJS(`document.querySelector('#files a') && document.querySelector('#files a').textContent === '/notes.md'`),
		chromedp.Click(chromedp.CSS(`#files a`)),
		waitJS(`document.querySelector('#file-content').textContent === 'edited by the reviewer\n'`),
		waitJS(`document.querySelectorAll('#diff-from option').length > 1`),
		chromedp.Click(chromedp.ID("diff-go")),
		waitJS(`document.querySelector('#diff').textContent.includes('+ edited by the reviewer')`),
		screenshot(t, dir, "2-file-diff"),
	)
	// The file is edited and saved from the panel (a new checkpoint).
	p.do(
		chromedp.Click(chromedp.ID("file-edit")),
		chromedp.WaitVisible(chromedp.ID("file-text")),
		chromedp.SetValue(chromedp.ID("file-text"), "saved from the files panel\n"),
		chromedp.Click(chromedp.ID("file-save")),
		waitJS(`document.querySelector('#file-content').textContent === 'saved from the files panel\n' && document.querySelector('#file-editor').hidden`),
		waitJS(`document.querySelector('#history li code') && document.querySelectorAll('#history li').length > 0`),
	)
	// The history tab shows an older checkpoint's files: before the edit
	// was approved there was no file.
	p.do(
		chromedp.Click(chromedp.CSS(`#tabs button[data-tab="history"]`)),
		waitJS(`document.querySelectorAll('#history li button.view').length > 1`),
		clickJS(`#history li:last-child button.view`),
		chromedp.Click(chromedp.CSS(`#tabs button[data-tab="files"]`)),
		waitJS(`!document.querySelector('#viewing').hidden && document.querySelector('#files').textContent.includes('No files yet.')`),
		chromedp.Click(chromedp.ID("viewing-back")),
		waitJS(`document.querySelector('#viewing').hidden && document.querySelector('#files').textContent.includes('/notes.md')`),
	)
	diff := p.text("diff")
	if strings.Contains(diff, "draft from the subagent") {
		t.Errorf("the file kept the subagent's draft although the edit replaced it:\n%s", diff)
	}
	// The subagents' transcripts stay readable after a reload: the page
	// replays the runs' stored events.
	p.do(
		chromedp.Reload(),
		waitJS(`document.querySelectorAll('#lanes details.card[data-status="ok"]').length === 2`),
		waitJS(`document.querySelector('#chat').textContent.includes('All done.')`),
		screenshot(t, dir, "3-after-reload"),
		// The card's transcript is in order: the write, then the answer.
		waitJS(`(() => {
			const kids = [...document.querySelector('`+card+`').children];
			const tool = kids.findIndex((k) => k.matches('details.tool') && k.textContent.includes('write_file'));
			const text = kids.findIndex((k) => k.textContent.includes('Subagent finished: write the notes'));
			return tool >= 0 && tool < text;
		})()`),
		// The saved edit is the thread's file now.
		chromedp.Click(chromedp.CSS(`#tabs button[data-tab="files"]`)),
		chromedp.Click(chromedp.CSS(`#files a`)),
		waitJS(`document.querySelector('#file-content').textContent === 'saved from the files panel\n'`),
	)
	lanes := p.text("lanes")
	for _, want := range []string{"Subagent finished: write the notes", "Subagent finished: read the sources", "write_file"} {
		if !strings.Contains(lanes, want) {
			t.Errorf("after the reload the lanes lack %q:\n%s", want, lanes)
		}
	}
	if n := p.eval(`document.querySelectorAll('#lanes .approval').length`); n != 0 {
		t.Errorf("%d approval cards after the reload, want none (the call was decided)", n)
	}
}

// TestBrowserStop: the stop button cancels a run whose model call would
// take a minute; the page is ready for the next message well before that.
func TestBrowserStop(t *testing.T) {
	url := demoServer(t, 0)
	p := page{t, browser(t)} // after the server: the browser closes first
	dir := artifacts(t)
	start := time.Now()
	p.do(
		chromedp.Navigate(url+"/"),
		waitJS(`document.querySelectorAll('#assistant option').length === 1`),
		chromedp.SendKeys(chromedp.ID("input"), "a slow question"),
		chromedp.Click(chromedp.ID("send")),
		waitJS(`!document.querySelector('#stop').disabled && document.querySelector('#ledger .lrow')`),
		screenshot(t, dir, "1-running"),
		chromedp.Click(chromedp.ID("stop")),
		waitJS(`!document.querySelector('#send').disabled && document.querySelector('#stop').disabled`),
		waitJS(`[...document.querySelectorAll('#threads li')].length === 1 && document.querySelector('#threads li').dataset.status !== 'busy'`),
		waitJS(`document.querySelector('#chat .note').textContent === 'Stopped: the run was cancelled.'`),
		screenshot(t, dir, "2-stopped"),
	)
	// The scripted model call takes 60 s; a stop that waited for it would
	// not be done this soon.
	if d := time.Since(start); d > 45*time.Second {
		t.Errorf("stopping took %v; the run was not cancelled", d)
	}
	if strings.Contains(p.text("chat"), "Done: the report") {
		t.Error("the stopped run still answered")
	}
}

// TestBrowserToken: against a server that wants a bearer token, the page
// loads, asks for the token, and once it is given lists the agent and runs
// a turn with it.
func TestBrowserToken(t *testing.T) {
	url := demoServerToken(t, 0, "s3cret-token")
	// The first API calls are refused (401) until the token is entered.
	p := page{t, browser(t, "401 (Unauthorized)")}
	dir := artifacts(t)
	p.do(
		chromedp.Navigate(url+"/"),
		chromedp.WaitVisible(chromedp.ID("token")),
		waitJS(`document.querySelector('#conn').textContent.includes('bearer token')`),
		waitJS(`document.querySelectorAll('#assistant option').length === 0`),
		screenshot(t, dir, "1-asks-for-token"),
		chromedp.SendKeys(chromedp.ID("token"), "s3cret-token"),
		chromedp.Click(chromedp.CSS(`#token-form button[type="submit"]`)),
		waitJS(`document.querySelectorAll('#assistant option').length === 1 && document.querySelector('#token-form').hidden`),
		chromedp.SendKeys(chromedp.ID("input"), "hello"),
		chromedp.Click(chromedp.ID("send")),
		chromedp.WaitVisible(chromedp.CSS(`#chat .approval button.approve`)),
		screenshot(t, dir, "2-with-token"),
	)
	if got := p.text("conn"); got != "" {
		t.Errorf("connection line still says %q", got)
	}
}

// postJSON sends a JSON request to the API and decodes the answer.
func postJSON(t *testing.T, url string, body, out any) {
	t.Helper()
	b, _ := json.Marshal(body)
	client := &http.Client{Timeout: time.Minute}
	res, err := client.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if res.StatusCode/100 != 2 {
		t.Fatalf("POST %s: %d %s", url, res.StatusCode, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("POST %s: %v in %s", url, err, data)
		}
	}
}

// TestBrowserThreadOfAnotherClient: a thread whose run another client made
// without the custom stream mode (so no agent events are stored) still
// shows a card per subagent, built from the task calls; the transcript of
// one that finished loads from the checkpoints, and the waiting one's
// approval is in its card and resumes the run.
func TestBrowserThreadOfAnotherClient(t *testing.T) {
	url := subagentApprovalServer(t)
	var th struct {
		ThreadID string `json:"thread_id"`
	}
	postJSON(t, url+"/threads", map[string]any{}, &th)
	postJSON(t, url+"/threads/"+th.ThreadID+"/runs/wait", map[string]any{"assistant_id": "agent",
		"input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "prepare notes"}}}}, nil)

	p := page{t, browser(t)}
	dir := artifacts(t)
	const waiting = `#lanes details.card[data-ns="task:task_w"]`
	const done = `#lanes details.card[data-ns="task:task_r"]`
	p.do(
		chromedp.Navigate(url+"/#"+th.ThreadID),
		waitJS(`document.querySelectorAll('#lanes details.card').length === 2`),
		// The parent has no answer from it yet: its sibling's call waits.
		waitJS(`document.querySelector('`+done+`').dataset.status === 'pending'`),
		chromedp.WaitVisible(chromedp.CSS(waiting+` .approval button.approve`)),
		chromedp.Click(chromedp.CSS(done+` button.transcript-load`)),
		waitJS(`document.querySelector('`+done+` .transcript') && document.querySelector('`+done+` .transcript').textContent.includes('Subagent finished: read the sources')`),
		screenshot(t, dir, "1-cards-from-calls"),
		chromedp.Click(chromedp.CSS(waiting+` .approval button.approve`)),
		waitJS(`document.querySelector('#chat').textContent.includes('All done.') && !document.querySelector('#send').disabled`),
		waitJS(`document.querySelector('`+waiting+`').dataset.status === 'ok'`),
		waitJS(`document.querySelector('`+done+`').dataset.status === 'ok'`),
		screenshot(t, dir, "2-resumed"),
	)
}
