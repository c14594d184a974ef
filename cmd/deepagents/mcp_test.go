package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ot "github.com/deepagents-go/deepagents/providers/openai/openaitest"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpHTTPServer is a real MCP server (the official SDK) over streamable
// HTTP with one tool, shout, and a count of the sessions opened.
func mcpHTTPServer(t *testing.T) *httptest.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: "cli-test", Version: "1"}, nil)
	type in struct {
		Text string `json:"text"`
	}
	sdk.AddTool(srv, &sdk.Tool{Name: "shout", Description: "Answers the text in capitals."},
		func(_ context.Context, _ *sdk.CallToolRequest, a in) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strings.ToUpper(a.Text)}}}, nil, nil
		})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	return hs
}

func writeMCPFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

type listed struct {
	Servers []struct {
		Name, Source, Scope, Status, Error string
		Tools                              []string
		Tokens                             int
	}
}

func mcpList(t *testing.T, args ...string) listed {
	t.Helper()
	code, out, errs := runCLI(t, append([]string{"mcp", "list", "--output", "json"}, args...)...)
	if code != 0 {
		t.Fatalf("mcp list: exit %d: %s", code, errs)
	}
	var l listed
	if err := json.Unmarshal([]byte(out), &l); err != nil {
		t.Fatalf("mcp list output: %v\n%s", err, out)
	}
	return l
}

// A project's servers start only once trusted; the approval is stored for
// their config as it is and an edit needs a new one. The user's servers need
// no trust.
func TestMCPListAndProjectTrust(t *testing.T) {
	project, home := runEnv(t, nil)
	hs := mcpHTTPServer(t)
	writeMCPFile(t, filepath.Join(project, ".mcp.json"), `{"mcpServers":{"proj":{"type":"http","url":"`+hs.URL+`"}}}`)
	writeMCPFile(t, filepath.Join(home, ".deepagents", ".mcp.json"), `{"mcpServers":{"mine":{"url":"`+hs.URL+`"},"broken":{"command":"`+filepath.Join(home, "nothing-here")+`"}}}`)

	l := mcpList(t)
	byName := map[string]int{}
	for i, s := range l.Servers {
		byName[s.Name] = i
	}
	if len(l.Servers) != 3 {
		t.Fatalf("servers %+v", l.Servers)
	}
	if s := l.Servers[byName["proj"]]; s.Status != "untrusted" || s.Scope != "project" || len(s.Tools) != 0 {
		t.Errorf("untrusted project server listed as %+v", s)
	}
	if s := l.Servers[byName["mine"]]; s.Status != "connected" || s.Scope != "user" || len(s.Tools) != 1 || s.Tools[0] != "mcp__mine__shout" || s.Tokens <= 0 {
		t.Errorf("user server listed as %+v", s)
	}
	if s := l.Servers[byName["broken"]]; s.Status != "failed" || !strings.Contains(s.Error, "cannot connect") {
		t.Errorf("broken server listed as %+v", s)
	}

	if s := mcpList(t, "--trust-project-mcp").Servers[byName["proj"]]; s.Status != "connected" {
		t.Errorf("with --trust-project-mcp: %+v", s)
	}
	if s := mcpList(t).Servers[byName["proj"]]; s.Status != "connected" {
		t.Errorf("the stored approval was not used: %+v", s)
	}
	writeMCPFile(t, filepath.Join(project, ".mcp.json"), `{"mcpServers":{"proj":{"type":"http","url":"`+hs.URL+`","headers":{"X":"y"}}}}`)
	if s := mcpList(t).Servers[byName["proj"]]; s.Status != "untrusted" {
		t.Errorf("an edited project config kept its approval: %+v", s)
	}
	if l := mcpList(t, "--no-mcp"); len(l.Servers) != 0 {
		t.Errorf("--no-mcp listed %+v", l.Servers)
	}

	code, out, _ := runCLI(t, "mcp", "list")
	if code != 0 || !strings.Contains(out, "SERVER") || !strings.Contains(out, "untrusted") || !strings.Contains(out, "mcp") {
		t.Errorf("text listing (exit %d):\n%s", code, out)
	}
	// It says how to trust them.
	if want := "The project's servers proj are not started: you have not trusted them. To start them, run with --trust-project-mcp"; !strings.Contains(out, want) ||
		!strings.Contains(out, "answer y") {
		t.Errorf("the listing does not say how to trust the project's servers; want %q in:\n%s", want, out)
	}

	// run warns on stderr, naming the skipped server.
	var errb bytes.Buffer
	start, untrusted, err := loadMCP(mcpFlags{}, project, home, nil, &errb)
	if err != nil || len(untrusted) != 1 || untrusted[0].Name != "proj" || len(start) != 2 {
		t.Fatalf("loadMCP: %v, start %d, untrusted %+v", err, len(start), untrusted)
	}
	if w := errb.String(); !strings.Contains(w, "proj (") || !strings.Contains(w, "--trust-project-mcp") {
		t.Errorf("warning %q", w)
	}
}

