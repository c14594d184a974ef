// Package vfstest is a conformance suite for vfs.Backend implementations.
//
// Run checks the behaviour the file tools rely on and vfs.Memory has: Stat,
// Read, Write, Delete, List and Walk over clean absolute virtual paths, the
// vfs error sentinels, ordering, scoping, and safety for concurrent use
// (run it under -race). It encodes the contract, not Memory's accidents;
// where a real directory legitimately differs the suite accepts both
// behaviours:
//
//   - Directories may exist without files. After the last file below a
//     directory is deleted, the directory is either gone (Stat says
//     vfs.ErrNotFound, as in Memory) or empty (Stat says it is a directory,
//     List returns no entries, Walk yields nothing).
//   - Delete of "/" either removes every file and returns their number, or
//     fails and changes nothing.
//   - The Size and ModifiedAt of directory entries are not checked.
//   - Context cancellation is not checked: Memory ignores the context.
//
// A backend that implements vfs.Updater is also checked for atomic updates:
// concurrent read-modify-write cycles on one file must all take effect. The
// Update subtests skip a backend that does not implement it.
package vfstest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/deepagents-go/deepagents/vfs"
)

// Option adjusts a Run.
type Option func(*suite)

// KnownIssue skips the named subtest (for example
// "ConcurrentFileAndDirectory") with the reason given, for a backend with a
// reported bug that is not fixed yet. The skip shows in verbose output.
func KnownIssue(subtest, reason string) Option {
	return func(s *suite) { s.known[subtest] = reason }
}

// Run runs the suite. newBackend must return a fresh backend holding
// exactly files, keyed by clean absolute path, and nothing else; it may
// register cleanups on t. Every subtest makes its own backends.
func Run(t *testing.T, newBackend func(t *testing.T, files map[string]string) vfs.Backend, opts ...Option) {
	s := &suite{newBackend: newBackend, known: map[string]string{}}
	for _, o := range opts {
		o(s)
	}
	subtests := []subtest{
		{"Stat", s.stat},
		{"EmptyBackend", s.empty},
		{"Read", s.read},
		{"Content", s.content},
		{"Write", s.write},
		{"WriteRefused", s.writeRefused},
		{"WriteWhereDirectoryWas", s.writeWhereDirWas},
		{"Delete", s.delete},
		{"DeleteLastFile", s.deleteLastFile},
		{"DeleteRoot", s.deleteRoot},
		{"List", s.list},
		{"ListOrder", s.listOrder},
		{"Walk", s.walk},
		{"WalkOrder", s.walkOrder},
		{"WalkStops", s.walkStops},
		{"Names", s.names},
		{"InvalidPaths", s.invalid},
		{"ErrorsNameThePath", s.errorPaths},
		{"ConcurrentWrites", s.concurrent},
		{"ConcurrentWritesOneFile", s.concurrentOneFile},
		{"ConcurrentFileAndDirectory", s.concurrentFileAndDir},
		{"Update", s.update},
		{"ConcurrentUpdates", s.concurrentUpdates},
	}
	for name := range s.known {
		if !slices.ContainsFunc(subtests, func(c subtest) bool { return c.name == name }) {
			t.Errorf("KnownIssue names %q, which is not a subtest", name)
		}
	}
	for _, c := range subtests {
		t.Run(c.name, func(t *testing.T) {
			if reason, ok := s.known[c.name]; ok {
				t.Skip("known issue: " + reason)
			}
			c.fn(t)
		})
	}
}

type subtest struct {
	name string
	fn   func(*testing.T)
}

type suite struct {
	newBackend func(t *testing.T, files map[string]string) vfs.Backend
	known      map[string]string
}

var ctx = context.Background()

func (s *suite) make(t *testing.T, files map[string]string) vfs.Backend {
	t.Helper()
	b := s.newBackend(t, files)
	if b == nil {
		t.Fatal("newBackend returned nil")
	}
	return b
}

// walkAll returns every file Walk yields, failing on an error.
func walkAll(t *testing.T, b vfs.Backend, dir string) []vfs.Entry {
	t.Helper()
	var out []vfs.Entry
	for e, err := range b.Walk(ctx, dir) {
		if err != nil {
			t.Fatalf("Walk(%q): %v", dir, err)
		}
		out = append(out, e)
	}
	return out
}

// Paths returns the paths Walk(dir) yields, failing the test on an error.
func Paths(t *testing.T, b vfs.Backend, dir string) []string {
	t.Helper()
	var out []string
	for _, e := range walkAll(t, b, dir) {
		out = append(out, e.Path)
	}
	return out
}

// Listing renders List(dir) as "path" for files and "path/" for
// directories, failing the test on an error.
func Listing(t *testing.T, b vfs.Backend, dir string) []string {
	t.Helper()
	es, err := b.List(ctx, dir)
	if err != nil {
		t.Fatalf("List(%q): %v", dir, err)
	}
	out := []string{}
	for _, e := range es {
		if e.IsDir {
			out = append(out, e.Path+"/")
		} else {
			out = append(out, e.Path)
		}
	}
	return out
}

// MustRead returns the content of p, failing the test on an error.
func MustRead(t *testing.T, b vfs.Backend, p string) string {
	t.Helper()
	s, err := b.Read(ctx, p)
	if err != nil {
		t.Fatalf("Read(%q): %v", p, err)
	}
	return s
}

