package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestCheckListen(t *testing.T) {
	for _, tc := range []struct {
		addr  string
		token bool
		ok    bool
	}{
		{"127.0.0.1:2024", false, true},
		{"localhost:0", false, true},
		{"[::1]:2024", false, true},
		{"0.0.0.0:2024", false, false},
		{":2024", false, false},
		{"10.1.2.3:80", false, false},
		{"0.0.0.0:2024", true, true},
		{"no-port", true, false},
	} {
		err := checkListen(tc.addr, tc.token)
		if (err == nil) != tc.ok {
			t.Errorf("checkListen(%q, token %v) = %v, want ok %v", tc.addr, tc.token, err, tc.ok)
		}
	}
}

func TestServeUsage(t *testing.T) {
	code, _, errs := runCLI(t, "serve", "--demo", "--addr", "0.0.0.0:0", "--db", "sqlite:"+filepath.Join(t.TempDir(), "s.db"))
	if code != 2 || !strings.Contains(errs, "--token-env") {
		t.Errorf("public address without a token: exit %d, %q", code, errs)
	}
	t.Setenv("DEEPAGENTS_SERVE_TEST_EMPTY", "")
	code, _, errs = runCLI(t, "serve", "--demo", "--token-env", "DEEPAGENTS_SERVE_TEST_EMPTY")
	if code != 2 || !strings.Contains(errs, "empty or not set") {
		t.Errorf("empty token variable: exit %d, %q", code, errs)
	}
	code, _, errs = runCLI(t, "serve", "extra")
	if code != 2 || !strings.Contains(errs, "takes no arguments") {
		t.Errorf("operand: exit %d, %q", code, errs)
	}
}

// startServe runs `deepagents serve` in a child process (this test binary)
// and returns its base URL once it listens.
func startServe(t *testing.T, args ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestBenchChildProcess$", "--", "serve"}, args...)...)
	cmd.Env = append(os.Environ(), "DEEPAGENTS_BENCH_CHILD=1", "DEEPAGENTS_SERVE_TEST_TOKEN=tok")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	lines := bufio.NewScanner(stderr)
	urlc := make(chan string, 1)
	go func() {
		for lines.Scan() {
			if _, rest, ok := strings.Cut(lines.Text(), "listening on "); ok {
				urlc <- strings.Fields(rest)[0]
				break
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	select {
	case u := <-urlc:
		return cmd, u
	case <-time.After(60 * time.Second):
		t.Fatal("the server did not start listening within a minute")
	}
	return nil, ""
}

// serveInProcess runs `deepagents serve` with args in this process until
// ctx ends, and returns its base URL once it listens and the channel its
// exit status arrives on.
func serveInProcess(t *testing.T, ctx context.Context, args ...string) (string, <-chan int) {
	t.Helper()
	pr, pw := io.Pipe()
	codec := make(chan int, 1)
	go func() {
		codec <- run(ctx, append([]string{"serve"}, args...), strings.NewReader(""), io.Discard, pw)
		pw.Close()
	}()
	urlc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if _, rest, ok := strings.Cut(sc.Text(), "listening on "); ok {
				urlc <- strings.Fields(rest)[0]
			}
		}
	}()
	select {
	case base := <-urlc:
		return base, codec
	case code := <-codec:
		t.Fatalf("serve exited with %d before listening", code)
	case <-time.After(time.Minute):
		t.Fatal("serve did not start listening within a minute")
	}
	return "", nil
}

func call(t *testing.T, method, url, body string, hdr ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer tok")
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

type sse struct {
	id    int64
	event string
	data  string
}

// readSSE reads up to max events (all when max is 0).
func readSSE(t *testing.T, r io.Reader, max int) []sse {
	t.Helper()
	var out []sse
	var cur sse
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.event != "" {
				out = append(out, cur)
				if max > 0 && len(out) == max {
					return out
				}
			}
			cur = sse{}
		case strings.HasPrefix(line, "event: "):
			cur.event = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			cur.data = line[len("data: "):]
		case strings.HasPrefix(line, "id: "):
			cur.id, _ = strconv.ParseInt(line[len("id: "):], 10, 64)
		}
	}
	return out
}

// TestServeKillRestartRejoin kills the server (SIGKILL) in the middle of a
// stream, starts a new one over the same database and rejoins the run with
// the last event id seen: the stream goes on from the next event, with no
// gap and no repeat, and its start matches what the first server sent.
func TestServeKillRestartRejoin(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server processes")
	}
	killRestartRejoin(t, "sqlite:"+filepath.Join(t.TempDir(), "state.db"))
}

// The same on PostgreSQL (DEEPAGENTS_TEST_POSTGRES; skipped without it).
func TestServeKillRestartRejoinPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server processes")
	}
	db, _ := schemaDB(t)
	killRestartRejoin(t, db)
}

