package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/vfs"
	"github.com/deepagents-go/deepagents/vfs/store"
	"github.com/deepagents-go/deepagents/vfs/vfstest"
)

func TestMemoryTableConformance(t *testing.T) {
	vfstest.Run(t, func(t *testing.T, files map[string]string) vfs.Backend {
		s, err := store.New(store.NewMemoryTable(), "agent")
		if err != nil {
			t.Fatal(err)
		}
		for p, c := range files {
			if err := s.Write(context.Background(), p, c); err != nil {
				t.Fatal(err)
			}
		}
		return s
	})
}

func TestNamespacesAreApart(t *testing.T) {
	ctx := context.Background()
	tab := store.NewMemoryTable()
	a, _ := store.New(tab, "alice")
	b, _ := store.New(tab, "bob")
	if err := a.Write(ctx, "/prefs.md", "tea"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Read(ctx, "/prefs.md"); !errors.Is(err, vfs.ErrNotFound) {
		t.Errorf("bob reads alice's file: %v", err)
	}
	a2, _ := store.New(tab, "alice")
	if got := vfstest.MustRead(t, a2, "/prefs.md"); got != "tea" {
		t.Errorf("a second store of one namespace reads %q", got)
	}
	if _, err := store.New(tab, ""); err == nil {
		t.Error("an empty namespace was accepted")
	}
}

func TestFileSizeCap(t *testing.T) {
	ctx := context.Background()
	s, _ := store.New(store.NewMemoryTable(), "n")
	err := s.Write(ctx, "/big", strings.Repeat("x", store.MaxFileSize+1))
	if err == nil || !strings.Contains(err.Error(), "over the store's limit of 8 MiB per file") {
		t.Errorf("oversized write: %v", err)
	}
	if err := s.Write(ctx, "/f", "x"); err != nil {
		t.Fatal(err)
	}
	err = vfs.Update(ctx, s, "/f", func(string) (string, error) { return strings.Repeat("y", store.MaxFileSize+1), nil })
	if err == nil || vfstest.MustRead(t, s, "/f") != "x" {
		t.Errorf("oversized update: %v", err)
	}
}
