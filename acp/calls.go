package acp

import (
	"encoding/json"
	"path"
	"path/filepath"
	"strings"
	"unicode/utf8"

	sdk "github.com/coder/acp-go-sdk"
)

// callInfo is how a tool call is shown in the editor: a title, a kind,
// and the files it touches (absolute paths on disk).
type callInfo struct {
	Title string
	Kind  sdk.ToolKind
	Paths []string
	// Edit is the file a write_file, edit_file or delete call changes
	// (its path as the agent names it), "" for other calls.
	Edit string
}

// maxTitle caps the text of an argument shown in a title.
const maxTitle = 80

// describe reads a call's arguments (as the model sent them: any bytes)
// into what the editor shows. cwd is the session's directory, which the
// agent's "/" stands for.
func describe(tool string, args json.RawMessage, cwd string) callInfo {
	var in struct {
		FilePath    string `json:"file_path"`
		Path        string `json:"path"`
		Pattern     string `json:"pattern"`
		Command     string `json:"command"`
		Description string `json:"description"`
		Subagent    string `json:"subagent_type"`
	}
	_ = json.Unmarshal(args, &in) // arguments cut off or malformed: a title from the name alone
	ci := callInfo{Title: tool, Kind: sdk.ToolKindOther}
	file := func(p string) {
		if abs, ok := onDisk(p, cwd); ok {
			ci.Paths = append(ci.Paths, abs)
		}
	}
	switch tool {
	case "read_file":
		ci.Kind, ci.Title = sdk.ToolKindRead, "Read "+clip(in.FilePath)
		file(in.FilePath)
	case "write_file", "edit_file":
		verb := "Write "
		if tool == "edit_file" {
			verb = "Edit "
		}
		ci.Kind, ci.Title, ci.Edit = sdk.ToolKindEdit, verb+clip(in.FilePath), in.FilePath
		file(in.FilePath)
	case "delete":
		ci.Kind, ci.Title, ci.Edit = sdk.ToolKindDelete, "Delete "+clip(in.FilePath), in.FilePath
		file(in.FilePath)
	case "ls":
		ci.Kind, ci.Title = sdk.ToolKindSearch, "List "+clip(orRoot(in.Path))
		file(orRoot(in.Path))
	case "glob", "grep":
		ci.Kind, ci.Title = sdk.ToolKindSearch, tool+" "+clip(in.Pattern)
		if in.Path != "" {
			file(in.Path)
		}
	case "execute":
		ci.Kind, ci.Title = sdk.ToolKindExecute, "Run "+clip(in.Command)
	case "write_todos", "todo_update":
		ci.Kind, ci.Title = sdk.ToolKindThink, "Update the plan"
	case "task":
		ci.Kind, ci.Title = sdk.ToolKindThink, "Delegate to "+clip(orDefault(in.Subagent, "a subagent"))
		if in.Description != "" {
			ci.Title += ": " + clip(in.Description)
		}
	default: // MCP tools (mcp__SERVER__TOOL) and the caller's own
		ci.Title = clip(tool)
	}
	return ci
}

// onDisk maps a path as the agent names it ("/src/a.go", the session's
// directory being "/") to the absolute path in cwd, never outside it
// ("/../x" is "/x"); false for an empty path or one with a NUL byte. A
// mount that is not in the directory (/memories/) is mapped too: the
// editor only shows the path.
func onDisk(p, cwd string) (string, bool) {
	if p == "" || strings.ContainsRune(p, 0) {
		return "", false
	}
	clean := path.Clean("/" + strings.ReplaceAll(p, "\\", "/"))
	return filepath.Join(cwd, filepath.FromSlash(clean)), true
}

func orRoot(p string) string { return orDefault(p, "/") }

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// clip shortens s to one line of at most maxTitle runes.
func clip(s string) string {
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i] + "…"
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "�")
	}
	if utf8.RuneCountInString(s) > maxTitle {
		r := []rune(s)
		s = string(r[:maxTitle-1]) + "…"
	}
	return s
}
