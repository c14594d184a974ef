package osfs_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/vfs"
	"github.com/deepagents-go/deepagents/vfs/osfs"
	"github.com/deepagents-go/deepagents/vfs/vfstest"
)

var ctx = context.Background()

// seed writes files into dir with plain os calls.
func seed(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(p, "/")))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func open(t *testing.T, dir string, opts ...osfs.Option) *osfs.FS {
	t.Helper()
	f, err := osfs.New(dir, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// newFS returns a workspace in a fresh directory holding files.
func newFS(t *testing.T, files map[string]string, opts ...osfs.Option) (*osfs.FS, string) {
	t.Helper()
	dir := t.TempDir()
	seed(t, dir, files)
	return open(t, dir, opts...), dir
}

// The backend helpers of the conformance suite.
var (
	walkPaths = vfstest.Paths
	listing   = vfstest.Listing
	mustRead  = vfstest.MustRead
	wantErr   = vfstest.WantErr
)

func diskRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestNew(t *testing.T) {
	dir := t.TempDir()
	seed(t, dir, map[string]string{"/file": "x"})

	// The errors are in the user's words: the directory, not the package.
	_, err := osfs.New(filepath.Join(dir, "missing"))
	if want := "the directory " + filepath.Join(dir, "missing") + " does not exist"; !errors.Is(err, fs.ErrNotExist) || err == nil || err.Error() != want {
		t.Errorf("New(missing) = %v, want %q", err, want)
	}
	_, err = osfs.New(filepath.Join(dir, "file"))
	if want := filepath.Join(dir, "file") + " is not a directory"; !errors.Is(err, vfs.ErrNotDir) || err == nil || err.Error() != want {
		t.Errorf("New(file) = %v, want %q", err, want)
	}

	t.Chdir(dir)
	f, err := osfs.New(".")
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := filepath.Abs("."); f.Dir() != want || !filepath.IsAbs(f.Dir()) {
		t.Errorf("Dir() = %q, want %q", f.Dir(), want)
	}
	if mustRead(t, f, "/file") != "x" {
		t.Error("read through a relative workspace")
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Read(ctx, "/file"); err == nil {
		t.Error("Read after Close succeeded")
	}
}

func TestNotABrancher(t *testing.T) {
	f, _ := newFS(t, nil)
	var b vfs.Backend = f
	if _, ok := b.(vfs.Brancher); ok {
		t.Error("osfs must not branch: its writes go through")
	}
	if _, ok := b.(vfs.Applier); ok {
		t.Error("osfs must not be an Applier")
	}
}

func TestEmptyDirectories(t *testing.T) {
	f, dir := newFS(t, map[string]string{"/d/x": "x"})
	for _, d := range []string{"empty", "d/empty", "nest/a/b"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if e, err := f.Stat(ctx, "/empty"); err != nil || !e.IsDir || e.Size != 0 {
		t.Errorf("Stat(/empty) = %+v, %v", e, err)
	}
	if got := listing(t, f, "/empty"); len(got) != 0 {
		t.Errorf("List(/empty) = %v", got)
	}
	if got, want := listing(t, f, "/"), []string{"/d/", "/empty/", "/nest/"}; !slices.Equal(got, want) {
		t.Errorf("List(/) = %v, want %v", got, want)
	}
	if got, want := walkPaths(t, f, "/"), []string{"/d/x"}; !slices.Equal(got, want) {
		t.Errorf("Walk(/) = %v, want %v", got, want)
	}
	wantErr(t, f.Write(ctx, "/empty", "x"), vfs.ErrIsDir, "Write onto an empty directory")
	_, err := f.Read(ctx, "/empty")
	wantErr(t, err, vfs.ErrIsDir, "Read of an empty directory")

	// Deleting the last file leaves its directory.
	if n, err := f.Delete(ctx, "/d/x"); n != 1 || err != nil {
		t.Fatalf("Delete = %d, %v", n, err)
	}
	if e, err := f.Stat(ctx, "/d"); err != nil || !e.IsDir {
		t.Errorf("Stat(/d) after deleting its last file = %+v, %v", e, err)
	}
	// Deleting a directory tree of empty directories removes it and counts 0.
	if n, err := f.Delete(ctx, "/nest"); n != 0 || err != nil {
		t.Errorf("Delete(/nest) = %d, %v", n, err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "nest")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("/nest still on disk: %v", err)
	}
}

func TestDeleteRootRefused(t *testing.T) {
	f, dir := newFS(t, map[string]string{"/a": "a", "/d/b": "b"})
	for _, p := range []string{"/", ".", "//"} {
		n, err := f.Delete(ctx, p)
		if n != 0 || !errors.Is(err, vfs.ErrPermission) || !strings.Contains(err.Error(), "workspace root") {
			t.Errorf("Delete(%q) = %d, %v", p, n, err)
		}
	}
	if diskRead(t, filepath.Join(dir, "d", "b")) != "b" {
		t.Error("files went")
	}
}

func TestSizesAndTimes(t *testing.T) {
	f, dir := newFS(t, map[string]string{"/d/a": "12345", "/d/b": "1", "/f": "abc"})
	es, err := f.List(ctx, "/")
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(filepath.Join(dir, "d"))
	if es[0].Path != "/d" || !es[0].IsDir || es[0].Size != 0 || !es[0].ModifiedAt.Equal(fi.ModTime()) {
		t.Errorf("directory entry = %+v: want Size 0 and the directory's own time %v", es[0], fi.ModTime())
	}
	fi, _ = os.Stat(filepath.Join(dir, "f"))
	if es[1].Path != "/f" || es[1].Size != 3 || !es[1].ModifiedAt.Equal(fi.ModTime()) {
		t.Errorf("file entry = %+v", es[1])
	}
}

func TestMaxFileBytes(t *testing.T) {
	f, _ := newFS(t, map[string]string{"/ok": "12345", "/big": "123456", "/empty": ""}, osfs.MaxFileBytes(5))
	if mustRead(t, f, "/ok") != "12345" || mustRead(t, f, "/empty") != "" {
		t.Error("files at the limit must read")
	}
	got, err := f.Read(ctx, "/big")
	if got != "" || !errors.Is(err, osfs.ErrTooLarge) || !strings.Contains(err.Error(), "6 bytes") || !strings.Contains(err.Error(), "limit is 5") || !strings.Contains(err.Error(), "/big") {
		t.Errorf("Read(/big) = %q, %v", got, err)
	}
	// It is still a file: Stat, List and Walk show it with its size.
	if e, err := f.Stat(ctx, "/big"); err != nil || e.Size != 6 {
		t.Errorf("Stat(/big) = %+v, %v", e, err)
	}
	if got := walkPaths(t, f, "/"); !slices.Equal(got, []string{"/big", "/empty", "/ok"}) {
		t.Errorf("Walk = %v", got)
	}

	// The default is DefaultMaxFileBytes; a non-positive option keeps it.
	big := strings.Repeat("x", int(osfs.DefaultMaxFileBytes)+1)
	g, _ := newFS(t, map[string]string{"/huge": big, "/limit": big[1:]}, osfs.MaxFileBytes(0))
	if _, err := g.Read(ctx, "/huge"); !errors.Is(err, osfs.ErrTooLarge) {
		t.Errorf("Read of a file over the default limit: %v", err)
	}
	if s := mustRead(t, g, "/limit"); len(s) != int(osfs.DefaultMaxFileBytes) {
		t.Errorf("Read at the default limit: %d bytes", len(s))
	}
}

func TestWriteKeepsPermissions(t *testing.T) {
	f, dir := newFS(t, map[string]string{"/run.sh": "#!/bin/sh\n", "/plain": "p"})
	if err := os.Chmod(filepath.Join(dir, "run.sh"), 0o751); err != nil {
		t.Fatal(err)
	}
	if err := f.Write(ctx, "/run.sh", "#!/bin/sh\necho hi\n"); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "run.sh")); fi.Mode().Perm() != 0o751 {
		t.Errorf("mode after replace = %v, want 0751", fi.Mode().Perm())
	}
	if err := f.Write(ctx, "/new/file.txt", "n"); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "new", "file.txt")); fi.Mode().Perm()&^0o644 != 0 || fi.Mode().Perm()&0o600 != 0o600 {
		t.Errorf("new file mode = %v, want 0644 less the umask", fi.Mode().Perm())
	}
	if fi, _ := os.Stat(filepath.Join(dir, "new")); !fi.IsDir() || fi.Mode().Perm()&^0o755 != 0 || fi.Mode().Perm()&0o700 != 0o700 {
		t.Errorf("new directory mode = %v, want 0755 less the umask", fi.Mode().Perm())
	}
}

