package vfs

import (
	"errors"
	"strings"
	"testing"
)

func TestClean(t *testing.T) {
	long := strings.Repeat("a", MaxPathLen-1)
	cases := []struct {
		in, want string
		err      string // substring of the error; "" means success
	}{
		{in: "/", want: "/"},
		{in: "/a", want: "/a"},
		{in: "/a/b.txt", want: "/a/b.txt"},
		{in: "a", want: "/a"},
		{in: "a/b", want: "/a/b"},
		{in: "./a", want: "/a"},
		{in: ".", want: "/"},
		{in: "./", want: "/"},
		{in: "//", want: "/"},
		{in: "///a///b//", want: "/a/b"},
		{in: "//a", want: "/a"},
		{in: "/a/./b", want: "/a/b"},
		{in: "/./a/./", want: "/a"},
		{in: "/a/b/", want: "/a/b"},
		{in: "/a/b/.", want: "/a/b"},
		{in: "/.hidden", want: "/.hidden"},
		{in: "/a/.b/c", want: "/a/.b/c"},
		{in: "/a/..b", want: "/a/..b"},
		{in: "/a/b..", want: "/a/b.."},
		{in: "/a/.../b", want: "/a/.../b"},
		{in: "/~/x", want: "/~/x"},
		{in: "/a~", want: "/a~"},
		{in: "/é/ü.txt", want: "/é/ü.txt"},
		{in: "/with space/x", want: "/with space/x"},
		{in: "/a:b", want: "/a:b"},
		{in: "/" + long, want: "/" + long},

		// Backslashes are separators.
		{in: `win\bar\baz`, want: "/win/bar/baz"},
		{in: `\win\bar\baz`, want: "/win/bar/baz"},
		{in: `dir\file`, want: "/dir/file"},
		{in: `/a\b`, want: "/a/b"},
		{in: `a\`, want: "/a"},
		{in: `\`, want: "/"},
		{in: `\\server\share`, want: "/server/share"},
		{in: `a\/\b`, want: "/a/b"},
		{in: `a\.\b\.`, want: "/a/b"},
		{in: `.\a`, want: "/a"},
		{in: `\.hidden\x`, want: "/.hidden/x"},
		{in: `/x/C:\y`, want: "/x/C:/y"},
		{in: `\~\x`, want: "/~/x"},
		{in: `a\..\b`, err: "'..' is not allowed"},
		{in: `..\a`, err: "'..' is not allowed"},
		{in: `a\..`, err: "'..' is not allowed"},
		{in: `~\x`, err: "home-relative"},
		{in: `\a` + long, err: "longer than 4096 bytes"},

		{in: "", err: "the path is empty"},
		{in: "..", err: "'..' is not allowed"},
		{in: "../a", err: "'..' is not allowed"},
		{in: "/a/../b", err: "'..' is not allowed"},
		{in: "/a/..", err: "'..' is not allowed"},
		{in: "a/../../b", err: "'..' is not allowed"},
		{in: "/a/b/../", err: "'..' is not allowed"},
		{in: "~", err: "home-relative"},
		{in: "~/notes.md", err: "home-relative"},
		{in: "~user/x", err: "home-relative"},
		{in: `C:\x`, err: "Windows drive paths are not supported"},
		{in: "C:/x", err: "Windows drive paths are not supported"},
		{in: "c:", err: "Windows drive paths are not supported"},
		{in: "z:rel", err: "Windows drive paths are not supported"},
		{in: `C:x`, err: "Windows drive paths are not supported"},
		{in: `c:\`, err: "Windows drive paths are not supported"},
		{in: "/a\x00b", err: "NUL byte"},
		{in: "\x00", err: "NUL byte"},
		{in: "/" + long + "a", err: "longer than 4096 bytes"},
		{in: long + "a", err: "longer than 4096 bytes"}, // 4096 bytes, but 4097 once rooted
		{in: strings.Repeat("/", 10000) + "a", want: "/a"},
		{in: strings.Repeat("/a/.", 2000), want: strings.Repeat("/a", 2000)},
	}
	for _, c := range cases {
		got, err := Clean(c.in)
		name := c.in
		if len(name) > 30 {
			name = name[:30] + "..."
		}
		if c.err == "" {
			if err != nil || got != c.want {
				t.Errorf("Clean(%q) = %q, %v; want %q", name, got, err, c.want)
			}
			continue
		}
		if err == nil {
			t.Errorf("Clean(%q) = %q, want an error about %q", name, got, c.err)
			continue
		}
		if !strings.Contains(err.Error(), c.err) {
			t.Errorf("Clean(%q) error %q does not mention %q", name, err, c.err)
		}
		if !errors.Is(err, ErrInvalidPath) {
			t.Errorf("Clean(%q) error does not match ErrInvalidPath", name)
		}
		var pe *PathError
		if !errors.As(err, &pe) || pe.Reason == "" {
			t.Errorf("Clean(%q) error is not a *PathError with a reason", name)
		}
		if got != "" {
			t.Errorf("Clean(%q) returned %q with its error", name, got)
		}
	}
}

func TestCleanErrorText(t *testing.T) {
	_, err := Clean("/a/../b")
	if got, want := err.Error(), "invalid path '/a/../b': path traversal with '..' is not allowed; give the absolute path of the file"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	// A long or odd path is shortened and made printable in the message.
	_, err = Clean(strings.Repeat("é", 3000))
	if msg := err.Error(); len(msg) > 200 || !strings.Contains(msg, "...'") {
		t.Errorf("long path error not shortened: %d bytes", len(msg))
	}
	_, err = Clean("/a\x00b")
	if msg := err.Error(); strings.ContainsRune(msg, 0) || !strings.Contains(msg, "/a?b") {
		t.Errorf("NUL not made visible: %q", msg)
	}
}

func TestUnderAndParent(t *testing.T) {
	for _, c := range []struct {
		path, dir string
		want      bool
	}{
		{"/a", "/", true}, {"/", "/", true}, {"/a/b", "/a", true}, {"/a", "/a", true},
		{"/ab", "/a", false}, {"/a", "/a/b", false}, {"/b/a", "/a", false},
	} {
		if got := Under(c.path, c.dir); got != c.want {
			t.Errorf("Under(%q, %q) = %v", c.path, c.dir, got)
		}
	}
	for in, want := range map[string]string{"/": "/", "/a": "/", "/a/b": "/a", "/a/b/c": "/a/b"} {
		if got := Parent(in); got != want {
			t.Errorf("Parent(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzClean(f *testing.F) {
	for _, s := range []string{"/", "", "a/b", "//a//", "/./.", "..", "/a/../b", "~", "C:\\x", "C:/x",
		"\\\\s\\x", "/a\x00", "./a/./b/", "/a/..b", strings.Repeat("a", MaxPathLen), "/é",
		`win\bar\baz`, `a\..\b`, `\.\x\`, `a\/b`, `~\x`, `\` + strings.Repeat("a", MaxPathLen-1)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out, err := Clean(in)
		if err != nil {
			if !errors.Is(err, ErrInvalidPath) || out != "" {
				t.Fatalf("Clean(%q): bad error %v / %q", in, err, out)
			}
			_ = err.Error() // must not panic, whatever the input
			return
		}
		if !strings.HasPrefix(out, "/") {
			t.Fatalf("Clean(%q) = %q: not absolute", in, out)
		}
		if strings.Contains(out, "//") {
			t.Fatalf("Clean(%q) = %q: has //", in, out)
		}
		if out != "/" && strings.HasSuffix(out, "/") {
			t.Fatalf("Clean(%q) = %q: trailing slash", in, out)
		}
		for _, seg := range strings.Split(out[1:], "/") {
			if seg == "." || seg == ".." {
				t.Fatalf("Clean(%q) = %q: has a %q segment", in, out, seg)
			}
		}
		if len(out) > MaxPathLen || strings.ContainsAny(out, "\x00\\") {
			t.Fatalf("Clean(%q) = %q: too long or has NUL/backslash", in, out)
		}
		again, err := Clean(out)
		if err != nil || again != out {
			t.Fatalf("not idempotent: Clean(%q) = %q, Clean(that) = %q, %v", in, out, again, err)
		}
	})
}
