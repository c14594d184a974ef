package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	pathpkg "path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/server/ui"
)

// raw sends a request as a browser or another client would, every header
// as given ("Host" sets the request's Host), and returns the response with
// its body read.
func (h *harness) raw(method, path, body string, hdr ...string) (*http.Response, []byte) {
	h.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	ctx, cancel := context.WithTimeout(h.t.Context(), testTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, h.http.URL+path, rd)
	if err != nil {
		h.t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := testClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	return resp, b
}

// port is the harness server's port, as a Host header names it.
func (h *harness) port() string {
	u, _ := url.Parse(h.http.URL)
	return u.Port()
}

// corsHeaders lists the Access-Control-* headers of a response.
func corsHeaders(resp *http.Response) []string {
	var out []string
	for k := range resp.Header {
		if strings.HasPrefix(k, "Access-Control-") {
			out = append(out, k)
		}
	}
	return out
}

// TestWebPageCannotDrive: a server on loopback without a token, as
// `deepagents serve` starts by default, refuses every request a web page
// the user visits could send it — a fetch with a text/plain body (no
// preflight), a form post, a beacon, an EventSource, a preflight, a page
// that had its own name resolve to 127.0.0.1 (DNS rebinding), a sandboxed
// page (Origin: null) — with a JSON error and without running anything;
// curl, the SDKs, and the web UI served from the server itself still work.
func TestWebPageCannotDrive(t *testing.T) {
	h := newHarness(t, Config{UI: ui.Handler()})
	h.json("POST", "/threads", map[string]any{"thread_id": "victim"}, 200, nil)
	var run Run
	h.json("POST", "/threads/victim/runs/wait", map[string]any{"assistant_id": "researcher", "input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "first"}}}}, 200, nil)
	h.json("GET", "/threads/victim/runs?limit=1", nil, 200, &[]*Run{&run})
	port := h.port()
	const evil = "http://evil.example"
	runBody := `{"assistant_id":"researcher","input":{"messages":[{"role":"user","content":"rm -rf"}]}}`
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		hdr                      []string
	}{
		{"fetch with a text/plain body (no preflight)", "POST", "/threads/victim/runs", runBody, 403,
			[]string{"Origin", evil, "Content-Type", "text/plain;charset=UTF-8", "Sec-Fetch-Mode", "no-cors", "Sec-Fetch-Site", "cross-site"}},
		{"the same from a client sending no Origin", "POST", "/threads/victim/runs", runBody, 415,
			[]string{"Content-Type", "text/plain;charset=UTF-8"}},
		{"form enctype=text/plain", "POST", "/threads", `{"thread_id":"planted","x":"=}`, 403,
			[]string{"Origin", evil, "Content-Type", "text/plain", "Sec-Fetch-Mode", "navigate"}},
		{"form urlencoded without Origin", "POST", "/threads", "thread_id=planted", 415,
			[]string{"Content-Type", "application/x-www-form-urlencoded"}},
		{"multipart form without Origin", "POST", "/threads/victim/runs/stream", "--b\r\n\r\n" + runBody + "\r\n--b--\r\n", 415,
			[]string{"Content-Type", "multipart/form-data; boundary=b"}},
		{"empty form post (no body)", "POST", "/threads", "", 415,
			[]string{"Content-Type", "application/x-www-form-urlencoded"}},
		{"navigator.sendBeacon", "POST", "/threads/victim/runs", runBody, 403,
			[]string{"Origin", evil, "Content-Type", "text/plain;charset=UTF-8", "Sec-Fetch-Mode", "no-cors"}},
		{"cancel with no body (fetch mode no-cors)", "POST", "/threads/victim/runs/" + run.RunID + "/cancel", "", 403,
			[]string{"Origin", evil}},
		{"JSON from a sandboxed page", "POST", "/threads", `{"thread_id":"planted"}`, 403,
			[]string{"Origin", "null", "Content-Type", "application/json"}},
		{"DNS rebinding: a run", "POST", "/threads/victim/runs", runBody, 403,
			[]string{"Host", "evil.example:" + port, "Origin", evil + ":" + port, "Content-Type", "application/json"}},
		{"DNS rebinding: reading a thread", "GET", "/threads/victim", "", 403,
			[]string{"Host", "evil.example:" + port}},
		{"DNS rebinding: the UI", "GET", "/", "", 403,
			[]string{"Host", "evil.example:" + port}},
		{"DNS rebinding: a name under localhost's domain", "GET", "/threads/victim", "", 403,
			[]string{"Host", "localhost.evil.example:" + port}},
		{"EventSource from another origin", "GET", "/threads/victim/runs/" + run.RunID + "/stream", "", 403,
			[]string{"Origin", evil, "Accept", "text/event-stream"}},
		{"a cross-origin read", "POST", "/threads/search", `{}`, 403,
			[]string{"Origin", evil, "Content-Type", "application/json"}},
		{"a preflight", "OPTIONS", "/threads", "", 403,
			[]string{"Origin", evil, "Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "content-type"}},
		{"a page of another port of this machine", "POST", "/threads", `{"thread_id":"planted"}`, 403,
			[]string{"Origin", "http://127.0.0.1:3000", "Content-Type", "application/json"}},
		{"an <img> of another site joining a stream (no Origin)", "GET", "/threads/victim/runs/" + run.RunID + "/stream", "", 403,
			[]string{"Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "no-cors", "Sec-Fetch-Dest", "image"}},
		{"a <script> probing for a thread (no Origin)", "GET", "/threads/victim/state", "", 403,
			[]string{"Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "no-cors", "Sec-Fetch-Dest", "script"}},
		{"a <link rel=prefetch> of another port of localhost", "GET", "/threads/victim", "", 403,
			[]string{"Host", "localhost:" + port, "Sec-Fetch-Site", "same-site", "Sec-Fetch-Mode", "no-cors", "Sec-Fetch-Dest", "empty"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := h.raw(tc.method, tc.path, tc.body, tc.hdr...)
			var e ErrorBody
			if resp.StatusCode != tc.status || json.Unmarshal(b, &e) != nil || e.Detail == "" {
				t.Errorf("%d %s; want %d with a JSON detail", resp.StatusCode, b, tc.status)
			}
			if got := corsHeaders(resp); len(got) > 0 {
				t.Errorf("CORS headers %v sent to a refused origin", got)
			}
		})
	}
	// Nothing ran: one thread, its one run.
	var threads []Thread
	h.json("POST", "/threads/search", map[string]any{}, 200, &threads)
	var runs []Run
	h.json("GET", "/threads/victim/runs", nil, 200, &runs)
	if len(threads) != 1 || len(runs) != 1 {
		t.Fatalf("%d threads and %d runs after the attacks; want the victim and its one run", len(threads), len(runs))
	}

	// What legitimate clients send still works.
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		hdr                      []string
	}{
		{"curl -H 'Content-Type: application/json'", "POST", "/threads", `{}`, 200, []string{"Content-Type", "application/json"}},
		{"JSON with a charset", "POST", "/threads/search", `{}`, 200, []string{"Content-Type", "application/json; charset=utf-8"}},
		{"Host localhost", "GET", "/info", "", 200, []string{"Host", "localhost:" + port}},
		{"Host [::1]", "GET", "/info", "", 200, []string{"Host", "[::1]:" + port}},
		{"Host 127.0.0.1", "GET", "/info", "", 200, []string{"Host", "127.0.0.1:" + port}},
		{"Host LOCALHOST.", "GET", "/info", "", 200, []string{"Host", "LOCALHOST.:" + port}},
		{"the web UI's own page", "GET", "/", "", 200, []string{"Host", "127.0.0.1:" + port, "Sec-Fetch-Site", "none"}},
		{"a link to the web UI on another site", "GET", "/", "", 200,
			[]string{"Host", "127.0.0.1:" + port, "Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "navigate", "Sec-Fetch-Dest", "document"}},
		{"the web UI's script", "GET", "/app.js", "", 200,
			[]string{"Host", "127.0.0.1:" + port, "Sec-Fetch-Site", "same-origin", "Sec-Fetch-Mode", "no-cors", "Sec-Fetch-Dest", "script"}},
		{"the web UI posting to its own origin", "POST", "/threads/search", `{}`, 200,
			[]string{"Host", "127.0.0.1:" + port, "Origin", "http://127.0.0.1:" + port, "Content-Type", "application/json", "Sec-Fetch-Site", "same-origin"}},
		{"the web UI's page under localhost", "POST", "/threads/search", `{}`, 200,
			[]string{"Host", "localhost:" + port, "Origin", "http://localhost:" + port, "Content-Type", "application/json"}},
		{"a GET with no Content-Type", "GET", "/threads/victim", "", 200, nil},
		{"a cancel with no body (the Python client)", "POST", "/threads/victim/runs/" + run.RunID + "/cancel?wait=0&action=interrupt", "", 202, nil},
		{"a DELETE with no body", "DELETE", "/threads/planted-by-nobody", "", 404, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if resp, b := h.raw(tc.method, tc.path, tc.body, tc.hdr...); resp.StatusCode != tc.status {
				t.Errorf("%d %s; want %d", resp.StatusCode, b, tc.status)
			}
		})
	}
}

// TestTokenServerTakesAnyHost: with a token, the server may listen beyond
// loopback and be reached under any name; origins are still checked.
func TestTokenServerTakesAnyHost(t *testing.T) {
	h := newHarness(t, Config{Token: "s3cret"})
	if resp, b := h.raw("GET", "/info", "", "Host", "agents.example.com", "Authorization", "Bearer s3cret"); resp.StatusCode != 200 {
		t.Errorf("GET /info to agents.example.com with the token: %d %s", resp.StatusCode, b)
	}
	if resp, _ := h.raw("GET", "/info", "", "Host", "agents.example.com"); resp.StatusCode != 401 {
		t.Errorf("GET /info without the token: %d, want 401", resp.StatusCode)
	}
	if resp, _ := h.raw("GET", "/info", "", "Origin", "http://evil.example", "Authorization", "Bearer s3cret"); resp.StatusCode != 403 {
		t.Errorf("GET /info from an unlisted origin: %d, want 403", resp.StatusCode)
	}
	// Config.Hosts names more hosts a token-less server answers to.
	h2 := newHarness(t, Config{Hosts: []string{"devbox"}})
	if resp, _ := h2.raw("GET", "/info", "", "Host", "devbox:"+h2.port()); resp.StatusCode != 200 {
		t.Errorf("GET /info to a listed host: %d", resp.StatusCode)
	}
	if resp, _ := h2.raw("GET", "/info", "", "Host", "devbox2:"+h2.port()); resp.StatusCode != 403 {
		t.Errorf("GET /info to an unlisted host: %d", resp.StatusCode)
	}
}

// TestCORSNeverAllowsCredentials: a listed origin gets its origin back and
// the methods and headers the SDKs use, and never
// Access-Control-Allow-Credentials (the token travels in a header; with
// the origin reflected, allowing credentials would let that page send the
// user's cookies for this server); an unlisted origin gets no CORS header.
func TestCORSNeverAllowsCredentials(t *testing.T) {
	for _, cfg := range []Config{
		{CORS: CORS{AllowOrigins: []string{"https://ui.example"}}},
		{CORS: CORS{AllowOrigins: []string{"*"}}, Token: "s3cret"},
	} {
		h := newHarness(t, cfg)
		auth := []string{}
		if cfg.Token != "" {
			auth = []string{"Authorization", "Bearer s3cret"}
		}
		for _, req := range []struct {
			method, path, body string
			hdr                []string
		}{
			{"OPTIONS", "/threads", "", []string{"Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "authorization,content-type",
				"Access-Control-Request-Private-Network", "true"}},
			{"POST", "/threads", `{}`, append([]string{"Content-Type", "application/json"}, auth...)},
			{"GET", "/info", "", auth},
			{"GET", "/threads/nope", "", auth},
		} {
			resp, b := h.raw(req.method, req.path, req.body, append([]string{"Origin", "https://ui.example"}, req.hdr...)...)
			if resp.StatusCode >= 500 || resp.StatusCode == 403 {
				t.Errorf("%v %s %s from a listed origin: %d %s", cfg.CORS.AllowOrigins, req.method, req.path, resp.StatusCode, b)
			}
			if got := resp.Header.Values("Access-Control-Allow-Credentials"); len(got) > 0 {
				t.Errorf("%v %s %s: Access-Control-Allow-Credentials %q sent with the reflected origin %q",
					cfg.CORS.AllowOrigins, req.method, req.path, got, resp.Header.Get("Access-Control-Allow-Origin"))
			}
			if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "https://ui.example" {
				t.Errorf("%v %s %s: Access-Control-Allow-Origin %q", cfg.CORS.AllowOrigins, req.method, req.path, got)
			}
			if req.method == "OPTIONS" && (resp.StatusCode != 204 || !strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "Authorization") ||
				resp.Header.Get("Access-Control-Allow-Private-Network") != "true") {
				t.Errorf("%v preflight: %d %v", cfg.CORS.AllowOrigins, resp.StatusCode, resp.Header)
			}
		}
		if cfg.CORS.AllowOrigins[0] == "*" {
			continue
		}
		resp, _ := h.raw("OPTIONS", "/threads", "", "Origin", "https://ui.example.evil", "Access-Control-Request-Method", "POST")
		if got := corsHeaders(resp); resp.StatusCode != 403 || len(got) > 0 {
			t.Errorf("preflight of an unlisted origin: %d with %v", resp.StatusCode, got)
		}
	}
	for _, bad := range []Config{
		{CORS: CORS{AllowOrigins: []string{"*"}}},
		{CORS: CORS{AllowOrigins: []string{"null"}}, Token: "t"},
		{CORS: CORS{AllowOrigins: []string{"https://ui.example/app"}}},
	} {
		a, _ := DemoAgent("researcher", 0)
		bad.Agents = []AgentSpec{{Name: "researcher", Agent: a}}
		bad.Saver = newHarness(t, Config{}).srv.cfg.Saver
		if _, err := New(bad); err == nil {
			t.Errorf("New with CORS %v and token %q: no error", bad.CORS.AllowOrigins, bad.Token)
		}
	}
}

// TestStreamCap: past MaxStreams open streams, one more (a new run's or a
// join) is refused with 429 before anything runs; a stream that ends
// frees its slot.
func TestStreamCap(t *testing.T) {
	h := newHarness(t, Config{MaxStreams: 2})
	open := func(path, body string) (*http.Response, *bufio.Reader) {
		t.Helper()
		method := "GET"
		if body != "" {
			method = "POST"
		}
		req, err := http.NewRequestWithContext(t.Context(), method, h.http.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		r := bufio.NewReader(resp.Body)
		if resp.StatusCode == 200 {
			// The stream is open once its first event came.
			if line, err := r.ReadString('\n'); err != nil || line != "event: metadata\n" {
				t.Fatalf("%s: first line %q, %v", path, line, err)
			}
		}
		return resp, r
	}
	slow := `{"assistant_id":"researcher","if_not_exists":"create","input":{"messages":[{"role":"user","content":"slow"}]}}`
	first, firstBody := open("/threads/a/runs/stream", slow)
	var runA Run
	h.json("GET", "/threads/a/runs?limit=1", nil, 200, &[]*Run{&runA})
	second, _ := open("/threads/a/runs/"+runA.RunID+"/stream", "")
	if first.StatusCode != 200 || second.StatusCode != 200 {
		t.Fatalf("the first two streams: %d, %d", first.StatusCode, second.StatusCode)
	}
	for _, tc := range []struct{ path, body string }{{"/threads/b/runs/stream", slow}, {"/threads/a/runs/" + runA.RunID + "/stream", ""}} {
		resp, r := open(tc.path, tc.body)
		b, _ := io.ReadAll(r)
		var e ErrorBody
		if resp.StatusCode != 429 || json.Unmarshal(b, &e) != nil || !strings.Contains(e.Detail, "2 event streams open") {
			t.Errorf("a third stream (%s): %d %s; want 429 saying why", tc.path, resp.StatusCode, b)
		}
	}
	// The refused run was never made.
	h.json("GET", "/threads/b", nil, 404, nil)
	// Ending the run ends both its streams; their slots are free again.
	h.json("POST", "/threads/a/runs/"+runA.RunID+"/cancel?wait=1", nil, 202, nil)
	if _, err := io.ReadAll(firstBody); err != nil {
		t.Fatal(err)
	}
	h.stream("GET", "/threads/a/runs/"+runA.RunID+"/stream", nil) // second's slot may still be held: one is free
	if n := h.srv.streams.Load(); n > 1 {
		t.Errorf("%d streams counted open after two of three ended", n)
	}
}

// TestJoinStreamEmptyMode: the Python client's runs.join_stream(thread,
// run) sends stream_mode= empty (and cancel_on_disconnect=false); the
// join streams the run's own modes, as with no stream_mode.
func TestJoinStreamEmptyMode(t *testing.T) {
	h := newHarness(t, Config{})
	var run Run
	h.json("POST", "/threads/t/runs", map[string]any{"assistant_id": "researcher", "if_not_exists": "create",
		"stream_mode": []string{"values", "updates"}, "input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}}}}, 200, &run)
	resp, b := h.raw("GET", "/threads/t/runs/"+run.RunID+"/stream?cancel_on_disconnect=false&stream_mode=", "",
		"Accept", "text/event-stream", "Cache-Control", "no-store")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("join_stream as the Python client sends it: %d %s", resp.StatusCode, b)
	}
	kinds := map[string]int{}
	for _, ev := range parseSSE(t, strings.NewReader(string(b))) {
		kinds[ev.Event]++
	}
	if kinds["metadata"] != 1 || kinds["values"] == 0 || kinds["updates"] == 0 {
		t.Errorf("joined stream's events %v; want the run's values and updates", kinds)
	}
	// A mode named among empty ones still narrows.
	resp, b = h.raw("GET", "/threads/t/runs/"+run.RunID+"/stream?stream_mode=&stream_mode=updates", "")
	if evs := parseSSE(t, strings.NewReader(string(b))); resp.StatusCode != 200 || len(evs) == 0 || strings.Contains(string(b), "event: values") {
		t.Errorf("stream_mode=updates among empty ones: %d, %s", resp.StatusCode, b)
	}
}

// TestMethodNotAllowedListsOnlyServed: a 405's Allow header and detail
// name only methods the path is served with: each of them, sent, is
// answered by an endpoint (not a 404 "no route" nor a 405). A path that
// is no route's, with the UI mounted, is a 404 for every method, and a run
// id that is an endpoint's name (runs/stream, runs/wait) is not taken as a
// run to GET.
func TestMethodNotAllowedListsOnlyServed(t *testing.T) {
	for _, withUI := range []bool{false, true} {
		cfg := Config{}
		if withUI {
			cfg.UI = ui.Handler()
		}
		h := newHarness(t, cfg)
		h.json("POST", "/threads", map[string]any{"thread_id": "x"}, 200, nil)
		for _, tc := range []struct {
			method, path, allow string
		}{
			{"PUT", "/threads/x/runs/stream", "POST"},
			{"GET", "/threads/x/runs/stream", "POST"},
			{"DELETE", "/threads/x/runs/wait", "POST"},
			{"PUT", "/threads", "POST"},
			{"PUT", "/threads/x", "DELETE, GET, HEAD, PATCH"},
			{"DELETE", "/threads/x/runs/0b7c5c3e-0000-4000-8000-000000000000", "GET, HEAD"},
			{"DELETE", "/threads/x/history", "GET, HEAD, POST"},
			{"POST", "/ok", "GET, HEAD"},
		} {
			resp, b := h.raw(tc.method, tc.path, "")
			var e ErrorBody
			if resp.StatusCode != 405 || resp.Header.Get("Allow") != tc.allow || json.Unmarshal(b, &e) != nil || !strings.HasSuffix(e.Detail, "allowed: "+tc.allow) {
				t.Errorf("UI %v: %s %s: %d Allow %q %s; want 405 Allow %q", withUI, tc.method, tc.path, resp.StatusCode, resp.Header.Get("Allow"), b, tc.allow)
				continue
			}
			for _, m := range strings.Split(tc.allow, ", ") {
				body := ""
				if m == "POST" || m == "PATCH" {
					body = `{}`
				}
				resp, b := h.raw(m, tc.path, body, "Content-Type", "application/json")
				if resp.StatusCode == 405 || strings.Contains(string(b), "no route") {
					t.Errorf("UI %v: %s %s is listed in Allow but answers %d %s", withUI, m, tc.path, resp.StatusCode, b)
				}
			}
		}
		for _, m := range []string{"GET", "POST", "PUT", "DELETE"} {
			for _, p := range []string{"/nope", "/threads/x/nope", "/app.js/x"} {
				resp, b := h.raw(m, p, "")
				if resp.StatusCode != 404 || resp.Header.Get("Allow") != "" {
					t.Errorf("UI %v: %s %s: %d Allow %q %s; want a 404 (no method is served there)", withUI, m, p, resp.StatusCode, resp.Header.Get("Allow"), b)
				}
			}
		}
	}
}

// FuzzGuard: whatever Host, Origin, Content-Type and method a request
// carries, a server without a token lets it through only when its Host is
// loopback, its Origin (if any) its own or listed, and a body it carries is
// JSON; it never answers with a CORS header for an unlisted origin nor
// allows credentials.
func FuzzGuard(f *testing.F) {
	s := &Server{cfg: Config{CORS: CORS{AllowOrigins: []string{"https://ui.example"}}}}
	f.Fuzz(func(t *testing.T, method, host, origin, ctype string, body bool) {
		r, err := http.NewRequest("GET", "http://127.0.0.1/threads", nil)
		if err != nil {
			t.Fatal(err)
		}
		r.Method, r.Host = method, host
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
		if ctype != "" {
			r.Header.Set("Content-Type", ctype)
		}
		if body {
			r.ContentLength = 2
		}
		w := &probe{header: http.Header{}}
		answered := s.guard(w, r)
		if w.header.Get("Access-Control-Allow-Credentials") != "" {
			t.Fatal("credentials allowed")
		}
		if acao := w.header.Get("Access-Control-Allow-Origin"); acao != "" && acao != "https://ui.example" {
			t.Fatalf("Access-Control-Allow-Origin %q", acao)
		}
		if answered {
			return
		}
		name := host
		if h, _, err := net.SplitHostPort(host); err == nil {
			name = h
		}
		name = strings.TrimSuffix(strings.Trim(name, "[]"), ".")
		if ip := net.ParseIP(name); !strings.EqualFold(name, "localhost") && (ip == nil || !ip.IsLoopback()) {
			t.Fatalf("Host %q let through", host)
		}
		if u, err := url.Parse(origin); origin != "" && !strings.EqualFold(origin, "https://ui.example") && (err != nil || !strings.EqualFold(u.Host, host)) {
			t.Fatalf("Origin %q let through to Host %q", origin, host)
		}
		if body && !strings.HasPrefix(strings.ToLower(strings.TrimSpace(ctype)), "application/json") {
			t.Fatalf("body of type %q let through", ctype)
		}
	})
}

// FuzzAllowed: for any clean path, the methods a 405 would list are sorted and
// distinct, HEAD comes only with GET, and the mux routes each of them.
func FuzzAllowed(f *testing.F) {
	s := &Server{mux: http.NewServeMux()}
	s.routes()
	f.Fuzz(func(t *testing.T, path string) {
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		u, err := url.Parse("http://127.0.0.1" + path)
		if err != nil || u.Path == "" || pathpkg.Clean(u.Path) != u.Path {
			return // the mux redirects a path that is not clean
		}
		got := s.allowed(u.Path)
		for i, m := range got {
			if i > 0 && got[i-1] >= m {
				t.Fatalf("allowed(%q) = %v: not sorted and distinct", u.Path, got)
			}
			if m == http.MethodHead {
				if !slices.Contains(got, http.MethodGet) {
					t.Fatalf("allowed(%q) = %v: HEAD without GET", u.Path, got)
				}
				continue
			}
			r := &http.Request{Method: m, URL: u, Host: "127.0.0.1"}
			if _, pattern := s.mux.Handler(r); pattern == "" {
				t.Fatalf("allowed(%q) lists %s, which no route takes", u.Path, m)
			}
		}
	})
}

// TestStreamCutsAClientThatStopsReading: a client that opens a stream and
// never reads it (a slowloris on the response) is cut off once a write has
// waited StreamWriteTimeout, so its stream slot is freed for others; the
// server's Close does not wait on it either.
func TestStreamCutsAClientThatStopsReading(t *testing.T) {
	a, err := deepagents.New(deepagents.Config{Model: subagentWriter(strings.Repeat("all work and no play ", 400_000))}) // 8 MB in every values event
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, Config{Agents: []AgentSpec{{Name: "writer", Agent: a}}, MaxStreams: 1, StreamWriteTimeout: 200 * time.Millisecond})
	var out map[string]any
	h.json("POST", "/threads/t/runs/wait", map[string]any{"assistant_id": "writer", "if_not_exists": "create",
		"input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "go"}}}}, 200, &out)
	var runs []Run
	h.json("GET", "/threads/t/runs", nil, 200, &runs)
	path := "/threads/t/runs/" + runs[0].RunID + "/stream"

	// The client that never reads: its request, then nothing.
	conn, err := net.DialTimeout("tcp", h.http.Listener.Addr().String(), testTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(4 << 10)
	}
	if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, h.http.Listener.Addr()); err != nil {
		t.Fatal(err)
	}
	// Until it is cut off, its stream holds the one slot; after, another
	// client's stream is served whole.
	deadline := time.Now().Add(30 * time.Second)
	for {
		req, err := http.NewRequestWithContext(t.Context(), "GET", h.http.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 200 {
			if err != nil || !strings.Contains(string(b), "event: values") {
				t.Fatalf("the second client's stream: %v, %d bytes", err, len(b))
			}
			break
		}
		if resp.StatusCode != 429 || time.Now().After(deadline) {
			t.Fatalf("another client's stream: %d %s (the client that reads nothing still holds the only slot after 30 s)", resp.StatusCode, b)
		}
		// Real time: the cut is the server's write deadline on a real
		// connection, which no fake clock moves.
		time.Sleep(50 * time.Millisecond)
	}
}
