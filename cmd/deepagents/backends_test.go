package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/checkpoint/sqlite"
	ot "github.com/deepagents-go/deepagents/providers/openai/openaitest"
)

// memoryServer: a prompt "remember" writes /memories/note.md and
// /scratch.md; "recall" reads both back. The reply quotes the results.
func memoryServer(t *testing.T) *ot.Server {
	return ot.NewServer(t, func(r *ot.Request) ot.Reply {
		if r.HasTool("task") && r.Round() == 0 {
			if strings.Contains(r.FirstUser(), "remember") {
				return ot.Tools(
					ot.Call{ID: "w1", Name: "write_file", Args: `{"file_path":"/memories/note.md","content":"likes tea"}`},
					ot.Call{ID: "w2", Name: "write_file", Args: `{"file_path":"/scratch.md","content":"this thread only"}`})
			}
			return ot.Tools(
				ot.Call{ID: "r1", Name: "read_file", Args: `{"file_path":"/memories/note.md"}`},
				ot.Call{ID: "r2", Name: "read_file", Args: `{"file_path":"/scratch.md"}`})
		}
		var parts []string
		for _, id := range []string{"w1", "w2", "r1", "r2"} {
			if res, ok := r.ToolResult(id); ok {
				parts = append(parts, id+": "+res.Text())
			}
		}
		return ot.Text(strings.Join(parts, "\n"))
	})
}

func TestStoreSharedAcrossThreads(t *testing.T) {
	srv := memoryServer(t)
	_, home := runEnv(t, srv)
	code, out, errs := runCLI(t, "run", "-p", "remember", "--model", "openai:gpt-test")
	if code != 0 || strings.Contains(out, "Error") {
		t.Fatalf("first thread: exit %d\n%s\n%s", code, out, errs)
	}
	// A new thread on the same database reads the memory, not the
	// other thread's own files.
	code, out, errs = runCLI(t, "run", "-p", "recall", "--model", "openai:gpt-test")
	if code != 0 || !strings.Contains(out, "r1:      1\tlikes tea") || !strings.Contains(out, "r2: Error: file /scratch.md does not exist") {
		t.Fatalf("second thread: exit %d\n%s\n%s", code, out, errs)
	}
	// The memory is in the thread database, under the user's name.
	ft, err := sqlite.OpenFiles(filepath.Join(home, ".deepagents", "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer ft.Close()
	if f, ok, err := ft.Get(t.Context(), defaultNamespace(), "/note.md"); !ok || err != nil || f.Content != "likes tea" {
		t.Errorf("the thread database holds %+v, %v, %v", f, ok, err)
	}
	// Another namespace has its own memories.
	code, out, errs = runCLI(t, "run", "-p", "recall", "--model", "openai:gpt-test", "--store-namespace", "someone-else")
	if code != 0 || !strings.Contains(out, "r1: Error: file /memories/note.md does not exist") {
		t.Errorf("other namespace: exit %d\n%s\n%s", code, out, errs)
	}
	// Without the store, /memories/ is an ordinary in-state directory.
	code, out, errs = runCLI(t, "run", "-p", "recall", "--model", "openai:gpt-test", "--no-store")
	if code != 0 || !strings.Contains(out, "r1: Error: file /memories/note.md does not exist") {
		t.Errorf("--no-store: exit %d\n%s\n%s", code, out, errs)
	}
	// With --root the rest is the real directory, and the store stays.
	root := t.TempDir()
	code, out, errs = runCLI(t, "run", "-p", "remember", "--model", "openai:gpt-test", "--root", root, "--store-namespace", "rooted")
	if code != 0 || strings.Contains(out, "Error") {
		t.Fatalf("--root: exit %d\n%s\n%s", code, out, errs)
	}
	if data, err := os.ReadFile(filepath.Join(root, "scratch.md")); err != nil || string(data) != "this thread only" {
		t.Errorf("--root: scratch.md on disk = %q, %v", data, err)
	}
	if _, err := os.Stat(filepath.Join(root, "memories")); err == nil {
		t.Error("--root: /memories/ went to disk, not to the store")
	}
	if f, ok, err := ft.Get(t.Context(), "rooted", "/note.md"); !ok || err != nil || f.Content != "likes tea" {
		t.Errorf("--root: the store holds %+v, %v, %v", f, ok, err)
	}
	if code, _, errs := runCLI(t, "run", "-p", "x", "--model", "openai:gpt-test", "--store-namespace", "a b"); code != 2 || !strings.Contains(errs, "--store-namespace") {
		t.Errorf("bad namespace: exit %d: %s", code, errs)
	}
}

// The --permission rules come before the config's: the flag's deny of
// /memories/** wins over the config's allow of it.
func TestPermissionFlagsAndConfig(t *testing.T) {
	srv := memoryServer(t)
	project, _ := runEnv(t, srv)
	if err := os.WriteFile(filepath.Join(project, "deepagents.toml"), []byte("[permissions]\nrules = [\"deny write /scratch.md\", \"allow write /memories/**\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, "run", "-p", "remember", "--model", "openai:gpt-test", "--permission", "deny write /memories/**")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		`w1: Error: writing /memories/note.md: permission denied by rule "deny write /memories/**".`,
		`w2: Error: writing /scratch.md: permission denied by rule "deny write /scratch.md".`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if code, _, errs := runCLI(t, "run", "-p", "x", "--model", "openai:gpt-test", "--permission", "deny exec /x"); code != 2 || !strings.Contains(errs, `"exec" is not read, write or all`) {
		t.Errorf("bad rule: exit %d: %s", code, errs)
	}
}