// Permission tests need a user that permissions apply to: run as root they
// re-run themselves as an unprivileged user (and .ci/run runs them so).
// Their names start with TestPermission, which .ci/run relies on.

// A file that is not writable is refused, not replaced by a rename, by
// Write, Update and edit_file.
func TestPermissionReadOnlyFile(t *testing.T) {
	if runUnprivileged(t) {
		return
	}
	f, dir := newFS(t, map[string]string{"/ro": "keep"})
	if err := os.Chmod(filepath.Join(dir, "ro"), 0o444); err != nil {
		t.Fatal(err)
	}
	err := f.Write(ctx, "/ro", "changed")
	wantErr(t, err, vfs.ErrPermission, "Write of a read-only file")
	err = f.Update(ctx, "/ro", func(s string) (string, error) { return "changed", nil })
	wantErr(t, err, vfs.ErrPermission, "Update of a read-only file")
	res := runTool(t, vfs.Track(f), "edit_file", `{"file_path":"/ro","old_string":"keep","new_string":"changed"}`)
	if !res.IsError || !strings.Contains(res.Content, "permission denied") {
		t.Errorf("edit_file of a read-only file answered %q", res.Content)
	}
	if diskRead(t, filepath.Join(dir, "ro")) != "keep" {
		t.Error("a read-only file was replaced")
	}
}

