package mcp

import (
	"strings"
	"testing"
)

// FuzzExpandVars: text without "${" is kept as is; with every variable set
// to "v", no valid reference is left behind; nothing panics.
func FuzzExpandVars(f *testing.F) {
	for _, s := range []string{"plain", "${A}", "${A:-d}", "x${A}y${B:-}z", "${", "${}", "${1A}", "$${A}}", "${A:-${B}}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		all := func(string) (string, bool) { return "v", true }
		out, err := expandVars(s, all)
		if !strings.Contains(s, "${") && (err != nil || out != s) {
			t.Fatalf("%q changed to %q (%v)", s, out, err)
		}
		none := func(string) (string, bool) { return "", false }
		out2, err2 := expandVars(s, none)
		if err2 == nil && err == nil && strings.Count(out, "v") < strings.Count(out2, "v") {
			t.Fatalf("%q: set variables gave %q, unset %q", s, out, out2)
		}
	})
}

// FuzzToolName: every name fits 64 characters of [A-Za-z0-9_-], starts
// with the server's prefix when short, and differs for different tools.
func FuzzToolName(f *testing.F) {
	f.Add("github", "create_issue")
	f.Add("a.b", strings.Repeat("x", 80))
	f.Add("s", "naïve tool/name")
	f.Fuzz(func(t *testing.T, server, name string) {
		n := ToolName(server, name)
		if len(n) > MaxToolName {
			t.Fatalf("%q is %d long", n, len(n))
		}
		for _, r := range n {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
				t.Fatalf("%q holds %q", n, r)
			}
		}
		if !strings.HasPrefix(n, "mcp__") {
			t.Fatalf("%q lacks the prefix", n)
		}
		if len("mcp__"+server+"__"+name) > MaxToolName && ToolName(server, name+"x") == n {
			t.Fatalf("two long names collide: %q", n)
		}
	})
}
