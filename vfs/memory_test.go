package vfs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"
)

var ctx = context.Background()

// clock is a fake time source that ticks a second per reading.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

func files(kv ...string) map[string]File {
	m := map[string]File{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = File{Content: kv[i+1]}
	}
	return m
}

func paths(t *testing.T, b Backend, dir string) []string {
	t.Helper()
	var out []string
	for e, err := range b.Walk(ctx, dir) {
		if err != nil {
			t.Fatalf("walk %s: %v", dir, err)
		}
		out = append(out, e.Path)
	}
	return out
}

func listing(t *testing.T, b Backend, dir string) []string {
	t.Helper()
	es, err := b.List(ctx, dir)
	if err != nil {
		t.Fatalf("list %s: %v", dir, err)
	}
	var out []string
	for _, e := range es {
		s := e.Path
		if e.IsDir {
			s += "/"
		}
		out = append(out, fmt.Sprintf("%s:%d", s, e.Size))
	}
	return out
}

func mustRead(t *testing.T, b Backend, p string) string {
	t.Helper()
	s, err := b.Read(ctx, p)
	if err != nil {
		t.Fatalf("read %s: %v", p, err)
	}
	return s
}

func wantErr(t *testing.T, err, target error, what string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: got error %v, want %v", what, err, target)
	}
}

func TestMemoryStatRead(t *testing.T) {
	m := NewMemory(files("/a.txt", "hello", "/d/e/f.txt", "fff", "/d/g", ""))
	for _, c := range []struct {
		path  string
		entry Entry
		err   error
	}{
		{path: "/a.txt", entry: Entry{Path: "/a.txt", Size: 5}},
		{path: "a.txt", entry: Entry{Path: "/a.txt", Size: 5}},
		{path: "/d", entry: Entry{Path: "/d", IsDir: true}},
		{path: "/d/e/", entry: Entry{Path: "/d/e", IsDir: true}},
		{path: "/", entry: Entry{Path: "/", IsDir: true}},
		{path: "/d/g", entry: Entry{Path: "/d/g"}},
		{path: "/nope", err: ErrNotFound},
		{path: "/a.txt/x", err: ErrNotFound},
		{path: "/d/e/f", err: ErrNotFound},
		{path: "../x", err: ErrInvalidPath},
	} {
		e, err := m.Stat(ctx, c.path)
		if c.err != nil {
			wantErr(t, err, c.err, "stat "+c.path)
			continue
		}
		e.ModifiedAt = time.Time{}
		if err != nil || e != c.entry {
			t.Errorf("stat %s = %+v, %v; want %+v", c.path, e, err, c.entry)
		}
	}
	if got := mustRead(t, m, "/d/e/f.txt"); got != "fff" {
		t.Errorf("read = %q", got)
	}
	_, err := m.Read(ctx, "/d")
	wantErr(t, err, ErrIsDir, "read dir")
	_, err = m.Read(ctx, "/")
	wantErr(t, err, ErrIsDir, "read root")
	_, err = m.Read(ctx, "/nope")
	wantErr(t, err, ErrNotFound, "read missing")
	_, err = m.Read(ctx, "~/x")
	wantErr(t, err, ErrInvalidPath, "read invalid")
	var pe *fs.PathError
	if _, err := m.Read(ctx, "/nope"); !errors.As(err, &pe) || pe.Path != "/nope" || pe.Op != "read" {
		t.Errorf("missing read error should be an fs.PathError naming the path: %v", err)
	}
}

func TestMemoryWrite(t *testing.T) {
	c := newClock()
	m := NewMemory(files("/a.txt", "a", "/d/f", "f"))
	m.SetClock(c.now)

	if err := m.Write(ctx, "new/x.txt", "x"); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, m, "/new/x.txt"); got != "x" {
		t.Errorf("got %q", got)
	}
	if e, _ := m.Stat(ctx, "/new"); !e.IsDir {
		t.Error("parent directory not implied")
	}
	created := m.Files()["/new/x.txt"]
	if created.CreatedAt.IsZero() || !created.CreatedAt.Equal(created.ModifiedAt) {
		t.Errorf("new file times: %+v", created)
	}
	if err := m.Write(ctx, "/new/x.txt", "y"); err != nil {
		t.Fatal(err)
	}
	over := m.Files()["/new/x.txt"]
	if !over.CreatedAt.Equal(created.CreatedAt) || !over.ModifiedAt.After(created.ModifiedAt) || over.Content != "y" {
		t.Errorf("overwrite should keep the created time and move the modified time: %+v then %+v", created, over)
	}

	for _, c := range []struct {
		path string
		err  error
	}{
		{"/", ErrIsDir},
		{"/d", ErrIsDir},
		{"/d/", ErrIsDir},
		{"/a.txt/b", ErrNotDir},
		{"/d/f/g/h", ErrNotDir},
		{"/x/../y", ErrInvalidPath},
		{"", ErrInvalidPath},
	} {
		wantErr(t, m.Write(ctx, c.path, "z"), c.err, "write "+c.path)
	}
	if m.Len() != 3 {
		t.Errorf("failed writes changed the files: %v", slices.Sorted(maps.Keys(m.Files())))
	}
}

