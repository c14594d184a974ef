package osfs_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/deepagents-go/deepagents/vfs"
	"github.com/deepagents-go/deepagents/vfs/osfs"
)

// openWorkspace makes a workspace in a fresh directory with the given host
// files, and a read-size limit of 64 bytes.
func openWorkspace(t *testing.T, files map[string]string) (*osfs.FS, string) {
	t.Helper()
	dir := t.TempDir()
	for name, c := range files {
		full := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := osfs.New(dir, osfs.MaxFileBytes(64), osfs.NoSync())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, dir
}

// Open streams a file with no size limit of its own: a file over
// MaxFileBytes, which Read refuses, can still be read in pieces.
func TestOpenReadsPastTheReadLimit(t *testing.T) {
	big := strings.Repeat("0123456789", 100) // 1000 bytes, over the 64-byte limit
	f, _ := openWorkspace(t, map[string]string{"d/big.txt": big, "small": "hi"})
	ctx := context.Background()
	if _, err := f.Read(ctx, "/d/big.txt"); !errors.Is(err, osfs.ErrTooLarge) {
		t.Fatalf("Read of the big file: %v, want ErrTooLarge", err)
	}
	for _, c := range []struct{ path, want string }{{"/d/big.txt", big}, {"d\\big.txt", big}, {"/small", "hi"}} {
		rc, e, err := f.Open(ctx, c.path)
		if err != nil {
			t.Fatalf("Open(%s): %v", c.path, err)
		}
		head := make([]byte, 10)
		if _, err := io.ReadFull(rc, head[:min(10, len(c.want))]); err != nil {
			t.Fatal(err)
		}
		rest, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || string(head[:min(10, len(c.want))])+string(rest) != c.want {
			t.Errorf("Open(%s) read %q%q, %v", c.path, head, rest, err)
		}
		if e.Size != int64(len(c.want)) || e.IsDir || e.ModifiedAt.IsZero() {
			t.Errorf("Open(%s) entry = %+v", c.path, e)
		}
		if e.Path != strings.ReplaceAll("/"+strings.TrimPrefix(c.path, "/"), "\\", "/") {
			t.Errorf("Open(%s) entry path %q", c.path, e.Path)
		}
	}
}

func TestOpenRefusals(t *testing.T) {
	f, dir := openWorkspace(t, map[string]string{"d/x": "x"})
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o644); err != nil {
		t.Fatal(err)
	}
	links := runtime.GOOS != "windows" && os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "out")) == nil
	ctx := context.Background()
	cases := []struct {
		path string
		want error
	}{
		{"/d", vfs.ErrIsDir},
		{"/", vfs.ErrIsDir},
		{"/missing", vfs.ErrNotFound},
		{"/d/x/below", vfs.ErrNotFound},
		{"/a/../d/x", vfs.ErrInvalidPath},
	}
	if links {
		cases = append(cases, struct {
			path string
			want error
		}{"/out", vfs.ErrPermission})
	}
	if syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644) == nil {
		cases = append(cases, struct {
			path string
			want error
		}{"/pipe", vfs.ErrPermission})
	}
	for _, c := range cases {
		rc, _, err := f.Open(ctx, c.path)
		if rc != nil {
			rc.Close()
			t.Errorf("Open(%s) returned a reader", c.path)
		}
		if !errors.Is(err, c.want) {
			t.Errorf("Open(%s) = %v, want %v", c.path, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), dir) {
			t.Errorf("Open(%s) error names the host path: %v", c.path, err)
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := f.Open(cancelled, "/d/x"); !errors.Is(err, context.Canceled) {
		t.Errorf("Open on a cancelled context = %v", err)
	}
}

// vfs.Open finds the disk backend's Open below the Tracked wrapper the agent
// loop puts around it, and below a layer for paths the layer has not
// changed.
func TestVFSOpenUsesTheDisk(t *testing.T) {
	big := strings.Repeat("y", 500)
	f, _ := openWorkspace(t, map[string]string{"big": big})
	ctx := context.Background()
	layer := vfs.NewLayer(f)
	if err := layer.Write(ctx, "/new", "fresh"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		b    vfs.Backend
		path string
		want string
	}{
		{"tracked", vfs.Track(f), "/big", big},
		{"layer, unchanged path", layer, "/big", big},
		{"layer, its own file", layer, "/new", "fresh"},
	} {
		rc, _, err := vfs.Open(ctx, c.b, c.path)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || string(got) != c.want {
			t.Errorf("%s: read %d bytes, %v", c.name, len(got), err)
		}
	}
}
