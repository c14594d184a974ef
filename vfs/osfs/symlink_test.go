package osfs_test

import (
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/vfs"
	"github.com/deepagents-go/deepagents/vfs/osfs"
)

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Skip("symbolic links unavailable:", err)
	}
}

// tree returns every file below dir (relative, slash-separated) and its
// content, without following links.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		r, _ := filepath.Rel(dir, p)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out[filepath.ToSlash(r)] = "-> " + target
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[filepath.ToSlash(r)] = string(b)
		case d.IsDir():
			out[filepath.ToSlash(r)+"/"] = ""
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

const secret = "SECRET OUTSIDE THE WORKSPACE"

// escapeLayout is a workspace next to an outside directory, with links of
// every kind leading out.
func escapeLayout(t *testing.T) (f *osfs.FS, root, outside string) {
	t.Helper()
	base := t.TempDir()
	root = filepath.Join(base, "root")
	outside = filepath.Join(base, "outside")
	seed(t, outside, map[string]string{"/secret.txt": secret, "/sub/deep.txt": secret})
	seed(t, root, map[string]string{"/ok.txt": "ok", "/d/in.txt": "in"})
	for link, target := range map[string]string{
		"file-abs":     filepath.Join(outside, "secret.txt"),
		"file-rel":     "../outside/secret.txt",
		"dir-abs":      outside,
		"dir-rel":      "../outside",
		"d/deep-rel":   "../../outside",
		"d/up":         "../..",
		"reenter":      "../root/ok.txt", // leaves the root on the way
		"chain":        "d/deep-rel",
		"inside-abs":   filepath.Join(root, "ok.txt"), // absolute: refused even inside
		"d/file-chain": "../file-rel",
	} {
		symlink(t, target, filepath.Join(root, filepath.FromSlash(link)))
	}
	return open(t, root), root, outside
}

func wantEscape(t *testing.T, err error, host, what string) {
	t.Helper()
	if !errors.Is(err, osfs.ErrEscapes) || !errors.Is(err, vfs.ErrPermission) || !strings.Contains(err.Error(), "path escapes the workspace") {
		t.Errorf("%s: error %v, want the escape error", what, err)
	}
	if err != nil && strings.Contains(err.Error(), host) {
		t.Errorf("%s: the error names a host path: %v", what, err)
	}
}

func TestSymlinksOutsideAreRefused(t *testing.T) {
	f, root, outside := escapeLayout(t)
	before := tree(t, outside)
	rootBefore := tree(t, root)
	host := filepath.Dir(root)

	escaping := []string{"/file-abs", "/file-rel", "/dir-abs", "/dir-rel", "/d/deep-rel", "/d/up", "/reenter", "/chain", "/inside-abs", "/d/file-chain"}
	through := []string{"/dir-abs/secret.txt", "/dir-rel/secret.txt", "/d/deep-rel/sub/deep.txt", "/chain/secret.txt", "/d/up/outside/secret.txt", "/dir-rel/sub"}
	for _, p := range append(slices.Clone(escaping), through...) {
		_, err := f.Stat(ctx, p)
		wantEscape(t, err, host, "Stat("+p+")")
		s, err := f.Read(ctx, p)
		wantEscape(t, err, host, "Read("+p+")")
		if s != "" {
			t.Errorf("Read(%q) returned %q", p, s)
		}
		wantEscape(t, f.Write(ctx, p, "pwned"), host, "Write("+p+")")
		wantEscape(t, f.Write(ctx, p+"/new.txt", "pwned"), host, "Write("+p+"/new.txt)")
		_, err = f.List(ctx, p)
		wantEscape(t, err, host, "List("+p+")")
		n := 0
		for e, err := range f.Walk(ctx, p) {
			if err == nil {
				t.Errorf("Walk(%q) yielded %+v", p, e)
				continue
			}
			n++
			wantEscape(t, err, host, "Walk("+p+")")
		}
		if n != 1 {
			t.Errorf("Walk(%q) yielded %d errors, want 1", p, n)
		}
		if p != "/dir-rel/sub" {
			k, err := f.Delete(ctx, p)
			wantEscape(t, err, host, "Delete("+p+")")
			if k != 0 {
				t.Errorf("Delete(%q) = %d", p, k)
			}
		}
	}
	if got, want := walkPaths(t, f, "/"), []string{"/d/in.txt", "/ok.txt"}; !slices.Equal(got, want) {
		t.Errorf("Walk(/) = %v, want %v: escaping links must stay out", got, want)
	}
	if got, want := listing(t, f, "/"), []string{"/d/", "/ok.txt"}; !slices.Equal(got, want) {
		t.Errorf("List(/) = %v, want %v", got, want)
	}
	if got, want := listing(t, f, "/d"), []string{"/d/in.txt"}; !slices.Equal(got, want) {
		t.Errorf("List(/d) = %v, want %v", got, want)
	}
	if got := tree(t, outside); !maps.Equal(got, before) {
		t.Errorf("the outside changed: %v, was %v", got, before)
	}
	if got := tree(t, root); !maps.Equal(got, rootBefore) {
		t.Errorf("refused operations changed the workspace: %v, was %v", got, rootBefore)
	}

	// Deleting a directory holding escaping links removes the links, never
	// what they point to.
	if n, err := f.Delete(ctx, "/d"); n != 1 || err != nil {
		t.Errorf("Delete(/d) = %d, %v; want 1 (the links are not files)", n, err)
	}
	if got := tree(t, outside); !maps.Equal(got, before) {
		t.Errorf("deleting links changed the outside: %v", got)
	}
}