func TestPermissionUnreadableDirectory(t *testing.T) {
	if runUnprivileged(t) {
		return
	}
	f, dir := newFS(t, map[string]string{"/a/x": "x", "/locked/y": "y", "/z": "z"})
	locked := filepath.Join(dir, "locked")
	if err := os.Chmod(locked, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(locked, 0o755) })
	if got, want := walkPaths(t, f, "/"), []string{"/a/x", "/z"}; !slices.Equal(got, want) {
		t.Errorf("Walk(/) = %v, want %v", got, want)
	}
	_, err := f.List(ctx, "/locked")
	wantErr(t, err, vfs.ErrPermission, "List of an unreadable directory")
}

// Write replaces through a temporary file, which never shows and never
// stays; files that merely look similar do show. A temporary file does not
// exist in the virtual view: naming one finds nothing, and the name cannot
// be written.
func TestTemporaryFiles(t *testing.T) {
	f, dir := newFS(t, map[string]string{
		"/d/.osfs-0123456789abcdef.tmp":     "left by a writer",
		"/d/.osfs-notatemp.tmp":             "user",
		"/d/.osfs-0123456789ABCDEF.tmp":     "user",
		"/.osfs-00000000000000ff.tmp/inner": "below a temporary name",
		"/keep.txt":                         "TODO",
	}, osfs.NoSweep())
	userFiles := []string{"/d/.osfs-0123456789ABCDEF.tmp", "/d/.osfs-notatemp.tmp", "/keep.txt"}
	if got := walkPaths(t, f, "/"); !slices.Equal(got, userFiles) {
		t.Errorf("Walk = %v, want %v", got, userFiles)
	}
	if got, want := listing(t, f, "/d"), userFiles[:2]; !slices.Equal(got, want) {
		t.Errorf("List = %v, want %v", got, want)
	}
	if got, want := listing(t, f, "/"), []string{"/d/", "/keep.txt"}; !slices.Equal(got, want) {
		t.Errorf("List(/) = %v, want %v", got, want)
	}
	for _, p := range []string{"/d/.osfs-0123456789abcdef.tmp", "/.osfs-00000000000000ff.tmp/inner", "/.osfs-00000000000000ff.tmp"} {
		_, err := f.Stat(ctx, p)
		wantErr(t, err, vfs.ErrNotFound, "Stat of "+p)
		_, err = f.Read(ctx, p)
		wantErr(t, err, vfs.ErrNotFound, "Read of "+p)
		_, _, err = f.Open(ctx, p)
		wantErr(t, err, vfs.ErrNotFound, "Open of "+p)
		_, err = f.Delete(ctx, p)
		wantErr(t, err, vfs.ErrNotFound, "Delete of "+p)
		wantErr(t, f.Update(ctx, p, func(s string) (string, error) { return s, nil }), vfs.ErrNotFound, "Update of "+p)
		_, err = f.List(ctx, p)
		wantErr(t, err, vfs.ErrNotFound, "List of "+p)
		if got := walkPaths(t, f, p); len(got) != 0 {
			t.Errorf("Walk(%s) = %v", p, got)
		}
		err = f.Write(ctx, p, "x")
		wantErr(t, err, vfs.ErrPermission, "Write of "+p)
		if err != nil && !strings.Contains(err.Error(), "reserved") {
			t.Errorf("Write of %s: %v, want it to say the name is reserved", p, err)
		}
	}
	if got := diskRead(t, filepath.Join(dir, "d", ".osfs-0123456789abcdef.tmp")); got != "left by a writer" {
		t.Errorf("a refused write changed the file: %q", got)
	}
	// The tools go through the same view.
	tr := vfs.Track(f)
	for _, c := range []struct{ tool, args, want string }{
		{"glob", `{"pattern":"**/.osfs-*"}`, "/d/.osfs-0123456789ABCDEF.tmp\n/d/.osfs-notatemp.tmp"},
		{"grep", `{"pattern":"writer|below"}`, "No matches"},
		{"read_file", `{"file_path":"/d/.osfs-0123456789abcdef.tmp"}`, "does not exist"},
	} {
		res := runTool(t, tr, c.tool, c.args)
		if c.tool == "glob" && res.Content != c.want || !strings.Contains(res.Content, c.want) {
			t.Errorf("%s(%s) = %q, want %q", c.tool, c.args, res.Content, c.want)
		}
	}
	// Deleting the directory removes what is in it and counts user files only.
	if n, err := f.Delete(ctx, "/d"); n != 2 || err != nil {
		t.Errorf("Delete(/d) = %d, %v; want the 2 user files", n, err)
	}

	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 20 {
				if err := f.Write(ctx, "/e/same.txt", strings.Repeat("v", i*100+j)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	names, _ := os.ReadDir(filepath.Join(dir, "e"))
	for _, n := range names {
		if n.Name() != "same.txt" {
			t.Errorf("left on disk: %s", n.Name())
		}
	}
}

// makeTemp creates a temporary file as a write killed midway leaves it,
// last modified age ago.
func makeTemp(t *testing.T, path string, age time.Duration) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("partial"), 0o644); err != nil {
		t.Fatal(err)
	}
	when := time.Now().Add(-age)
	if err := os.Chtimes(path, when, when); err != nil {
		t.Fatal(err)
	}
}

