package perm_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/vfs"
	"github.com/deepagents-go/deepagents/vfs/perm"
	"github.com/deepagents-go/deepagents/vfs/vfstest"
)

var ctx = context.Background()

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in, want, err string
	}{
		{in: "deny write /etc/**", want: "deny write /etc/**"},
		{in: "  Allow\tREAD   docs/*.md ", want: "allow read /docs/*.md"},
		{in: "deny all //secrets/./x/**/", want: "deny all /secrets/x/**"},
		{in: "allow read /my notes/*", want: "allow read /my notes/*"},
		{in: "allow read /", want: "allow read /"},
		{in: "", err: "it is empty"},
		{in: "block read /x", err: `it starts with "block", not allow or deny`},
		{in: "deny", err: "it names no operation"},
		{in: "deny exec /x", err: `the operation "exec" is not read, write or all`},
		{in: "deny read", err: "it has no path pattern"},
		{in: "deny read /a/../b", err: "'..'"},
		{in: "deny read /a/[b", err: "is not a valid glob"},
		{in: `deny read C:\x`, err: "backslash"},
		{in: "deny read /\xff", err: "not valid UTF-8"},
	} {
		r, err := perm.Parse(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), `such as "deny write /etc/**"`) {
				t.Errorf("Parse(%q) = %v, %v; want an error containing %q", c.in, r, err, c.err)
			}
			continue
		}
		if err != nil || r.String() != c.want {
			t.Errorf("Parse(%q) = %q, %v; want %q", c.in, r, err, c.want)
		}
	}
	if _, err := perm.Parse("deny read /" + strings.Repeat("a", perm.MaxRuleLen)); err == nil {
		t.Error("an over-long rule was accepted")
	}
}

func TestParseRules(t *testing.T) {
	rs, err := perm.ParseRules([]string{"# comment", "", "deny write /etc/**", "allow all /**"})
	if err != nil || !slices.Equal(rs.Strings(), []string{"deny write /etc/**", "allow all /**"}) {
		t.Errorf("ParseRules = %v, %v", rs.Strings(), err)
	}
	_, err = perm.ParseRules([]string{"deny read /a", "nope", "deny sing /b"})
	if err == nil || !strings.Contains(err.Error(), `"nope"`) || !strings.Contains(err.Error(), `"sing"`) {
		t.Errorf("ParseRules of two bad rules: %v; want both named", err)
	}
}