func TestMemoryDelete(t *testing.T) {
	m := NewMemory(files("/a.txt", "a", "/src/b", "b", "/src/sub/c", "c", "/srcx", "x", "/src.go", "g"))
	n, err := m.Delete(ctx, "/a.txt")
	if n != 1 || err != nil {
		t.Errorf("delete file = %d, %v", n, err)
	}
	n, err = m.Delete(ctx, "src/")
	if n != 2 || err != nil {
		t.Errorf("delete dir = %d, %v", n, err)
	}
	if got := paths(t, m, "/"); !slices.Equal(got, []string{"/src.go", "/srcx"}) {
		t.Errorf("left %v", got)
	}
	if _, err := m.Stat(ctx, "/src"); !errors.Is(err, ErrNotFound) {
		t.Errorf("implied directory should vanish with its files: %v", err)
	}
	_, err = m.Delete(ctx, "/src")
	wantErr(t, err, ErrNotFound, "delete gone dir")
	_, err = m.Delete(ctx, "/nope")
	wantErr(t, err, ErrNotFound, "delete missing")
	_, err = m.Delete(ctx, "/x/../y")
	wantErr(t, err, ErrInvalidPath, "delete invalid")
	n, err = m.Delete(ctx, "/")
	if n != 2 || err != nil || m.Len() != 0 {
		t.Errorf("delete root = %d, %v, %d left", n, err, m.Len())
	}
	n, err = m.Delete(ctx, "/")
	if n != 0 || err != nil {
		t.Errorf("delete empty root = %d, %v", n, err)
	}
	// Directory bookkeeping is right after deletes: the path is free again.
	if err := m.Write(ctx, "/src", "now a file"); err != nil {
		t.Errorf("write where a deleted directory was: %v", err)
	}
}