func TestSymlinksInside(t *testing.T) {
	root := t.TempDir()
	seed(t, root, map[string]string{
		"/real.md":             "real",
		"/dir/x.txt":           "x",
		"/dir/sub/y.txt":       "y",
		"/dir/inner/keep":      "k",
		"/dir/real2.md":        "real2",
		"/z.txt":               "z",
		"/linkdir-sibling.txt": "s",
	})
	for link, target := range map[string]string{
		"link.md":         "real.md",
		"chain1":          "chain2",
		"chain2":          "real.md",
		"linkdir":         "dir",
		"dir/up":          "..", // a cycle, if walks followed directory links
		"dir/sib":         "../real.md",
		"s":               "dir/inner",
		"dir/inner/t":     "../real2.md", // relative to dir/inner, not to /s
		"dangling":        "missing.txt",
		"dangling-deeper": "newdir/made.txt",
		"loop":            "loop",
	} {
		symlink(t, target, filepath.Join(root, filepath.FromSlash(link)))
	}
	f := open(t, root)

	// Named links are followed.
	for p, want := range map[string]string{"/link.md": "real", "/chain1": "real", "/dir/sib": "real", "/linkdir/x.txt": "x", "/s/t": "real2", "/linkdir/up/z.txt": "z"} {
		if got := mustRead(t, f, p); got != want {
			t.Errorf("Read(%q) = %q, want %q", p, got, want)
		}
	}
	if e, err := f.Stat(ctx, "/linkdir"); err != nil || !e.IsDir {
		t.Errorf("Stat(/linkdir) = %+v, %v", e, err)
	}
	if e, err := f.Stat(ctx, "/link.md"); err != nil || e.IsDir || e.Size != 4 {
		t.Errorf("Stat(/link.md) = %+v, %v", e, err)
	}
	for _, p := range []string{"/dangling", "/dangling-deeper"} {
		_, err := f.Stat(ctx, p)
		wantErr(t, err, vfs.ErrNotFound, "Stat("+p+")")
	}
	if _, err := f.Read(ctx, "/loop"); err == nil || errors.Is(err, vfs.ErrNotFound) {
		t.Errorf("Read(/loop) = %v, want a loop error", err)
	}

	// List shows links by what they point to and leaves out broken ones.
	if got, want := listing(t, f, "/"), []string{"/chain1", "/chain2", "/dir/", "/link.md", "/linkdir/", "/linkdir-sibling.txt", "/real.md", "/s/", "/z.txt"}; !slices.Equal(got, want) {
		t.Errorf("List(/) = %v, want %v", got, want)
	}
	if got, want := listing(t, f, "/linkdir"), []string{"/linkdir/inner/", "/linkdir/real2.md", "/linkdir/sib", "/linkdir/sub/", "/linkdir/up/", "/linkdir/x.txt"}; !slices.Equal(got, want) {
		t.Errorf("List(/linkdir) = %v, want %v", got, want)
	}

	// Walk yields links to files but does not enter links to directories:
	// no cycle through dir/up, no second copy through linkdir or s.
	want := []string{"/chain1", "/chain2", "/dir/inner/keep", "/dir/inner/t", "/dir/real2.md", "/dir/sib", "/dir/sub/y.txt", "/dir/x.txt", "/link.md", "/linkdir-sibling.txt", "/real.md", "/z.txt"}
	if got := walkPaths(t, f, "/"); !slices.Equal(got, want) {
		t.Errorf("Walk(/) = %v, want %v", got, want)
	}
	// Walking a directory link itself lists below it.
	if got, want := walkPaths(t, f, "/linkdir"), []string{"/linkdir/inner/keep", "/linkdir/inner/t", "/linkdir/real2.md", "/linkdir/sib", "/linkdir/sub/y.txt", "/linkdir/x.txt"}; !slices.Equal(got, want) {
		t.Errorf("Walk(/linkdir) = %v, want %v", got, want)
	}
	if got := walkPaths(t, f, "/link.md"); !slices.Equal(got, []string{"/link.md"}) {
		t.Errorf("Walk(/link.md) = %v", got)
	}

	// Writing through a link writes its target and keeps the link.
	for p, target := range map[string]string{"/link.md": "real.md", "/chain1": "real.md", "/s/t": "dir/real2.md", "/linkdir/x.txt": "dir/x.txt", "/dir/sib": "real.md"} {
		if err := f.Write(ctx, p, "via "+p); err != nil {
			t.Errorf("Write(%q): %v", p, err)
			continue
		}
		if got := diskRead(t, filepath.Join(root, target)); got != "via "+p {
			t.Errorf("Write(%q) left %s = %q", p, target, got)
		}
	}
	for _, l := range []string{"link.md", "chain1", "chain2", "dir/inner/t", "dir/sib"} {
		if fi, err := os.Lstat(filepath.Join(root, l)); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			t.Errorf("%s is no longer a link: %v", l, err)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "real2.md")); !errors.Is(err, fs.ErrNotExist) {
		t.Error("a link's .. was resolved lexically: real2.md appeared at the root")
	}
	// A dangling link is created through, like a shell redirection.
	if err := f.Write(ctx, "/dangling", "made"); err != nil {
		t.Fatal(err)
	}
	if diskRead(t, filepath.Join(root, "missing.txt")) != "made" || mustRead(t, f, "/dangling") != "made" {
		t.Error("write through a dangling link")
	}
	if err := f.Write(ctx, "/dangling-deeper", "deep"); err != nil {
		t.Fatal(err)
	}
	if diskRead(t, filepath.Join(root, "newdir", "made.txt")) != "deep" {
		t.Error("write through a dangling link into a new directory")
	}
	wantErr(t, f.Write(ctx, "/linkdir", "x"), vfs.ErrIsDir, "Write onto a directory link")

	// Deleting a link removes the link only.
	if n, err := f.Delete(ctx, "/link.md"); n != 1 || err != nil {
		t.Errorf("Delete(/link.md) = %d, %v", n, err)
	}
	if n, err := f.Delete(ctx, "/linkdir"); n != 0 || err != nil {
		t.Errorf("Delete(/linkdir) = %d, %v", n, err)
	}
	if _, err := os.Stat(filepath.Join(root, "real.md")); err != nil {
		t.Error("deleting a link removed its target")
	}
	if _, err := os.Stat(filepath.Join(root, "dir", "x.txt")); err != nil {
		t.Error("deleting a directory link removed what is below it")
	}
	_, err := f.Delete(ctx, "/loop")
	if err == nil {
		t.Error("Delete(/loop) succeeded")
	}
	// Deleting a directory with links inside counts the links to files.
	if n, err := f.Delete(ctx, "/dir"); n != 6 || err != nil {
		t.Errorf("Delete(/dir) = %d, %v; want 6: four files and the links sib and inner/t", n, err)
	}
	if _, err := os.Stat(filepath.Join(root, "real.md")); err != nil {
		t.Error("deleting a directory removed a link's target outside it")
	}
}

