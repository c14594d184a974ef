package osfs_test

import (
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/vfs"
	"github.com/deepagents-go/deepagents/vfs/osfs"
)

// Where the fuzzer may put links, relative to the root, and what they may
// point to ({out} and {root} become the absolute host directories).
var (
	fuzzLocations = []string{"l0", "d/l1", "d/e/l2", "l3", "d/l4", "new/l5", "a.txt", "d/e"}
	fuzzTargets   = []string{
		"../outside/secret.txt", "../outside", "../..", "..", ".", "a.txt", "d", "d/e",
		"d/../a.txt", "d/../../outside/secret.txt", "{out}", "{out}/secret.txt", "{root}/a.txt",
		"{root}", "l0", "missing/x", "d/e/../../..", "../../outside", "../../../outside",
		"../root/a.txt", "l3", "d/l1", "../a.txt", "e/c.txt", "b.txt", "./", "../d", "l0/x",
		"../outside/sub", "c.txt", "e", "/", "../../outside/secret.txt", "l1/../../..",
	}
	fuzzPrefixes = []string{"", "/l0/", "/d/l1/", "/d/e/l2/", "/l3/", "/d/l4/", "/new/l5/"}
)

// tempNameRe matches the names Write gives its temporary files.
var tempNameRe = regexp.MustCompile(`^\.osfs-[0-9a-f]{16}\.tmp$`)

// tempNameIn reports whether a component of the virtual path p is a
// temporary file's name.
func tempNameIn(p string) bool {
	return slices.ContainsFunc(strings.Split(p, "/"), tempNameRe.MatchString)
}

// hostTree records every name below dir and the content of its files,
// without following links.
func hostTree(dir string) map[string]string {
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			out[p] = "error: " + err.Error()
			return nil
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			t, _ := os.Readlink(p)
			out[p] = "-> " + t
		case d.Type().IsRegular():
			b, _ := os.ReadFile(p)
			out[p] = string(b)
		default:
			out[p] = d.Type().String()
		}
		return nil
	})
	return out
}

