package ui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/internal/demoagent"
	"github.com/deepagents-go/deepagents/server"
	"github.com/deepagents-go/deepagents/server/ui"
)

// chromium finds a Chromium to drive: $DEEPAGENTS_CHROMIUM, else the
// Debian binaries on PATH. Without one the browser tests skip, unless
// DEEPAGENTS_TEST_CHROMIUM_REQUIRED is set (CI installs Chromium and sets it).
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("DEEPAGENTS_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium-headless-shell", "chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	for _, p := range []string{"/usr/lib/chromium/chromium-headless-shell", "/usr/lib/chromium/chromium"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	msg := "no Chromium found (install Debian's chromium or chromium-headless-shell, or set DEEPAGENTS_CHROMIUM)"
	if os.Getenv("DEEPAGENTS_TEST_CHROMIUM_REQUIRED") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// artifacts is where screenshots go: $DEEPAGENTS_ARTIFACTS/<test name> when
// set (CI keeps them), else the test's temporary directory.
func artifacts(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if root := os.Getenv("DEEPAGENTS_ARTIFACTS"); root != "" {
		dir = filepath.Join(root, strings.ReplaceAll(t.Name(), "/", "_"))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// browser starts a headless Chromium with a fresh profile and returns a
// tab's context, ended when the test ends.
// Errors whose text contains one of allow are expected and not reported.
func browser(t *testing.T, allow ...string) context.Context {
	t.Helper()
	return browserWith(t, nil, allow...)
}

// browserWith is browser with more options for Chromium.
func browserWith(t *testing.T, extra []chromedp.ExecAllocatorOption, allow ...string) context.Context {
	t.Helper()
	exe := chromium(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1500, 950),
	}
	opts = append(opts, extra...)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx, chromedp.WithErrorf(t.Logf))
	ctx, cancelTime := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() { cancelTime(); cancelTab(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", exe, err)
	}
	// Every error the page logs (exceptions, failed requests, refusals of
	// the content security policy) fails the test at its end.
	var mu sync.Mutex
	var errs []string
	go func() {
		for m, err := range chromedp.Console(ctx) {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				if slices.ContainsFunc(allow, func(a string) bool { return strings.Contains(m.String(), a) }) {
					continue
				}
				mu.Lock()
				errs = append(errs, m.String())
				mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, e := range errs {
			t.Errorf("the page logged an error: %s", e)
		}
	})
	return ctx
}

// demoServer serves the scripted demo agent (two parallel subagents, then
// a write_file call that waits for approval, then an answer) with the UI.
func demoServer(t *testing.T, stepDelayMS float64) string {
	t.Helper()
	return demoServerToken(t, stepDelayMS, "")
}

// demoServerToken is demoServer wanting a bearer token ("" for none).
func demoServerToken(t *testing.T, stepDelayMS float64, token string) string {
	t.Helper()
	a, err := demoagent.New("agent", stepDelayMS)
	if err != nil {
		t.Fatal(err)
	}
	s, err := server.New(server.Config{Agents: []server.AgentSpec{{Name: "agent", Agent: a}},
		Saver: checkpoint.NewMemory(0), UI: ui.Handler(), Token: token})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(func() { hs.Close(); _ = s.Close() })
	return hs.URL
}

func screenshot(t *testing.T, dir, name string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		png, err := chromedp.FullScreenshot(100)(ctx, tg) // quality 100 gives a PNG
		if err != nil {
			return err
		}
		p := filepath.Join(dir, name+".png")
		t.Logf("screenshot %s", p)
		return os.WriteFile(p, png, 0o644)
	})
}

// waitJS polls a JavaScript expression until it is true.
func waitJS(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Poll[bool]("!!("+expr+")", chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(60*time.Second))(ctx, tg)
		if err != nil {
			return fmt.Errorf("waiting for %s: %w", expr, err)
		}
		return nil
	})
}

// clickJS clicks the first element sel matches once there is one, finding
// and clicking it in one evaluation: a list the page renders again between
// a query and a click (as the history does when a checkpoint comes) cannot
// swap the node out from under the click.
func clickJS(sel string) chromedp.Action[chromedp.Void] {
	q, _ := json.Marshal(sel)
	return waitJS(`(b => b ? (b.click(), true) : false)(document.querySelector(` + string(q) + `))`)
}

// filterThreads picks a status in the thread list's filter.
func filterThreads(status string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Evaluate[bool](`(() => { const s = document.querySelector('#status-filter'); s.value = '`+status+
			`'; s.dispatchEvent(new Event('change')); return true; })()`)(ctx, tg)
		return err
	})
}

// page runs steps in the browser, failing the test on an error.
type page struct {
	t   *testing.T
	ctx context.Context
}

func (p page) do(steps ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	if err := chromedp.Do(p.ctx, steps...); err != nil {
		p.t.Fatal(err)
	}
}

// text is the visible text of the element with this id.
func (p page) text(id string) string {
	p.t.Helper()
	s, err := chromedp.Run(p.ctx, chromedp.Text(chromedp.ID(id)))
	if err != nil {
		p.t.Fatal(err)
	}
	return s
}

func (p page) eval(expr string) int {
	p.t.Helper()
	n, err := chromedp.Run(p.ctx, chromedp.Evaluate[int](expr))
	if err != nil {
		p.t.Fatal(err)
	}
	return n
}

