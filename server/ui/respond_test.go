package ui_test

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/approve"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/server"
	"github.com/deepagents-go/deepagents/server/ui"
)

// TestBrowserRespond: a waiting call whose gate allows respond gets a
// respond button on its card; an empty answer is not sent; the answer
// given becomes the call's result (shown ok, the tool not run), which the
// model reads.
func TestBrowserRespond(t *testing.T) {
	model := scripted.New(nil, scripted.Options{Func: func(ci llm.CallInfo, req *llm.Request) (scripted.Step, error) {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == llm.RoleUser {
			w, _ := json.Marshal(map[string]string{"file_path": "/notes.md", "content": "notes\n"})
			return scripted.Step{ToolCalls: []scripted.StepCall{{ID: "write_1", Name: "write_file", Args: w}}}, nil
		}
		return scripted.Step{Content: "The model read: " + last.Content}, nil
	}})
	a, err := deepagents.New(deepagents.Config{Name: "agent", Model: model, Stream: true,
		InterruptOn: map[string]approve.Policy{"write_file": {Allowed: []agent.DecisionType{agent.Approve, agent.Respond}}}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := server.New(server.Config{Agents: []server.AgentSpec{{Name: "agent", Agent: a}}, Saver: checkpoint.NewMemory(0), UI: ui.Handler()})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(func() { hs.Close(); _ = s.Close() })

	p := page{t, browser(t)}
	dir := artifacts(t)
	const card = `#chat .approval .action`
	p.do(
		chromedp.Navigate(hs.URL+"/"),
		waitJS(`document.querySelectorAll('#assistant option').length === 1`),
		chromedp.SendKeys(chromedp.ID("input"), "save my notes"),
		chromedp.Click(chromedp.ID("send")),
		chromedp.WaitVisible(chromedp.CSS(card+` button.respond`)),
		waitJS(`!document.querySelector('#send').disabled`),
		screenshot(t, dir, "1-waiting"),
	)
	if n := p.eval(`document.querySelectorAll('` + card + ` button.reject, ` + card + ` button.edit').length`); n != 0 {
		t.Errorf("%d reject or edit buttons on a card that allows approve and respond", n)
	}
	p.do(
		chromedp.Click(chromedp.CSS(card+` button.respond`)),
		chromedp.WaitVisible(chromedp.CSS(card+` input.answer`)),
		chromedp.Click(chromedp.CSS(card+` button.respond`)),
		waitJS(`document.querySelector('`+card+`').textContent.includes('a respond needs an answer')`),
	)
	if d := p.evalString(`document.querySelector('` + card + `').dataset.decided || ''`); d != "" {
		t.Fatalf("an empty answer was taken as a decision (%s)", d)
	}
	const answer = "My notes live in my notebook."
	p.do(
		chromedp.SendKeys(chromedp.CSS(card+` input.answer`), answer),
		chromedp.Click(chromedp.CSS(card+` button.respond`)),
		waitJS(`document.querySelector('#chat').textContent.includes('The model read: `+answer+`')`),
		waitJS(`!document.querySelector('#send').disabled && !document.querySelector('#chat .approval')`),
		screenshot(t, dir, "2-answered"),
	)
	status := p.evalString(`(d => d ? d.dataset.status : 'none')(document.querySelector('#chat details.tool[data-call="write_1"]'))`)
	if status != "ok" {
		t.Errorf("the answered call is shown %q, want ok", status)
	}
	p.do(chromedp.Click(chromedp.CSS(`#tabs button[data-tab="files"]`)))
	if files := p.text("files"); strings.Contains(files, "/notes.md") {
		t.Errorf("the answered write ran: %s", files)
	}
}
