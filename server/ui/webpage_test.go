package ui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
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

// seen is a request as the server answered it.
type seen struct {
	method, path, origin, ctype string
	status                      int
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// TestBrowserPageCannotDriveServer: a real page of another origin, open
// in Chromium while the user runs `deepagents serve` without a token,
// tries what such a page can do without the server's consent — a no-cors
// fetch with a JSON text body, navigator.sendBeacon, an image (a GET with
// no Origin), a text/plain form post — and, once its name resolves to 127.0.0.1 (DNS rebinding, here by
// Chromium's resolver rules), same-origin fetches to the server. Every
// request reaches the server and is refused with 403 (for its origin, or
// its host name); no thread or run is made.
func TestBrowserPageCannotDriveServer(t *testing.T) {
	a, err := demoagent.New("agent", 0)
	if err != nil {
		t.Fatal(err)
	}
	s, err := server.New(server.Config{Agents: []server.AgentSpec{{Name: "agent", Agent: a}}, Saver: checkpoint.NewMemory(0), UI: ui.Handler()})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var log []seen
	// arrived is closed when the server has answered the page's beacon and
	// its form post, which the browser sends on its own time.
	beacon, form := make(chan struct{}), make(chan struct{})
	var beaconOnce, formOnce sync.Once
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w}
		s.ServeHTTP(rec, r)
		mu.Lock()
		log = append(log, seen{r.Method, r.URL.Path, r.Header.Get("Origin"), r.Header.Get("Content-Type"), rec.status})
		mu.Unlock()
		switch ct := r.Header.Get("Content-Type"); {
		case r.URL.Path == "/threads" && strings.HasPrefix(ct, "text/plain;"):
			beaconOnce.Do(func() { close(beacon) })
		case r.URL.Path == "/threads" && ct == "text/plain":
			formOnce.Do(func() { close(form) })
		}
	}))
	t.Cleanup(func() { target.Close(); _ = s.Close() })
	postJSON(t, target.URL+"/threads", map[string]any{"thread_id": "victim"}, nil)
	mu.Lock()
	log = nil
	mu.Unlock()

	// The attacker's page, on another origin.
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<!doctype html><title>cute cats</title><p>cats</p>`)
	}))
	t.Cleanup(evil.Close)
	tu, _ := url.Parse(target.URL)
	p := page{t, browserWith(t, []chromedp.ExecAllocatorOption{chromedp.Flag("host-resolver-rules", "MAP evil.example 127.0.0.1")},
		"403", "415", "Forbidden", "Unsupported Media Type")}
	run, _ := json.Marshal(map[string]any{"assistant_id": "agent", "input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "delete everything"}}}})
	tq, _ := json.Marshal(target.URL)
	rq, _ := json.Marshal(string(run))
	p.do(
		chromedp.Navigate(evil.URL+"/"),
		waitJS(`document.title === 'cute cats'`),
		// A no-cors fetch: text/plain body, no preflight, the answer unreadable.
		awaitJS(`(async () => { await fetch(`+string(tq)+` + '/threads/victim/runs', {method: 'POST', mode: 'no-cors', body: `+string(rq)+`}); return true; })()`),
		waitJS(`navigator.sendBeacon(`+string(tq)+` + '/threads', '{"thread_id":"beacon"}')`),
		// An image: a GET with no Origin, whose load or error event (or
		// timing) would tell the page whether the thread exists.
		awaitJS(`new Promise(done => { const i = new Image(); i.onload = i.onerror = () => done(true); i.src = `+string(tq)+` + '/threads/victim/state'; })`),
		// A form whose text/plain body reads as JSON, posted into a frame.
		waitJS(`(() => {
			const frame = document.createElement('iframe');
			frame.name = 'sink';
			document.body.append(frame);
			const f = document.createElement('form');
			f.method = 'POST'; f.enctype = 'text/plain'; f.target = 'sink'; f.action = `+string(tq)+` + '/threads';
			const i = document.createElement('input');
			i.name = '{"thread_id":"form","x":"'; i.value = '"}';
			f.append(i); document.body.append(f); f.submit(); return true;
		})()`),
	)
	for name, c := range map[string]chan struct{}{"beacon": beacon, "form post": form} {
		select {
		case <-c:
		case <-time.After(time.Minute):
			t.Fatalf("the server never saw the page's %s", name)
		}
	}
	// DNS rebinding: the page's own name now resolves to the server.
	rebound := "http://evil.example:" + tu.Port()
	p.do(
		chromedp.Navigate(rebound+"/"),
		waitJS(`document.body && document.body.textContent.includes('loopback')`),
		awaitJS(`(async () => {
			const r = await fetch('/threads', {method: 'POST', headers: {'Content-Type': 'application/json'}, body: '{"thread_id":"rebound"}'});
			const s = await fetch('/threads/search', {method: 'POST', headers: {'Content-Type': 'application/json'}, body: '{}'});
			return r.status === 403 && s.status === 403;
		})()`),
	)
	mu.Lock()
	got := append([]seen(nil), log...)
	mu.Unlock()
	want := map[string]bool{"fetch": false, "beacon": false, "form": false, "rebound": false, "image": false}
	for _, r := range got {
		switch {
		case r.path == "/threads/victim/state" && r.origin == "":
			want["image"] = true
		case r.path == "/threads/victim/runs" && r.origin == evil.URL:
			want["fetch"] = true
		case r.path == "/threads" && r.origin == evil.URL && strings.HasPrefix(r.ctype, "text/plain;"):
			want["beacon"] = true
		case r.path == "/threads" && r.origin == evil.URL && r.ctype == "text/plain":
			want["form"] = true
		case r.origin == rebound:
			want["rebound"] = true
		}
		if r.status != http.StatusForbidden {
			t.Errorf("%s %s (Origin %q, Content-Type %q) was answered %d, want 403", r.method, r.path, r.origin, r.ctype, r.status)
		}
	}
	for k, ok := range want {
		if !ok {
			t.Errorf("the %s request never reached the server: %+v", k, got)
		}
	}
	var threads []map[string]any
	postJSON(t, target.URL+"/threads/search", map[string]any{}, &threads)
	var runs []any
	getJSON(t, target.URL+"/threads/victim/runs", &runs)
	if len(threads) != 1 || len(runs) != 0 {
		t.Errorf("%d threads and %d runs after the page's attempts; want only the victim, with no run", len(threads), len(runs))
	}
}

// getJSON reads a JSON answer of the API.
func getJSON(t *testing.T, url string, out any) {
	t.Helper()
	client := &http.Client{Timeout: time.Minute}
	res, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if err := json.NewDecoder(res.Body).Decode(out); err != nil || res.StatusCode != 200 {
		t.Fatalf("GET %s: %d %v", url, res.StatusCode, err)
	}
}

// awaitJS evaluates an expression, awaiting the promise it yields, and
// fails unless it comes to true.
func awaitJS(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		ok, err := chromedp.Evaluate[bool](expr, chromedp.EvalAwaitPromise)(ctx, tg)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%s came to false", expr)
		}
		return nil
	})
}

// TestBrowserPageCannotFrameUI: a page of another origin that frames the
// web UI (to have the user click its Approve button under a decoy:
// clickjacking) gets an empty frame. Chromium fetches the page and, as its
// answer forbids framing, never runs it: none of its scripts or styles is
// requested before the frame's load event. The UI opened directly loads
// them.
func TestBrowserPageCannotFrameUI(t *testing.T) {
	a, err := demoagent.New("agent", 0)
	if err != nil {
		t.Fatal(err)
	}
	s, err := server.New(server.Config{Agents: []server.AgentSpec{{Name: "agent", Agent: a}}, Saver: checkpoint.NewMemory(0), UI: ui.Handler()})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	assets := map[string]int{} // asset requests by their Sec-Fetch-Dest's document: frame or top
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/app.js" || r.URL.Path == "/app.css" {
			mu.Lock()
			assets[r.URL.Path]++
			mu.Unlock()
		}
		s.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { target.Close(); _ = s.Close() })
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<!doctype html><title>win a prize</title><p>click the button</p>`)
	}))
	t.Cleanup(evil.Close)
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return assets["/app.js"] + assets["/app.css"]
	}
	p := page{t, browserWith(t, nil, "frame-ancestors", "Refused to display", "Refused to frame")}
	tq, _ := json.Marshal(target.URL + "/")
	p.do(
		chromedp.Navigate(evil.URL+"/"),
		waitJS(`document.title === 'win a prize'`),
		// The frame's load event comes after its document's scripts and
		// styles have loaded, when it is shown.
		awaitJS(`new Promise(done => {
			const f = document.createElement('iframe');
			f.style.opacity = '0.01';
			f.onload = () => done(true);
			f.src = `+string(tq)+`;
			document.body.append(f);
		})`),
	)
	if n := count(); n != 0 {
		t.Errorf("the framed UI loaded %d of its assets: a page of another origin can show it under a decoy", n)
	}
	p.do(chromedp.Navigate(target.URL+"/"), waitJS(`document.readyState === 'complete'`))
	if n := count(); n != 2 {
		t.Errorf("the UI opened directly loaded %d assets, want 2 (app.js, app.css)", n)
	}
}
