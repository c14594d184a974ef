package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/mcp/internal/mcptest"
	"github.com/deepagents-go/deepagents/tool"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// serverBin is the test server built once for the whole package.
var serverBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mcptest")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	serverBin = filepath.Join(dir, "server")
	out, err := exec.Command("go", "build", "-o", serverBin, "./testdata/server").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building the test server: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// inMemory returns a Transport option that connects each server to a
// fresh in-memory test server.
func inMemory(t *testing.T, o mcptest.Options) func(Server) (sdk.Transport, error) {
	return func(Server) (sdk.Transport, error) {
		ct, st := sdk.NewInMemoryTransports()
		ss, err := mcptest.NewServer(o).Connect(context.Background(), st, nil)
		if err != nil {
			return nil, err
		}
		t.Cleanup(func() { ss.Close() })
		return ct, nil
	}
}

// watchdog ends the test binary with every goroutine's stack when the test
// (its cleanups included) is still running after d, so a hang shows at once
// instead of after go test's ten minutes. Every test that talks to a server
// has one, through started or directly.
func watchdog(t *testing.T, d time.Duration) {
	t.Helper()
	name := t.Name()
	timer := time.AfterFunc(d, func() {
		debug.SetTraceback("all")
		panic(fmt.Sprintf("%s still running after %s", name, d))
	})
	t.Cleanup(func() { timer.Stop() })
}

func started(t *testing.T, servers []Server, opts Options) *Manager {
	t.Helper()
	watchdog(t, 60*time.Second)
	m := NewManager(servers, opts)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	m.Start(ctx)
	t.Cleanup(func() { m.Close() })
	return m
}

func toolNamed(t *testing.T, m *Manager, name string) *Tool {
	t.Helper()
	for _, tl := range m.Tools() {
		if tl.Spec().Name == name {
			return tl
		}
	}
	t.Fatalf("no tool %s among %v", name, names(m.Tools()))
	return nil
}

func names(ts []*Tool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Spec().Name)
	}
	return out
}

func run(t *testing.T, tl tool.Tool, args string) tool.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	res, err := tl.Run(ctx, &tool.Env{Capabilities: llm.Capabilities{Images: true}}, json.RawMessage(args))
	if err != nil {
		t.Fatalf("%s: Go error %v", tl.Spec().Name, err)
	}
	return res
}

// Every kind of content a server answers becomes the tool result the brief
// describes, against a real SDK server in memory.
func TestResultsFromARealServer(t *testing.T) {
	m := started(t, []Server{{Name: "test"}}, Options{Transport: inMemory(t, mcptest.Options{})})
	cases := []struct {
		tool, args string
		want       string
		isError    bool
		image      bool
		structured string
	}{
		{"mcp__test__echo", `{"text":"hello there"}`, "hello there", false, false, ""},
		{"mcp__test__lines", `{}`, "first\nsecond", false, false, ""},
		{"mcp__test__fail", ``, "boom: the disk is full", true, false, ""},
		{"mcp__test__picture", `{}`, "a tiny picture", false, true, ""},
		{"mcp__test__link", `{}`, "[resource] file:///srv/report.txt", false, false, ""},
		{"mcp__test__stats", `{}`, `{"count":3,"ok":true}`, false, false, `{"count":3,"ok":true}`},
	}
	for _, tc := range cases {
		t.Run(tc.tool, func(t *testing.T) {
			res := run(t, toolNamed(t, m, tc.tool), tc.args)
			if res.Content != tc.want || res.IsError != tc.isError {
				t.Errorf("got %q (error %v), want %q (error %v)", res.Content, res.IsError, tc.want, tc.isError)
			}
			if string(res.Structured) != tc.structured {
				t.Errorf("structured %s, want %s", res.Structured, tc.structured)
			}
			hasImage := slices.ContainsFunc(res.Parts, func(p llm.Part) bool {
				return p.Type == llm.PartImage && p.Image.MediaType == "image/png" && string(p.Image.Data) == string(mcptest.PNG)
			})
			if hasImage != tc.image {
				t.Errorf("image part present %v, want %v (parts %+v)", hasImage, tc.image, res.Parts)
			}
		})
	}
	// The schema is the server's own, the description too.
	echo := toolNamed(t, m, "mcp__test__echo").Spec()
	if echo.Description != "Echoes the text back." || !strings.Contains(string(echo.Parameters), `"the text to echo (<= 1000 characters)"`) {
		t.Errorf("echo spec %+v", echo)
	}
	// A model that reads no images gets a line naming the image.
	res, err := toolNamed(t, m, "mcp__test__picture").Run(t.Context(), &tool.Env{}, nil)
	if err != nil || len(res.Parts) != 0 || res.Content != "a tiny picture\n[image] image/png, 11 bytes (not shown: this model does not read images)" {
		t.Errorf("picture for a text-only model: %+v, %v", res, err)
	}
	// Arguments that are not an object are refused before any call.
	if res := run(t, toolNamed(t, m, "mcp__test__echo"), `[1,2]`); !res.IsError || !strings.Contains(res.Content, "one JSON object") {
		t.Errorf("array arguments: %+v", res)
	}
	// A server's error response (unknown argument type) is an error result.
	if res := run(t, toolNamed(t, m, "mcp__test__echo"), `{"text":5}`); !res.IsError {
		t.Errorf("bad argument type answered %+v", res)
	}
}