// FuzzOSFSPaths runs random operations on random paths in a workspace with
// random symbolic links, some leading out. Nothing outside the workspace
// may change or be read, every path the backend reports or reads must
// resolve inside the workspace, and nothing may panic.
func FuzzOSFSPaths(f *testing.F) {
	f.Add([]byte{0, 0, 1, 1, 2, 2}, "/secret.txt", []byte{0, 1, 2, 3, 4, 5})
	f.Add([]byte{0, 1}, "secret.txt", []byte{0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d})
	f.Add([]byte{3, 3, 0, 4}, "../x", []byte{1, 2})
	f.Add([]byte{0, 10, 3, 11}, "/l3", []byte{1, 2, 5, 0})
	f.Add([]byte{1, 2, 2, 16}, "/d/l1/root/a.txt", []byte{0, 1, 2, 3, 4, 5})
	f.Add([]byte{0, 14, 3, 20}, "/l0", []byte{0, 1, 2, 4, 5})
	f.Add([]byte{5, 15}, "/new/l5", []byte{2, 1, 5})
	f.Add([]byte{}, "/d/./e//c.txt", []byte{0, 1, 2, 3, 4, 5})
	f.Add([]byte{0, 5, 3, 0, 1, 1, 2, 3}, "sub/deep.txt", []byte{0x11, 0x19, 0x21, 0x29, 0x0a})
	f.Add([]byte{}, "/d/.osfs-0123456789abcdef.tmp", []byte{2, 0, 1, 6, 3, 4, 5})
	f.Add([]byte{}, ".osfs-00000000000000ff.tmp/x", []byte{2, 6, 0, 1, 3, 4, 5})
	f.Add([]byte{0, 1}, "/a.txt", []byte{6, 6, 1, 0x0e, 0x16})

	f.Fuzz(func(t *testing.T, layout []byte, p string, ops []byte) {
		base := t.TempDir()
		root := filepath.Join(base, "root")
		out := filepath.Join(base, "outside")
		seed(t, out, map[string]string{"/secret.txt": secret, "/sub/deep.txt": secret})
		seed(t, root, map[string]string{"/a.txt": "a", "/d/b.txt": "b", "/d/e/c.txt": "c"})
		for i := 0; i+1 < len(layout) && i < 16; i += 2 {
			loc := filepath.Join(root, filepath.FromSlash(fuzzLocations[int(layout[i])%len(fuzzLocations)]))
			target := fuzzTargets[int(layout[i+1])%len(fuzzTargets)]
			target = strings.NewReplacer("{out}", out, "{root}", root).Replace(target)
			os.MkdirAll(filepath.Dir(loc), 0o755)
			os.RemoveAll(loc) // a link may replace a seeded file or directory
			if err := os.Symlink(target, loc); err != nil {
				t.Skip("symbolic links unavailable:", err)
			}
		}
		fsys, err := osfs.New(root, osfs.NoSync())
		if err != nil {
			t.Fatal(err)
		}
		defer fsys.Close()
		rootReal, err := filepath.EvalSymlinks(root)
		if err != nil {
			t.Fatal(err)
		}
		outside := hostTree(out)
		siblings, _ := os.ReadDir(base)

		// inside checks that the virtual path p, reported or read by the
		// backend, is one Clean accepts and lies in the workspace.
		inside := func(what, p string) string {
			t.Helper()
			if c, err := vfs.Clean(p); err != nil || c != p {
				t.Fatalf("%s: reported path %q is not clean", what, p)
			}
			real, err := filepath.EvalSymlinks(filepath.Join(root, filepath.FromSlash(strings.TrimPrefix(p, "/"))))
			if err != nil {
				t.Fatalf("%s: reported path %q does not resolve: %v", what, p, err)
			}
			if real != rootReal && !strings.HasPrefix(real, rootReal+string(filepath.Separator)) {
				t.Fatalf("%s: %q resolves to %s, outside the workspace %s", what, p, real, rootReal)
			}
			return real
		}
		noHost := func(what string, err error) {
			t.Helper()
			if err != nil && strings.Contains(err.Error(), base) {
				t.Fatalf("%s: the error names a host path: %v", what, err)
			}
		}

		if len(ops) == 0 {
			ops = []byte{0, 1, 2, 3, 4, 5}
		}
		if len(ops) > 12 {
			ops = ops[:12]
		}
		for _, op := range ops {
			q := p
			if pre := fuzzPrefixes[int(op>>3)%len(fuzzPrefixes)]; pre != "" {
				q = pre + p
			}
			clean, cerr := vfs.Clean(q)
			reserved := cerr == nil && tempNameIn(clean)
			mustFail := func(what string, err error) {
				t.Helper()
				if reserved && err == nil {
					t.Fatalf("%s(%q) succeeded on a temporary file's name", what, q)
				}
			}
			switch op & 7 {
			case 6:
				err := fsys.Update(ctx, q, func(s string) (string, error) { return s + "+u", nil })
				noHost("Update", err)
				mustFail("Update", err)
				if err == nil {
					real := inside("Update", clean)
					if b, _ := os.ReadFile(real); !strings.HasSuffix(string(b), "+u") || strings.Contains(string(b), secret) {
						t.Fatalf("Update(%q) succeeded but %s holds %q", q, real, b)
					}
				}
			case 0:
				e, err := fsys.Stat(ctx, q)
				noHost("Stat", err)
				mustFail("Stat", err)
				if err == nil {
					inside("Stat", e.Path)
				}
			case 1, 7:
				s, err := fsys.Read(ctx, q)
				noHost("Read", err)
				mustFail("Read", err)
				if err == nil {
					real := inside("Read", clean)
					if strings.Contains(s, secret) {
						t.Fatalf("Read(%q) returned the outside secret", q)
					}
					if b, _ := os.ReadFile(real); string(b) != s {
						t.Fatalf("Read(%q) = %q, but %s holds %q", q, s, real, b)
					}
				}
			case 2:
				err := fsys.Write(ctx, q, "fuzz")
				noHost("Write", err)
				mustFail("Write", err)
				if err == nil {
					real := inside("Write", clean)
					if b, _ := os.ReadFile(real); string(b) != "fuzz" {
						t.Fatalf("Write(%q) succeeded but %s holds %q", q, real, b)
					}
					if s, err := fsys.Read(ctx, q); err != nil || s != "fuzz" {
						t.Fatalf("Read(%q) after Write = %q, %v", q, s, err)
					}
				}
			case 3:
				es, err := fsys.List(ctx, q)
				noHost("List", err)
				mustFail("List", err)
				for _, e := range es {
					if vfs.Parent(e.Path) != clean {
						t.Fatalf("List(%q) reported %q, not a child", q, e.Path)
					}
					inside("List", e.Path)
					if tempNameIn(e.Path) {
						t.Fatalf("List(%q) showed %q", q, e.Path)
					}
				}
				if !slices.IsSortedFunc(es, func(a, b vfs.Entry) int { return strings.Compare(a.Path, b.Path) }) {
					t.Fatalf("List(%q) is not sorted", q)
				}
			case 4:
				var prev string
				n := 0
				for e, err := range fsys.Walk(ctx, q) {
					noHost("Walk", err)
					if err != nil {
						if cerr == nil && errors.Is(err, vfs.ErrInvalidPath) {
							t.Fatalf("Walk(%q): %v", q, err)
						}
						continue
					}
					if reserved || tempNameIn(e.Path) {
						t.Fatalf("Walk(%q) yielded %q", q, e.Path)
					}
					if n++; n > 1000 {
						t.Fatalf("Walk(%q) does not end", q)
					}
					if e.IsDir || !vfs.Under(e.Path, clean) || e.Path <= prev && prev != "" {
						t.Fatalf("Walk(%q) yielded %+v after %q", q, e, prev)
					}
					prev = e.Path
					inside("Walk", e.Path)
				}
			case 5:
				_, err := fsys.Delete(ctx, q)
				noHost("Delete", err)
				mustFail("Delete", err)
				if err == nil && clean == "/" {
					t.Fatal("Delete(/) succeeded")
				}
			}
			if got := hostTree(out); !maps.Equal(got, outside) {
				t.Fatalf("after op %d on %q the outside changed: %v, was %v", op&7, q, got, outside)
			}
			if now, _ := os.ReadDir(base); len(now) != len(siblings) {
				t.Fatalf("after op %d on %q a sibling of the workspace appeared: %v", op&7, q, now)
			}
		}
		if _, err := os.Stat(root); err != nil {
			t.Fatalf("the workspace is gone: %v", err)
		}
	})
}
