package vfs

import (
	"context"
	"errors"
	"io"
	"testing"
)

// Backends without an Open of their own are read from memory, through
// every wrapper, with the errors Read gives.
func TestOpenFallsBackToRead(t *testing.T) {
	ctx := context.Background()
	m := NewMemory(map[string]File{"/a/b.txt": {Content: "hello"}})
	l := m.Branch()
	if err := l.Write(ctx, "/a/c.txt", "layer"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Delete(ctx, "/a/b.txt"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		b    Backend
		path string
		want string
		err  error
	}{
		{"memory", m, "/a/b.txt", "hello", nil},
		{"memory, backslashes", m, `a\b.txt`, "hello", nil},
		{"tracked", Track(m), "/a/b.txt", "hello", nil},
		{"layer's own file", l, "/a/c.txt", "layer", nil},
		{"deleted in the layer", l, "/a/b.txt", "", ErrNotFound},
		{"missing", m, "/nope", "", ErrNotFound},
		{"directory", m, "/a", "", ErrIsDir},
		{"bad path", m, "../x", "", ErrInvalidPath},
	} {
		rc, e, err := Open(ctx, c.b, c.path)
		if c.err != nil {
			if !errors.Is(err, c.err) || rc != nil {
				t.Errorf("%s: %v, want %v", c.name, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got, _ := io.ReadAll(rc)
		if string(got) != c.want || e.Size != int64(len(c.want)) || rc.Close() != nil {
			t.Errorf("%s: read %q, entry %+v", c.name, got, e)
		}
		if mc, ok := rc.(interface{ Content() string }); !ok || mc.Content() != c.want {
			t.Errorf("%s: no Content method with the whole text", c.name)
		}
	}
}

// Without a stream below, Open reads through the wrapper it was given, so
// the wrapper's rules hold: a base directory emptied in a layer is gone,
// not a directory.
func TestOpenKeepsLayerRules(t *testing.T) {
	ctx := context.Background()
	l := NewMemory(map[string]File{"/d/x": {Content: "x"}}).Branch()
	if _, err := l.Delete(ctx, "/d/x"); err != nil {
		t.Fatal(err)
	}
	_, readErr := l.Read(ctx, "/d")
	_, _, openErr := Open(ctx, l, "/d")
	if !errors.Is(readErr, ErrNotFound) || !errors.Is(openErr, ErrNotFound) {
		t.Errorf("Read = %v, Open = %v; want both not found", readErr, openErr)
	}
}
