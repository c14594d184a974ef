package perm_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/deepagents-go/deepagents/vfs"
	"github.com/deepagents-go/deepagents/vfs/osfs"
	"github.com/deepagents-go/deepagents/vfs/perm"
)

// FuzzParse feeds the rule parser and the glob matcher: a rule that parses
// prints back to itself, its glob is absolute, and matching any clean path
// against it never fails.
func FuzzParse(f *testing.F) {
	for _, s := range [][2]string{
		{"deny write /etc/**", "/etc/passwd"},
		{"allow read docs/*.md", "/docs/a.md"},
		{"deny all /a/{b,c}/[x-z]?/**", "/a/b/y1/q"},
		{"allow\tall\t/my notes/**", "/my notes/x"},
		{"deny read /a/[b", "/a/b"},
		{"deny read ../x", "x"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, rule, path string) {
		r, err := perm.Parse(rule)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if !strings.HasPrefix(r.Glob, "/") {
			t.Fatalf("Parse(%q) glob %q is not absolute", rule, r.Glob)
		}
		again, err := perm.Parse(r.String())
		if err != nil || again != r {
			t.Fatalf("Parse(%q) = %q, which parses back as %q, %v", rule, r, again, err)
		}
		p, err := vfs.Clean(path)
		if err != nil {
			return
		}
		rs := perm.Rules{r}
		got, matched := rs.Decide(perm.Read, p)
		if matched != r.Matches(perm.Read, p) || matched && got != r {
			t.Fatalf("Decide and Matches disagree on %q, %q", r, p)
		}
		if denied := rs.Check(perm.All, "read", p); denied != nil && (r.Allow || !strings.Contains(denied.Error(), fmt.Sprintf("%q", r.String()))) {
			t.Fatalf("Check(%q, %q) = %v", r, p, denied)
		}
	})
}

// FuzzGuard writes or deletes a path, given by the fuzzer, in a directory
// holding git's data and an agent file, with two symbolic links whose
// targets the fuzzer picks, through the guarded disk backend and without
// approval. Whatever the path and the links, git's data and the agent
// files are exactly as they were afterwards: the guard's reading of the
// links is the disk's.
func FuzzGuard(f *testing.F) {
	for _, s := range []struct {
		l1, l2, path string
		del          bool
	}{
		{".git/config", "..", "/l1", false},
		{".git", "../.deepagents", "/l1/hooks/pre-commit", false},
		{"a", "../../.git/hooks", "/a/l2/x", false},
		{"a/l2", "../.deepagents/agents", "/l1/a.md", false},
		{".", ".git", "/l1/l1/l1/.git/config", false},
		{"a/b/../../.git", "b", "/l1", true},
		{"nope/../.git", "x", "/l1/config", false},
		{".GIT", "..", "/l1/config", false},
		{"l1", "l2", "/l1", false},
		{".deepagents", "..", "/l1", true},
		{"a", "../.git/hooks/x", "/a/l2", true},
	} {
		f.Add(s.l1, s.l2, s.path, s.del)
	}
	f.Fuzz(func(t *testing.T, l1, l2, path string, del bool) {
		for _, s := range []string{l1, l2} {
			if s == "" || len(s) > 200 || strings.ContainsAny(s, "\x00") {
				return
			}
		}
		if len(path) > 300 {
			return
		}
		dir := t.TempDir()
		files := map[string]string{".git/config": "[core]\n", ".git/hooks/x": "hook\n", ".deepagents/agents/a.md": "agent\n", "a/b/file": "f\n"}
		for name, body := range files {
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
		before := tree(t, filepath.Join(dir, ".git")) + tree(t, filepath.Join(dir, ".deepagents"))
		g, err := perm.NewGuard([]perm.Zone{
			{Dir: "/", Glob: "**/.git/**", Level: perm.Never, What: "git's data"},
			{Dir: "/", Glob: "**/.deepagents/**", Level: perm.Ask, What: "settings"},
		}, []perm.Mount{{Prefix: "/", Host: dir, Links: true}})
		if err != nil {
			t.Fatal(err)
		}
		disk, err := osfs.New(dir, osfs.NoSweep(), osfs.NoSync())
		if err != nil {
			t.Fatal(err)
		}
		defer disk.Close()
		b := g.Wrap(disk)
		if del {
			_, _ = b.Delete(context.Background(), path)
		} else {
			_ = b.Write(context.Background(), path, "pwned")
		}
		if after := tree(t, filepath.Join(dir, ".git")) + tree(t, filepath.Join(dir, ".deepagents")); after != before {
			t.Fatalf("links l1 -> %q, a/l2 -> %q; %s %q changed the protected files:\nbefore:\n%s\nafter:\n%s", l1, l2, map[bool]string{true: "delete", false: "write"}[del], path, before, after)
		}
	})
}

// tree lists the files below dir with their contents, without following
// links, for comparing.
func tree(t *testing.T, dir string) string {
	var b strings.Builder
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			fmt.Fprintf(&b, "%s: %v\n", p, err)
			return nil
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			fmt.Fprintf(&b, "%s -> %s\n", p, target)
		case d.IsDir():
			fmt.Fprintf(&b, "%s/\n", p)
		default:
			data, _ := os.ReadFile(p)
			fmt.Fprintf(&b, "%s = %q\n", p, data)
		}
		return nil
	})
	return b.String()
}

// FuzzGuardFold: a path and the same path with any of its letters swapped
// for another spelling case folding equates with it (as a case-insensitive
// disk takes them) reach the same zones.
func FuzzGuardFold(f *testing.F) {
	f.Add("/.mcp.json", uint64(0b10))
	f.Add("/.deepagents/skills/x", uint64(0xffff))
	f.Add("/a/.GIT/config", uint64(1))
	f.Add("/AGENTS.md", uint64(0x55))
	f.Fuzz(func(t *testing.T, p string, swap uint64) {
		if !utf8.ValidString(p) || len(p) > 1024 {
			return // other spellings may be longer than a path may be
		}
		g, err := perm.NewGuard([]perm.Zone{
			{Dir: "/", Glob: "**/.git/**", Level: perm.Never, What: "git"},
			{Dir: "/h", Glob: "**/.deepagents/s[k]ills/**", Level: perm.Ask, What: "skills"},
			{Dir: "/h", Glob: "**/{AGENTS.md,.mcp.json}", Level: perm.Ask, What: "memory"},
		}, []perm.Mount{{Prefix: "/", Host: "/h"}})
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		i := 0
		for _, r := range p {
			if swap&(1<<(i%64)) != 0 {
				r = unicode.SimpleFold(r)
			}
			b.WriteRune(r)
			i++
		}
		a, errA := g.CheckWrite(p)
		c, errC := g.CheckWrite(b.String())
		if errA != nil || errC != nil {
			return // a path the tools refuse (vfs.Clean), such as "s:"
		}
		if a.Level != c.Level || a.What != c.What {
			t.Fatalf("%q: %+v %v; %q: %+v %v", p, a, errA, b.String(), c, errC)
		}
	})
}