func mustWrite(t *testing.T, b vfs.Backend, p, content string) {
	t.Helper()
	if err := b.Write(ctx, p, content); err != nil {
		t.Fatalf("Write(%q): %v", p, err)
	}
}

// WantErr reports an error unless err matches target.
func WantErr(t *testing.T, err, target error, what string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: error %v, want one matching %v", what, err, target)
	}
}

// snapshot is every file and its content.
func snapshot(t *testing.T, b vfs.Backend) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, e := range walkAll(t, b, "/") {
		out[e.Path] = MustRead(t, b, e.Path)
	}
	return out
}

func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }

var tree = map[string]string{
	"/a.txt":     "hello",
	"/d/e/f.txt": "fff",
	"/d/g":       "",
	"/d.md":      "dmd",
	"/dx/y":      "y",
}

func (s *suite) stat(t *testing.T) {
	b := s.make(t, tree)
	for _, c := range []struct {
		path  string
		want  vfs.Entry
		isDir bool
		err   error
	}{
		{path: "/a.txt", want: vfs.Entry{Path: "/a.txt", Size: 5}},
		{path: "a.txt", want: vfs.Entry{Path: "/a.txt", Size: 5}},
		{path: "/d/e/f.txt/", want: vfs.Entry{Path: "/d/e/f.txt", Size: 3}},
		{path: "//d/./e//f.txt", want: vfs.Entry{Path: "/d/e/f.txt", Size: 3}},
		{path: "/d/g", want: vfs.Entry{Path: "/d/g"}},
		{path: "/d", want: vfs.Entry{Path: "/d", IsDir: true}},
		{path: "/d/e/", want: vfs.Entry{Path: "/d/e", IsDir: true}},
		{path: "d/e", want: vfs.Entry{Path: "/d/e", IsDir: true}},
		{path: "/", want: vfs.Entry{Path: "/", IsDir: true}},
		{path: ".", want: vfs.Entry{Path: "/", IsDir: true}},
		{path: "/nope", err: vfs.ErrNotFound},
		{path: "/d/nope", err: vfs.ErrNotFound},
		{path: "/a.txt/x", err: vfs.ErrNotFound},
		{path: "/d/e/f", err: vfs.ErrNotFound},
		{path: "/d.m", err: vfs.ErrNotFound},
	} {
		e, err := b.Stat(ctx, c.path)
		if c.err != nil {
			WantErr(t, err, c.err, fmt.Sprintf("Stat(%q)", c.path))
			continue
		}
		if err != nil {
			t.Errorf("Stat(%q): %v", c.path, err)
			continue
		}
		if e.Path != c.want.Path || e.IsDir != c.want.IsDir || !e.IsDir && e.Size != c.want.Size {
			t.Errorf("Stat(%q) = {Path:%q IsDir:%v Size:%d}, want {Path:%q IsDir:%v Size:%d}",
				c.path, e.Path, e.IsDir, e.Size, c.want.Path, c.want.IsDir, c.want.Size)
		}
	}
}

func (s *suite) empty(t *testing.T) {
	b := s.make(t, nil)
	if e, err := b.Stat(ctx, "/"); err != nil || !e.IsDir || e.Path != "/" {
		t.Errorf("Stat(/) of an empty backend = %+v, %v; want the root directory", e, err)
	}
	if es, err := b.List(ctx, "/"); err != nil || len(es) != 0 {
		t.Errorf("List(/) of an empty backend = %v, %v; want no entries and no error", es, err)
	}
	if got := Paths(t, b, "/"); len(got) != 0 {
		t.Errorf("Walk(/) of an empty backend = %v", got)
	}
	_, err := b.Read(ctx, "/")
	WantErr(t, err, vfs.ErrIsDir, "Read(/) of an empty backend")
	_, err = b.Stat(ctx, "/x")
	WantErr(t, err, vfs.ErrNotFound, "Stat(/x) of an empty backend")
}

func (s *suite) read(t *testing.T) {
	b := s.make(t, tree)
	for p, want := range map[string]string{"/a.txt": "hello", "d/e/f.txt": "fff", "/d/g": "", "/d/./e/f.txt/": "fff"} {
		if got := MustRead(t, b, p); got != want {
			t.Errorf("Read(%q) = %q, want %q", p, got, want)
		}
	}
	for _, c := range []struct {
		path string
		err  error
	}{
		{"/d", vfs.ErrIsDir},
		{"/d/e/", vfs.ErrIsDir},
		{"/", vfs.ErrIsDir},
		{"/nope", vfs.ErrNotFound},
		{"/d/nope.txt", vfs.ErrNotFound},
		{"/a.txt/x", vfs.ErrNotFound},
		{"/d/e/f", vfs.ErrNotFound},
	} {
		got, err := b.Read(ctx, c.path)
		WantErr(t, err, c.err, fmt.Sprintf("Read(%q)", c.path))
		if got != "" {
			t.Errorf("failed Read(%q) returned content %q", c.path, got)
		}
	}
}

