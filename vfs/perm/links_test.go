package perm_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/vfs"
	"github.com/deepagents-go/deepagents/vfs/osfs"
	"github.com/deepagents-go/deepagents/vfs/perm"
)

// LinkRules checks the rules where a path leads through symbolic links,
// for reads and writes; a delete removes the link itself; the path as
// written is left to the other checks; a link it cannot follow is refused.
func TestLinkRules(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{"secret/key": "K", "docs/ok.md": "ok", "open/f": "f"} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"s": "secret", "docs/k": "../secret/key", "o": "open", "loop": "loop", "out": "../x"} {
		if err := os.Symlink(target, filepath.Join(dir, filepath.FromSlash(link))); err != nil {
			t.Fatal(err)
		}
	}
	disk, err := osfs.New(dir, osfs.NoSweep(), osfs.NoSync())
	if err != nil {
		t.Fatal(err)
	}
	defer disk.Close()
	rules, err := perm.ParseRules([]string{"deny all /secret/**"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := perm.LinkRules(disk, rules, []perm.Mount{{Prefix: "/", Host: dir, Links: true}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	denied := func(err error) bool {
		var d *vfs.DeniedError
		return errors.As(err, &d)
	}
	for name, err := range map[string]error{
		"read through a dir link":  func() error { _, err := b.Read(ctx, "/s/key"); return err }(),
		"read through a file link": func() error { _, err := b.Read(ctx, "/docs/k"); return err }(),
		"stat":                     func() error { _, err := b.Stat(ctx, "/docs/k"); return err }(),
		"list":                     func() error { _, err := b.List(ctx, "/s"); return err }(),
		"walk": func() error {
			for _, err := range b.Walk(ctx, "/s") {
				return err
			}
			return nil
		}(),
		"write":  b.Write(ctx, "/s/new", "x"),
		"edit":   vfs.Update(ctx, b, "/docs/k", func(string) (string, error) { return "x", nil }),
		"delete": func() error { _, err := b.Delete(ctx, "/s/key"); return err }(),
		"loop":   func() error { _, err := b.Read(ctx, "/loop/x"); return err }(),
	} {
		if !denied(err) {
			t.Errorf("%s: %v, want a refusal", name, err)
		}
	}
	if err := b.Write(ctx, "/o/g", "g"); err != nil {
		t.Errorf("a link to an allowed place: %v", err)
	}
	// The path as written is the other checks' business.
	if got, err := b.Read(ctx, "/secret/key"); err != nil || got != "K" {
		t.Errorf("read as written: %q %v", got, err)
	}
	// A delete removes the link, not what it points to.
	if _, err := b.Delete(ctx, "/docs/k"); err != nil {
		t.Errorf("delete of the link: %v", err)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "secret", "key")); err != nil || string(data) != "K" {
		t.Errorf("the denied file: %q %v", data, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "secret", "new")); err == nil {
		t.Error("a file was written in the denied directory")
	}
	if u, ok := b.(interface{ Unwrap() vfs.Backend }); !ok || u.Unwrap() != disk {
		t.Error("Unwrap does not give the disk back")
	}
	if same, _ := perm.LinkRules(disk, nil, nil); same != disk {
		t.Error("no rules should leave the backend as it is")
	}
}

// FuzzLinkRules: whatever two links point at and whatever path is used,
// the rules (as written, and through LinkRules where links lead) keep a
// read from returning the denied file and a write or delete from changing
// the denied directory.
func FuzzLinkRules(f *testing.F) {
	f.Add("secret", "../secret/key", "/l1/key", false)
	f.Add("a", "..", "/a/l2/secret/key", true)
	f.Add("a/l2", "../l1", "/l1/l2/key", false)
	f.Add(".", "l2", "/l1/secret/new", false)
	f.Fuzz(func(t *testing.T, l1, l2, path string, del bool) {
		dir := t.TempDir()
		for name, body := range map[string]string{"secret/key": "DENIED", "a/b": "b"} {
			p := filepath.Join(dir, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if os.Symlink(filepath.FromSlash(l1), filepath.Join(dir, "l1")) != nil || os.Symlink(filepath.FromSlash(l2), filepath.Join(dir, "a", "l2")) != nil {
			return
		}
		before := tree(t, filepath.Join(dir, "secret"))
		disk, err := osfs.New(dir, osfs.NoSweep(), osfs.NoSync())
		if err != nil {
			t.Fatal(err)
		}
		defer disk.Close()
		rules, _ := perm.ParseRules([]string{"deny all /secret/**"})
		linked, err := perm.LinkRules(disk, rules, []perm.Mount{{Prefix: "/", Host: dir, Links: true}})
		if err != nil {
			t.Fatal(err)
		}
		b := perm.Wrap(linked, rules)
		ctx := context.Background()
		if got, err := b.Read(ctx, path); err == nil && strings.Contains(got, "DENIED") {
			t.Fatalf("links l1 -> %q, a/l2 -> %q: reading %q gave the denied file", l1, l2, path)
		}
		if del {
			_, _ = b.Delete(ctx, path)
		} else {
			_ = b.Write(ctx, path, "pwned")
		}
		if after := tree(t, filepath.Join(dir, "secret")); after != before {
			t.Fatalf("links l1 -> %q, a/l2 -> %q: changing %q changed the denied directory:\n%s\n%s", l1, l2, path, before, after)
		}
	})
}