func killRestartRejoin(t *testing.T, db string) {
	args := []string{"--demo", "--db", db, "--addr", "127.0.0.1:0", "--token-env", "DEEPAGENTS_SERVE_TEST_TOKEN"}
	first, url := startServe(t, args...)
	resp := call(t, "POST", url+"/threads", `{"thread_id":"t1"}`)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("create thread: %d", resp.StatusCode)
	}
	resp = call(t, "POST", url+"/threads/t1/runs/stream",
		`{"assistant_id":"agent","input":{"messages":[{"role":"user","content":"compare A and B"}]},"stream_mode":["values","updates","messages-tuple"],"stream_subgraphs":true}`)
	loc := resp.Header.Get("Content-Location")
	seen := readSSE(t, resp.Body, 6)
	if err := first.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	resp.Body.Close()
	if len(seen) != 6 || loc == "" {
		t.Fatalf("read %d events before the kill (Content-Location %q)", len(seen), loc)
	}
	for i, e := range seen {
		if e.id != int64(i+1) {
			t.Fatalf("event %d has id %d", i, e.id)
		}
	}

	_, url2 := startServe(t, args...)
	last := seen[len(seen)-1].id
	resp = call(t, "GET", url2+loc+"/stream", "", "Last-Event-ID", fmt.Sprint(last))
	rest := readSSE(t, resp.Body, 0)
	resp.Body.Close()
	for i, e := range rest {
		if e.id != last+int64(i)+1 {
			t.Fatalf("rejoined event %d has id %d, want %d", i, e.id, last+int64(i)+1)
		}
	}
	resp = call(t, "GET", url2+loc+"/stream", "", "Last-Event-ID", "-1")
	again := readSSE(t, resp.Body, 0)
	resp.Body.Close()
	if len(again) != len(seen)+len(rest) {
		t.Fatalf("a full replay has %d events; the two streams had %d + %d", len(again), len(seen), len(rest))
	}
	for i, e := range seen {
		if again[i].event != e.event || again[i].data != e.data {
			t.Fatalf("replayed event %d = %s %s, first sent as %s %s", i+1, again[i].event, again[i].data, e.event, e.data)
		}
	}
	t.Logf("%d events before the kill, %d after rejoining", len(seen), len(rest))
	// The new server reports the cut-off run as failed, so that clients
	// stop waiting for it. (Every model call of the demo takes 20 ms, so
	// the run cannot have reached its approval when the sixth event came.)
	resp = call(t, "GET", url2+loc, "")
	var run struct {
		Status string `json:"status"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&run)
	resp.Body.Close()
	if run.Status != "error" {
		t.Errorf("the run after the restart: status %q", run.Status)
	}
}

// TestServeAssembledAgent serves the agent built as for `run` (a model on
// a test OpenAI server, write_file gated): a run stops at the approval, a
// resume finishes it, and cancelling the command's context stops the
// server with exit status 0. The thread database, which the server's
// event tables share, has no file beside it but SQLite's own.
func TestServeAssembledAgent(t *testing.T) {
	srv := gatedServer(t)
	runEnv(t, srv)
	// OTEL_* variables make serve trace its runs, as they do run.
	sink := collectTraces(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	dbPath := filepath.Join(t.TempDir(), "s.db")
	base, codec := serveInProcess(t, ctx, "--model", "openai:gpt-test", "--interrupt-on", "write_file", "--addr", "127.0.0.1:0",
		"--db", "sqlite:"+dbPath)
	post := func(path, body string) map[string]json.RawMessage {
		resp := call(t, "POST", base+path, body)
		defer resp.Body.Close()
		var out map[string]json.RawMessage
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 {
			t.Fatalf("POST %s: %d %v", path, resp.StatusCode, err)
		}
		return out
	}
	res := post("/threads/x/runs/wait", `{"assistant_id":"agent","if_not_exists":"create","input":{"messages":[{"role":"user","content":"write it"}]}}`)
	if !strings.Contains(string(res["__interrupt__"]), `"write_file"`) {
		t.Fatalf("the run did not stop at the approval: %v", res)
	}
	side, _ := filepath.Glob(dbPath + "?*")
	for _, p := range side {
		if p != dbPath+"-wal" && p != dbPath+"-shm" {
			t.Errorf("a file beside the thread database: %s", p)
		}
	}
	res = post("/threads/x/runs/wait", `{"assistant_id":"agent","command":{"resume":[{"type":"approve","id":"c1"}]}}`)
	if !strings.Contains(string(res["messages"]), `"done"`) || !strings.Contains(string(res["files"]), `"/a.md"`) {
		t.Fatalf("after the approval: %v", res)
	}
	cancel()
	select {
	case code := <-codec:
		if code != 0 {
			t.Errorf("serve exited with %d after its context ended", code)
		}
	case <-time.After(time.Minute):
		t.Fatal("serve did not stop within a minute of its context ending")
	}
	// Both runs of thread x were traced (flushed when serve stopped), with
	// the thread as the conversation id.
	sink.mu.Lock()
	defer sink.mu.Unlock()
	runs := 0
	for _, sp := range sink.spans {
		if got := spanAttr(sp, "gen_ai.conversation.id"); got != "x" {
			t.Errorf("span %s: conversation id %q, want the thread x", sp.GetName(), got)
		}
		if sp.GetName() == "invoke_agent parent" || strings.HasPrefix(sp.GetName(), "invoke_agent ") && len(sp.GetParentSpanId()) == 0 {
			runs++
		}
	}
	if runs != 2 {
		t.Errorf("%d top-level invoke_agent spans, want one per run (2) among %d spans", runs, len(sink.spans))
	}
}