// contents are stored and returned byte for byte.
var contents = map[string]string{
	"/empty":          "",
	"/one":            "x",
	"/lines.txt":      "one\ntwo\nthree\n",
	"/crlf.txt":       "one\r\ntwo\r\n",
	"/unicode.txt":    "héllo wörld ✓ 日本語 😀",
	"/binary.bin":     "\x00\x01\x02\xff\xfe\x00end",
	"/invalid-utf8":   "a\xc3\x28b\xa0\xa1",
	"/no-newline.txt": "last line",
	"/big.txt":        strings.Repeat("0123456789abcdef\n", 1<<16), // 1 MiB
}

func (s *suite) content(t *testing.T) {
	t.Run("seeded", func(t *testing.T) {
		b := s.make(t, contents)
		for p, want := range contents {
			if got := MustRead(t, b, p); got != want {
				t.Errorf("Read(%q) = %d bytes, want %d: content differs", p, len(got), len(want))
			}
			if e, err := b.Stat(ctx, p); err != nil || e.Size != int64(len(want)) {
				t.Errorf("Stat(%q) = %+v, %v; want Size %d", p, e, err, len(want))
			}
		}
		for _, e := range walkAll(t, b, "/") {
			if e.Size != int64(len(contents[e.Path])) {
				t.Errorf("Walk entry %s has Size %d, want %d", e.Path, e.Size, len(contents[e.Path]))
			}
		}
		es, err := b.List(ctx, "/")
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			if e.Size != int64(len(contents[e.Path])) {
				t.Errorf("List entry %s has Size %d, want %d", e.Path, e.Size, len(contents[e.Path]))
			}
		}
	})
	t.Run("written", func(t *testing.T) {
		b := s.make(t, nil)
		for p, c := range contents {
			mustWrite(t, b, "/w"+p, c)
		}
		for p, want := range contents {
			if got := MustRead(t, b, "/w"+p); got != want {
				t.Errorf("Read(%q) after Write = %d bytes, want %d: content differs", "/w"+p, len(got), len(want))
			}
		}
	})
}

func (s *suite) write(t *testing.T) {
	b := s.make(t, tree)
	before := snapshot(t, b)

	// A new file, with its parents.
	mustWrite(t, b, "/new/deep/x.txt", "x")
	if got := MustRead(t, b, "/new/deep/x.txt"); got != "x" {
		t.Errorf("Read after Write = %q", got)
	}
	e, err := b.Stat(ctx, "/new/deep/x.txt")
	if err != nil || e.IsDir || e.Size != 1 || e.Path != "/new/deep/x.txt" {
		t.Errorf("Stat of a new file = %+v, %v", e, err)
	}
	if e.ModifiedAt.IsZero() {
		t.Errorf("a written file has no ModifiedAt: %+v", e)
	}
	for _, d := range []string{"/new", "/new/deep"} {
		if e, err := b.Stat(ctx, d); err != nil || !e.IsDir {
			t.Errorf("Stat(%q) after writing below it = %+v, %v; want a directory", d, e, err)
		}
	}
	if got, want := Listing(t, b, "/new"), []string{"/new/deep/"}; !slices.Equal(got, want) {
		t.Errorf("List(/new) = %v, want %v", got, want)
	}

	// Replacing a file.
	mustWrite(t, b, "/a.txt", "replaced, longer")
	if got := MustRead(t, b, "/a.txt"); got != "replaced, longer" {
		t.Errorf("Read after overwrite = %q", got)
	}
	if e, err := b.Stat(ctx, "/a.txt"); err != nil || e.Size != int64(len("replaced, longer")) {
		t.Errorf("Stat after overwrite = %+v, %v", e, err)
	}
	mustWrite(t, b, "/a.txt", "")
	if got := MustRead(t, b, "/a.txt"); got != "" {
		t.Errorf("Read after overwriting with nothing = %q", got)
	}

	// Unclean and relative paths land on the clean path.
	mustWrite(t, b, "rel//./r.txt/", "r")
	if got := MustRead(t, b, "/rel/r.txt"); got != "r" {
		t.Errorf("Read(/rel/r.txt) after Write(rel//./r.txt/) = %q", got)
	}
	// Beside an existing file in an existing directory.
	mustWrite(t, b, "/d/e/h.txt", "h")

	want := maps.Clone(before)
	want["/new/deep/x.txt"] = "x"
	want["/a.txt"] = ""
	want["/rel/r.txt"] = "r"
	want["/d/e/h.txt"] = "h"
	if got := snapshot(t, b); !maps.Equal(got, want) {
		t.Errorf("files after writes = %v, want %v", got, want)
	}
}

func (s *suite) writeRefused(t *testing.T) {
	b := s.make(t, tree)
	before := snapshot(t, b)
	for _, c := range []struct {
		path string
		err  error
	}{
		{"/", vfs.ErrIsDir},
		{".", vfs.ErrIsDir},
		{"/d", vfs.ErrIsDir},
		{"/d/", vfs.ErrIsDir},
		{"d/e", vfs.ErrIsDir},
		{"/a.txt/b", vfs.ErrNotDir},
		{"/a.txt/b/c", vfs.ErrNotDir},
		{"/d/g/h/i", vfs.ErrNotDir},
		{"/d/e/f.txt/x", vfs.ErrNotDir},
	} {
		WantErr(t, b.Write(ctx, c.path, "z"), c.err, fmt.Sprintf("Write(%q)", c.path))
	}
	if got := snapshot(t, b); !maps.Equal(got, before) {
		t.Errorf("refused writes changed the files: %v, want %v", sortedKeys(got), sortedKeys(before))
	}
	if e, err := b.Stat(ctx, "/a.txt"); err != nil || e.IsDir {
		t.Errorf("a refused write below /a.txt changed it: %+v, %v", e, err)
	}
}