// TestBrowserApprovalFlow drives the UI in headless Chromium: a message is
// sent, the two subagents' cards stream and finish with their findings, an
// approval card for write_file appears, it is approved, and the agent's
// final answer shows, with the written file in the files panel and the
// context ledger filled in.
func TestBrowserApprovalFlow(t *testing.T) {
	url := demoServer(t, 40)
	p := page{t, browser(t)} // after the server: the browser closes first
	dir := artifacts(t)

	p.do(
		chromedp.Navigate(url+"/"),
		chromedp.WaitVisible(chromedp.ID("input")),
		waitJS(`document.querySelectorAll('#assistant option').length === 1`),
		chromedp.SendKeys(chromedp.ID("input"), "compare the two topics"),
		chromedp.Click(chromedp.ID("send")),
		// Both subagents' cards appear while the run streams...
		waitJS(`document.querySelectorAll('#lanes details.card').length === 2`),
		screenshot(t, dir, "1-subagents"),
		// ...and fill in with what each subagent found.
		waitJS(`[...document.querySelectorAll('#lanes details.card')].every(c => c.dataset.status === 'ok' && c.textContent.includes('three sources agree'))`),
		// The write waits for approval.
		chromedp.WaitVisible(chromedp.CSS(`#chat .approval .action button.approve`)),
		waitJS(`!document.querySelector('#send').disabled`),
		screenshot(t, dir, "2-approval"),
		// The waiting thread is listed under "needs attention"; the status
		// filter finds it under interrupted and not under idle.
		waitJS(`document.querySelector('#attention li[data-status="interrupted"]') && !document.querySelector('#attention-h').hidden`),
		filterThreads("idle"),
		waitJS(`document.querySelectorAll('#threads li').length === 0`),
		filterThreads("interrupted"),
		waitJS(`document.querySelectorAll('#threads li[data-status="interrupted"]').length === 1`),
		filterThreads(""),
	)
	lanes := p.text("lanes")
	p.do(
		chromedp.Click(chromedp.CSS(`#chat .approval .action button.approve`)),
		waitJS(`document.querySelector('#chat').textContent.includes('Done: the report is in /report.md.')`),
		waitJS(`!document.querySelector('#send').disabled && !document.querySelector('#chat .approval')`),
		screenshot(t, dir, "3-final"),
	)
	chat := p.text("chat")
	p.do(chromedp.Click(chromedp.CSS(`#tabs button[data-tab="ledger"]`)), screenshot(t, dir, "4-ledger"))
	ledger := p.text("ledger")
	ledgerRows := p.eval(`document.querySelectorAll('#ledger .lrow').length`)
	p.do(chromedp.Click(chromedp.CSS(`#tabs button[data-tab="usage"]`)))
	usage := p.text("usage")
	// The rows (the main agent's own calls, each subagent) add up to what
	// the agent reported for the whole turn at the end of its last run,
	// subagents and the run before the approval included: nothing counted
	// twice or left out.
	sumOK := p.eval(`(() => {
		const n = (td) => Number(td.textContent.replace(/,/g, ''));
		const rows = [...document.querySelectorAll('#usage tbody tr:not(.total)')];
		const total = document.querySelector('#usage tr.total');
		const sum = (i) => rows.reduce((a, r) => a + n(r.children[i]), 0);
		return rows.length === 3 && sum(3) > 0 && sum(3) === Number(total.dataset.lastRunIn) && sum(4) === Number(total.dataset.lastRunOut) ? 1 : 0;
	})()`)
	// The turn's line under the answer counts the same calls and tokens.
	turnOK := p.eval(`(() => {
		const n = (td) => Number(td.textContent.replace(/,/g, ''));
		const total = document.querySelector('#usage tr.total');
		const line = document.querySelector('#chat .turn-usage[data-turn="0"]');
		return line && line.textContent.startsWith('5 model call(s) · ' + total.children[3].textContent + ' in · ' + total.children[4].textContent + ' out') ? 1 : 0;
	})()`)
	if turnOK != 1 {
		t.Errorf("the turn's usage line does not match the usage table:\n%s", chat)
	}
	if sumOK != 1 {
		t.Errorf("the usage rows do not add up to the total:\n%s", p.text("usage"))
	}
	p.do(chromedp.Click(chromedp.CSS(`#tabs button[data-tab="files"]`)),
		waitJS(`document.querySelector('#files').textContent.includes('/report.md')`))
	cards := p.eval(`document.querySelectorAll('#lanes details.card').length`)
	p.do(waitJS(`document.querySelector('#threads li') && document.querySelector('#threads li').dataset.status === 'idle'`))
	threads := p.text("threads")

	for _, want := range []string{"Research topic A for: compare the two topics", "Research topic B for: compare the two topics", "general-purpose"} {
		if !strings.Contains(lanes, want) {
			t.Errorf("subagent lane lacks %q:\n%s", want, lanes)
		}
	}
	if !strings.Contains(chat, "compare the two topics") || !strings.Contains(chat, "write_file") {
		t.Errorf("chat lacks the user's message or the write_file call:\n%s", chat)
	}
	if cards != 2 {
		t.Errorf("%d subagent cards after the run, want 2", cards)
	}
	// Model calls: the parent's three (delegate, write, answer) and one per
	// subagent.
	if ledgerRows != 5 {
		t.Errorf("context ledger has %d rows, want 5:\n%s", ledgerRows, ledger)
	}
	if !strings.Contains(usage, "general-purpose") {
		t.Errorf("usage table names no subagent:\n%s", usage)
	}
	if !strings.Contains(threads, "compare the two topics") {
		t.Errorf("thread list lacks the new thread's title:\n%s", threads)
	}
}