// Temporary files left by killed writers are removed when a workspace is
// opened (in the background) and when a directory holding them is listed;
// recent ones, which a writer may still be filling, and user files that
// merely look alike stay.
func TestStaleTemporaryFilesRemoved(t *testing.T) {
	dir := t.TempDir()
	seed(t, dir, map[string]string{"/a/b/keep.txt": "k", "/.osfs-notatemp.tmp": "user", "/.osfs-00000000000000AA.tmp": "user"})
	stale := []string{".osfs-0000000000000001.tmp", "a/.osfs-0000000000000002.tmp", "a/b/.osfs-0000000000000003.tmp"}
	for _, p := range stale {
		makeTemp(t, filepath.Join(dir, p), 2*time.Hour)
	}
	fresh := filepath.Join(dir, "a", ".osfs-0000000000000004.tmp")
	makeTemp(t, fresh, 0)
	for _, p := range []string{".osfs-notatemp.tmp", ".osfs-00000000000000AA.tmp"} {
		when := time.Now().Add(-2 * time.Hour)
		os.Chtimes(filepath.Join(dir, p), when, when)
	}

	f := open(t, dir)
	osfs.WaitSweep(f)
	for _, p := range stale {
		if _, err := os.Lstat(filepath.Join(dir, p)); !os.IsNotExist(err) {
			t.Errorf("stale %s still there after opening: %v", p, err)
		}
	}
	for _, p := range []string{fresh, filepath.Join(dir, ".osfs-notatemp.tmp"), filepath.Join(dir, ".osfs-00000000000000AA.tmp"), filepath.Join(dir, "a", "b", "keep.txt")} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}

	// One left behind later goes when its directory is listed.
	later := filepath.Join(dir, "a", "b", ".osfs-0000000000000005.tmp")
	makeTemp(t, later, 2*time.Hour)
	if got, want := listing(t, f, "/a/b"), []string{"/a/b/keep.txt"}; !slices.Equal(got, want) {
		t.Errorf("List = %v, want %v", got, want)
	}
	if _, err := os.Lstat(later); !os.IsNotExist(err) {
		t.Errorf("stale temporary file still there after listing its directory: %v", err)
	}
	if n, err := f.RemoveStaleTemps(ctx); n != 0 || err != nil {
		t.Errorf("RemoveStaleTemps with nothing stale = %d, %v", n, err)
	}
	makeTemp(t, filepath.Join(dir, "x", "y", ".osfs-0000000000000006.tmp"), 2*time.Hour)
	if n, err := f.RemoveStaleTemps(ctx); n != 1 || err != nil {
		t.Errorf("RemoveStaleTemps = %d, %v; want 1", n, err)
	}

	// With NoSweep, opening leaves them (they stay hidden).
	g := open(t, dir, osfs.NoSweep())
	old := filepath.Join(dir, ".osfs-0000000000000007.tmp")
	makeTemp(t, old, 2*time.Hour)
	osfs.WaitSweep(g)
	if _, err := os.Lstat(old); err != nil {
		t.Errorf("NoSweep: %v", err)
	}
}

