package osfs_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	"github.com/deepagents-go/deepagents/vfs/osfs"
)

// checklist is n lines "item i: todo".
func checklist(prefix string, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "%s %d: todo\n", prefix, i)
	}
	return b.String()
}

// Many parallel edit_file calls of one batch on one file of a real
// directory, through the agent loop (each call on its own vfs.Tracked over
// the one backend): every edit survives and every call says so.
func TestParallelEditsThroughAgentLoop(t *testing.T) {
	for _, n := range []int{8, 16, 40} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			f, dir := newFS(t, map[string]string{"/list.txt": checklist("item", n)})
			var calls []scripted.StepCall
			for i := range n {
				calls = append(calls, scripted.StepCall{ID: fmt.Sprintf("e%d", i), Name: "edit_file",
					Args: json.RawMessage(fmt.Sprintf(`{"file_path":"/list.txt","old_string":"item %d: todo","new_string":"item %d: done by call %d"}`, i, i, i))})
			}
			model := scripted.New(scripted.Script{"parent": {Steps: []scripted.Step{{ToolCalls: calls}, {Content: "done"}}}},
				scripted.Options{NoUsage: true})
			a, err := agent.New(agent.Config{Model: model, Tools: fstools.Tools(), Backend: f, MaxParallel: n})
			if err != nil {
				t.Fatal(err)
			}
			writes := 0
			res, err := agent.Drain(a.Run(context.Background(), agent.Prompt("go")), func(e agent.Event) {
				if e.Type == agent.FileWrite && e.File.Path == "/list.txt" {
					writes++
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range res.State.Messages {
				if m.Role == llm.RoleTool && (m.IsError || m.Content != "Replaced 1 occurrence in /list.txt.") {
					t.Errorf("%s answered %q", m.ToolCallID, m.Content)
				}
			}
			var want strings.Builder
			for i := range n {
				fmt.Fprintf(&want, "item %d: done by call %d\n", i, i)
			}
			if got := diskRead(t, filepath.Join(dir, "list.txt")); got != want.String() {
				t.Errorf("after %d parallel edits the file is\n%s\nwant\n%s", n, got, want.String())
			}
			if writes != n {
				t.Errorf("%d file.write events for /list.txt, want %d", writes, n)
			}
			assertNoTemps(t, dir)
		})
	}
}

// assertNoTemps fails if a temporary file of Write is left anywhere in dir.
func assertNoTemps(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), ".osfs-") {
			t.Errorf("temporary file left behind: %s", p)
		}
		return nil
	})
}