func (s *suite) writeWhereDirWas(t *testing.T) {
	b := s.make(t, map[string]string{"/src/b": "b", "/src/sub/c": "c"})
	if n, err := b.Delete(ctx, "/src"); err != nil || n != 2 {
		t.Fatalf("Delete(/src) = %d, %v; want 2", n, err)
	}
	mustWrite(t, b, "/src", "now a file")
	if e, err := b.Stat(ctx, "/src"); err != nil || e.IsDir {
		t.Errorf("Stat(/src) = %+v, %v; want a file", e, err)
	}
	if got := Paths(t, b, "/"); !slices.Equal(got, []string{"/src"}) {
		t.Errorf("Walk(/) = %v", got)
	}
	// And a directory where a file was.
	if n, err := b.Delete(ctx, "/src"); err != nil || n != 1 {
		t.Fatalf("Delete(/src) = %d, %v; want 1", n, err)
	}
	mustWrite(t, b, "/src/again", "a")
	if got := Paths(t, b, "/"); !slices.Equal(got, []string{"/src/again"}) {
		t.Errorf("Walk(/) = %v", got)
	}
}

func (s *suite) delete(t *testing.T) {
	files := map[string]string{
		"/a.txt": "a", "/src/b": "b", "/src/sub/c": "c", "/src/sub/deeper/d": "d",
		"/srcx": "x", "/src.go": "g", "/srcdir/y": "y", "/other/z": "z",
	}
	b := s.make(t, files)
	if n, err := b.Delete(ctx, "/a.txt"); n != 1 || err != nil {
		t.Errorf("Delete(file) = %d, %v; want 1", n, err)
	}
	_, err := b.Stat(ctx, "/a.txt")
	WantErr(t, err, vfs.ErrNotFound, "Stat of a deleted file")
	_, err = b.Read(ctx, "/a.txt")
	WantErr(t, err, vfs.ErrNotFound, "Read of a deleted file")

	if n, err := b.Delete(ctx, "/src/sub"); n != 2 || err != nil {
		t.Errorf("Delete(/src/sub) = %d, %v; want 2", n, err)
	}
	if n, err := b.Delete(ctx, "src/"); n != 1 || err != nil {
		t.Errorf("Delete(src/) = %d, %v; want 1", n, err)
	}
	for _, p := range []string{"/src", "/src/b", "/src/sub", "/src/sub/c"} {
		_, err := b.Stat(ctx, p)
		WantErr(t, err, vfs.ErrNotFound, "Stat("+p+") after deleting its directory")
	}
	if got, want := Paths(t, b, "/"), []string{"/other/z", "/src.go", "/srcdir/y", "/srcx"}; !slices.Equal(got, want) {
		t.Errorf("files left = %v, want %v (a directory's delete must not touch siblings sharing its prefix)", got, want)
	}
	for _, c := range []struct {
		path string
		err  error
	}{
		{"/src", vfs.ErrNotFound},
		{"/nope", vfs.ErrNotFound},
		{"/other/nope", vfs.ErrNotFound},
		{"/srcx/y", vfs.ErrNotFound},
		{"/src.g", vfs.ErrNotFound},
	} {
		n, err := b.Delete(ctx, c.path)
		WantErr(t, err, c.err, fmt.Sprintf("Delete(%q)", c.path))
		if n != 0 {
			t.Errorf("failed Delete(%q) says %d files went", c.path, n)
		}
	}
	if got := snapshot(t, b); len(got) != 4 || got["/srcx"] != "x" || got["/other/z"] != "z" {
		t.Errorf("failed deletes changed the files: %v", got)
	}
}

func (s *suite) deleteLastFile(t *testing.T) {
	b := s.make(t, map[string]string{"/d/e/only": "o", "/keep": "k"})
	if n, err := b.Delete(ctx, "/d/e/only"); n != 1 || err != nil {
		t.Fatalf("Delete = %d, %v", n, err)
	}
	for _, d := range []string{"/d/e", "/d"} {
		e, err := b.Stat(ctx, d)
		switch {
		case errors.Is(err, vfs.ErrNotFound):
			// Implied directories vanish with their last file.
		case err != nil:
			t.Errorf("Stat(%q): %v", d, err)
		case !e.IsDir:
			t.Errorf("Stat(%q) = %+v: a file appeared", d, e)
		default:
			// A real, now empty, directory.
			if es, err := b.List(ctx, d); err != nil || len(es) > 1 || d == "/d/e" && len(es) != 0 {
				t.Errorf("List(%q) of an emptied directory = %v, %v", d, es, err)
			}
			if got := Paths(t, b, d); len(got) != 0 {
				t.Errorf("Walk(%q) of an emptied directory = %v", d, got)
			}
		}
	}
	if got := Paths(t, b, "/"); !slices.Equal(got, []string{"/keep"}) {
		t.Errorf("Walk(/) = %v, want [/keep]", got)
	}
	mustWrite(t, b, "/d/e/again", "a")
	if got := MustRead(t, b, "/d/e/again"); got != "a" {
		t.Errorf("Read = %q", got)
	}
}

