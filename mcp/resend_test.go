package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/mcp/internal/mcptest"
	"github.com/deepagents-go/deepagents/tool"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// callLog reads the file the test server appends "call NAME" to for every
// tool call it receives, before the tool runs and so before any reply.
type callLog string

func newCallLog(t *testing.T) callLog { return callLog(filepath.Join(t.TempDir(), "calls")) }

func (l callLog) count(t *testing.T, name string) int {
	t.Helper()
	b, err := os.ReadFile(string(l))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		if line == "call "+name {
			n++
		}
	}
	return n
}

// short cuts s for a test's message: a reply may be megabytes long.
func short(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

// callTool runs the tool named name of m under ctx.
func callTool(t *testing.T, ctx context.Context, m *Manager, name, args string) tool.Result {
	t.Helper()
	res, err := toolNamed(t, m, name).Run(ctx, &tool.Env{}, json.RawMessage(args))
	if err != nil {
		t.Fatalf("%s: Go error %v", name, err)
	}
	return res
}

// A tool call is never sent twice. Against the test server as a
// subprocess, whose replies to the fault tools are not JSON, answer another
// id, have the wrong shape or pass 16 MiB, or never come because the server
// exits after reading the call: each call fails as an error result, the
// server received it exactly once, and the next call works (on a new
// process where the session broke).
func TestAToolCallIsNeverSentTwice(t *testing.T) {
	watchdog(t, 120*time.Second)
	for _, kind := range mcptest.FaultKinds {
		t.Run(kind, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			log := newCallLog(t)
			// A reply that answers another id is never matched: the call
			// timeout ends it. The others fail without waiting for it.
			timeout := 20 * time.Second
			if kind == mcptest.FaultWrongID {
				timeout = time.Second
			}
			m := NewManager([]Server{{Name: "faulty", Config: ServerConfig{Command: serverBin, Args: []string{"-faults", "-calls", string(log)}}}},
				Options{CallTimeout: timeout})
			m.Start(ctx)
			defer m.Close()
			if st := m.Statuses()[0]; st.Status != StatusConnected {
				t.Fatalf("status %+v", st)
			}
			res := callTool(t, ctx, m, "mcp__faulty__"+kind, `{}`)
			if !res.IsError {
				t.Errorf("a spoiled reply (%s) answered %s (error %v)", kind, short(res.Content), res.IsError)
			}
			if want := "not repeated"; kind == mcptest.FaultWrongID && !strings.Contains(res.Content, "no answer within 1s") ||
				kind != mcptest.FaultWrongID && !strings.Contains(res.Content, want) {
				t.Errorf("the error does not say the call was not repeated: %s", short(res.Content))
			}
			if n := log.count(t, kind); n != 1 {
				t.Errorf("the server received the %s call %d times, want 1 (result %q)", kind, n, short(res.Content))
			}
			if res := callTool(t, ctx, m, "mcp__faulty__echo", `{"text":"after"}`); res.IsError || res.Content != "after" {
				t.Errorf("the call after the fault answered %s (error %v)", short(res.Content), res.IsError)
			}
			if n := log.count(t, "echo"); n != 1 {
				t.Errorf("the server received the echo call %d times, want 1", n)
			}
		})
	}
}

