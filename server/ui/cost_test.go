package ui_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/budget"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/server"
	"github.com/deepagents-go/deepagents/server/ui"
)

// fixedPricer prices each call of a priced model at a dollar per thousand
// tokens; the model "scripted" is priced when priced is set.
type fixedPricer struct{ priced bool }

func (p fixedPricer) Price(_ string, u llm.Usage) (float64, bool) {
	return float64(u.Total()) / 1000, p.priced
}

// TestBrowserShowsCost: the page shows what the thread's last run cost
// under its title, from the thread's cost value, and says "unknown" for a
// model without a price rather than $0.
func TestBrowserShowsCost(t *testing.T) {
	script := scripted.Script{"parent": scripted.AgentScript{Steps: []scripted.Step{
		{Content: "hello", Usage: &llm.Usage{InputTokens: 1200, OutputTokens: 34}},
	}}}
	var specs []server.AgentSpec
	for _, name := range []string{"priced", "unpriced"} {
		a, err := deepagents.New(deepagents.Config{Model: scripted.New(script, scripted.Options{}),
			Budget: budget.New(budget.Options{Pricer: fixedPricer{priced: name == "priced"}})})
		if err != nil {
			t.Fatal(err)
		}
		specs = append(specs, server.AgentSpec{Name: name, Agent: a})
	}
	s, err := server.New(server.Config{Agents: specs, Saver: checkpoint.NewMemory(0), UI: ui.Handler()})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(func() { hs.Close(); _ = s.Close() })
	// The page opens threads whose ids look like the server's.
	threads := map[string]string{"priced": "c0571ced", "unpriced": "0dd0dd00"}
	for name, id := range threads {
		body, _ := json.Marshal(map[string]any{"assistant_id": name, "if_not_exists": "create",
			"input": map[string]any{"messages": []map[string]any{{"role": "user", "content": "hi"}}}})
		resp, err := http.Post(hs.URL+"/threads/"+id+"/runs/wait", "application/json", bytes.NewReader(body))
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("run on %s: %v %v", name, resp, err)
		}
		resp.Body.Close()
	}
	p := page{t, browser(t)}
	p.do(chromedp.Navigate(hs.URL+"/#"+threads["priced"]), waitJS(`document.querySelector('#cost') && !document.querySelector('#cost').hidden`))
	if got := p.text("cost"); !strings.Contains(got, "cost: $1.23 for the last run (1 model call)") {
		t.Errorf("cost line %q", got)
	}
	p.do(chromedp.Navigate(hs.URL+"/#"+threads["unpriced"]), chromedp.Reload(),
		waitJS(`document.querySelector('#cost') && !document.querySelector('#cost').hidden && document.querySelector('#thread-title').dataset.thread === '`+threads["unpriced"]+`'`))
	if got := p.text("cost"); !strings.Contains(got, "cost: unknown (no price for the model)") {
		t.Errorf("cost line of an unpriced model %q", got)
	}
}
