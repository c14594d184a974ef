package vfs

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"testing"
)

func deltaString(d Delta) string {
	var parts []string
	for _, c := range d {
		if c.File == nil {
			parts = append(parts, "-"+c.Path)
		} else {
			parts = append(parts, "+"+c.Path+"="+c.File.Content)
		}
	}
	return strings.Join(parts, " ")
}

func TestLayerReadsFallThrough(t *testing.T) {
	base := NewMemory(files("/a", "a", "/d/b", "bb", "/d/e/c", "ccc"))
	l := base.Branch()
	if got := mustRead(t, l, "/d/b"); got != "bb" {
		t.Errorf("read = %q", got)
	}
	if e, err := l.Stat(ctx, "/d/b"); err != nil || e.Size != 2 || e.IsDir {
		t.Errorf("stat file = %+v, %v", e, err)
	}
	if e, err := l.Stat(ctx, "/d"); err != nil || !e.IsDir {
		t.Errorf("stat dir = %+v, %v", e, err)
	}
	if got, want := listing(t, l, "/"), []string{"/a:1", "/d/:5"}; !slices.Equal(got, want) {
		t.Errorf("list = %v, want %v", got, want)
	}
	if got, want := paths(t, l, "/d"), []string{"/d/b", "/d/e/c"}; !slices.Equal(got, want) {
		t.Errorf("walk = %v", got)
	}
	_, err := l.Read(ctx, "/d")
	wantErr(t, err, ErrIsDir, "read base dir")
	_, err = l.Read(ctx, "/nope")
	wantErr(t, err, ErrNotFound, "read missing")
	_, err = l.Stat(ctx, "/nope")
	wantErr(t, err, ErrNotFound, "stat missing")
	_, err = l.List(ctx, "/a")
	wantErr(t, err, ErrNotDir, "list file")
	_, err = l.List(ctx, "/nope")
	wantErr(t, err, ErrNotFound, "list missing")
	for _, op := range []func() error{
		func() error { _, err := l.Stat(ctx, ".."); return err },
		func() error { _, err := l.Read(ctx, ".."); return err },
		func() error { return l.Write(ctx, "..", "") },
		func() error { _, err := l.Delete(ctx, ".."); return err },
		func() error { _, err := l.List(ctx, ".."); return err },
	} {
		wantErr(t, op(), ErrInvalidPath, "invalid path")
	}
	if d := l.Delta(); len(d) != 0 {
		t.Errorf("reads made a delta: %v", deltaString(d))
	}
}

func TestLayerWritesIsolated(t *testing.T) {
	c := newClock()
	base := NewMemory(files("/a", "a"))
	base.SetClock(c.now)
	if err := base.Write(ctx, "/timed", "v1"); err != nil {
		t.Fatal(err)
	}
	l := base.Branch()
	for p, s := range map[string]string{"/a": "A", "/new/x": "x", "/timed": "v2"} {
		if err := l.Write(ctx, p, s); err != nil {
			t.Fatal(err)
		}
	}
	if mustRead(t, l, "/a") != "A" || mustRead(t, base, "/a") != "a" {
		t.Error("layer write leaked into the base or was not visible in the layer")
	}
	if _, err := base.Stat(ctx, "/new"); !errors.Is(err, ErrNotFound) {
		t.Error("new directory visible in the base")
	}
	if e, err := l.Stat(ctx, "/new"); err != nil || !e.IsDir {
		t.Errorf("new directory not visible in the layer: %+v %v", e, err)
	}
	before, after := base.Files()["/timed"], l.changes["/timed"]
	if !after.CreatedAt.Equal(before.CreatedAt) || !after.ModifiedAt.After(before.ModifiedAt) {
		t.Errorf("overwrite in a layer should keep the base's created time: %+v -> %+v", before, *after)
	}
	if got, want := deltaString(l.Delta()), "+/a=A +/new/x=x +/timed=v2"; got != want {
		t.Errorf("delta = %q, want %q", got, want)
	}
	if got, want := paths(t, l, "/"), []string{"/a", "/new/x", "/timed"}; !slices.Equal(got, want) {
		t.Errorf("walk = %v", got)
	}
}

