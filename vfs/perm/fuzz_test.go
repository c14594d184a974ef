package perm_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/vfs"
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
