package vfs

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func w(p, content string) Change { return Change{Path: p, File: &File{Content: content}} }
func del(p string) Change        { return Change{Path: p} }

func contents(m *Memory) map[string]string {
	out := map[string]string{}
	for p, f := range m.Files() {
		out[p] = f.Content
	}
	return out
}

func netString(d Delta) string {
	var parts []string
	for _, c := range d {
		if c.File == nil {
			parts = append(parts, fmt.Sprintf("-%s(%s)", c.Path, c.By))
		} else {
			parts = append(parts, fmt.Sprintf("+%s=%s(%s)", c.Path, c.File.Content, c.By))
		}
	}
	return strings.Join(parts, " ")
}

// consistent reports a path that is a file and also has files below it.
func consistent(t *testing.T, m *Memory) {
	t.Helper()
	fs := m.Files()
	for p := range fs {
		for d := Parent(p); d != "/"; d = Parent(d) {
			if _, ok := fs[d]; ok {
				t.Errorf("%s is a file but %s is below it", d, p)
			}
		}
	}
}

func TestMerge(t *testing.T) {
	cases := []struct {
		name      string
		base      map[string]File
		deltas    []Delta
		owners    []string
		net       string
		files     map[string]string
		conflicts []Conflict
		messages  []string
	}{
		{
			name:   "disjoint changes, call order",
			base:   files("/old", "o"),
			deltas: []Delta{{w("/b", "1")}, {w("/a", "2"), del("/old")}},
			owners: []string{"c1", "c2"},
			net:    "+/a=2(c2) +/b=1(c1) -/old(c2)",
			files:  map[string]string{"/a": "2", "/b": "1"},
		},
		{
			name:      "same path written twice: later kept, earlier saved",
			base:      files("/p", "base"),
			deltas:    []Delta{{w("/p", "first")}, {w("/p", "second")}},
			owners:    []string{"call_1", "call_2"},
			net:       "+/p=second(call_2) +/p.conflict-call_1=first(call_1)",
			files:     map[string]string{"/p": "second", "/p.conflict-call_1": "first"},
			conflicts: []Conflict{{Path: "/p", Kept: "call_2", Other: "call_1", SavedTo: "/p.conflict-call_1", KeptOp: "write"}},
			messages:  []string{"/p was written by both call_1 and call_2; the version of call_2 was kept at /p and the version of call_1 was saved to /p.conflict-call_1"},
		},
		{
			name:   "three writers",
			deltas: []Delta{{w("/p", "1")}, {w("/p", "2")}, {w("/p", "3")}},
			owners: []string{"a", "b", "c"},
			net:    "+/p=3(c) +/p.conflict-a=1(a) +/p.conflict-b=2(b)",
			files:  map[string]string{"/p": "3", "/p.conflict-a": "1", "/p.conflict-b": "2"},
			conflicts: []Conflict{
				{Path: "/p", Kept: "b", Other: "a", SavedTo: "/p.conflict-a", KeptOp: "write"},
				{Path: "/p", Kept: "c", Other: "b", SavedTo: "/p.conflict-b", KeptOp: "write"},
			},
		},
		{
			name:   "identical writes are no conflict",
			deltas: []Delta{{w("/p", "same")}, {w("/p", "same")}},
			owners: []string{"a", "b"},
			net:    "+/p=same(b)",
			files:  map[string]string{"/p": "same"},
		},
		{
			name:      "write then delete: delete kept, write saved",
			base:      files("/p", "base"),
			deltas:    []Delta{{w("/p", "edited")}, {del("/p")}},
			owners:    []string{"a", "b"},
			net:       "-/p(b) +/p.conflict-a=edited(a)",
			files:     map[string]string{"/p.conflict-a": "edited"},
			conflicts: []Conflict{{Path: "/p", Kept: "b", Other: "a", SavedTo: "/p.conflict-a", KeptOp: "delete"}},
			messages:  []string{"/p was written by a and deleted by b; the delete of b was kept and the version of a was saved to /p.conflict-a"},
		},
		{
			name:      "delete then write: write kept",
			base:      files("/p", "base"),
			deltas:    []Delta{{del("/p")}, {w("/p", "new")}},
			owners:    []string{"a", "b"},
			net:       "+/p=new(b)",
			files:     map[string]string{"/p": "new"},
			conflicts: []Conflict{{Path: "/p", Kept: "b", Other: "a", KeptOp: "write"}},
			messages:  []string{"/p was deleted by a and then written by b; the write of b was kept"},
		},
		{
			name:   "two deletes agree",
			base:   files("/p", "base"),
			deltas: []Delta{{del("/p")}, {del("/p")}},
			owners: []string{"a", "b"},
			net:    "-/p(b)",
			files:  map[string]string{},
		},
		{
			name:      "side path taken in the base",
			base:      files("/p.conflict-a", "older"),
			deltas:    []Delta{{w("/p", "1")}, {w("/p", "2")}},
			owners:    []string{"a", "b"},
			net:       "+/p=2(b) +/p.conflict-a-2=1(a)",
			files:     map[string]string{"/p": "2", "/p.conflict-a": "older", "/p.conflict-a-2": "1"},
			conflicts: []Conflict{{Path: "/p", Kept: "b", Other: "a", SavedTo: "/p.conflict-a-2", KeptOp: "write"}},
		},
		{
			name:      "side path taken in the base as a directory",
			base:      files("/p.conflict-a/x", "x"),
			deltas:    []Delta{{w("/p", "1")}, {w("/p", "2")}},
			owners:    []string{"a", "b"},
			net:       "+/p=2(b) +/p.conflict-a-2=1(a)",
			files:     map[string]string{"/p": "2", "/p.conflict-a/x": "x", "/p.conflict-a-2": "1"},
			conflicts: []Conflict{{Path: "/p", Kept: "b", Other: "a", SavedTo: "/p.conflict-a-2", KeptOp: "write"}},
		},
		{
			name:      "side path written by the same batch",
			deltas:    []Delta{{w("/p", "1"), w("/p.conflict-a", "mine")}, {w("/p", "2")}},
			owners:    []string{"a", "b"},
			net:       "+/p=2(b) +/p.conflict-a=mine(a) +/p.conflict-a-2=1(a)",
			files:     map[string]string{"/p": "2", "/p.conflict-a": "mine", "/p.conflict-a-2": "1"},
			conflicts: []Conflict{{Path: "/p", Kept: "b", Other: "a", SavedTo: "/p.conflict-a-2", KeptOp: "write"}},
		},
		{
			name:   "a later delta writing the side path saves again",
			deltas: []Delta{{w("/p", "1")}, {w("/p", "2")}, {w("/p.conflict-a", "c")}},
			owners: []string{"a", "b", "c"},
			net:    "+/p=2(b) +/p.conflict-a=c(c) +/p.conflict-a.conflict-a=1(a)",
			files:  map[string]string{"/p": "2", "/p.conflict-a": "c", "/p.conflict-a.conflict-a": "1"},
			conflicts: []Conflict{
				{Path: "/p", Kept: "b", Other: "a", SavedTo: "/p.conflict-a", KeptOp: "write"},
				{Path: "/p.conflict-a", Kept: "c", Other: "a", SavedTo: "/p.conflict-a.conflict-a", KeptOp: "write"},
			},
		},
		{
			name:      "owner names are made path-safe",
			deltas:    []Delta{{w("/p", "1")}, {w("/p", "2")}},
			owners:    []string{"tool/call 1:ü", "b"},
			net:       "+/p=2(b) +/p.conflict-tool_call_1__=1(tool/call 1:ü)",
			files:     map[string]string{"/p": "2", "/p.conflict-tool_call_1__": "1"},
			conflicts: []Conflict{{Path: "/p", Kept: "b", Other: "tool/call 1:ü", SavedTo: "/p.conflict-tool_call_1__", KeptOp: "write"}},
		},
		{
			name:      "empty owner",
			deltas:    []Delta{{w("/p", "1")}, {w("/p", "2")}},
			owners:    []string{"", "b"},
			net:       "+/p=2(b) +/p.conflict-other=1()",
			files:     map[string]string{"/p": "2", "/p.conflict-other": "1"},
			conflicts: []Conflict{{Path: "/p", Kept: "b", SavedTo: "/p.conflict-other", KeptOp: "write"}},
		},
		{
			name:      "fewer owners than deltas",
			deltas:    []Delta{{w("/p", "1")}, {w("/p", "2")}},
			owners:    []string{"a"},
			net:       "+/p=2(delta-1) +/p.conflict-a=1(a)",
			files:     map[string]string{"/p": "2", "/p.conflict-a": "1"},
			conflicts: []Conflict{{Path: "/p", Kept: "delta-1", Other: "a", SavedTo: "/p.conflict-a", KeptOp: "write"}},
		},
		{
			name:      "file then files below it: the directory is kept",
			deltas:    []Delta{{w("/x", "file")}, {w("/x/y", "y"), w("/x/z/w", "w")}},
			owners:    []string{"a", "b"},
			net:       "+/x.conflict-a=file(a) +/x/y=y(b) +/x/z/w=w(b)",
			files:     map[string]string{"/x.conflict-a": "file", "/x/y": "y", "/x/z/w": "w"},
			conflicts: []Conflict{{Path: "/x", Kept: "b", Other: "a", SavedTo: "/x.conflict-a", KeptOp: "write", Kind: ConflictDirKept}},
			messages:  []string{"/x was written as a file by a while b wrote files below it; the files of b were kept and the file of a was saved to /x.conflict-a"},
		},
		{
			name:      "files below then a file: the file is kept, the files move",
			deltas:    []Delta{{w("/x/y", "y"), w("/x/z/w", "w")}, {w("/x", "file")}},
			owners:    []string{"a", "b"},
			net:       "+/x=file(b) +/x.conflict-a/y=y(a) +/x.conflict-a/z/w=w(a)",
			files:     map[string]string{"/x": "file", "/x.conflict-a/y": "y", "/x.conflict-a/z/w": "w"},
			conflicts: []Conflict{{Path: "/x", Kept: "b", Other: "a", SavedTo: "/x.conflict-a", KeptOp: "write", Kind: ConflictFileKept}},
			messages:  []string{"/x was written as a file by b while a wrote files below it; the file of b was kept and the files of a were moved below /x.conflict-a"},
		},
		{
			name:      "base files below, deleted by the writer of the file",
			base:      files("/x/old", "o"),
			deltas:    []Delta{{w("/x/new", "n")}, {w("/x", "file"), del("/x/old")}},
			owners:    []string{"a", "b"},
			net:       "+/x=file(b) +/x.conflict-a/new=n(a) -/x/old(b)",
			files:     map[string]string{"/x": "file", "/x.conflict-a/new": "n"},
			conflicts: []Conflict{{Path: "/x", Kept: "b", Other: "a", SavedTo: "/x.conflict-a", KeptOp: "write", Kind: ConflictFileKept}},
		},
		{
			name:      "the latest writer below wins over an earlier file",
			deltas:    []Delta{{w("/x/y", "y")}, {w("/x", "file")}, {w("/x/z", "z")}},
			owners:    []string{"a", "b", "c"},
			net:       "+/x.conflict-b=file(b) +/x/y=y(a) +/x/z=z(c)",
			files:     map[string]string{"/x.conflict-b": "file", "/x/y": "y", "/x/z": "z"},
			conflicts: []Conflict{{Path: "/x", Kept: "c", Other: "b", SavedTo: "/x.conflict-b", KeptOp: "write", Kind: ConflictDirKept}},
		},
		{
			name:   "nested clashes",
			deltas: []Delta{{w("/x", "x")}, {w("/x/y", "y")}, {w("/x/y/z", "z")}},
			owners: []string{"a", "b", "c"},
			net:    "+/x.conflict-a=x(a) +/x/y.conflict-b=y(b) +/x/y/z=z(c)",
			files:  map[string]string{"/x.conflict-a": "x", "/x/y.conflict-b": "y", "/x/y/z": "z"},
			conflicts: []Conflict{
				{Path: "/x", Kept: "c", Other: "a", SavedTo: "/x.conflict-a", KeptOp: "write", Kind: ConflictDirKept},
				{Path: "/x/y", Kept: "c", Other: "b", SavedTo: "/x/y.conflict-b", KeptOp: "write", Kind: ConflictDirKept},
			},
		},
		{
			name:   "several earlier writers below a later file",
			deltas: []Delta{{w("/x/a", "1")}, {w("/x/b", "2")}, {w("/x", "f")}},
			owners: []string{"a", "b", "c"},
			net:    "+/x=f(c) +/x.conflict-a/a=1(a) +/x.conflict-b/b=2(b)",
			files:  map[string]string{"/x": "f", "/x.conflict-a/a": "1", "/x.conflict-b/b": "2"},
			conflicts: []Conflict{
				{Path: "/x", Kept: "c", Other: "a", SavedTo: "/x.conflict-a", KeptOp: "write", Kind: ConflictFileKept},
				{Path: "/x", Kept: "c", Other: "b", SavedTo: "/x.conflict-b", KeptOp: "write", Kind: ConflictFileKept},
			},
		},
		{
			name:   "no deltas",
			base:   files("/a", "a"),
			deltas: nil,
			net:    "",
			files:  map[string]string{"/a": "a"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := NewMemory(c.base)
			net, conflicts := Merge(ctx, m, c.deltas, c.owners)
			if got := netString(net); got != c.net {
				t.Errorf("net\n got %s\nwant %s", got, c.net)
			}
			if got := contents(m); !maps.Equal(got, c.files) {
				t.Errorf("files\n got %v\nwant %v", got, c.files)
			}
			if !slices.Equal(conflicts, c.conflicts) {
				t.Errorf("conflicts\n got %+v\nwant %+v", conflicts, c.conflicts)
			}
			for i, msg := range c.messages {
				if i < len(conflicts) && conflicts[i].String() != msg {
					t.Errorf("message\n got %q\nwant %q", conflicts[i].String(), msg)
				}
			}
			consistent(t, m)
			if !slices.IsSortedFunc(net, func(a, b Change) int { return strings.Compare(a.Path, b.Path) }) {
				t.Error("net delta is not sorted")
			}
		})
	}
}