func (s *suite) deleteRoot(t *testing.T) {
	files := map[string]string{"/a": "a", "/d/b": "b", "/d/e/c": "c"}
	b := s.make(t, files)
	n, err := b.Delete(ctx, "/")
	if err != nil {
		t.Logf("Delete(/) refused: %v", err)
		if n != 0 {
			t.Errorf("refused Delete(/) says %d files went", n)
		}
		if got := snapshot(t, b); !maps.Equal(got, files) {
			t.Errorf("refused Delete(/) changed the files: %v", got)
		}
		return
	}
	if n != len(files) {
		t.Errorf("Delete(/) = %d, want %d", n, len(files))
	}
	if got := Paths(t, b, "/"); len(got) != 0 {
		t.Errorf("files left after Delete(/): %v", got)
	}
	if e, err := b.Stat(ctx, "/"); err != nil || !e.IsDir {
		t.Errorf("Stat(/) after Delete(/) = %+v, %v", e, err)
	}
	mustWrite(t, b, "/after", "x")
}

var listTree = map[string]string{
	"/b.txt":  "bb",
	"/a/x":    "x",
	"/a/y/z":  "zzz",
	"/a.md":   "amd",
	"/c/d/e":  "e",
	"/ab/q":   "q",
	"/a/y.md": "ymd",
}

func (s *suite) list(t *testing.T) {
	b := s.make(t, listTree)
	for _, c := range []struct {
		dir  string
		want []string
	}{
		{"/", []string{"/a/", "/a.md", "/ab/", "/b.txt", "/c/"}},
		{".", []string{"/a/", "/a.md", "/ab/", "/b.txt", "/c/"}},
		{"/a", []string{"/a/x", "/a/y/", "/a/y.md"}},
		{"a/", []string{"/a/x", "/a/y/", "/a/y.md"}},
		{"/a/y", []string{"/a/y/z"}},
		{"/c", []string{"/c/d/"}},
		{"/c/d/", []string{"/c/d/e"}},
	} {
		if got := Listing(t, b, c.dir); !slices.Equal(got, c.want) {
			t.Errorf("List(%q) = %v, want %v", c.dir, got, c.want)
		}
	}
	es, err := b.List(ctx, "/a")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if !e.IsDir && e.Size != int64(len(listTree[e.Path])) {
			t.Errorf("List entry %s: Size %d, want %d", e.Path, e.Size, len(listTree[e.Path]))
		}
	}
	for _, c := range []struct {
		dir string
		err error
	}{
		{"/b.txt", vfs.ErrNotDir},
		{"/a/x", vfs.ErrNotDir},
		{"/nope", vfs.ErrNotFound},
		{"/a/nope", vfs.ErrNotFound},
		{"/b.txt/x", vfs.ErrNotFound},
		{"/a.m", vfs.ErrNotFound},
	} {
		es, err := b.List(ctx, c.dir)
		WantErr(t, err, c.err, fmt.Sprintf("List(%q)", c.dir))
		if len(es) != 0 {
			t.Errorf("failed List(%q) returned %v", c.dir, es)
		}
	}
}

// orderTree has names that sort differently as names and as paths ('-' and
// '.' sort before '/'), and differently by bytes and by case.
var orderTree = map[string]string{
	"/a/x":     "1",
	"/a/b/c":   "2",
	"/a.md":    "3",
	"/a-b":     "4",
	"/a0/y":    "5",
	"/a b/z":   "6",
	"/A":       "7",
	"/_u":      "8",
	"/~t":      "9",
	"/a/.h":    "10",
	"/a/b.c/d": "11",
	"/a/b-c":   "12",
	"/é":       "13",
	"/z/a":     "14",
}

func (s *suite) listOrder(t *testing.T) {
	b := s.make(t, orderTree)
	if got, want := Listing(t, b, "/"), []string{"/A", "/_u", "/a/", "/a b/", "/a-b", "/a.md", "/a0/", "/z/", "/~t", "/é"}; !slices.Equal(got, want) {
		t.Errorf("List(/) = %v, want %v (sorted by path, bytewise)", got, want)
	}
	if got, want := Listing(t, b, "/a"), []string{"/a/.h", "/a/b/", "/a/b-c", "/a/b.c/", "/a/x"}; !slices.Equal(got, want) {
		t.Errorf("List(/a) = %v, want %v", got, want)
	}
}

func (s *suite) walk(t *testing.T) {
	b := s.make(t, listTree)
	for _, c := range []struct {
		dir  string
		want []string
	}{
		{"/", []string{"/a.md", "/a/x", "/a/y.md", "/a/y/z", "/ab/q", "/b.txt", "/c/d/e"}},
		{"/a", []string{"/a/x", "/a/y.md", "/a/y/z"}},
		{"a/", []string{"/a/x", "/a/y.md", "/a/y/z"}},
		{"/a/y", []string{"/a/y/z"}},
		{"/c", []string{"/c/d/e"}},
		{"/b.txt", []string{"/b.txt"}},
		{"/a/y/z/", []string{"/a/y/z"}},
		{"/nope", nil},
		{"/a/nope", nil},
		{"/b.txt/x", nil},
		{"/a.m", nil},
		{"/a/y.m", nil},
	} {
		if got := Paths(t, b, c.dir); !slices.Equal(got, c.want) {
			t.Errorf("Walk(%q) = %v, want %v", c.dir, got, c.want)
		}
	}
	for _, e := range walkAll(t, b, "/") {
		if e.IsDir {
			t.Errorf("Walk yielded a directory: %+v", e)
		}
		if e.Size != int64(len(listTree[e.Path])) {
			t.Errorf("Walk entry %s: Size %d, want %d", e.Path, e.Size, len(listTree[e.Path]))
		}
	}
}

