package acp

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	sdk "github.com/coder/acp-go-sdk"
)

func TestDescribe(t *testing.T) {
	cwd := "/work/p"
	for _, c := range []struct {
		tool, args string
		title      string
		kind       sdk.ToolKind
		paths      []string
		edit       string
	}{
		{"edit_file", `{"file_path":"/src/a.go","old_string":"x","new_string":"y"}`, "Edit /src/a.go", sdk.ToolKindEdit, []string{"/work/p/src/a.go"}, "/src/a.go"},
		{"write_file", `{"file_path":"../../etc/passwd","content":""}`, "Write ../../etc/passwd", sdk.ToolKindEdit, []string{"/work/p/etc/passwd"}, "../../etc/passwd"},
		{"read_file", `{"file_path":"/README.md"}`, "Read /README.md", sdk.ToolKindRead, []string{"/work/p/README.md"}, ""},
		{"delete", `{"file_path":"/old"}`, "Delete /old", sdk.ToolKindDelete, []string{"/work/p/old"}, "/old"},
		{"ls", `{}`, "List /", sdk.ToolKindSearch, []string{"/work/p"}, ""},
		{"grep", `{"pattern":"TODO"}`, "grep TODO", sdk.ToolKindSearch, nil, ""},
		{"execute", `{"command":"go test ./...\nrm -rf /"}`, "Run go test ./...…", sdk.ToolKindExecute, nil, ""},
		{"task", `{"description":"look","subagent_type":"general-purpose"}`, "Delegate to general-purpose: look", sdk.ToolKindThink, nil, ""},
		{"write_todos", `{"todos":[]}`, "Update the plan", sdk.ToolKindThink, nil, ""},
		{"mcp__gh__issues", `{"q":1}`, "mcp__gh__issues", sdk.ToolKindOther, nil, ""},
		{"edit_file", `{"file_path":`, "Edit ", sdk.ToolKindEdit, nil, ""},
	} {
		got := describe(c.tool, json.RawMessage(c.args), cwd)
		if got.Title != c.title || got.Kind != c.kind || strings.Join(got.Paths, ",") != strings.Join(c.paths, ",") || got.Edit != c.edit {
			t.Errorf("describe(%s, %s) = %+v", c.tool, c.args, got)
		}
	}
}

// FuzzDescribe holds describe to its promises for any arguments a model
// may send: a one-line valid UTF-8 title of bounded length, and paths
// inside the session's directory.
func FuzzDescribe(f *testing.F) {
	f.Add("edit_file", []byte(`{"file_path":"/a/../../b","old_string":"x","new_string":"y"}`))
	f.Add("write_file", []byte(`{"file_path":"C:\\x\\..\\..\\y","content":"z"}`))
	f.Add("execute", []byte("{\"command\":\"a\\u0000b\\r\\nc\"}"))
	f.Add("task", []byte(`{"description":"\xff\xfe","subagent_type":""}`))
	f.Add("ls", []byte(`{"path":"////"}`))
	cwd := "/work/project"
	f.Fuzz(func(t *testing.T, tool string, args []byte) {
		ci := describe(tool, args, cwd)
		if !utf8.ValidString(ci.Title) || strings.ContainsAny(ci.Title, "\r\n") {
			t.Fatalf("title %q", ci.Title)
		}
		if n := utf8.RuneCountInString(ci.Title); n > 2*maxTitle+len("Delegate to : ") {
			t.Fatalf("title of %d runes", n)
		}
		for _, p := range ci.Paths {
			if !filepath.IsAbs(p) || (p != cwd && !strings.HasPrefix(p, cwd+string(filepath.Separator))) {
				t.Fatalf("path %q outside %s", p, cwd)
			}
		}
	})
}
