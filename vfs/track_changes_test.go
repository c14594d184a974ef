package vfs_test

import (
	"context"
	"testing"

	"github.com/deepagents-go/deepagents/vfs"
)

// A Memory that tracks its changes reports each path written or deleted
// since the last TakeChanges, once, with the file as it is now.
func TestMemoryTakeChanges(t *testing.T) {
	ctx := context.Background()
	m := vfs.NewMemory(map[string]vfs.File{"/seed.md": {Content: "s"}})
	if d := m.TakeChanges(); len(d) != 0 {
		t.Fatalf("untracked memory reported %v", d)
	}
	m.TrackChanges()
	_ = m.Write(ctx, "/b.md", "b1")
	_ = m.Write(ctx, "/a.md", "a")
	_ = m.Write(ctx, "/b.md", "b2")
	_ = m.Write(ctx, "/gone.md", "x")
	if _, err := m.Delete(ctx, "/gone.md"); err != nil {
		t.Fatal(err)
	}
	m.Apply(vfs.Delta{{Path: "/seed.md"}})
	d := m.TakeChanges()
	got := map[string]string{}
	var order []string
	for _, c := range d {
		order = append(order, c.Path)
		if c.File == nil {
			got[c.Path] = "<deleted>"
		} else {
			got[c.Path] = c.File.Content
		}
	}
	want := map[string]string{"/a.md": "a", "/b.md": "b2", "/gone.md": "<deleted>", "/seed.md": "<deleted>"}
	if len(got) != len(want) || order[0] != "/a.md" || order[3] != "/seed.md" {
		t.Fatalf("changes %v (order %v)", got, order)
	}
	for p, c := range want {
		if got[p] != c {
			t.Errorf("%s = %q, want %q", p, got[p], c)
		}
	}
	if d := m.TakeChanges(); len(d) != 0 {
		t.Fatalf("changes reported twice: %v", d)
	}
}