func (s *suite) walkOrder(t *testing.T) {
	b := s.make(t, orderTree)
	want := sortedKeys(orderTree)
	if got := Paths(t, b, "/"); !slices.Equal(got, want) {
		t.Errorf("Walk(/) = %v, want %v (sorted by path, bytewise)", got, want)
	}
	var below []string
	for _, p := range want {
		if strings.HasPrefix(p, "/a/") {
			below = append(below, p)
		}
	}
	if got := Paths(t, b, "/a"); !slices.Equal(got, below) {
		t.Errorf("Walk(/a) = %v, want %v", got, below)
	}
}

func (s *suite) walkStops(t *testing.T) {
	b := s.make(t, orderTree)
	all := sortedKeys(orderTree)
	for stop := 1; stop <= len(all); stop++ {
		var got []string
		func() {
			// A Walk that keeps yielding after the loop stopped panics in
			// the range statement: report it rather than crash the run.
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("Walk went on yielding after the loop stopped at %d entries: %v", stop, r)
				}
			}()
			for e, err := range b.Walk(ctx, "/") {
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, e.Path)
				if len(got) == stop {
					break
				}
			}
		}()
		if !slices.Equal(got, all[:stop]) {
			t.Errorf("Walk stopped after %d entries = %v, want %v", stop, got, all[:stop])
		}
	}
}

func (s *suite) names(t *testing.T) {
	files := map[string]string{
		"/with space/file name.txt": "1",
		"/ünïcödé/日本.md":            "2",
		"/.hidden/.dot":             "3",
		"/a:b":                      "4",
		"/#hash&amp;=%20":           "5",
		"/dots.../...":              "6",
		"/..b/c..":                  "7",
		"/~tilde/x~":                "8",
		"/new\nline":                "9",
		"/-dash":                    "10",
	}
	b := s.make(t, files)
	if got := snapshot(t, b); !maps.Equal(got, files) {
		t.Errorf("seeded files read back as %v, want %v", got, files)
	}
	w := s.make(t, nil)
	for p, c := range files {
		mustWrite(t, w, p, c)
	}
	if got := snapshot(t, w); !maps.Equal(got, files) {
		t.Errorf("written files read back as %v, want %v", got, files)
	}
	if got, want := Listing(t, w, "/.hidden"), []string{"/.hidden/.dot"}; !slices.Equal(got, want) {
		t.Errorf("List(/.hidden) = %v, want %v", got, want)
	}
	for p := range files {
		if n, err := w.Delete(ctx, p); n != 1 || err != nil {
			t.Errorf("Delete(%q) = %d, %v", p, n, err)
		}
	}
	if got := Paths(t, w, "/"); len(got) != 0 {
		t.Errorf("files left: %q", got)
	}
}

var invalidPaths = []string{"../x", "..", "/a/../b", "a/..", "~", "~/x", "", `C:\x`, "c:", `a\..\b`, "/a\x00b"}

func (s *suite) invalid(t *testing.T) {
	b := s.make(t, map[string]string{"/a": "a", "/b/x": "x"})
	for _, p := range invalidPaths {
		what := func(op string) string { return fmt.Sprintf("%s(%q)", op, p) }
		_, err := b.Stat(ctx, p)
		WantErr(t, err, vfs.ErrInvalidPath, what("Stat"))
		_, err = b.Read(ctx, p)
		WantErr(t, err, vfs.ErrInvalidPath, what("Read"))
		WantErr(t, b.Write(ctx, p, "z"), vfs.ErrInvalidPath, what("Write"))
		n, err := b.Delete(ctx, p)
		WantErr(t, err, vfs.ErrInvalidPath, what("Delete"))
		if n != 0 {
			t.Errorf("%s says %d files went", what("Delete"), n)
		}
		_, err = b.List(ctx, p)
		WantErr(t, err, vfs.ErrInvalidPath, what("List"))
		errs := 0
		for e, err := range b.Walk(ctx, p) {
			if err == nil {
				t.Errorf("%s yielded %+v", what("Walk"), e)
				continue
			}
			errs++
			WantErr(t, err, vfs.ErrInvalidPath, what("Walk"))
		}
		if errs == 0 {
			t.Errorf("%s yielded no error", what("Walk"))
		}
	}
	if got := snapshot(t, b); !maps.Equal(got, map[string]string{"/a": "a", "/b/x": "x"}) {
		t.Errorf("invalid paths changed the files: %v", got)
	}
}

