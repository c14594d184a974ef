package osfs_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/fstools"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/tool"
	"github.com/deepagents-go/deepagents/vfs"
)

// The seven file tools on a real directory wrapped in vfs.Track, as the
// agent loop runs them on a backend that cannot branch.
func TestToolsThroughTrack(t *testing.T) {
	f, dir := newFS(t, map[string]string{
		"/src/main.go":    "package main\n\nfunc main() {}\n",
		"/src/util.go":    "package main\n\n// TODO: tidy\n",
		"/README.md":      "# demo\nTODO list\n",
		"/old/a.txt":      "a",
		"/old/b/c.txt":    "c",
		"/data/blob.bin":  "\x00\x01binary TODO",
		"/docs/guide.txt": "read me\r\nTODO: crlf\r\n",
	})
	symlink(t, "../outside-secret", filepath.Join(dir, "escape"))
	tools := map[string]tool.Tool{}
	for _, tl := range fstools.Tools() {
		tools[tl.Spec().Name] = tl
	}
	tr := vfs.Track(f)
	env := &tool.Env{CallID: "call_1", Agent: "parent", Files: tr}
	run := func(name, args string) tool.Result {
		t.Helper()
		res, err := tools[name].Run(context.Background(), env, json.RawMessage(args))
		if err != nil {
			t.Fatalf("%s(%s): %v", name, args, err)
		}
		return res
	}
	for _, c := range []struct {
		tool, args, want string
		isErr            bool
	}{
		{"ls", `{}`, "/README.md (17 bytes)\n/data/\n/docs/\n/old/\n/src/", false},
		{"ls", `{"path":"/src"}`, "/src/main.go (29 bytes)\n/src/util.go (28 bytes)", false},
		{"read_file", `{"file_path":"/src/main.go"}`, "     1\tpackage main\n     2\t\n     3\tfunc main() {}", false},
		{"write_file", `{"file_path":"/notes/today.md","content":"one\ntwo\n"}`, "Created /notes/today.md (2 lines, 8 bytes).", false},
		{"write_file", `{"file_path":"/README.md","content":"# demo\nTODO list\nmore\n"}`, "Replaced /README.md (3 lines, 22 bytes).", false},
		{"edit_file", `{"file_path":"/src/util.go","old_string":"TODO: tidy","new_string":"tidied"}`, "Replaced 1 occurrence in /src/util.go.", false},
		{"edit_file", `{"file_path":"/docs/guide.txt","old_string":"read me\nTODO: crlf","new_string":"read me\nDONE"}`, "Replaced 1 occurrence in /docs/guide.txt.", false},
		{"glob", `{"pattern":"**/*.go"}`, "/src/main.go\n/src/util.go", false},
		{"glob", `{"pattern":"*.md"}`, "/README.md\n/notes/today.md", false},
		{"grep", `{"pattern":"TODO"}`, "/README.md\n\n[Skipped 1 file: /data/blob.bin (binary, 13 B).]", false},
		{"grep", `{"pattern":"package","output_mode":"count"}`, "/src/main.go: 1\n/src/util.go: 1\n\n[Skipped 1 file: /data/blob.bin (binary, 13 B).]", false},
		{"delete", `{"file_path":"/old"}`, "Deleted directory /old: 2 files removed.", false},
		{"delete", `{"file_path":"/notes/today.md"}`, "Deleted file /notes/today.md.", false},
		{"ls", `{"path":"/notes"}`, "/notes is an empty directory.", false},
		{"delete", `{"file_path":"/"}`, "refusing to delete /", true},
		{"read_file", `{"file_path":"/old/a.txt"}`, "does not exist", true},
		{"write_file", `{"file_path":"/src","content":"x"}`, "is a directory", true},
		{"write_file", `{"file_path":"/README.md/x","content":"x"}`, "/README.md is a file", true},
		{"read_file", `{"file_path":"../etc/passwd"}`, "'..' is not allowed", true},
		{"read_file", `{"file_path":"/escape"}`, "permission denied", true},
		{"write_file", `{"file_path":"/escape/x","content":"x"}`, "permission denied", true},
		{"ls", `{"path":"/escape"}`, "permission denied", true},
	} {
		res := run(c.tool, c.args)
		if res.IsError != c.isErr || c.isErr && !strings.Contains(res.Content, c.want) || !c.isErr && res.Content != c.want {
			t.Errorf("%s(%s) = %q (error %v), want %q", c.tool, c.args, res.Content, res.IsError, c.want)
		}
	}
	for p, want := range map[string]string{
		"README.md":      "# demo\nTODO list\nmore\n",
		"src/util.go":    "package main\n\n// tidied\n",
		"docs/guide.txt": "read me\r\nDONE\r\n",
	} {
		if got := diskRead(t, filepath.Join(dir, p)); got != want {
			t.Errorf("%s on disk = %q, want %q", p, got, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "old")); !os.IsNotExist(err) {
		t.Errorf("/old still on disk: %v", err)
	}
	var got []string
	for _, c := range tr.Changes() {
		op := "+"
		if c.Deleted() {
			op = "-"
		}
		got = append(got, op+c.Path)
	}
	want := "+/notes/today.md +/README.md +/src/util.go +/docs/guide.txt -/old -/notes/today.md"
	if strings.Join(got, " ") != want {
		t.Errorf("tracked changes = %v, want %s", got, want)
	}
}

// The real loop on a real directory: parallel calls of one batch write
// straight to disk and are reported as file events.
func TestAgentLoopOnDisk(t *testing.T) {
	f, dir := newFS(t, map[string]string{"/seed.txt": "one two", "/old/x": "x"})
	step := func(calls ...scripted.StepCall) scripted.Step { return scripted.Step{ToolCalls: calls} }
	sc := func(id, name, args string) scripted.StepCall {
		return scripted.StepCall{ID: id, Name: name, Args: json.RawMessage(args)}
	}
	model := scripted.New(scripted.Script{"parent": {Steps: []scripted.Step{
		step(
			sc("c1", "write_file", `{"file_path":"/notes/a.md","content":"alpha\n"}`),
			sc("c2", "write_file", `{"file_path":"/notes/b.md","content":"beta\n"}`),
			sc("c3", "edit_file", `{"file_path":"/seed.txt","old_string":"one","new_string":"ONE"}`),
			sc("c4", "delete", `{"file_path":"/old"}`),
		),
		step(sc("c5", "grep", `{"pattern":"a","path":"/notes","output_mode":"count"}`)),
		{Content: "done"},
	}}}, scripted.Options{NoUsage: true})
	a, err := agent.New(agent.Config{Model: model, Tools: fstools.Tools(), Backend: f})
	if err != nil {
		t.Fatal(err)
	}
	events := map[string]string{}
	res, err := agent.Drain(a.Run(context.Background(), agent.Prompt("go")), func(e agent.Event) {
		switch e.Type {
		case agent.FileWrite:
			events[e.File.Path] = "write"
		case agent.FileDelete:
			events[e.File.Path] = "delete"
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{"notes/a.md": "alpha\n", "notes/b.md": "beta\n", "seed.txt": "ONE two"} {
		if got := diskRead(t, filepath.Join(dir, p)); got != want {
			t.Errorf("%s = %q, want %q", p, got, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "old")); !os.IsNotExist(err) {
		t.Errorf("/old still on disk: %v", err)
	}
	wantEvents := map[string]string{"/notes/a.md": "write", "/notes/b.md": "write", "/seed.txt": "write", "/old": "delete"}
	if len(events) != len(wantEvents) {
		t.Errorf("file events = %v, want %v", events, wantEvents)
	}
	for p, w := range wantEvents {
		if events[p] != w {
			t.Errorf("file event for %s = %q, want %q", p, events[p], w)
		}
	}
	for _, m := range res.State.Messages {
		if m.Role == llm.RoleTool && m.ToolCallID == "c5" && m.Content != "/notes/a.md: 1\n/notes/b.md: 1" {
			t.Errorf("grep answered %q", m.Content)
		}
	}
}