// tools/list comes in pages of 3: every tool is still found.
func TestToolListPagination(t *testing.T) {
	m := started(t, []Server{{Name: "paged"}}, Options{Transport: inMemory(t, mcptest.Options{PageSize: 3, Extra: 10})})
	got := names(m.Tools())
	if len(got) != 20 {
		t.Fatalf("%d tools: %v", len(got), got)
	}
	for _, want := range []string{"mcp__paged__echo", "mcp__paged__tool_000", "mcp__paged__tool_009", "mcp__paged__grow"} {
		if !slices.Contains(got, want) {
			t.Errorf("missing %s in %v", want, got)
		}
	}
}

// allowedTools and disabledTools filter what is bound.
func TestAllowedAndDisabledTools(t *testing.T) {
	m := started(t, []Server{
		{Name: "a", Config: ServerConfig{Command: "x", AllowedTools: []string{"echo", "fail"}}},
		{Name: "d", Config: ServerConfig{Command: "x", DisabledTools: []string{"echo"}}},
	}, Options{Transport: inMemory(t, mcptest.Options{})})
	got := names(m.Tools())
	if !slices.Contains(got, "mcp__a__echo") || !slices.Contains(got, "mcp__a__fail") || slices.Contains(got, "mcp__a__lines") {
		t.Errorf("allowedTools not applied: %v", got)
	}
	if slices.Contains(got, "mcp__d__echo") || !slices.Contains(got, "mcp__d__lines") {
		t.Errorf("disabledTools not applied: %v", got)
	}
}

