package temporal_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// freeAddr is a loopback address no one listens on, for a server process.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// post sends body to the server at addr and decodes its JSON answer.
func post(t *testing.T, addr, path string, body any) (int, map[string]any) {
	t.Helper()
	b, _ := json.Marshal(body)
	c := &http.Client{Timeout: 2 * time.Minute}
	resp, err := c.Post("http://"+addr+path, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var v map[string]any
	_ = json.Unmarshal(raw, &v)
	if v == nil {
		v = map[string]any{"raw": string(raw)}
	}
	return resp.StatusCode, v
}

// "deepagents-temporal serve" runs its runs on a worker process of the
// binary: a run through the HTTP API waits for an approval, is approved
// through the API, and its thread holds the report the worker wrote.
func TestServeOnADevServer(t *testing.T) {
	address, namespace := devServer(t)
	bin := buildBinary(t)
	db := filepath.Join(t.TempDir(), "threads.db")
	conn := []string{"--namespace", namespace, "--task-queue", "served", "--db", db, "--demo"}
	startWorker(t, bin, nil, append([]string{"--address", address}, conn...)...)

	listen := freeAddr(t)
	cmd := exec.Command(bin, append([]string{"serve", "--temporal", address, "--listen", listen}, conn...)...)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	dieWithTest(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		if t.Failed() {
			t.Logf("serve stderr:\n%s", stderr)
		}
	})
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		resp, err := http.Get("http://" + listen + "/ok")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not answer within a minute: %v", err)
		}
	}

	input := map[string]any{"messages": []any{map[string]any{"role": "user", "content": "write a report"}}}
	st, v := post(t, listen, "/threads/R/runs/wait", map[string]any{"assistant_id": "demo", "if_not_exists": "create", "input": input})
	raw, _ := json.Marshal(v)
	if st != 200 || !strings.Contains(string(raw), "__interrupt__") || !strings.Contains(string(raw), "write_file") {
		t.Fatalf("the run: %d %s; want it waiting for the write", st, raw)
	}
	st, v = post(t, listen, "/threads/R/runs/wait", map[string]any{"assistant_id": "demo",
		"command": map[string]any{"resume": map[string]any{"decisions": []any{map[string]any{"type": "approve"}}}}})
	raw, _ = json.Marshal(v)
	if st != 200 || strings.Contains(string(raw), "__interrupt__") {
		t.Fatalf("the approval: %d %s; want the run finished", st, raw)
	}
	if files := threadFiles(t, db, "R"); !strings.HasPrefix(files["/report.md"], "# Report") {
		t.Fatalf("the thread's files: %q; want the worker's /report.md", files)
	}
}
