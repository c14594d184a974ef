package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/internal/demoagent"
	"github.com/deepagents-go/deepagents/server"
)

// TestServeWithoutAKeySuggestsDemo: serve with no model and no key, or a
// model whose key is not set, says which variable to set and that
// `deepagents serve --demo` runs without one.
func TestServeWithoutAKeySuggestsDemo(t *testing.T) {
	runEnv(t, nil)
	db := "sqlite:" + filepath.Join(t.TempDir(), "s.db")
	for _, args := range [][]string{
		{"serve", "--db", db},
		{"serve", "--db", db, "--model", "anthropic:claude-sonnet-4-5"},
	} {
		code, _, errs := runCLI(t, args...)
		if code != 2 || !strings.Contains(errs, "deepagents serve --demo") || !strings.Contains(errs, "_API_KEY") {
			t.Errorf("%q: exit %d, %s; want exit 2 naming the key and suggesting serve --demo", args, code, errs)
		}
	}
}

// TestServePortInUseSuggestsAddr: an address another program listens on
// is refused, saying so and suggesting --addr with another port.
func TestServePortInUseSuggestsAddr(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	code, _, errs := runCLI(t, "serve", "--demo", "--addr", ln.Addr().String(), "--db", "sqlite:"+filepath.Join(t.TempDir(), "s.db"))
	if code != 1 || !strings.Contains(errs, "already in use") || !strings.Contains(errs, "--addr 127.0.0.1:") {
		t.Errorf("exit %d: %s; want exit 1 suggesting --addr", code, errs)
	}
}

// TestServeRefusesUnsafeFlags: --cors '*' without a token (every web page
// could call the API), the null origin, and --max-streams below 1 are
// usage errors.
func TestServeRefusesUnsafeFlags(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "s.db")
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"--cors", "*"}, "token"},
		{[]string{"--cors", "https://ui.example,null"}, "null"},
		{[]string{"--cors", "ui.example"}, "not an origin"},
		{[]string{"--max-streams", "0"}, "--max-streams"},
	} {
		code, _, errs := runCLI(t, append([]string{"serve", "--demo", "--db", db}, tc.args...)...)
		if code != 2 || !strings.Contains(errs, tc.says) {
			t.Errorf("serve %q: exit %d, %s; want exit 2 saying %q", tc.args, code, errs, tc.says)
		}
	}
}

// TestServeGuardsAndMaxStreams starts `deepagents serve --demo` as a user
// does (no token, loopback) with --max-streams 1: a page's text/plain post
// and a DNS-rebound request are refused; one stream is served and a second
// gets 429.
func TestServeGuardsAndMaxStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server process")
	}
	_, base := startServe(t, "--demo", "--db", "sqlite:"+filepath.Join(t.TempDir(), "s.db"), "--addr", "127.0.0.1:0", "--max-streams", "1")
	u, _ := url.Parse(base)
	send := func(method, path, body string, hdr ...string) *http.Response {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		t.Cleanup(cancel)
		req, err := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			if hdr[i] == "Host" {
				req.Host = hdr[i+1]
			} else {
				req.Header.Set(hdr[i], hdr[i+1])
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	run := `{"assistant_id":"agent","if_not_exists":"create","input":{"messages":[{"role":"user","content":"slow"}]}}`
	if resp := send("POST", "/threads/t/runs", run, "Origin", "http://evil.example", "Content-Type", "text/plain;charset=UTF-8"); resp.StatusCode != 403 {
		t.Errorf("a page's text/plain post: %d, want 403", resp.StatusCode)
	}
	if resp := send("POST", "/threads/t/runs", run, "Content-Type", "text/plain"); resp.StatusCode != 415 {
		t.Errorf("a text/plain body: %d, want 415", resp.StatusCode)
	}
	if resp := send("GET", "/info", "", "Host", "evil.example:"+u.Port()); resp.StatusCode != 403 {
		t.Errorf("a request to another host name: %d, want 403", resp.StatusCode)
	}
	first := send("POST", "/threads/t/runs/stream", run, "Content-Type", "application/json")
	if line, err := bufio.NewReader(first.Body).ReadString('\n'); first.StatusCode != 200 || line != "event: metadata\n" {
		t.Fatalf("the first stream: %d %q %v", first.StatusCode, line, err)
	}
	if resp := send("POST", "/threads/u/runs/stream", run, "Content-Type", "application/json"); resp.StatusCode != 429 {
		t.Errorf("a second stream with --max-streams 1: %d, want 429", resp.StatusCode)
	}
}

// TestServeCutsSlowClients: a client that sends its headers, or its body,
// too slowly (slowloris) is cut off after the read timeouts, while a
// stream that lasts longer than them goes on.
func TestServeCutsSlowClients(t *testing.T) {
	if d := defaultServeTimeouts; d.ReadHeader <= 0 || d.Read <= 0 || d.Read > 5*time.Minute || d.Idle <= 0 {
		t.Fatalf("serve's timeouts %+v: a request must be read within bounds", d)
	}
	a, err := demoagent.New("agent", 0)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{Agents: []server.AgentSpec{{Name: "agent", Agent: a}}, Saver: checkpoint.NewMemory(0),
		Heartbeat: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan int, 1)
	const read = 400 * time.Millisecond
	go func() {
		done <- serve(ctx, ln, srv, io.Discard, serveTimeouts{ReadHeader: 200 * time.Millisecond, Read: read, Idle: time.Second})
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	addr := ln.Addr().String()

	for name, partial := range map[string]string{
		"headers": "POST /threads HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n",
		"body":    "POST /threads HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"thread_id\":",
	} {
		t.Run(name, func(t *testing.T) {
			c, err := net.DialTimeout("tcp", addr, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := io.WriteString(c, partial); err != nil {
				t.Fatal(err)
			}
			// The test's own bound: well past the server's timeouts.
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			start := time.Now()
			_, err = io.Copy(io.Discard, c) // whatever the server answers, then its close
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("the connection was still open after %v: a slow %s holds it", time.Since(start).Round(time.Millisecond), name)
			}
		})
	}

	// A stream outlives the read timeout: heartbeats keep coming for many
	// times the timeout, then the run is cancelled and the stream ends.
	sctx, scancel := context.WithTimeout(t.Context(), time.Minute)
	defer scancel()
	req, _ := http.NewRequestWithContext(sctx, "POST", "http://"+addr+"/threads/s/runs/stream",
		strings.NewReader(`{"assistant_id":"agent","if_not_exists":"create","input":{"messages":[{"role":"user","content":"slow"}]}}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	start := time.Now()
	for time.Since(start) < 4*read {
		if _, err := br.ReadString('\n'); err != nil {
			t.Fatalf("the stream ended after %v, under the run: %v", time.Since(start).Round(time.Millisecond), err)
		}
	}
	loc := resp.Header.Get("Content-Location")
	creq, _ := http.NewRequestWithContext(sctx, "POST", "http://"+addr+loc+"/cancel?wait=1", nil)
	cresp, err := http.DefaultClient.Do(creq)
	if err != nil {
		t.Fatal(err)
	}
	cresp.Body.Close()
	if _, err := io.Copy(io.Discard, br); err != nil {
		t.Errorf("the stream did not end cleanly once its run was cancelled: %v", err)
	}
}