// A server that adds a tool says so; the list is read again and the new
// tool can be called.
func TestToolListChangedRelists(t *testing.T) {
	changed := make(chan string, 4)
	m := started(t, []Server{{Name: "live"}}, Options{
		Transport:     inMemory(t, mcptest.Options{}),
		OnListChanged: func(s string) { changed <- s },
	})
	if slices.Contains(names(m.Tools()), "mcp__live__grown") {
		t.Fatal("grown exists before grow")
	}
	if res := run(t, toolNamed(t, m, "mcp__live__grow"), `{}`); res.Content != "added" {
		t.Fatalf("grow: %+v", res)
	}
	select {
	case s := <-changed:
		if s != "live" {
			t.Fatalf("list changed for %q", s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no tools/list_changed handled within 10 s")
	}
	if res := run(t, toolNamed(t, m, "mcp__live__grown"), `{}`); res.Content != "grown here" {
		t.Errorf("grown: %+v", res)
	}
}

// A stdio server runs as a subprocess; Close ends it.
func TestStdioSubprocess(t *testing.T) {
	m := started(t, []Server{{Name: "proc", Config: ServerConfig{Command: serverBin, Args: []string{"-page", "4"}}}}, Options{})
	if st := m.Statuses(); len(st) != 1 || st[0].Status != StatusConnected || len(st[0].Tools) != 10 || st[0].Tokens <= 0 {
		t.Fatalf("status %+v", st)
	}
	if res := run(t, toolNamed(t, m, "mcp__proc__echo"), `{"text":"over stdio"}`); res.Content != "over stdio" {
		t.Fatalf("echo: %+v", res)
	}
	cmd := m.servers[0].cmd
	if err := m.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if cmd.ProcessState == nil {
		t.Fatal("the server process was not waited for by Close")
	}
	if res := run(t, toolNamed(t, m, "mcp__proc__echo"), `{"text":"x"}`); !res.IsError || !strings.Contains(res.Content, "closed") {
		t.Errorf("a call after Close answered %+v", res)
	}
}

// A server killed mid-call fails that call, which is not repeated (it may
// have run); the next call finds the connection broken and reconnects once,
// and with no way to start the server again it is marked failed and its
// tools answer an error at once. The whole test has 10 s.
func TestKilledServerReconnectsOnceThenFails(t *testing.T) {
	watchdog(t, 30*time.Second)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "server")
	data, err := os.ReadFile(serverBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	m := NewManager([]Server{{Name: "fragile", Config: ServerConfig{Command: bin}}}, Options{Stderr: pw})
	m.Start(ctx)
	defer m.Close()
	c := m.servers[0]
	echo := toolNamed(t, m, "mcp__fragile__echo") // bound before the failure

	done := make(chan tool.Result, 1)
	go func() {
		res, _ := toolNamed(t, m, "mcp__fragile__hang").Run(ctx, &tool.Env{}, nil)
		done <- res
	}()
	select {
	case l := <-lines:
		if l != "hang started" {
			t.Fatalf("server said %q", l)
		}
	case <-ctx.Done():
		t.Fatal("the hang call never reached the server")
	}
	if err := os.Remove(bin); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	proc := c.cmd.Process
	c.mu.Unlock()
	if err := proc.Kill(); err != nil {
		t.Fatal(err)
	}
	var res tool.Result
	select {
	case res = <-done:
	case <-ctx.Done():
		t.Fatal("the call to a killed server hung")
	}
	if !res.IsError || !strings.Contains(res.Content, "may have run on the server, so it was not repeated") {
		t.Fatalf("mid-call kill answered %+v", res)
	}
	if c.reconnects != 0 {
		t.Errorf("reconnects %d after the mid-call kill, want 0", c.reconnects)
	}
	next, err := echo.Run(ctx, &tool.Env{}, json.RawMessage(`{"text":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	if !next.IsError || !strings.Contains(next.Content, "MCP server fragile is unavailable") || !strings.Contains(next.Content, "reconnecting failed") {
		t.Fatalf("the call after the kill answered %+v", next)
	}
	later, err := echo.Run(ctx, &tool.Env{}, json.RawMessage(`{"text":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	if !later.IsError || !strings.Contains(later.Content, "unavailable") {
		t.Errorf("a call after the failure answered %+v", later)
	}
	st := m.Statuses()[0]
	if st.Status != StatusFailed || !strings.Contains(st.Error, "reconnecting failed") {
		t.Errorf("status %+v", st)
	}
}

// A server that cannot start is failed, with the reason, and has no tools.
func TestServerThatCannotStart(t *testing.T) {
	m := started(t, []Server{{Name: "ghost", Config: ServerConfig{Command: filepath.Join(t.TempDir(), "missing")}}}, Options{})
	st := m.Statuses()
	if len(st) != 1 || st[0].Status != StatusFailed || !strings.Contains(st[0].Error, "cannot connect") || len(m.Tools()) != 0 {
		t.Errorf("status %+v, tools %v", st, names(m.Tools()))
	}
}

// A call with no answer within the call timeout is an error result; the
// server stays usable.
func TestCallTimeout(t *testing.T) {
	m := started(t, []Server{{Name: "slow"}}, Options{Transport: inMemory(t, mcptest.Options{}), CallTimeout: 300 * time.Millisecond})
	res := run(t, toolNamed(t, m, "mcp__slow__hang"), `{}`)
	if !res.IsError || !strings.Contains(res.Content, "no answer within 300ms") {
		t.Fatalf("hang answered %+v", res)
	}
	if res := run(t, toolNamed(t, m, "mcp__slow__echo"), `{"text":"still here"}`); res.Content != "still here" {
		t.Errorf("after a timeout: %+v", res)
	}
}

// Streamable HTTP: the configured headers (with ${VAR} expanded) reach
// the server on every request.
func TestStreamableHTTPWithHeaders(t *testing.T) {
	srv := mcptest.NewServer(mcptest.Options{})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	var refused int
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret" {
			refused++
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer hs.Close()
	env := map[string]string{"TOKEN": "s3cret"}
	m := started(t, []Server{{Name: "web", Config: ServerConfig{Type: "streamable_http", URL: hs.URL, Headers: map[string]string{"Authorization": "Bearer ${TOKEN}"}}}},
		Options{Getenv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	if res := run(t, toolNamed(t, m, "mcp__web__echo"), `{"text":"over http"}`); res.Content != "over http" {
		t.Fatalf("echo: %+v", res)
	}
	if refused != 0 {
		t.Errorf("%d requests came without the header", refused)
	}
	m.Close()

	// Without the variable the server is not started, and the error names
	// the server and the variable.
	m2 := started(t, []Server{{Name: "web", Config: ServerConfig{URL: hs.URL, Headers: map[string]string{"Authorization": "Bearer ${TOKEN}"}}}},
		Options{Getenv: func(string) (string, bool) { return "", false }})
	st := m2.Statuses()[0]
	if st.Status != StatusFailed || !strings.Contains(st.Error, `MCP server "web"`) || !strings.Contains(st.Error, "TOKEN") {
		t.Errorf("status %+v", st)
	}
}

func TestToolName(t *testing.T) {
	long := strings.Repeat("x", 70)
	cases := []struct{ server, tool, want string }{
		{"github", "create_issue", "mcp__github__create_issue"},
		{"my.server", "do it/now", "mcp__my_server__do_it_now"},
	}
	for _, tc := range cases {
		if got := ToolName(tc.server, tc.tool); got != tc.want {
			t.Errorf("ToolName(%q, %q) = %q, want %q", tc.server, tc.tool, got, tc.want)
		}
	}
	a, b := ToolName("srv", long+"a"), ToolName("srv", long+"b")
	if len(a) != 64 || len(b) != 64 || a == b || !strings.HasPrefix(a, "mcp__srv__xxxx") {
		t.Errorf("long names %q (%d), %q (%d)", a, len(a), b, len(b))
	}
	if a[55] != '_' {
		t.Errorf("no hash suffix in %q", a)
	}
}

// An SSE server (the older HTTP transport) works too.
func TestSSEServer(t *testing.T) {
	srv := mcptest.NewServer(mcptest.Options{})
	hs := httptest.NewServer(sdk.NewSSEHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	defer hs.Close()
	m := started(t, []Server{{Name: "old", Config: ServerConfig{Type: "sse", URL: hs.URL}}}, Options{})
	if res := run(t, toolNamed(t, m, "mcp__old__echo"), `{"text":"over sse"}`); res.Content != "over sse" {
		t.Fatalf("echo: %+v", res)
	}
	m.Close()
}

// A server that never answers the handshake fails after the connect
// timeout, with a reason that says so.
func TestConnectTimeout(t *testing.T) {
	release := make(chan struct{})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer hs.Close()
	defer close(release)
	m := started(t, []Server{{Name: "mute", Config: ServerConfig{URL: hs.URL}}}, Options{ConnectTimeout: 300 * time.Millisecond})
	st := m.Statuses()[0]
	if st.Status != StatusFailed || !strings.Contains(st.Error, "no answer within 300ms (the connect timeout)") {
		t.Errorf("status %+v", st)
	}
}

// swappable serves with whichever handler is current.
type swappable struct {
	mu sync.Mutex
	h  http.Handler
}

func (s *swappable) set(h http.Handler) { s.mu.Lock(); s.h = h; s.mu.Unlock() }
func (s *swappable) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	h := s.h
	s.mu.Unlock()
	h.ServeHTTP(w, r)
}

func streamable() http.Handler {
	srv := mcptest.NewServer(mcptest.Options{})
	return sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
}

// Over HTTP: a server that forgot the session (it restarted) is
// reconnected once and the call repeated; a server that is gone fails, and
// its tools answer at once; a server's own error answer (an unknown tool)
// is an error result that leaves the session alone.
func TestHTTPReconnectAndFailure(t *testing.T) {
	sw := &swappable{h: streamable()}
	hs := httptest.NewServer(sw)
	defer hs.Close()
	m := started(t, []Server{{Name: "web", Config: ServerConfig{URL: hs.URL}}}, Options{})
	c := m.servers[0]
	echo := toolNamed(t, m, "mcp__web__echo")

	ghost := &Tool{c: c, remote: "nosuch", spec: echo.spec}
	if res := run(t, ghost, `{}`); !res.IsError || !strings.Contains(res.Content, `unknown tool "nosuch"`) || c.reconnects != 0 {
		t.Errorf("unknown tool: %+v, reconnects %d", res, c.reconnects)
	}

	sw.set(streamable()) // a restarted server knows no sessions
	if res := run(t, echo, `{"text":"again"}`); res.Content != "again" || c.reconnects != 1 {
		t.Errorf("after the restart: %+v, reconnects %d", res, c.reconnects)
	}

	hs.CloseClientConnections()
	hs.Close()
	res := run(t, echo, `{"text":"x"}`)
	if !res.IsError || !strings.Contains(res.Content, "MCP server web is unavailable") || !strings.Contains(res.Content, "connection refused") {
		t.Errorf("server gone: %+v", res)
	}
	if res := run(t, echo, `{"text":"x"}`); !res.IsError || !strings.Contains(res.Content, "unavailable") || c.reconnects != 1 {
		t.Errorf("the next call: %+v, reconnects %d", res, c.reconnects)
	}
}

// Content kinds the test server does not send, converted directly.
func TestConvertResult(t *testing.T) {
	big := make([]byte, MaxImageBytes+1)
	cases := []struct {
		name string
		res  *sdk.CallToolResult
		want string
	}{
		{"audio", &sdk.CallToolResult{Content: []sdk.Content{&sdk.AudioContent{MIMEType: "audio/wav", Data: []byte{1, 2}}}}, "[audio] audio/wav, 2 bytes (not shown)"},
		{"embedded text", &sdk.CallToolResult{Content: []sdk.Content{&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///a", Text: "inside"}}}}, "inside"},
		{"embedded blob", &sdk.CallToolResult{Content: []sdk.Content{&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///b", Blob: []byte{1}}}}}, "[resource] file:///b"},
		{"huge image", &sdk.CallToolResult{Content: []sdk.Content{&sdk.ImageContent{MIMEType: "image/png", Data: big}}}, "[image] image/png, 5242881 bytes (not shown: larger than 5242880 bytes)"},
		{"nothing", &sdk.CallToolResult{}, "(the tool returned no content)"},
		{"text and structured", &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "t"}}, StructuredContent: map[string]int{"n": 1}}, "t"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := convertResult(tc.res, true)
			if got.Content != tc.want || len(got.Parts) != 0 {
				t.Errorf("got %q (%d parts), want %q", got.Content, len(got.Parts), tc.want)
			}
		})
	}
}

// A stdio server that dies at start is failed with the end of what it
// wrote on stderr, so the user sees why.
func TestStdioServerThatDiesAtStart(t *testing.T) {
	m := started(t, []Server{{Name: "dies", Config: ServerConfig{Command: serverBin, Args: []string{"-fail", "missing API token FOO"}}}}, Options{})
	st := m.Statuses()[0]
	if st.Status != StatusFailed || !strings.Contains(st.Error, "its stderr ends with: missing API token FOO") {
		t.Errorf("status %+v", st)
	}
}

func TestTailBufferKeepsTheEnd(t *testing.T) {
	b := &tailBuffer{max: 8}
	for _, w := range []string{"abc", "defgh", "ijklmnop", "qr"} {
		b.Write([]byte(w))
	}
	if got := b.String(); got != "klmnopqr" {
		t.Errorf("tail %q, want %q", got, "klmnopqr")
	}
}
