package mcp

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	cases := []struct {
		name, doc string
		want      map[string]ServerConfig
		kinds     map[string]string
		err       string
	}{
		{"claude code file", `{"mcpServers":{
			"files":{"command":"npx","args":["-y","fs-server","/tmp"],"env":{"DEBUG":"1"}},
			"gh":{"type":"http","url":"https://api.example.com/mcp","headers":{"Authorization":"Bearer ${GH}"}},
			"old":{"type":"sse","url":"https://sse.example.com"},
			"alias":{"type":"streamable_http","url":"https://x.example.com","allowedTools":["a"],"disabledTools":["b"]},
			"plainurl":{"url":"https://y.example.com"}}}`,
			map[string]ServerConfig{
				"files":    {Command: "npx", Args: []string{"-y", "fs-server", "/tmp"}, Env: map[string]string{"DEBUG": "1"}},
				"gh":       {Type: "http", URL: "https://api.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer ${GH}"}},
				"old":      {Type: "sse", URL: "https://sse.example.com"},
				"alias":    {Type: "streamable_http", URL: "https://x.example.com", AllowedTools: []string{"a"}, DisabledTools: []string{"b"}},
				"plainurl": {URL: "https://y.example.com"},
			},
			map[string]string{"files": "stdio", "gh": "http", "old": "sse", "alias": "http", "plainurl": "http"}, ""},
		{"empty file", ``, map[string]ServerConfig{}, nil, ""},
		{"no servers key", `{}`, map[string]ServerConfig{}, nil, ""},
		{"not json", `{"mcpServers":`, nil, nil, "not a valid .mcp.json file"},
		{"stdio without command", `{"mcpServers":{"s":{"args":["x"]}}}`, nil, nil, `MCP server "s": a stdio server needs a "command"`},
		{"http without url", `{"mcpServers":{"h":{"type":"http"}}}`, nil, nil, `MCP server "h": a http server needs a "url"`},
		{"unknown type", `{"mcpServers":{"w":{"type":"websocket","url":"ws://x"}}}`, nil, nil, `unknown type "websocket"`},
		{"args not strings", `{"mcpServers":{"a":{"command":"x","args":[1]}}}`, nil, nil, `MCP server "a": not a valid server entry`},
		{"bad name", `{"mcpServers":{"a b":{"command":"x"}}}`, nil, nil, `only letters, digits`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse([]byte(tc.doc), "/p/.mcp.json")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "/p/.mcp.json") {
					t.Fatalf("error %v, want one with %q and the file", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(f.Servers, tc.want) {
				t.Errorf("servers\n got %+v\nwant %+v", f.Servers, tc.want)
			}
			for name, k := range tc.kinds {
				if got := f.Servers[name].Kind(); got != k {
					t.Errorf("%s: kind %s, want %s", name, got, k)
				}
			}
		})
	}
}

