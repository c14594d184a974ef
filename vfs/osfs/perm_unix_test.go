//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package osfs_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A replaced file keeps exactly its permission bits, including those the
// usual umask (022) takes away from a newly created file: group and
// others' write bits (0666, 0775) as well as a narrow mode (0600). The
// test sets that umask itself, so it means the same on every machine; it
// must not run in parallel with anything that creates files.
func TestReplaceKeepsBitsTheUmaskWouldDrop(t *testing.T) {
	old := syscall.Umask(0o022)
	t.Cleanup(func() { syscall.Umask(old) })
	modes := map[string]fs.FileMode{"/shared.txt": 0o666, "/tool.sh": 0o775, "/private": 0o600}
	files := map[string]string{}
	for p := range modes {
		files[p] = "before"
	}
	f, dir := newFS(t, files)
	for p, m := range modes {
		if err := os.Chmod(filepath.Join(dir, p), m); err != nil {
			t.Fatal(err)
		}
	}
	check := func(how string) {
		t.Helper()
		for p, m := range modes {
			fi, err := os.Stat(filepath.Join(dir, p))
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != m {
				t.Errorf("mode of %s after %s = %v, want %v", p, how, fi.Mode().Perm(), m)
			}
		}
	}
	for p := range modes {
		if err := f.Write(ctx, p, "written"); err != nil {
			t.Fatal(err)
		}
	}
	check("Write")
	for p := range modes {
		if err := f.Update(ctx, p, func(s string) (string, error) { return s + ", updated", nil }); err != nil {
			t.Fatal(err)
		}
		if got := diskRead(t, filepath.Join(dir, p)); got != "written, updated" {
			t.Errorf("%s = %q", p, got)
		}
	}
	check("Update")
}