// `run` binds the servers' tools: the model calls one and reads its answer.
func TestRunCallsAnMCPTool(t *testing.T) {
	model := ot.NewServer(t, func(r *ot.Request) ot.Reply {
		if res, ok := r.ToolResult("call_m1"); ok {
			var text string
			_ = json.Unmarshal(res.Content, &text)
			return ot.Text("the server said " + text)
		}
		if !r.HasTool("mcp__web__shout") {
			return ot.Text("no mcp tool")
		}
		return ot.Tools(ot.Call{ID: "call_m1", Name: "mcp__web__shout", Args: `{"text":"hello"}`})
	})
	project, _ := runEnv(t, model)
	hs := mcpHTTPServer(t)
	cfg := filepath.Join(project, "servers.json")
	writeMCPFile(t, cfg, `{"mcpServers":{"web":{"type":"http","url":"`+hs.URL+`"}}}`)
	code, out, errs := runCLI(t, "run", "--model", "openai:gpt-4.1", "--mcp-config", cfg, "-p", "shout hello")
	if code != 0 || strings.TrimSpace(out) != "the server said HELLO" {
		t.Errorf("exit %d, out %q, stderr %s", code, out, errs)
	}
}

// On a terminal the user is asked, with what each project server runs; a
// yes starts them and is remembered, a no skips them.
func TestMCPTrustAskedOnTheTerminal(t *testing.T) {
	project, home := runEnv(t, nil)
	writeMCPFile(t, filepath.Join(project, ".deepagents", ".mcp.json"), `{"mcpServers":{"tool":{"command":"./bin/tool","args":["--fast"]}}}`)
	var asked []string
	no := func(q string) bool { asked = append(asked, q); return false }
	var errb bytes.Buffer
	start, untrusted, err := loadMCP(mcpFlags{}, project, home, no, &errb)
	if err != nil || len(start) != 0 || len(untrusted) != 1 {
		t.Fatalf("after no: %v, %d started, %d untrusted", err, len(start), len(untrusted))
	}
	if len(asked) != 1 || !strings.Contains(asked[0], "tool: runs ./bin/tool --fast") || !strings.HasSuffix(asked[0], "[y/N] ") {
		t.Errorf("question %q", asked)
	}
	yes := func(string) bool { return true }
	if start, _, err := loadMCP(mcpFlags{}, project, home, yes, &errb); err != nil || len(start) != 1 {
		t.Fatalf("after yes: %v, %d started", err, len(start))
	}
	never := func(string) bool { t.Error("asked again after a remembered yes"); return false }
	if start, _, err := loadMCP(mcpFlags{}, project, home, never, &errb); err != nil || len(start) != 1 {
		t.Errorf("remembered: %v, %d started", err, len(start))
	}
}

// --interrupt-on may name an MCP tool that is found through mcp_search:
// it is accepted (not refused as unknown), and once found and called, the
// call waits for approval instead of running.
func TestInterruptOnAToolBehindMCPSearch(t *testing.T) {
	calls := 0
	srv := sdk.NewServer(&sdk.Implementation{Name: "cli-test", Version: "1"}, nil)
	type in struct {
		Text string `json:"text"`
	}
	// A description long enough that the server's tools take more than a
	// tenth of the window below: they are found through mcp_search.
	long := strings.Repeat("Shouts the text back in capital letters, loudly. ", 600)
	sdk.AddTool(srv, &sdk.Tool{Name: "shout", Description: long},
		func(_ context.Context, _ *sdk.CallToolRequest, a in) (*sdk.CallToolResult, any, error) {
			calls++
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strings.ToUpper(a.Text)}}}, nil, nil
		})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)

	sawSearch := false
	model := ot.NewServer(t, func(r *ot.Request) ot.Reply {
		if _, ok := r.ToolResult("call_m1"); ok {
			return ot.Text("it ran without approval")
		}
		if r.HasTool("mcp__web__shout") {
			return ot.Tools(ot.Call{ID: "call_m1", Name: "mcp__web__shout", Args: `{"text":"hello"}`})
		}
		if r.HasTool("mcp_search") {
			sawSearch = true
			return ot.Tools(ot.Call{ID: "call_s1", Name: "mcp_search", Args: `{"query":"shout"}`})
		}
		return ot.Text("no mcp_search")
	})
	project, _ := runEnv(t, model)
	writeMCPFile(t, filepath.Join(project, "deepagents.toml"), "[models.\"openai:gpt-4.1\"]\ncontext_window = 50000\n")
	cfg := filepath.Join(project, "servers.json")
	writeMCPFile(t, cfg, `{"mcpServers":{"web":{"type":"http","url":"`+hs.URL+`"}}}`)
	code, out, errs := runCLI(t, "run", "--model", "openai:gpt-4.1", "--mcp-config", cfg, "--interrupt-on", "mcp__web__shout", "-p", "shout hello")
	if !sawSearch {
		t.Fatalf("the tool was not behind mcp_search (exit %d): %s", code, errs)
	}
	if code != 3 || calls != 0 || strings.Contains(out, "without approval") {
		t.Fatalf("exit %d, %d calls of the tool, out %q, stderr %s", code, calls, out, errs)
	}
	if !strings.Contains(errs, "mcp__web__shout") {
		t.Errorf("the waiting call is not named: %s", errs)
	}
	// A name no server offers is still refused.
	code, _, errs = runCLI(t, "run", "--model", "openai:gpt-4.1", "--mcp-config", cfg, "--interrupt-on", "mcp__web__whisper", "-p", "x")
	if code != 2 || !strings.Contains(errs, `"mcp__web__whisper", which is not a tool`) {
		t.Errorf("an unknown MCP name: exit %d: %s", code, errs)
	}
}
