package vfs_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/vfs"
	"github.com/deepagents-go/deepagents/vfs/vfstest"
)

// FuzzCompositeRoute mounts a route at a fuzzed prefix and writes a fuzzed
// path through the composite: the file lands in exactly one backend, at
// the path with the prefix stripped when the route owns it, reads back,
// and shows in the composite's walk of the root.
func FuzzCompositeRoute(f *testing.F) {
	for _, s := range [][2]string{
		{"/memories/", "/memories/a.md"},
		{"memories", "/memories-x"},
		{"/a/b", "/a/b/c/d"},
		{"/a/b", "/a"},
		{"//x/./y/", "x/y/z"},
		{"/m", "/m"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, prefix, path string) {
		fallback, routed := vfs.NewMemory(nil), vfs.NewMemory(nil)
		c, err := vfs.NewComposite(fallback, vfs.Route{Prefix: prefix, Backend: routed})
		if err != nil {
			return
		}
		dir := strings.TrimSuffix(c.Routes()[0].Prefix, "/")
		p, err := vfs.Clean(path)
		if err != nil {
			if c.Write(bg, path, "x") == nil {
				t.Fatalf("Write(%q) of a path Clean refuses succeeded", path)
			}
			return
		}
		err = c.Write(bg, p, "content")
		switch {
		case p == dir || vfs.Under(dir, p):
			if !errors.Is(err, vfs.ErrIsDir) {
				t.Fatalf("Write at the mount point or a parent (%q over %q) = %v", p, dir, err)
			}
			return
		case err != nil:
			t.Fatalf("Write(%q) with a route at %q: %v", p, dir, err)
		}
		if got, err := c.Read(bg, p); err != nil || got != "content" {
			t.Fatalf("Read(%q) = %q, %v", p, got, err)
		}
		inRoute, inFallback := vfstest.Paths(t, routed, "/"), vfstest.Paths(t, fallback, "/")
		if vfs.Under(p, dir) {
			if want := p[len(dir):]; !slices.Equal(inRoute, []string{want}) || len(inFallback) != 0 {
				t.Fatalf("%q under %q: route holds %v (want %q), fallback %v", p, dir, inRoute, want, inFallback)
			}
		} else if !slices.Equal(inFallback, []string{p}) || len(inRoute) != 0 {
			t.Fatalf("%q outside %q: fallback holds %v, route %v", p, dir, inFallback, inRoute)
		}
		if got := vfstest.Paths(t, c, "/"); !slices.Equal(got, []string{p}) {
			t.Fatalf("Walk(/) = %v, want [%q]", got, p)
		}
	})
}