// A write below a link whose target is missing fails as "not a directory"
// and makes nothing: not the directories the link's target names, nor a
// file in place of the link. (Found by FuzzOSFSPaths: the link
// new/l5 -> d/e/../../.. made Write create new/d/e and then replace the
// link with the file.)
func TestWriteBelowADanglingLinkMakesNothing(t *testing.T) {
	root := t.TempDir()
	symlink(t, "d/e/../../..", filepath.Join(root, "new", "l5"))
	symlink(t, "missing", filepath.Join(root, "gone"))
	fsys, err := osfs.New(root, osfs.NoSync())
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()
	before := tree(t, root)
	for _, p := range []string{"/new/l5/new/l5", "/new/l5/x.txt", "/gone/a/b.txt"} {
		if err := fsys.Write(t.Context(), p, "fuzz"); !errors.Is(err, vfs.ErrNotDir) {
			t.Errorf("Write(%s): %v, want not a directory", p, err)
		}
	}
	if after := tree(t, root); !maps.Equal(before, after) {
		t.Errorf("the tree changed:\nbefore %v\nafter  %v", before, after)
	}
	if _, err := os.Lstat(filepath.Join(root, "new", "d")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("new/d was made: %v", err)
	}
	// A missing directory is still made, and a link to a directory is
	// still followed.
	if err := os.MkdirAll(filepath.Join(root, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	symlink(t, "real", filepath.Join(root, "toreal"))
	for _, p := range []string{"/fresh/deep/a.txt", "/toreal/sub/b.txt"} {
		if err := fsys.Write(t.Context(), p, "ok"); err != nil {
			t.Errorf("Write(%s): %v", p, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(root, "real", "sub", "b.txt")); err != nil || string(b) != "ok" {
		t.Errorf("through the link: %q %v", b, err)
	}
}