// Entries whose virtual path Clean would refuse never show.
func TestUnrepresentableNames(t *testing.T) {
	f, dir := newFS(t, map[string]string{"/ok": "ok"})
	if err := os.WriteFile(filepath.Join(dir, `back\slash`), []byte("x"), 0o644); err != nil {
		t.Skip("this filesystem refuses backslashes:", err)
	}
	if got := walkPaths(t, f, "/"); !slices.Equal(got, []string{"/ok"}) {
		t.Errorf("Walk = %v", got)
	}
	if got := listing(t, f, "/"); !slices.Equal(got, []string{"/ok"}) {
		t.Errorf("List = %v", got)
	}
	// Deleting its directory still removes it (and counts it).
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	seed(t, dir, map[string]string{"/d/" + `a\b`: "x", "/d/c": "c"})
	if n, err := f.Delete(ctx, "/d"); n != 2 || err != nil {
		t.Errorf("Delete(/d) = %d, %v", n, err)
	}
}

func TestWalkCancelled(t *testing.T) {
	files := map[string]string{}
	for _, p := range []string{"/a/1", "/a/2", "/b/3", "/c"} {
		files[p] = p
	}
	f, _ := newFS(t, files)
	c, cancel := context.WithCancel(ctx)
	defer cancel()
	var got []string
	var last error
	for e, err := range f.Walk(c, "/") {
		if err != nil {
			last = err
			continue
		}
		got = append(got, e.Path)
		cancel()
	}
	if !slices.Equal(got, []string{"/a/1"}) || !errors.Is(last, context.Canceled) {
		t.Errorf("cancelled walk yielded %v then %v", got, last)
	}
	for _, err := range f.Walk(c, "/") {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("walk on a cancelled context: %v", err)
		}
	}
	if err := f.Write(c, "/x", "x"); !errors.Is(err, context.Canceled) {
		t.Errorf("Write on a cancelled context: %v", err)
	}
	if n, err := f.Delete(c, "/a"); n != 0 || !errors.Is(err, context.Canceled) {
		t.Errorf("Delete on a cancelled context: %d, %v", n, err)
	}
}

// No error shows the host directory: the model sees virtual paths only.
func TestErrorsHideHostPaths(t *testing.T) {
	f, dir := newFS(t, map[string]string{"/f": "f", "/d/x": "x"}, osfs.MaxFileBytes(1))
	var errs []error
	add := func(err error) {
		if err == nil {
			t.Error("expected an error")
		}
		errs = append(errs, err)
	}
	_, err := f.Read(ctx, "/nope")
	add(err)
	_, err = f.Read(ctx, "/d")
	add(err)
	_, err = f.Read(ctx, "/d/x/y")
	add(err)
	_, err = f.Stat(ctx, "/f/g")
	add(err)
	add(f.Write(ctx, "/f/g", "x"))
	add(f.Write(ctx, "/d", "x"))
	_, err = f.Delete(ctx, "/nope")
	add(err)
	_, err = f.List(ctx, "/f")
	add(err)
	_, err = f.List(ctx, "/nope")
	add(err)
	seed(t, dir, map[string]string{"/big": "12"})
	_, err = f.Read(ctx, "/big")
	add(err)
	for _, err := range errs {
		if err != nil && (strings.Contains(err.Error(), dir) || strings.Contains(err.Error(), filepath.Base(dir))) {
			t.Errorf("error names the host directory: %v", err)
		}
	}
}