func TestLayerWriteErrors(t *testing.T) {
	base := NewMemory(files("/f", "f", "/d/x", "x"))
	l := base.Branch()
	if err := l.Write(ctx, "/g", "g"); err != nil {
		t.Fatal(err)
	}
	if err := l.Write(ctx, "/e/y", "y"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		err  error
	}{
		{"/", ErrIsDir},
		{"/d", ErrIsDir},      // a base directory
		{"/e", ErrIsDir},      // a directory made in the layer
		{"/f/a", ErrNotDir},   // under a base file
		{"/g/a/b", ErrNotDir}, // under a layer file
	} {
		wantErr(t, l.Write(ctx, c.path, "z"), c.err, "write "+c.path)
	}
	// Once the file is deleted in the layer, its path can become a directory,
	// and an emptied directory's path can become a file.
	if _, err := l.Delete(ctx, "/f"); err != nil {
		t.Fatal(err)
	}
	if err := l.Write(ctx, "/f/a", "a"); err != nil {
		t.Errorf("write under a deleted file: %v", err)
	}
	if _, err := l.Delete(ctx, "/d/x"); err != nil {
		t.Fatal(err)
	}
	if err := l.Write(ctx, "/d", "now a file"); err != nil {
		t.Errorf("write onto an emptied directory: %v", err)
	}
	if got, want := deltaString(l.Delta()), "+/d=now a file -/d/x +/e/y=y -/f +/f/a=a +/g=g"; got != want {
		t.Errorf("delta = %q, want %q", got, want)
	}
}

func TestLayerDelete(t *testing.T) {
	base := NewMemory(files("/a", "a", "/d/x", "x", "/d/s/y", "y", "/dx", "dx"))
	l := base.Branch()
	if n, err := l.Delete(ctx, "/a"); n != 1 || err != nil {
		t.Errorf("delete base file = %d, %v", n, err)
	}
	_, err := l.Read(ctx, "/a")
	wantErr(t, err, ErrNotFound, "read deleted")
	_, err = l.Stat(ctx, "/a")
	wantErr(t, err, ErrNotFound, "stat deleted")
	if mustRead(t, base, "/a") != "a" {
		t.Error("delete leaked into the base")
	}
	if err := l.Write(ctx, "/d/new", "n"); err != nil {
		t.Fatal(err)
	}
	if n, err := l.Delete(ctx, "/d"); n != 3 || err != nil {
		t.Errorf("delete dir = %d, %v", n, err)
	}
	for _, p := range []string{"/d", "/d/x", "/d/s", "/d/new"} {
		_, err := l.Stat(ctx, p)
		wantErr(t, err, ErrNotFound, "stat "+p)
	}
	_, err = l.Read(ctx, "/d")
	wantErr(t, err, ErrNotFound, "read emptied dir") // not "is a directory" any more
	_, err = l.List(ctx, "/d")
	wantErr(t, err, ErrNotFound, "list emptied dir")
	_, err = l.Delete(ctx, "/d")
	wantErr(t, err, ErrNotFound, "delete twice")
	_, err = l.Delete(ctx, "/nope")
	wantErr(t, err, ErrNotFound, "delete missing")
	if got := paths(t, l, "/"); !slices.Equal(got, []string{"/dx"}) {
		t.Errorf("left %v", got)
	}
	if got := listing(t, l, "/"); !slices.Equal(got, []string{"/dx:2"}) {
		t.Errorf("list = %v", got)
	}
	// Deleting a file the base never had is no change.
	if got, want := deltaString(l.Delta()), "-/a -/d/s/y -/d/x"; got != want {
		t.Errorf("delta = %q, want %q", got, want)
	}
	if n, err := l.Delete(ctx, "/"); n != 1 || err != nil {
		t.Errorf("delete root = %d, %v", n, err)
	}
	if n, err := l.Delete(ctx, "/"); n != 0 || err != nil {
		t.Errorf("delete empty root = %d, %v", n, err)
	}
	if base.Len() != 4 {
		t.Error("base changed")
	}
}