func TestExpand(t *testing.T) {
	env := map[string]string{"HOME": "/home/u", "TOKEN": "t0k", "EMPTY": ""}
	getenv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	c := ServerConfig{
		Command: "${HOME}/bin/srv", Args: []string{"--port=${PORT:-8080}", "$HOME", "${EMPTY:-dflt}", "${EMPTY}"},
		Env: map[string]string{"K": "${TOKEN}"}, URL: "https://${HOST:-localhost}/mcp",
		Headers: map[string]string{"Authorization": "Bearer ${TOKEN}"},
	}
	got, err := c.Expand("srv", getenv)
	if err != nil {
		t.Fatal(err)
	}
	want := ServerConfig{
		Command: "/home/u/bin/srv", Args: []string{"--port=8080", "$HOME", "dflt", ""},
		Env: map[string]string{"K": "t0k"}, URL: "https://localhost/mcp",
		Headers: map[string]string{"Authorization": "Bearer t0k"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	for _, field := range []ServerConfig{
		{Command: "${MISSING}"}, {Args: []string{"${MISSING}"}}, {Env: map[string]string{"A": "x${MISSING}"}},
		{URL: "http://${MISSING}"}, {Headers: map[string]string{"H": "${MISSING}"}},
	} {
		_, err := field.Expand("github", getenv)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Server != "github" || !strings.Contains(err.Error(), `MCP server "github"`) || !strings.Contains(err.Error(), "MISSING") {
			t.Errorf("%+v: error %v, want one naming the server and MISSING", field, err)
		}
	}
	if _, err := (ServerConfig{Command: "${1BAD}"}).Expand("s", getenv); err == nil {
		t.Error("${1BAD} accepted")
	}
}

// Later files override earlier servers of the same name; absent files are
// skipped except one named on the command line.
func TestLoadPrecedence(t *testing.T) {
	home, proj := t.TempDir(), t.TempDir()
	write := func(path, doc string) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(home, ".deepagents", ".mcp.json"), `{"mcpServers":{"a":{"command":"user-a"},"b":{"command":"user-b"},"c":{"command":"user-c"},"d":{"command":"user-d"}}}`)
	write(filepath.Join(proj, ".deepagents", ".mcp.json"), `{"mcpServers":{"b":{"command":"projdot-b"},"c":{"command":"projdot-c"}}}`)
	write(filepath.Join(proj, ".mcp.json"), `{"mcpServers":{"c":{"command":"proj-c"},"d":{"command":"proj-d"}}}`)
	flagFile := filepath.Join(t.TempDir(), "extra.json")
	write(flagFile, `{"mcpServers":{"d":{"command":"flag-d"}}}`)

	servers, err := Load(Sources(home, proj, flagFile))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	scopes := map[string]Scope{}
	for _, s := range servers {
		got[s.Name] = s.Config.Command
		scopes[s.Name] = s.Scope
	}
	want := map[string]string{"a": "user-a", "b": "projdot-b", "c": "proj-c", "d": "flag-d"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if scopes["a"] != ScopeUser || scopes["b"] != ScopeProject || scopes["c"] != ScopeProject || scopes["d"] != ScopeFlag {
		t.Errorf("scopes %v", scopes)
	}
	if p := ProjectServers(servers); len(p) != 2 || p[0].Name != "b" || p[1].Name != "c" {
		t.Errorf("project servers %+v", p)
	}
	h1 := ProjectHash(servers)
	write(filepath.Join(proj, ".mcp.json"), `{"mcpServers":{"c":{"command":"proj-c","args":["--evil"]},"d":{"command":"proj-d"}}}`)
	servers2, err := Load(Sources(home, proj, flagFile))
	if err != nil {
		t.Fatal(err)
	}
	if ProjectHash(servers2) == h1 {
		t.Error("editing a project server keeps the project hash")
	}

	if _, err := Load(Sources("", "", filepath.Join(proj, "nope.json"))); err == nil || !strings.Contains(err.Error(), "nope.json") {
		t.Errorf("a missing --mcp-config file: %v", err)
	}
	if s, err := Load(Sources(t.TempDir(), t.TempDir())); err != nil || len(s) != 0 {
		t.Errorf("no files: %v %v", s, err)
	}
}

// FuzzParse: any input either parses into servers that pass their own
// checks and expand without panicking, or is refused with an error naming
// the file.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"mcpServers":{"a":{"command":"x","args":["${A:-b}"],"env":{"K":"${K}"}}}}`))
	f.Add([]byte(`{"mcpServers":{"h":{"type":"http","url":"https://${H:-x}/","headers":{"A":"${B}"}}}}`))
	f.Add([]byte(`{"mcpServers":{"s":{"type":"sse"}}}`))
	f.Add([]byte(`{"mcpServers":null}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse(data, "/f.json")
		if err != nil {
			if !strings.Contains(err.Error(), "/f.json") {
				t.Fatalf("error without the file: %v", err)
			}
			return
		}
		for _, name := range file.Names() {
			sc := file.Servers[name]
			if err := sc.check(); err != nil {
				t.Fatalf("accepted a server that fails its check: %v", err)
			}
			if checkServerName(name) != nil {
				t.Fatalf("accepted name %q", name)
			}
			if n := ToolName(name, "t"); len(n) > MaxToolName {
				t.Fatalf("tool name %q too long", n)
			}
			_, _ = sc.Expand(name, func(k string) (string, bool) { return "v", len(k)%2 == 0 })
		}
	})
}