// Merge over real layers of one batch, into a Memory and into a Layer.
func TestMergeLayers(t *testing.T) {
	for _, into := range []string{"memory", "layer"} {
		t.Run(into, func(t *testing.T) {
			m := NewMemory(files("/shared", "base", "/keep", "k"))
			var dst interface {
				Brancher
				Applier
			} = m
			if into == "layer" {
				dst = m.Branch()
			}
			l1, l2 := dst.Branch(), dst.Branch()
			must(t, l1.Write(ctx, "/shared", "one"))
			must(t, l1.Write(ctx, "/only1", "1"))
			must(t, l2.Write(ctx, "/shared", "two"))
			_, err := l2.Delete(ctx, "/keep")
			must(t, err)
			_, conflicts := Merge(ctx, dst, []Delta{l1.Delta(), l2.Delta()}, []string{"c1", "c2"})
			if len(conflicts) != 1 || conflicts[0].SavedTo != "/shared.conflict-c1" {
				t.Errorf("conflicts = %+v", conflicts)
			}
			got := map[string]string{}
			for e, err := range dst.Walk(ctx, "/") {
				must(t, err)
				got[e.Path] = mustRead(t, dst, e.Path)
			}
			want := map[string]string{"/shared": "two", "/shared.conflict-c1": "one", "/only1": "1"}
			if !maps.Equal(got, want) {
				t.Errorf("files = %v, want %v", got, want)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Randomised batches of layers over a random base: after Merge the tree is
// consistent, the result does not depend on anything but the input, and no
// content written by the last change of any path in any layer is lost.
func TestMergeRandom(t *testing.T) {
	names := []string{"a", "b", "a/b", "a/c", "b/a", "a/b/c", "c"}
	for seed := range uint64(400) {
		r := rand.New(rand.NewPCG(seed, 7))
		base := map[string]File{}
		for _, n := range names {
			if r.IntN(3) == 0 {
				base["/"+n] = File{Content: "base-" + n}
			}
		}
		var deltas []Delta
		var owners []string
		for i := range 1 + r.IntN(4) {
			m := NewMemory(base)
			l := m.Branch()
			for range r.IntN(5) {
				p := "/" + names[r.IntN(len(names))]
				if r.IntN(3) == 0 {
					_, _ = l.Delete(ctx, p)
				} else {
					_ = l.Write(ctx, p, fmt.Sprintf("L%d-%s-%d", i, p, r.IntN(3)))
				}
			}
			deltas = append(deltas, l.Delta())
			owners = append(owners, fmt.Sprintf("c%d", i))
		}
		m := NewMemory(base)
		net, conflicts := Merge(ctx, m, deltas, owners)
		consistent(t, m)
		again := NewMemory(base)
		net2, conflicts2 := Merge(ctx, again, deltas, owners)
		if netString(net) != netString(net2) || !slices.Equal(conflicts, conflicts2) || !maps.Equal(contents(m), contents(again)) {
			t.Fatalf("seed %d: Merge is not deterministic", seed)
		}
		have := map[string]bool{}
		for _, c := range contents(m) {
			have[c] = true
		}
		for _, d := range deltas {
			for _, c := range d {
				if c.File != nil && !have[c.File.Content] {
					t.Fatalf("seed %d: the write %q to %s was lost\ndeltas %v\nfiles %v", seed, c.File.Content, c.Path, deltas, contents(m))
				}
			}
		}
		for _, cf := range conflicts {
			if cf.String() == "" || cf.Kept == "" {
				t.Fatalf("seed %d: bad conflict %+v", seed, cf)
			}
		}
	}
}
