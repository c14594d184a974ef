package vfstest_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/deepagents-go/deepagents/vfs"
	"github.com/deepagents-go/deepagents/vfs/osfs"
	"github.com/deepagents-go/deepagents/vfs/vfstest"
)

func TestMemory(t *testing.T) {
	vfstest.Run(t, func(t *testing.T, files map[string]string) vfs.Backend {
		return vfs.NewMemory(vfstest.Files(files))
	})
}

// The files are in the base; the layer starts empty.
func TestLayer(t *testing.T) {
	vfstest.Run(t, func(t *testing.T, files map[string]string) vfs.Backend {
		return vfs.NewMemory(vfstest.Files(files)).Branch()
	})
}

// Every other file lives in the layer over a stale base copy, and the base
// holds files the layer deleted: the suite must see exactly files.
func TestLayerMixed(t *testing.T) {
	vfstest.Run(t, vfstest.MixedLayer)
}

// A layer over a layer, as a subagent's call sees its parent's call.
func TestNestedLayer(t *testing.T) {
	vfstest.Run(t, func(t *testing.T, files map[string]string) vfs.Backend {
		return vfs.NewMemory(vfstest.Files(files)).Branch().Branch()
	})
}

func TestTracked(t *testing.T) {
	vfstest.Run(t, func(t *testing.T, files map[string]string) vfs.Backend {
		return vfs.Track(vfs.NewMemory(vfstest.Files(files)))
	})
}

// newOSFS seeds a temporary directory with plain os calls (not through the
// backend under test) and opens it.
func newOSFS(t *testing.T, files map[string]string, opts ...osfs.Option) *osfs.FS {
	t.Helper()
	dir := t.TempDir()
	for p, c := range files {
		full := filepath.Join(dir, filepath.FromSlash(p[1:]))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fsys, err := osfs.New(dir, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fsys.Close() })
	return fsys
}

func TestOSFS(t *testing.T) {
	vfstest.Run(t, func(t *testing.T, files map[string]string) vfs.Backend { return newOSFS(t, files) })
}

// How the agent loop uses a real directory. (Without flushing to disk, to
// keep it quick; TestOSFS runs the default.)
func TestTrackedOSFS(t *testing.T) {
	vfstest.Run(t, func(t *testing.T, files map[string]string) vfs.Backend {
		return vfs.Track(newOSFS(t, files, osfs.NoSync()))
	})
}

// A layer over a real directory: reads fall through to disk.
func TestLayerOverOSFS(t *testing.T) {
	vfstest.Run(t, func(t *testing.T, files map[string]string) vfs.Backend {
		return vfs.NewLayer(newOSFS(t, files, osfs.NoSync()))
	})
}
