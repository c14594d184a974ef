package vfs

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// plain hides every optional interface of the backend it wraps.
type plain struct{ Backend }

// Tracked passes an update through to the backend and records the new
// content; a refused update records nothing.
func TestTrackedUpdateRecords(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		inner func(m *Memory) Backend
	}{
		{"updater", func(m *Memory) Backend { return m }},
		{"plain backend", func(m *Memory) Backend { return plain{m} }},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := NewMemory(map[string]File{"/a": {Content: "one"}})
			tr := Track(c.inner(m))
			if err := tr.Update(ctx, "a", func(s string) (string, error) { return s + " two", nil }); err != nil {
				t.Fatal(err)
			}
			if err := tr.Update(ctx, "/a", func(s string) (string, error) { return "", errors.New("no") }); err == nil {
				t.Fatal("a refused update succeeded")
			}
			if err := tr.Update(ctx, "/missing", func(s string) (string, error) { return "x", nil }); !errors.Is(err, ErrNotFound) {
				t.Errorf("Update of a missing file: %v", err)
			}
			ch := tr.Changes()
			if len(ch) != 1 || ch[0].Path != "/a" || ch[0].File == nil || ch[0].File.Content != "one two" {
				t.Errorf("changes = %+v, want one write of /a holding %q", ch, "one two")
			}
			if got, _ := m.Read(ctx, "/a"); got != "one two" {
				t.Errorf("/a = %q", got)
			}
		})
	}
}

// On a backend without Update, the function Update checks before writing
// that the file still holds what was read, and refuses the write when it
// does not.
func TestUpdateFallbackDetectsChange(t *testing.T) {
	ctx := context.Background()
	m := NewMemory(map[string]File{"/a": {Content: "base"}})
	b := plain{m}
	err := Update(ctx, b, "/a", func(s string) (string, error) {
		if err := m.Write(ctx, "/a", "changed by another writer"); err != nil {
			t.Fatal(err)
		}
		return s + " edited", nil
	})
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "/a") {
		t.Errorf("Update over a concurrent change: %v, want an error naming /a that matches ErrConflict", err)
	}
	if got, _ := m.Read(ctx, "/a"); got != "changed by another writer" {
		t.Errorf("/a = %q: the other writer's content was overwritten", got)
	}
	if err := Update(ctx, b, "/a", func(s string) (string, error) { return strings.ToUpper(s), nil }); err != nil {
		t.Fatal(err)
	}
	if got, _ := m.Read(ctx, "/a"); got != "CHANGED BY ANOTHER WRITER" {
		t.Errorf("/a = %q after an uncontended update", got)
	}
}

// Update of a Memory and of a Layer is atomic against their writes: fn runs
// while the lock every Write and Delete takes is held.
func TestUpdateHoldsOffWrites(t *testing.T) {
	ctx := context.Background()
	m := NewMemory(map[string]File{"/f": {Content: "0"}})
	err := m.Update(ctx, "/f", func(s string) (string, error) {
		if m.mu.TryLock() {
			m.mu.Unlock()
			t.Error("Memory.Update runs fn without holding the write lock")
		}
		return s + "1", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	l := m.Branch()
	err = l.Update(ctx, "/f", func(s string) (string, error) {
		if l.wmu.TryLock() {
			l.wmu.Unlock()
			t.Error("Layer.Update runs fn without holding the write lock")
		}
		return s + "2", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := l.Read(ctx, "/f"); got != "012" {
		t.Errorf("/f in the layer = %q, want %q", got, "012")
	}
	if got, _ := m.Read(ctx, "/f"); got != "01" {
		t.Errorf("/f in the base = %q, want %q (the layer's update stays in the layer)", got, "01")
	}
}