// errorPaths: a failure is an *fs.PathError naming the clean virtual path,
// so messages the model reads show its own paths.
func (s *suite) errorPaths(t *testing.T) {
	b := s.make(t, map[string]string{"/f": "f", "/d/x": "x"})
	check := func(what, p string, err error) {
		t.Helper()
		var pe *fs.PathError
		if !errors.As(err, &pe) || pe.Path != p || pe.Op == "" {
			t.Errorf("%s: error %#v should be an *fs.PathError with an Op and Path %q", what, err, p)
		}
	}
	_, err := b.Stat(ctx, "nope//x/")
	check("Stat", "/nope/x", err)
	_, err = b.Read(ctx, "/nope/x")
	check("Read missing", "/nope/x", err)
	_, err = b.Read(ctx, "/d/")
	check("Read directory", "/d", err)
	check("Write onto a directory", "/d", b.Write(ctx, "/d", ""))
	check("Write below a file", "/f/g", b.Write(ctx, "/f/g", ""))
	_, err = b.Delete(ctx, "/nope")
	check("Delete missing", "/nope", err)
	_, err = b.List(ctx, "/f")
	check("List file", "/f", err)
	_, err = b.List(ctx, "/nope")
	check("List missing", "/nope", err)
}

func (s *suite) concurrent(t *testing.T) {
	b := s.make(t, map[string]string{"/seed/s": "s"})
	const workers, each = 8, 20
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() {
			for j := range each {
				p := fmt.Sprintf("/g%d/sub%d/f%d.txt", i, j%3, j)
				c := fmt.Sprintf("content %d %d", i, j)
				if err := b.Write(ctx, p, c); err != nil {
					t.Errorf("Write(%q): %v", p, err)
					continue
				}
				if got, err := b.Read(ctx, p); err != nil || got != c {
					t.Errorf("Read(%q) = %q, %v; want %q", p, got, err, c)
				}
				if _, err := b.Stat(ctx, p); err != nil {
					t.Errorf("Stat(%q): %v", p, err)
				}
				if _, err := b.List(ctx, "/"); err != nil {
					t.Errorf("List(/): %v", err)
				}
				for _, err := range b.Walk(ctx, "/") {
					if err != nil {
						t.Errorf("Walk(/): %v", err)
					}
				}
				if j%2 == 0 {
					if n, err := b.Delete(ctx, p); n != 1 || err != nil {
						t.Errorf("Delete(%q) = %d, %v", p, n, err)
					}
				}
			}
		})
	}
	wg.Wait()
	want := map[string]string{"/seed/s": "s"}
	for i := range workers {
		for j := 1; j < each; j += 2 {
			want[fmt.Sprintf("/g%d/sub%d/f%d.txt", i, j%3, j)] = fmt.Sprintf("content %d %d", i, j)
		}
	}
	if got := snapshot(t, b); !maps.Equal(got, want) {
		t.Errorf("after concurrent writes: %d files %v, want %d %v", len(got), sortedKeys(got), len(want), sortedKeys(want))
	}
}

func (s *suite) concurrentOneFile(t *testing.T) {
	b := s.make(t, map[string]string{"/same.txt": "seed"})
	const workers, each = 6, 15
	valid := map[string]bool{"seed": true}
	for i := range workers {
		for j := range each {
			valid[fmt.Sprintf("writer %d version %d %s", i, j, strings.Repeat("x", 1000*i+j))] = true
		}
	}
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() {
			for j := range each {
				if err := b.Write(ctx, "/same.txt", fmt.Sprintf("writer %d version %d %s", i, j, strings.Repeat("x", 1000*i+j))); err != nil {
					t.Errorf("Write: %v", err)
				}
			}
		})
		wg.Go(func() {
			for range each {
				got, err := b.Read(ctx, "/same.txt")
				if err != nil {
					t.Errorf("Read during writes: %v", err)
				} else if !valid[got] {
					t.Errorf("Read during writes returned a mix of versions (%d bytes)", len(got))
				}
			}
		})
	}
	wg.Wait()
	if got := MustRead(t, b, "/same.txt"); !valid[got] || got == "seed" {
		t.Errorf("final content is not one of the written versions (%d bytes)", len(got))
	}
	if got := Paths(t, b, "/"); !slices.Equal(got, []string{"/same.txt"}) {
		t.Errorf("files after concurrent writes of one file: %v", got)
	}
}

// concurrentFileAndDir races writes that make one path a file against
// writes below it: whatever wins, a path is never a file and a directory at
// once.
func (s *suite) concurrentFileAndDir(t *testing.T) {
	for round := range 20 {
		b := s.make(t, nil)
		p := fmt.Sprintf("/r%d/x", round)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range 6 {
			wg.Go(func() {
				<-start
				if i%2 == 0 {
					_ = b.Write(ctx, p, "file")
				} else {
					_ = b.Write(ctx, fmt.Sprintf("%s/y%d", p, i), "below")
				}
			})
		}
		close(start)
		wg.Wait()
		e, err := b.Stat(ctx, p)
		if err != nil {
			t.Fatalf("Stat(%q) after the race: %v", p, err)
		}
		below := Paths(t, b, p)
		if !e.IsDir && !slices.Equal(below, []string{p}) {
			t.Fatalf("round %d: %s is a file and has files below it: %v", round, p, below)
		}
		if e.IsDir && slices.Contains(below, p) {
			t.Fatalf("round %d: %s is a directory and a file: %v", round, p, below)
		}
		if !e.IsDir {
			if got := MustRead(t, b, p); got != "file" {
				t.Fatalf("round %d: Read(%q) = %q", round, p, got)
			}
		}
	}
}