// A program that does not take part in the locking changes the file while
// Update computes: Update notices, writes nothing and says the file changed.
func TestUpdateDetectsOutsideChange(t *testing.T) {
	for _, c := range []struct {
		name    string
		outside func(t *testing.T, path string)
		want    string // the file afterwards; "" means gone
	}{
		{"written in place", func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte("outside edit, longer than before"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "outside edit, longer than before"},
		{"replaced by a rename", func(t *testing.T, path string) {
			tmp := path + ".new"
			if err := os.WriteFile(tmp, []byte("renamed in"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}
		}, "renamed in"},
		{"deleted", func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, dir := newFS(t, map[string]string{"/doc.txt": "original"})
			path := filepath.Join(dir, "doc.txt")
			err := f.Update(ctx, "/doc.txt", func(s string) (string, error) {
				c.outside(t, path)
				return s + " + update", nil
			})
			wantErr(t, err, vfs.ErrConflict, "Update over an outside change")
			if err != nil && (!strings.Contains(err.Error(), "/doc.txt") || strings.Contains(err.Error(), dir)) {
				t.Errorf("error %q should name /doc.txt and not the host directory", err)
			}
			got, rerr := os.ReadFile(path)
			switch {
			case c.want == "" && !os.IsNotExist(rerr):
				t.Errorf("deleted file is back: %q, %v", got, rerr)
			case c.want != "" && string(got) != c.want:
				t.Errorf("file = %q, %v; want the outside change %q kept", got, rerr, c.want)
			}
			assertNoTemps(t, dir)
		})
	}
}

// interfering runs a function of the test inside every Update, as another
// program changing the file at the worst moment would.
type interfering struct {
	*osfs.FS
	during func()
}

func (b interfering) Update(ctx context.Context, path string, fn vfs.UpdateFunc) error {
	return b.FS.Update(ctx, path, func(s string) (string, error) {
		b.during()
		return fn(s)
	})
}

// edit_file turns a detected outside change into an error result that tells
// the model to read the file again.
func TestEditFileReportsOutsideChange(t *testing.T) {
	f, dir := newFS(t, map[string]string{"/a.txt": "alpha beta"})
	b := interfering{f, func() {
		if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("alpha beta gamma"), 0o644); err != nil {
			t.Fatal(err)
		}
	}}
	res := runTool(t, vfs.Track(b), "edit_file", `{"file_path":"/a.txt","old_string":"beta","new_string":"BETA"}`)
	if !res.IsError || !strings.Contains(res.Content, "/a.txt was changed by someone else while this edit was being made") ||
		!strings.Contains(res.Content, "Read the file again") {
		t.Errorf("edit_file over an outside change answered %q (error %v)", res.Content, res.IsError)
	}
	if got := diskRead(t, filepath.Join(dir, "a.txt")); got != "alpha beta gamma" {
		t.Errorf("file = %q, want the outside change kept", got)
	}
}

func runTool(t *testing.T, b vfs.Backend, name, args string) tool.Result {
	t.Helper()
	for _, tl := range fstools.Tools() {
		if tl.Spec().Name == name {
			res, err := tl.Run(context.Background(), &tool.Env{CallID: "c1", Files: b}, json.RawMessage(args))
			if err != nil {
				t.Fatalf("%s(%s): %v", name, args, err)
			}
			return res
		}
	}
	t.Fatalf("no tool %s", name)
	return tool.Result{}
}

// Update follows links as Write does, keeps the permission bits, refuses
// what Write refuses and does not read past the size limit.
func TestUpdateCases(t *testing.T) {
	f, dir := newFS(t, map[string]string{"/real/t.txt": "target", "/big": strings.Repeat("b", 100), "/x.sh": "#!/bin/sh\n"}, osfs.MaxFileBytes(64))
	symlink(t, "real/t.txt", filepath.Join(dir, "link"))
	if err := os.Chmod(filepath.Join(dir, "x.sh"), 0o750); err != nil {
		t.Fatal(err)
	}
	up := func(s string) (string, error) { return s + "!", nil }
	if err := f.Update(ctx, "/link", up); err != nil {
		t.Fatal(err)
	}
	if got := diskRead(t, filepath.Join(dir, "real", "t.txt")); got != "target!" {
		t.Errorf("link target = %q", got)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "link")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v %v", fi, err)
	}
	if err := f.Update(ctx, "/x.sh", up); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "x.sh")); fi.Mode().Perm() != 0o750 {
		t.Errorf("mode after update = %v, want 0750", fi.Mode().Perm())
	}
	wantErr(t, f.Update(ctx, "/big", up), osfs.ErrTooLarge, "Update of a file over the limit")
	wantErr(t, f.Update(ctx, "/real", up), vfs.ErrIsDir, "Update of a directory")
	wantErr(t, f.Update(ctx, "/nope", up), vfs.ErrNotFound, "Update of a missing file")
	symlink(t, "../outside", filepath.Join(dir, "escape"))
	wantErr(t, f.Update(ctx, "/escape", up), vfs.ErrPermission, "Update through a link that leaves the workspace")
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := f.Update(cctx, "/x.sh", up); !errors.Is(err, context.Canceled) {
		t.Errorf("Update with a cancelled context: %v", err)
	}
	if got := diskRead(t, filepath.Join(dir, "big")); got != strings.Repeat("b", 100) {
		t.Error("a refused update changed /big")
	}
}