func TestMemoryListWalk(t *testing.T) {
	c := newClock()
	m := NewMemory(nil)
	m.SetClock(c.now)
	for _, p := range []string{"/b.txt", "/a/x", "/a/y/z", "/a.md", "/c/d/e"} {
		if err := m.Write(ctx, p, p); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := listing(t, m, "/"), []string{"/a/:10", "/a.md:5", "/b.txt:6", "/c/:6"}; !slices.Equal(got, want) {
		t.Errorf("list / = %v, want %v", got, want)
	}
	if got, want := listing(t, m, "/a"), []string{"/a/x:4", "/a/y/:6"}; !slices.Equal(got, want) {
		t.Errorf("list /a = %v, want %v", got, want)
	}
	es, _ := m.List(ctx, "/a")
	if ay := es[1]; !ay.ModifiedAt.Equal(m.Files()["/a/y/z"].ModifiedAt) {
		t.Errorf("directory entry should carry its newest file's time: %+v", ay)
	}
	_, err := m.List(ctx, "/b.txt")
	wantErr(t, err, ErrNotDir, "list file")
	_, err = m.List(ctx, "/nope")
	wantErr(t, err, ErrNotFound, "list missing")
	_, err = m.List(ctx, "~")
	wantErr(t, err, ErrInvalidPath, "list invalid")
	if es, err := NewMemory(nil).List(ctx, "/"); err != nil || len(es) != 0 {
		t.Errorf("list empty root = %v, %v", es, err)
	}

	if got, want := paths(t, m, "/"), []string{"/a.md", "/a/x", "/a/y/z", "/b.txt", "/c/d/e"}; !slices.Equal(got, want) {
		t.Errorf("walk / = %v, want %v", got, want)
	}
	if got, want := paths(t, m, "/a"), []string{"/a/x", "/a/y/z"}; !slices.Equal(got, want) {
		t.Errorf("walk /a = %v", got)
	}
	if got := paths(t, m, "/b.txt"); !slices.Equal(got, []string{"/b.txt"}) {
		t.Errorf("walk of a file yields the file: %v", got)
	}
	if got := paths(t, m, "/nope"); len(got) != 0 {
		t.Errorf("walk missing = %v", got)
	}
	n := 0
	for range m.Walk(ctx, "/") {
		n++
		break
	}
	if n != 1 {
		t.Error("walk does not stop when asked")
	}
	for _, err := range m.Walk(ctx, "..") {
		wantErr(t, err, ErrInvalidPath, "walk invalid")
	}
}

func TestNewMemory(t *testing.T) {
	in := files("a.txt", "rel", "/b//c/", "bc", "/../x", "bad", "~/y", "bad", "/", "root",
		"/f", "file", "/f/under", "dropped", "/dup", "clean", "dup", "unclean", "//dup", "unclean2")
	m := NewMemory(in)
	want := map[string]string{"/a.txt": "rel", "/b/c": "bc", "/f": "file", "/dup": "clean"}
	got := map[string]string{}
	for p, f := range m.Files() {
		got[p] = f.Content
	}
	if !maps.Equal(got, want) {
		t.Errorf("NewMemory kept %v, want %v", got, want)
	}
	// A copy: changing the input or the output of Files changes nothing.
	in["/a.txt"] = File{Content: "changed"}
	m.Files()["/a.txt"] = File{Content: "changed"}
	if mustRead(t, m, "/a.txt") != "rel" {
		t.Error("Memory shares its map")
	}
	// The same input always gives the same result.
	for range 20 {
		if other := NewMemory(in); !maps.Equal(other.Files(), NewMemory(in).Files()) {
			t.Fatal("NewMemory depends on map order")
		}
	}
	// Times given are kept.
	ts := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	m = NewMemory(map[string]File{"/t": {Content: "t", CreatedAt: ts, ModifiedAt: ts}})
	if e, _ := m.Stat(ctx, "/t"); !e.ModifiedAt.Equal(ts) {
		t.Errorf("modified time lost: %v", e.ModifiedAt)
	}
}

func TestMemoryApply(t *testing.T) {
	m := NewMemory(files("/a", "a", "/d/b", "b"))
	m.Apply(Delta{{Path: "/a"}, {Path: "/d/c", File: &File{Content: "c"}}, {Path: "/never"}})
	if got := paths(t, m, "/"); !slices.Equal(got, []string{"/d/b", "/d/c"}) {
		t.Errorf("after apply: %v", got)
	}
	if _, err := m.Stat(ctx, "/a"); !errors.Is(err, ErrNotFound) {
		t.Error("applied delete kept the file")
	}
}

func TestMemoryConcurrent(t *testing.T) {
	m := NewMemory(nil)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			for j := range 50 {
				p := fmt.Sprintf("/g%d/f%d", i, j)
				if err := m.Write(ctx, p, "x"); err != nil {
					t.Error(err)
				}
				_, _ = m.Read(ctx, p)
				_, _ = m.List(ctx, "/")
				for range m.Walk(ctx, "/") {
				}
				if j%2 == 0 {
					if _, err := m.Delete(ctx, p); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	wg.Wait()
	if m.Len() != 16*25 {
		t.Errorf("%d files, want %d", m.Len(), 16*25)
	}
}

func TestTracked(t *testing.T) {
	m := NewMemory(files("/a", "a", "/d/x", "x", "/d/y", "y"))
	tr := Track(m)
	if err := tr.Write(ctx, "b//c", "bc"); err != nil {
		t.Fatal(err)
	}
	wantErr(t, tr.Write(ctx, "/a/under", "no"), ErrNotDir, "tracked write under file")
	if n, err := tr.Delete(ctx, "/d/"); n != 2 || err != nil {
		t.Errorf("delete = %d, %v", n, err)
	}
	_, err := tr.Delete(ctx, "/nope")
	wantErr(t, err, ErrNotFound, "tracked delete missing")
	ch := tr.Changes()
	if len(ch) != 2 || ch[0].Path != "/b/c" || ch[0].File == nil || ch[0].File.Content != "bc" || ch[1].Path != "/d" || !ch[1].Deleted() {
		t.Errorf("changes = %+v", ch)
	}
	ch[0].Path = "/mutated"
	if tr.Changes()[0].Path != "/b/c" {
		t.Error("Changes shares its slice")
	}
	// Writes go through to the wrapped backend.
	if mustRead(t, m, "/b/c") != "bc" {
		t.Error("tracked write did not reach the backend")
	}
	if _, ok := any(tr).(Brancher); ok {
		t.Error("a tracked backend must not look like a Brancher")
	}
}