// A connection that broke before the request was written is the one case a
// call is sent again: the server was killed between two calls, and the
// call reaches a new process exactly once.
func TestACallOnABrokenConnectionIsSentOnceOnANewOne(t *testing.T) {
	watchdog(t, 60*time.Second)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	log := newCallLog(t)
	m := NewManager([]Server{{Name: "fragile", Config: ServerConfig{Command: serverBin, Args: []string{"-calls", string(log)}}}}, Options{})
	m.Start(ctx)
	defer m.Close()
	c := m.servers[0]
	pid1 := callTool(t, ctx, m, "mcp__fragile__pid", `{}`).Content
	c.mu.Lock()
	proc, sess := c.cmd.Process, c.sess
	c.mu.Unlock()
	if err := proc.Kill(); err != nil {
		t.Fatal(err)
	}
	// Wait until the session has seen the server go, so the next call
	// finds the connection broken before it writes anything.
	gone := make(chan struct{})
	go func() { sess.Wait(); close(gone) }()
	select {
	case <-gone:
	case <-ctx.Done():
		t.Fatal("the session never noticed its server was killed")
	}
	res := callTool(t, ctx, m, "mcp__fragile__pid", `{}`)
	if res.IsError || res.Content == pid1 || c.reconnects != 1 {
		t.Fatalf("after a kill: %+v (first pid %s), reconnects %d", res, pid1, c.reconnects)
	}
	if n := log.count(t, "pid"); n != 2 {
		t.Errorf("the servers received %d pid calls, want 2 (one before the kill, one after)", n)
	}
}

// faultyHTTP is a streamable HTTP MCP server (the SDK's, with the test
// tools) behind a handler that counts the tool calls it receives and plays
// a fault on the calls of the fault tools: a reply that is not JSON, one of
// the wrong shape, one past 16 MiB, or a connection closed once the request
// is read.
type faultyHTTP struct {
	h     http.Handler
	mu    sync.Mutex
	calls map[string]int
}

func (f *faultyHTTP) count(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[name]
}

func (f *faultyHTTP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		f.h.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &req) == nil && req.Method == "tools/call" {
		f.mu.Lock()
		f.calls[req.Params.Name]++
		f.mu.Unlock()
		switch kind := strings.TrimPrefix(req.Params.Name, "http_"); kind {
		case mcptest.FaultDrop:
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		case mcptest.FaultGarbage, mcptest.FaultBadShape, mcptest.FaultHuge:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, mcptest.Spoiled(kind, req.ID))
			return
		}
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	f.h.ServeHTTP(w, r)
}

// Over streamable HTTP too, a call whose reply is not JSON, has the wrong
// shape or passes 16 MiB, or whose connection is closed after the server
// read it, fails as an error result and reached the server once.
func TestAToolCallIsNeverSentTwiceOverHTTP(t *testing.T) {
	watchdog(t, 60*time.Second)
	srv := mcptest.NewServer(mcptest.Options{})
	for _, kind := range []string{mcptest.FaultGarbage, mcptest.FaultBadShape, mcptest.FaultHuge, mcptest.FaultDrop} {
		sdk.AddTool(srv, &sdk.Tool{Name: "http_" + kind, Description: "Its reply is spoiled by the HTTP handler."},
			func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "a good answer"}}}, nil, nil
			})
	}
	f := &faultyHTTP{h: sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil), calls: map[string]int{}}
	hs := httptest.NewServer(f)
	defer hs.Close()
	defer hs.CloseClientConnections()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	m := NewManager([]Server{{Name: "web", Config: ServerConfig{URL: hs.URL}}}, Options{CallTimeout: 5 * time.Second})
	m.Start(ctx)
	defer m.Close()
	for _, kind := range []string{mcptest.FaultGarbage, mcptest.FaultBadShape, mcptest.FaultHuge, mcptest.FaultDrop} {
		name := "http_" + kind
		res := callTool(t, ctx, m, "mcp__web__"+name, `{}`)
		if !res.IsError || !strings.Contains(res.Content, "not repeated") {
			t.Errorf("%s answered %s (error %v)", kind, short(res.Content), res.IsError)
		}
		if n := f.count(name); n != 1 {
			t.Errorf("the server received the %s call %d times, want 1 (result %q)", kind, n, short(res.Content))
		}
		if res := callTool(t, ctx, m, "mcp__web__echo", `{"text":"after"}`); res.IsError || res.Content != "after" {
			t.Errorf("the call after %s answered %s (error %v)", kind, short(res.Content), res.IsError)
		}
	}
	if n := f.count("echo"); n != 4 {
		t.Errorf("the server received %d echo calls, want 4", n)
	}
}
