package vfs_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/fstools"
	"github.com/deepagents-go/deepagents/tool"
	"github.com/deepagents-go/deepagents/vfs"
	"github.com/deepagents-go/deepagents/vfs/osfs"
	"github.com/deepagents-go/deepagents/vfs/vfstest"
)

var bg = context.Background()

// seeded builds a composite of fresh Memories at prefixes and fills it with
// files through Apply, which routes each file to its owner.
func seeded(t *testing.T, files map[string]string, prefixes ...string) *vfs.Composite {
	t.Helper()
	var routes []vfs.Route
	for _, p := range prefixes {
		routes = append(routes, vfs.Route{Prefix: p, Backend: vfs.NewMemory(nil)})
	}
	c, err := vfs.NewComposite(vfs.NewMemory(nil), routes...)
	if err != nil {
		t.Fatal(err)
	}
	c.Apply(delta(files))
	return c
}

func delta(files map[string]string) vfs.Delta {
	var d vfs.Delta
	for p, s := range files {
		d = append(d, vfs.Change{Path: p, File: &vfs.File{Content: s}})
	}
	return d
}

// Routes sit where the suite's paths go: nested in a fallback directory
// (/d/e/), one level down (/c/d/), below a directory created by writing
// (/new/deep/), and at the top (/other/).
var suiteRoutes = []string{"/d/e/", "/c/d/", "/new/deep/", "/other/"}

func TestCompositeConformance(t *testing.T) {
	vfstest.Run(t, func(t *testing.T, files map[string]string) vfs.Backend {
		return seeded(t, files, suiteRoutes...)
	})
}

// The layer the agent loop gives each tool call.
func TestCompositeLayerConformance(t *testing.T) {
	vfstest.Run(t, func(t *testing.T, files map[string]string) vfs.Backend {
		return seeded(t, files, suiteRoutes...).Branch()
	})
}

// The unlayered view of a composite over a real directory.
func TestCompositeUnlayeredConformance(t *testing.T) {
	vfstest.Run(t, func(t *testing.T, files map[string]string) vfs.Backend {
		u := seeded(t, files, suiteRoutes...).Unlayered()
		if _, ok := u.(vfs.Brancher); ok {
			t.Fatal("the unlayered view can branch")
		}
		if _, ok := u.(vfs.Updater); !ok {
			t.Fatal("the unlayered view lost Update")
		}
		return u
	})
}

// A route to a real directory: the prefix is stripped, so /d/e/x is DIR/x.
func TestCompositeOSFSConformance(t *testing.T) {
	vfstest.Run(t, func(t *testing.T, files map[string]string) vfs.Backend {
		dir := t.TempDir()
		disk, err := osfs.New(dir, osfs.NoSync())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { disk.Close() })
		mem := vfs.NewMemory(nil)
		c, err := vfs.NewComposite(mem, vfs.Route{Prefix: "/d/e", Backend: disk})
		if err != nil {
			t.Fatal(err)
		}
		for p, s := range files {
			if rest, ok := strings.CutPrefix(p, "/d/e/"); ok {
				full := filepath.Join(dir, filepath.FromSlash(rest))
				if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			mem.Apply(delta(map[string]string{p: s}))
		}
		return c
	})
}

