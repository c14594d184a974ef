package sandbox

import (
	"path"
	"slices"
	"strings"
	"testing"
)

// refMatch is a plain recursive doublestar matcher, the reference the
// matcher's masks are checked against.
func refMatch(segs, names []string) bool {
	if len(segs) == 0 {
		return len(names) == 0
	}
	if segs[0] == "**" {
		for i := 0; i <= len(names); i++ {
			if refMatch(segs[1:], names[i:]) {
				return true
			}
		}
		return false
	}
	if len(names) == 0 {
		return false
	}
	ok, _ := path.Match(segs[0], names[0])
	return ok && refMatch(segs[1:], names[1:])
}

func TestPatternMatch(t *testing.T) {
	mt := func(entries ...string) *matcher {
		pats, err := parsePatterns(entries)
		if err != nil {
			t.Fatal(err)
		}
		return &matcher{pats: pats}
	}
	for _, tc := range []struct {
		entries []string
		path    string
		dir     bool
		want    bool
	}{
		{[]string{"**/AGENTS.md"}, "AGENTS.md", false, true},
		{[]string{"**/AGENTS.md"}, "a/b/AGENTS.md", false, true},
		{[]string{"**/AGENTS.md"}, "a/b/AGENTS.mdx", false, false},
		{[]string{".deepagents"}, ".deepagents/agents/x.md", false, true},
		{[]string{".deepagents/"}, ".deepagents", true, true},
		{[]string{"./.mcp.json"}, ".mcp.json", false, true},
		{[]string{"*.toml"}, "deepagents.toml", false, true},
		{[]string{"*.toml"}, "sub/deepagents.toml", false, false},
		{[]string{".git"}, ".git", true, false},
		{[]string{".git"}, ".git", false, true},
		{[]string{".git"}, ".git/config", false, true},
		{[]string{".git"}, ".git/hooks/pre-commit", false, true},
		{[]string{".git"}, ".git/info/exclude", false, true},
		{[]string{".git"}, ".git/objects/ab/cdef", false, false},
		{[]string{".git"}, ".git/refs/heads/main", false, false},
		{[]string{".git"}, ".git/index", false, false},
		{[]string{".git"}, ".git/modules/lib/x/config", false, true},
		{[]string{".git"}, ".git/worktrees/w/commondir", false, true},
		{[]string{"**/.git"}, "vendor/x/.git/hooks/post-checkout", false, true},
		{[]string{"a/**/**/b"}, "a/b", false, true},
		{[]string{"a/**/b"}, "a/x/y/b", false, true},
		{GitDirEntries(".bare"), ".bare/config", false, true},
		{GitDirEntries(".bare"), ".bare/commondir", false, true},
		{GitDirEntries(".bare"), ".bare/hooks/pre-commit", false, true},
		{GitDirEntries(".bare"), ".bare/worktrees/w/commondir", false, true},
		{GitDirEntries(".bare"), ".bare/modules/m/info/attributes", false, true},
		{GitDirEntries(".bare"), ".bare/objects/ab/cdef", false, false},
		{GitDirEntries(".bare"), ".bare", true, false},
		{GitDirEntries("a*b/"), "a*b/config", false, true},
		{GitDirEntries("a*b/"), "axb/config", false, false},
	} {
		if got := mt(tc.entries...).protects(tc.path, tc.dir); got != tc.want {
			t.Errorf("%q protects %q (dir %v) = %v, want %v", tc.entries, tc.path, tc.dir, got, tc.want)
		}
	}
}

// FuzzProtectedPattern: for any entry and path, the matcher agrees with
// the reference matcher on every prefix of the path; it says a longer path
// could match wherever one does; and where it gives names to look up
// instead of listing a directory, no other name could match or lead to a
// match.
func FuzzProtectedPattern(f *testing.F) {
	f.Add("**/AGENTS.md", "a/b/AGENTS.md")
	f.Add(".git", ".git/modules/x/y/config")
	f.Add("a/*/b/**", "a/x/b/c/d")
	f.Add("[a-c]?/**/**/z", "b1/z")
	f.Add(`x\*y/*`, "x*y/q")
	f.Add("skills/review", "skills/review/SKILL.md")
	f.Fuzz(func(t *testing.T, entry, p string) {
		pats, err := parsePatterns([]string{entry})
		if err != nil {
			return
		}
		names := strings.Split(p, "/")
		if slices.ContainsFunc(names, func(n string) bool { return n == "" || n == "." || n == ".." }) || len(names) > 40 {
			return
		}
		mt := &matcher{pats: pats}
		st := mt.root()
		for k, name := range names {
			lits, litOK := mt.literals(st)
			next, _, below := mt.child(st, name, true, nil)
			for i := range pats {
				pt := &pats[i]
				full := pt.full(next[i])
				if want := refMatch(pt.segs, names[:k+1]); full != want {
					t.Fatalf("%q (%q) at %q: matcher %v, reference %v", entry, pt.segs, names[:k+1], full, want)
				}
				// A match further down means the way there was open.
				for j := k + 2; j <= len(names); j++ {
					if refMatch(pt.segs, names[:j]) && !pt.more(next[i]) {
						t.Fatalf("%q: %q matches, but the matcher gave up at %q", entry, names[:j], names[:k+1])
					}
				}
			}
			if litOK && !slices.Contains(lits, name) {
				_, prot, below2 := mt.child(st, name, false, nil)
				if prot || below || below2 {
					t.Fatalf("%q: the names to look up at %q are %q, but %q matters", entry, names[:k], lits, name)
				}
			}
			st = next
		}
	})
}