func mustRules(t *testing.T, lines ...string) perm.Rules {
	t.Helper()
	rs, err := perm.ParseRules(lines)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func TestFirstMatchWins(t *testing.T) {
	rs := mustRules(t,
		"allow read /secrets/public.txt",
		"deny all /secrets/**",
		"deny write /**/*.lock",
		"allow write /tmp/**",
	)
	for _, c := range []struct {
		op   perm.Op
		path string
		rule string // "" when no rule matches (allowed by default)
		ok   bool
	}{
		{perm.Read, "/secrets/public.txt", "allow read /secrets/public.txt", true},
		{perm.Write, "/secrets/public.txt", "deny all /secrets/**", false},
		{perm.Read, "/secrets", "deny all /secrets/**", false},
		{perm.Read, "/secrets/a/b", "deny all /secrets/**", false},
		{perm.Read, "/secretsx", "", true},
		{perm.Write, "/tmp/x.lock", "deny write /**/*.lock", false},
		{perm.Write, "/tmp/x", "allow write /tmp/**", true},
		{perm.Read, "/tmp/x.lock", "", true},
		{perm.Write, "/notes.md", "", true},
	} {
		r, matched := rs.Decide(c.op, c.path)
		got := ""
		if matched {
			got = r.String()
		}
		err := rs.Check(c.op, "x", c.path)
		if got != c.rule || (err == nil) != c.ok {
			t.Errorf("%v %s: rule %q, error %v; want rule %q, allowed %v", c.op, c.path, got, err, c.rule, c.ok)
		}
	}
}

func seeded(t *testing.T, files map[string]string, lines ...string) (vfs.Backend, *vfs.Memory) {
	m := vfs.NewMemory(vfstest.Files(files))
	return perm.Wrap(m, mustRules(t, lines...)), m
}

func TestBackend(t *testing.T) {
	files := map[string]string{"/a.txt": "a", "/etc/passwd": "root", "/etc/motd": "hi", "/secrets/key": "k", "/docs/x.md": "x"}
	b, m := seeded(t, files, "allow read /etc/motd", "deny read /etc/**", "deny all /secrets/**", "deny write /docs/**")

	_, err := b.Read(ctx, "/etc/passwd")
	var de *vfs.DeniedError
	if !errors.As(err, &de) || !errors.Is(err, vfs.ErrPermission) || de.Reason != `permission denied by rule "deny read /etc/**"` {
		t.Errorf("Read(/etc/passwd) = %v", err)
	}
	if got := vfstest.MustRead(t, b, "/etc/motd"); got != "hi" {
		t.Errorf("Read(/etc/motd) = %q", got)
	}
	// Listings leave out what may not be read.
	if got, want := vfstest.Listing(t, b, "/"), []string{"/a.txt", "/docs/", "/etc/"}; !slices.Equal(got, want) {
		t.Errorf("List(/) = %v, want %v", got, want)
	}
	if got, want := vfstest.Listing(t, b, "/etc"), []string{"/etc/motd"}; !slices.Equal(got, want) {
		t.Errorf("List(/etc) = %v, want %v", got, want)
	}
	if got, want := vfstest.Paths(t, b, "/"), []string{"/a.txt", "/docs/x.md", "/etc/motd"}; !slices.Equal(got, want) {
		t.Errorf("Walk(/) = %v, want %v", got, want)
	}
	// A denied directory with nothing allowed below it fails with the rule.
	if _, err := b.List(ctx, "/secrets"); err == nil || !strings.Contains(err.Error(), `"deny all /secrets/**"`) {
		t.Errorf("List(/secrets) = %v", err)
	}
	walked := 0
	for _, err := range b.Walk(ctx, "/secrets") {
		walked++
		if err == nil || !strings.Contains(err.Error(), `"deny all /secrets/**"`) {
			t.Errorf("Walk(/secrets) = %v", err)
		}
	}
	if walked != 1 {
		t.Errorf("Walk(/secrets) yielded %d times, want the rule's error once", walked)
	}
	// Stat and Open are reads too.
	if _, err := b.Stat(ctx, "/etc/passwd"); !errors.Is(err, vfs.ErrPermission) || !strings.Contains(err.Error(), `"deny read /etc/**"`) {
		t.Errorf("Stat(/etc/passwd) = %v", err)
	}
	if _, _, err := vfs.Open(ctx, b, "/secrets/key"); !errors.Is(err, vfs.ErrPermission) || !strings.Contains(err.Error(), `"deny all /secrets/**"`) {
		t.Errorf("Open(/secrets/key) = %v", err)
	}
	// Writes.
	for _, c := range []struct {
		what string
		err  error
		rule string
	}{
		{"write /docs/y.md", b.Write(ctx, "/docs/y.md", "y"), "deny write /docs/**"},
		{"edit /docs/x.md", vfs.Update(ctx, b, "/docs/x.md", func(s string) (string, error) { return s + "!", nil }), "deny write /docs/**"},
		{"write /secrets/new", b.Write(ctx, "/secrets/new", "n"), "deny all /secrets/**"},
		{"delete /", func() error { _, err := b.Delete(ctx, "/"); return err }(), "deny write /docs/**"},
		{"delete /secrets", func() error { _, err := b.Delete(ctx, "/secrets"); return err }(), "deny all /secrets/**"},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), `permission denied by rule "`+c.rule+`"`) {
			t.Errorf("%s: %v; want denied by %q", c.what, c.err, c.rule)
		}
	}
	if got := vfstest.Paths(t, m, "/"); len(got) != len(files) || vfstest.MustRead(t, m, "/docs/x.md") != "x" {
		t.Errorf("denied changes changed the files: %v", got)
	}
	if err := b.Write(ctx, "/etc/new", "allowed: only reads of /etc are denied"); err != nil {
		t.Error(err)
	}
	if n, err := b.Delete(ctx, "/a.txt"); n != 1 || err != nil {
		t.Errorf("Delete(/a.txt) = %d, %v", n, err)
	}
	if perm.Wrap(m, nil) != vfs.Backend(m) {
		t.Error("Wrap without rules did not return the backend itself")
	}
}

// Rules that match nothing the suite touches leave a conforming backend.
func TestBackendConformance(t *testing.T) {
	vfstest.Run(t, func(t *testing.T, files map[string]string) vfs.Backend {
		b, _ := seeded(t, files, "deny all /never/**", "allow all /**")
		return b
	})
}