// A file written where a base directory was, then deleted again, leaves no
// delete of the directory's path in the delta.
func TestLayerDeltaSkipsDirectoryPaths(t *testing.T) {
	base := NewMemory(files("/d/x", "x"))
	l := base.Branch()
	if _, err := l.Delete(ctx, "/d/x"); err != nil {
		t.Fatal(err)
	}
	if err := l.Write(ctx, "/d", "f"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Delete(ctx, "/d"); err != nil {
		t.Fatal(err)
	}
	if got, want := deltaString(l.Delta()), "-/d/x"; got != want {
		t.Errorf("delta = %q, want %q", got, want)
	}
}

func TestLayerOverLayer(t *testing.T) {
	base := NewMemory(files("/a", "a", "/b", "b"))
	outer := base.Branch()
	if err := outer.Write(ctx, "/a", "outer"); err != nil {
		t.Fatal(err)
	}
	inner := outer.Branch()
	if mustRead(t, inner, "/a") != "outer" {
		t.Error("inner layer does not see the outer layer")
	}
	if err := inner.Write(ctx, "/c", "inner"); err != nil {
		t.Fatal(err)
	}
	if _, err := inner.Delete(ctx, "/b"); err != nil {
		t.Fatal(err)
	}
	if _, err := outer.Stat(ctx, "/c"); !errors.Is(err, ErrNotFound) {
		t.Error("inner write leaked into the outer layer")
	}
	if got, want := deltaString(inner.Delta()), "-/b +/c=inner"; got != want {
		t.Errorf("inner delta = %q, want %q", got, want)
	}
	net, conflicts := Merge(ctx, outer, []Delta{inner.Delta()}, []string{"sub"})
	if len(conflicts) != 0 || deltaString(net) != "-/b +/c=inner" {
		t.Errorf("merge into outer: %v %v", deltaString(net), conflicts)
	}
	if got, want := deltaString(outer.Delta()), "+/a=outer -/b +/c=inner"; got != want {
		t.Errorf("outer delta = %q, want %q", got, want)
	}
	Merge(ctx, base, []Delta{outer.Delta()}, []string{"outer"})
	got := map[string]string{}
	for p, f := range base.Files() {
		got[p] = f.Content
	}
	if fmt.Sprint(got) != "map[/a:outer /c:inner]" {
		t.Errorf("base = %v", got)
	}
}

func TestLayerApply(t *testing.T) {
	l := NewMemory(files("/a", "a")).Branch()
	l.Apply(Delta{{Path: "/a"}, {Path: "/b", File: &File{Content: "b"}}})
	if got := paths(t, l, "/"); !slices.Equal(got, []string{"/b"}) {
		t.Errorf("after apply: %v", got)
	}
	if got, want := deltaString(l.Delta()), "-/a +/b=b"; got != want {
		t.Errorf("delta = %q", got)
	}
}

// Layers work over any Backend, including ones without the fast file path
// and ones whose Walk reports a missing directory as an error.
type strictWalk struct{ Backend }

func (s strictWalk) Walk(c context.Context, dir string) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		if _, err := s.Backend.Stat(c, dir); err != nil {
			yield(Entry{}, err)
			return
		}
		for e, err := range s.Backend.Walk(c, dir) {
			if !yield(e, err) {
				return
			}
		}
	}
}

func TestLayerOverOtherBackends(t *testing.T) {
	for name, base := range map[string]Backend{
		"tracked": Track(NewMemory(files("/a", "a", "/d/x", "x"))),
		"strict":  strictWalk{NewMemory(files("/a", "a", "/d/x", "x"))},
	} {
		t.Run(name, func(t *testing.T) {
			l := NewLayer(base)
			if mustRead(t, l, "/a") != "a" {
				t.Error("read through")
			}
			if err := l.Write(ctx, "/new/y", "y"); err != nil {
				t.Fatal(err)
			}
			if got := paths(t, l, "/new"); !slices.Equal(got, []string{"/new/y"}) {
				t.Errorf("walk of a directory only the layer has = %v", got)
			}
			if e, err := l.Stat(ctx, "/new"); err != nil || !e.IsDir {
				t.Errorf("stat = %+v, %v", e, err)
			}
			if got, want := listing(t, l, "/"), []string{"/a:1", "/d/:1", "/new/:1"}; !slices.Equal(got, want) {
				t.Errorf("list = %v, want %v", got, want)
			}
			wantErr(t, l.Write(ctx, "/a/b", "z"), ErrNotDir, "write under base file")
			if n, err := l.Delete(ctx, "/d"); n != 1 || err != nil {
				t.Errorf("delete = %d, %v", n, err)
			}
			if got, want := deltaString(l.Delta()), "-/d/x +/new/y=y"; got != want {
				t.Errorf("delta = %q, want %q", got, want)
			}
		})
	}
}

func TestLayerConcurrent(t *testing.T) {
	l := NewMemory(files("/seed", "s")).Branch()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 40 {
				p := fmt.Sprintf("/w%d/%d", i, j)
				if err := l.Write(ctx, p, "x"); err != nil {
					t.Error(err)
				}
				_, _ = l.Read(ctx, p)
				_, _ = l.Stat(ctx, "/seed")
				_, _ = l.List(ctx, "/")
				_ = l.Delta()
			}
		})
	}
	wg.Wait()
	if n := len(l.Delta()); n != 8*40 {
		t.Errorf("delta has %d changes", n)
	}
}