func (s *suite) updater(t *testing.T, files map[string]string) vfs.Updater {
	t.Helper()
	b := s.make(t, files)
	u, ok := b.(vfs.Updater)
	if !ok {
		t.Skipf("%T does not implement vfs.Updater", b)
	}
	return u
}

func (s *suite) update(t *testing.T) {
	u := s.updater(t, map[string]string{"/a.txt": "one", "/d/e.txt": "e", "/empty": ""})
	var seen []string
	appendX := func(c string) (string, error) {
		seen = append(seen, c)
		return c + "+x", nil
	}
	if err := u.Update(ctx, "/a.txt", appendX); err != nil {
		t.Fatalf("Update(/a.txt): %v", err)
	}
	if err := u.Update(ctx, "a.txt", appendX); err != nil {
		t.Fatalf("Update(a.txt): %v", err)
	}
	if err := u.Update(ctx, "/empty", appendX); err != nil {
		t.Fatalf("Update(/empty): %v", err)
	}
	if want := []string{"one", "one+x", ""}; !slices.Equal(seen, want) {
		t.Errorf("Update passed %q to fn, want %q", seen, want)
	}
	if got := MustRead(t, u, "/a.txt"); got != "one+x+x" {
		t.Errorf("after two updates /a.txt = %q, want %q", got, "one+x+x")
	}
	if got := MustRead(t, u, "/empty"); got != "+x" {
		t.Errorf("after an update /empty = %q, want %q", got, "+x")
	}

	// fn's error comes back as it is, and nothing is written.
	refused := errors.New("refused by fn")
	err := u.Update(ctx, "/d/e.txt", func(c string) (string, error) { return "changed anyway", refused })
	if err != refused {
		t.Errorf("Update with a failing fn returned %v, want fn's own error", err)
	}
	if got := MustRead(t, u, "/d/e.txt"); got != "e" {
		t.Errorf("a refused update wrote %q", got)
	}

	called := false
	never := func(c string) (string, error) { called = true; return "x", nil }
	WantErr(t, u.Update(ctx, "/missing", never), vfs.ErrNotFound, "Update of a missing file")
	WantErr(t, u.Update(ctx, "/d/missing/deeper", never), vfs.ErrNotFound, "Update below a missing directory")
	WantErr(t, u.Update(ctx, "/d", never), vfs.ErrIsDir, "Update of a directory")
	WantErr(t, u.Update(ctx, "/", never), vfs.ErrIsDir, "Update of the root")
	WantErr(t, u.Update(ctx, "/../x", never), vfs.ErrInvalidPath, "Update of an invalid path")
	if called {
		t.Error("fn was called for a path that is not a file")
	}
	if got, want := Paths(t, u, "/"), []string{"/a.txt", "/d/e.txt", "/empty"}; !slices.Equal(got, want) {
		t.Errorf("files after updates: %v, want %v", got, want)
	}
}

// concurrentUpdates increments counters from many goroutines at once: with
// atomic updates no increment is lost.
func (s *suite) concurrentUpdates(t *testing.T) {
	u := s.updater(t, map[string]string{"/n": "0", "/dir/m": "0"})
	const workers, each = 8, 15
	incr := func(c string) (string, error) {
		var n int
		if _, err := fmt.Sscan(c, &n); err != nil {
			return "", fmt.Errorf("counter holds %q: %w", c, err)
		}
		return fmt.Sprint(n + 1), nil
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for j := range each {
				p := "/n"
				if j%3 == 0 {
					p = "/dir/m"
				}
				if err := u.Update(ctx, p, incr); err != nil {
					t.Errorf("Update(%s): %v", p, err)
				}
			}
		})
	}
	wg.Wait()
	if got, want := MustRead(t, u, "/n"), fmt.Sprint(workers*10); got != want {
		t.Errorf("/n = %s after %d concurrent increments", got, workers*10)
	}
	if got, want := MustRead(t, u, "/dir/m"), fmt.Sprint(workers*5); got != want {
		t.Errorf("/dir/m = %s after %d concurrent increments", got, workers*5)
	}
}

// Files turns {path: content} into the files of a vfs.Memory.
func Files(files map[string]string) map[string]vfs.File {
	out := make(map[string]vfs.File, len(files))
	for p, c := range files {
		out[p] = vfs.File{Content: c}
	}
	return out
}

// MixedLayer returns a layer that shows exactly files, built the hard way:
// every other file lives in the layer over a stale base copy, and the base
// also holds files the layer deleted (tombstones).
func MixedLayer(t *testing.T, files map[string]string) vfs.Backend {
	t.Helper()
	keys := sortedKeys(files)
	base := map[string]string{"/zz-gone.txt": "gone", "/zz-gone-dir/a": "gone"}
	var top []string
	for i, k := range keys {
		base[k] = files[k]
		if i%2 == 1 {
			base[k] = "stale " + files[k]
			top = append(top, k)
		}
	}
	l := vfs.NewMemory(Files(base)).Branch()
	for _, k := range top {
		if err := l.Write(ctx, k, files[k]); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"/zz-gone.txt", "/zz-gone-dir"} {
		if _, err := l.Delete(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	return l
}