func TestCompositeRouting(t *testing.T) {
	mem, mems, deep := vfs.NewMemory(nil), vfs.NewMemory(nil), vfs.NewMemory(nil)
	c, err := vfs.NewComposite(mem,
		vfs.Route{Prefix: "/memories/", Backend: mems},
		vfs.Route{Prefix: "/memories/deep", Backend: deep})
	if err != nil {
		t.Fatal(err)
	}
	for p, s := range map[string]string{"/notes.md": "n", "/memories/a.md": "a", "/memories/deep/b.md": "b", "/memories-x": "x"} {
		if err := c.Write(bg, p, s); err != nil {
			t.Fatalf("Write(%s): %v", p, err)
		}
	}
	// Each backend got its paths with the prefix stripped; the longest
	// prefix won.
	for _, c := range []struct {
		b    *vfs.Memory
		want []string
	}{
		{mem, []string{"/memories-x", "/notes.md"}},
		{mems, []string{"/a.md"}},
		{deep, []string{"/b.md"}},
	} {
		if got := vfstest.Paths(t, c.b, "/"); !slices.Equal(got, c.want) {
			t.Errorf("backend holds %v, want %v", got, c.want)
		}
	}
	if got, want := vfstest.Listing(t, c, "/"), []string{"/memories/", "/memories-x", "/notes.md"}; !slices.Equal(got, want) {
		t.Errorf("List(/) = %v, want %v", got, want)
	}
	if got, want := vfstest.Listing(t, c, "/memories"), []string{"/memories/a.md", "/memories/deep/"}; !slices.Equal(got, want) {
		t.Errorf("List(/memories) = %v, want %v", got, want)
	}
	if got, want := vfstest.Paths(t, c, "/"), []string{"/memories-x", "/memories/a.md", "/memories/deep/b.md", "/notes.md"}; !slices.Equal(got, want) {
		t.Errorf("Walk(/) = %v, want %v", got, want)
	}
	// A file the fallback holds below a mount point is hidden by it.
	mem.Apply(delta(map[string]string{"/memories/hidden": "h"}))
	if _, err := c.Read(bg, "/memories/hidden"); !errors.Is(err, vfs.ErrNotFound) {
		t.Errorf("Read of a fallback file under a mount point: %v, want not found", err)
	}
	if got := vfstest.Paths(t, c, "/memories"); slices.Contains(got, "/memories/hidden") {
		t.Errorf("Walk(/memories) = %v shows a hidden fallback file", got)
	}
	// Errors name the composite's path, not the route's.
	_, err = c.Read(bg, "/memories/deep/nope")
	if !errors.Is(err, vfs.ErrNotFound) || !strings.Contains(err.Error(), "/memories/deep/nope") {
		t.Errorf("Read of a missing routed file: %v", err)
	}
	// A file cannot be written at a mount point or its parents.
	for _, p := range []string{"/memories", "/memories/deep"} {
		if err := c.Write(bg, p, "x"); !errors.Is(err, vfs.ErrIsDir) {
			t.Errorf("Write(%s) = %v, want is a directory", p, err)
		}
	}
}

// An empty route is an implied directory like any other: it shows once it
// holds a file.
func TestCompositeEmptyRoute(t *testing.T) {
	c := seeded(t, map[string]string{"/a.txt": "a"}, "/memories/")
	if got, want := vfstest.Listing(t, c, "/"), []string{"/a.txt"}; !slices.Equal(got, want) {
		t.Errorf("List(/) = %v, want %v", got, want)
	}
	if _, err := c.Stat(bg, "/memories"); !errors.Is(err, vfs.ErrNotFound) {
		t.Errorf("Stat of an empty mount point: %v", err)
	}
	if err := c.Write(bg, "/memories/x", "x"); err != nil {
		t.Fatal(err)
	}
	if e, err := c.Stat(bg, "/memories"); err != nil || !e.IsDir {
		t.Errorf("Stat(/memories) = %+v, %v; want a directory", e, err)
	}
}

