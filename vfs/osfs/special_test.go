//go:build linux || darwin || freebsd || netbsd || openbsd

package osfs_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/vfs"
)

// A FIFO is neither a file nor a directory: it never shows, naming it is
// refused, and nothing blocks on it.
func TestSpecialFiles(t *testing.T) {
	f, dir := newFS(t, map[string]string{"/d/x": "x"})
	fifo := filepath.Join(dir, "d", "pipe")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	symlink(t, "d/pipe", filepath.Join(dir, "pipelink"))

	done := make(chan struct{})
	go func() {
		defer close(done)
		if got := walkPaths(t, f, "/"); !slices.Equal(got, []string{"/d/x"}) {
			t.Errorf("Walk = %v", got)
		}
		if got := listing(t, f, "/d"); !slices.Equal(got, []string{"/d/x"}) {
			t.Errorf("List(/d) = %v", got)
		}
		if got := listing(t, f, "/"); !slices.Equal(got, []string{"/d/"}) {
			t.Errorf("List(/) = %v", got)
		}
		for _, p := range []string{"/d/pipe", "/pipelink"} {
			_, err := f.Stat(ctx, p)
			wantErr(t, err, vfs.ErrPermission, "Stat("+p+")")
			_, err = f.Read(ctx, p)
			wantErr(t, err, vfs.ErrPermission, "Read("+p+")")
			wantErr(t, f.Write(ctx, p, "x"), vfs.ErrPermission, "Write("+p+")")
			_, err = f.Delete(ctx, p)
			wantErr(t, err, vfs.ErrPermission, "Delete("+p+")")
			if got := walkPaths(t, f, p); len(got) != 0 {
				t.Errorf("Walk(%q) = %v", p, got)
			}
		}
		if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
			t.Errorf("the FIFO was replaced: %v", err)
		}
		// Deleting its directory removes it, counting only the file.
		if n, err := f.Delete(ctx, "/d"); n != 1 || err != nil {
			t.Errorf("Delete(/d) = %d, %v", n, err)
		}
		if _, err := os.Lstat(fifo); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("FIFO left: %v", err)
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("an operation blocked on a FIFO")
	}
}