func TestCompositeReadOnly(t *testing.T) {
	skills := vfs.NewMemory(vfstest.Files(map[string]string{"/web/SKILL.md": "skill"}))
	c, err := vfs.NewComposite(vfs.NewMemory(nil), vfs.Route{Prefix: "/skills", Backend: skills, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := vfstest.MustRead(t, c, "/skills/web/SKILL.md"); got != "skill" {
		t.Errorf("Read = %q", got)
	}
	rc, e, err := vfs.Open(bg, c, "/skills/web/SKILL.md")
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(rc); string(b) != "skill" || e.Path != "/skills/web/SKILL.md" {
		t.Errorf("Open = %q, %+v", b, e)
	}
	rc.Close()
	for _, b := range []vfs.Backend{c, c.Branch(), c.Branch().Branch()} {
		for _, tc := range []struct {
			op  string
			run func() error
		}{
			{"write", func() error { return b.Write(bg, "/skills/web/SKILL.md", "x") }},
			{"write", func() error { return b.Write(bg, "/skills/new.md", "x") }},
			{"edit", func() error {
				return vfs.Update(bg, b, "/skills/web/SKILL.md", func(s string) (string, error) { return s + "!", nil })
			}},
			{"delete", func() error { _, err := b.Delete(bg, "/skills/web"); return err }},
			{"delete", func() error { _, err := b.Delete(bg, "/"); return err }},
		} {
			err := tc.run()
			if !errors.Is(err, vfs.ErrPermission) || !strings.Contains(err.Error(), "/skills/ is mounted read-only") ||
				!strings.HasPrefix(err.Error(), tc.op+" ") {
				t.Errorf("%T %s: %v; want a permission error naming the route", b, tc.op, err)
			}
		}
	}
	if got := vfstest.Paths(t, skills, "/"); !slices.Equal(got, []string{"/web/SKILL.md"}) || vfstest.MustRead(t, skills, "/web/SKILL.md") != "skill" {
		t.Errorf("the read-only backend changed: %v", got)
	}
}

// Apply, as the agent loop's merge uses it, routes each change.
func TestCompositeBranchMerge(t *testing.T) {
	mem, store := vfs.NewMemory(nil), vfs.NewMemory(nil)
	c, err := vfs.NewComposite(mem, vfs.Route{Prefix: "/memories/", Backend: store})
	if err != nil {
		t.Fatal(err)
	}
	l1, l2 := c.Branch(), c.Branch()
	if err := l1.Write(bg, "/memories/x", "one"); err != nil {
		t.Fatal(err)
	}
	if err := l2.Write(bg, "/a.txt", "two"); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Stat(bg, "/x"); !errors.Is(err, vfs.ErrNotFound) {
		t.Errorf("a layer's write reached the store before the merge: %v", err)
	}
	net, conflicts := vfs.Merge(bg, c, []vfs.Delta{l1.Delta(), l2.Delta()}, []string{"c1", "c2"})
	if len(net) != 2 || len(conflicts) != 0 {
		t.Errorf("Merge = %v, %v", net, conflicts)
	}
	if got := vfstest.MustRead(t, store, "/x"); got != "one" {
		t.Errorf("store /x = %q", got)
	}
	if got := vfstest.MustRead(t, mem, "/a.txt"); got != "two" {
		t.Errorf("fallback /a.txt = %q", got)
	}
}

func TestCompositeMountState(t *testing.T) {
	store := vfs.NewMemory(nil)
	c, err := vfs.NewComposite(nil, vfs.Route{Prefix: "/memories/", Backend: store})
	if err != nil {
		t.Fatal(err)
	}
	state := vfs.NewMemory(nil)
	b, ok := c.MountState(state)
	if !ok {
		t.Fatal("a composite without a fallback does not mount the run's state")
	}
	if err := b.Write(bg, "/a", "a"); err != nil {
		t.Fatal(err)
	}
	if err := b.Write(bg, "/memories/m", "m"); err != nil {
		t.Fatal(err)
	}
	if got := vfstest.Paths(t, state, "/"); !slices.Equal(got, []string{"/a"}) {
		t.Errorf("state holds %v", got)
	}
	if got := vfstest.Paths(t, c, "/"); !slices.Equal(got, []string{"/memories/m"}) {
		t.Errorf("the unmounted composite sees %v; want only the shared route", got)
	}
	// Composites nest: one over a state composite mounts the state too.
	skills := vfs.NewMemory(vfstest.Files(map[string]string{"/s/SKILL.md": "s"}))
	outer, err := vfs.NewComposite(c, vfs.Route{Prefix: "/skills/", Backend: skills, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	state2 := vfs.NewMemory(nil)
	nb, ok := outer.MountState(state2)
	if !ok {
		t.Fatal("a composite over a state composite does not mount the run's state")
	}
	if err := nb.Write(bg, "/b", "b"); err != nil {
		t.Fatal(err)
	}
	if got, want := vfstest.Paths(t, nb, "/"), []string{"/b", "/memories/m", "/skills/s/SKILL.md"}; !slices.Equal(got, want) {
		t.Errorf("nested mount sees %v, want %v", got, want)
	}
	if got := vfstest.Paths(t, state2, "/"); !slices.Equal(got, []string{"/b"}) {
		t.Errorf("nested mount's state holds %v", got)
	}
	// With adds routes and keeps the state placeholder.
	more, err := c.With(vfs.Route{Prefix: "/skills/", Backend: skills, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if b, ok := more.MountState(vfs.NewMemory(nil)); !ok || !slices.Equal(vfstest.Paths(t, b, "/skills"), []string{"/skills/s/SKILL.md"}) {
		t.Errorf("With lost the state placeholder or the new route (%v)", ok)
	}
	if _, err := c.With(vfs.Route{Prefix: "/memories", Backend: skills}); err == nil {
		t.Error("With accepted a second route at /memories/")
	}
	own, _ := vfs.NewComposite(vfs.NewMemory(nil))
	if _, ok := own.MountState(state); ok {
		t.Error("a composite with its own fallback mounted the run's state")
	}
}

func TestNewCompositeRefuses(t *testing.T) {
	m := vfs.NewMemory(nil)
	for _, tc := range []struct {
		routes []vfs.Route
		want   string
	}{
		{[]vfs.Route{{Prefix: "/"}}, "no backend"},
		{[]vfs.Route{{Prefix: "/", Backend: m}}, "is the root"},
		{[]vfs.Route{{Prefix: "../x", Backend: m}}, "invalid path"},
		{[]vfs.Route{{Prefix: "", Backend: m}}, "invalid path"},
		{[]vfs.Route{{Prefix: "/a/", Backend: m}, {Prefix: "/a", Backend: m}}, "two routes are mounted at /a/"},
	} {
		if _, err := vfs.NewComposite(m, tc.routes...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewComposite(%v) = %v, want an error containing %q", tc.routes, err, tc.want)
		}
	}
}

// The glob and grep tools at / see every route's files beside the
// fallback's, each under its mount point; a file the fallback holds below
// a mount point stays hidden.
func TestCompositeSearchToolsMergeRoutes(t *testing.T) {
	mem := vfs.NewMemory(vfstest.Files(map[string]string{"/notes.md": "needle in notes", "/memories/hidden.md": "needle hidden"}))
	mems := vfs.NewMemory(vfstest.Files(map[string]string{"/prefs.md": "needle in prefs"}))
	deep := vfs.NewMemory(vfstest.Files(map[string]string{"/b.md": "needle deep", "/c.txt": "needle, not markdown"}))
	c, err := vfs.NewComposite(mem,
		vfs.Route{Prefix: "/memories/", Backend: mems},
		vfs.Route{Prefix: "/memories/deep/", Backend: deep, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	tools := map[string]tool.Tool{}
	for _, tl := range fstools.Tools() {
		tools[tl.Spec().Name] = tl
	}
	for _, tc := range []struct {
		tool, args string
		want       []string
	}{
		{"glob", `{"pattern":"**/*.md","path":"/"}`, []string{"/memories/deep/b.md", "/memories/prefs.md", "/notes.md"}},
		{"grep", `{"pattern":"needle","path":"/","glob":"*.md"}`, []string{"/memories/deep/b.md", "/memories/prefs.md", "/notes.md"}},
		{"grep", `{"pattern":"needle","path":"/"}`, []string{"/memories/deep/b.md", "/memories/deep/c.txt", "/memories/prefs.md", "/notes.md"}},
	} {
		res, err := tools[tc.tool].Run(bg, &tool.Env{Files: c}, json.RawMessage(tc.args))
		if err != nil || res.IsError {
			t.Fatalf("%s %s: %v, %q", tc.tool, tc.args, err, res.Content)
		}
		var got []string
		for l := range strings.Lines(res.Content) {
			if l = strings.TrimSpace(l); strings.HasPrefix(l, "/") {
				got = append(got, l)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s %s found %v, want %v (result %q)", tc.tool, tc.args, got, tc.want, res.Content)
		}
	}
}

// Deleting a directory that holds mount points empties their routes and
// keeps the mount points; with a read-only route among them it is refused
// and changes nothing, in the fallback or in any route.
func TestCompositeDeleteAcrossRoutes(t *testing.T) {
	mem := vfs.NewMemory(vfstest.Files(map[string]string{"/a/x": "x", "/b": "b"}))
	notes := vfs.NewMemory(vfstest.Files(map[string]string{"/n1": "1", "/sub/n2": "2"}))
	c, err := vfs.NewComposite(mem, vfs.Route{Prefix: "/a/notes/", Backend: notes})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := c.Delete(bg, "/a"); n != 3 || err != nil {
		t.Fatalf("Delete(/a) = %d, %v; want 3 files", n, err)
	}
	if got := vfstest.Paths(t, notes, "/"); len(got) != 0 {
		t.Errorf("the route still holds %v", got)
	}
	if got := vfstest.Paths(t, mem, "/"); !slices.Equal(got, []string{"/b"}) {
		t.Errorf("the fallback holds %v, want [/b]", got)
	}
	if err := c.Write(bg, "/a/notes/again", "x"); err != nil {
		t.Errorf("the emptied route no longer takes files: %v", err)
	}
	if got := vfstest.Paths(t, notes, "/"); !slices.Equal(got, []string{"/again"}) {
		t.Errorf("a write under the mount point went to %v in the route", got)
	}

	mem = vfs.NewMemory(vfstest.Files(map[string]string{"/a/x": "x"}))
	rw := vfs.NewMemory(vfstest.Files(map[string]string{"/n": "n"}))
	ro := vfs.NewMemory(vfstest.Files(map[string]string{"/s": "s"}))
	c, err = vfs.NewComposite(mem, vfs.Route{Prefix: "/a/rw/", Backend: rw}, vfs.Route{Prefix: "/a/ro/", Backend: ro, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := c.Delete(bg, "/a"); n != 0 || !errors.Is(err, vfs.ErrPermission) || !strings.Contains(err.Error(), "/a/ro/ is mounted read-only") {
		t.Errorf("Delete(/a) over a read-only route = %d, %v", n, err)
	}
	for name, b := range map[string]*vfs.Memory{"fallback": mem, "read-write route": rw, "read-only route": ro} {
		if got := vfstest.Paths(t, b, "/"); len(got) != 1 {
			t.Errorf("the refused delete changed the %s: %v", name, got)
		}
	}
}
