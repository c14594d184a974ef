package fstools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/vfs"
	"github.com/deepagents-go/deepagents/vfs/vfstest"
)

// failFS streams its files (no in-memory shortcut) and fails to open the
// paths in fail with the given errors.
type failFS struct {
	*vfs.Memory
	fail map[string]error
}

func (f *failFS) Open(ctx context.Context, p string) (io.ReadCloser, vfs.Entry, error) {
	if err := f.fail[p]; err != nil {
		return nil, vfs.Entry{}, &fs.PathError{Op: "open", Path: p, Err: err}
	}
	s, err := f.Memory.Read(ctx, p)
	if err != nil {
		return nil, vfs.Entry{}, err
	}
	return io.NopCloser(strings.NewReader(s)), vfs.Entry{Path: p, Size: int64(len(s))}, nil
}

// When grep skips a file it names it and says why, for at most five files,
// then counts the rest.
func TestGrepSaysWhyFilesWereSkipped(t *testing.T) {
	bins := func(n int) map[string]string {
		files := map[string]string{"/hit.txt": "needle"}
		for i := range n {
			files[fmt.Sprintf("/bin%d.dat", i)] = "needle\x00"
		}
		return files
	}
	cases := []struct {
		name  string
		files map[string]string
		fail  map[string]error
		opts  Options
		args  string
		want  string
	}{
		{name: "one binary", files: bins(1), args: `{"pattern":"needle"}`,
			want: "/hit.txt\n\n[Skipped 1 file: /bin0.dat (binary, 7 B).]"},
		{name: "five are all named", files: bins(5), args: `{"pattern":"needle"}`,
			want: "/hit.txt\n\n[Skipped 5 files: /bin0.dat (binary, 7 B), /bin1.dat (binary, 7 B), /bin2.dat (binary, 7 B), /bin3.dat (binary, 7 B), /bin4.dat (binary, 7 B).]"},
		{name: "six: five named, one counted", files: bins(6), args: `{"pattern":"needle"}`,
			want: "/hit.txt\n\n[Skipped 6 files: /bin0.dat (binary, 7 B), /bin1.dat (binary, 7 B), /bin2.dat (binary, 7 B), /bin3.dat (binary, 7 B), /bin4.dat (binary, 7 B), and 1 more.]"},
		{name: "twelve, no match", files: bins(12), args: `{"pattern":"absent","glob":"*.dat"}`,
			want: `No matches for "absent" in /. (Skipped 12 files: /bin0.dat (binary, 7 B), /bin1.dat (binary, 7 B), /bin10.dat (binary, 7 B), /bin11.dat (binary, 7 B), /bin2.dat (binary, 7 B), and 7 more.)`},
		{name: "every reason",
			files: map[string]string{"/a.png": "\x89PNG\r\n\x1a\n\x00", "/b.log": strings.Repeat("x", 2048), "/c.txt": "c", "/d.txt": "d", "/e.txt": "needle"},
			fail:  map[string]error{"/c.txt": vfs.ErrPermission, "/d.txt": errors.New("input/output error")},
			opts:  Options{GrepMaxFileBytes: 1024},
			args:  `{"pattern":"needle"}`,
			want:  "/e.txt\n\n[Skipped 4 files: /a.png (binary, image/png, 9 B), /b.log (too large: 2 KiB, grep searches files up to 1 KiB), /c.txt (permission denied), /d.txt (unreadable: input/output error).]"},
		{name: "a NUL past the first bytes", files: map[string]string{"/late": strings.Repeat("y", 9000) + "\x00needle"}, args: `{"pattern":"needle"}`,
			want: `No matches for "needle" in /. (Skipped 1 file: /late (binary, 8.8 KiB).)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			backends := map[string]vfs.Backend{
				"streamed":  &failFS{Memory: vfs.NewMemory(vfstest.Files(c.files)), fail: c.fail},
				"in memory": vfs.NewMemory(vfstest.Files(c.files)),
			}
			for name, b := range backends {
				if name == "in memory" && (c.fail != nil || c.opts != (Options{})) {
					continue // only a streaming backend can fail or be too large
				}
				res := call(t, byName(New(c.opts))["grep"], b, c.args)
				if res.IsError || res.Content != c.want {
					t.Errorf("%s: got %q\nwant %q", name, res.Content, c.want)
				}
			}
		})
	}
}

// grep caps its answer at 80,000 characters as well as by count.
func TestGrepCapsCharacters(t *testing.T) {
	files := map[string]string{}
	line := strings.Repeat("z", 1000)
	for i := range 100 {
		files[fmt.Sprintf("/f%03d.txt", i)] = line + "\n"
	}
	fs := vfs.NewMemory(vfstest.Files(files))
	res := call(t, defaults["grep"], fs, `{"pattern":"zzz","output_mode":"content"}`)
	// Each entry is "/fNNN.txt:1: " (13 characters) and 1000 z: 78 fit.
	var want []string
	for i := range 78 {
		want = append(want, fmt.Sprintf("/f%03d.txt:1: %s", i, line))
	}
	if exp := strings.Join(want, "\n") + "\n\n[Showing the first 78 of 100 matching lines. Narrow the search with path or glob, or raise max_count.]"; res.Content != exp {
		t.Errorf("got %d characters ending %q", len(res.Content), res.Content[max(0, len(res.Content)-150):])
	}
	if len(res.Content) > 80_000 {
		t.Errorf("%d characters, over the cap", len(res.Content))
	}
}

// glob caps its answer by characters as well as by count.
func TestGlobCapsCharacters(t *testing.T) {
	files := map[string]string{}
	var want []string
	for i := range 40 {
		p := fmt.Sprintf("/%s%02d", strings.Repeat("p", 100), i)
		files[p] = ""
		if i < 3 { // 3 × 104 characters fit in 700 less the notice's 300
			want = append(want, p)
		}
	}
	res := call(t, byName(New(Options{MaxOutputChars: 700}))["glob"], vfs.NewMemory(vfstest.Files(files)), `{"pattern":"*"}`)
	exp := strings.Join(want, "\n") + "\n\n[Showing the first 3 of 40 matching files. Narrow the pattern or the path to see the rest.]"
	if res.Content != exp {
		t.Errorf("got %q\nwant %q", res.Content, exp)
	}
}

// A search that skips many files carries only the ones its answer names
// and their count: a tree of many binary files does not make the result
// large, and the answer still says how many were skipped.
func TestSearchCarriesOnlyTheSkipsItNames(t *testing.T) {
	files := map[string]vfs.File{"/t.txt": {Content: "needle"}}
	for i := range 40 {
		files[fmt.Sprintf("/bin/%02d.o", i)] = vfs.File{Content: "\x00\x01needle"}
	}
	mem := vfs.NewMemory(files)
	res, err := Search(context.Background(), mem, vfs.SearchRequest{Op: "grep", Pattern: "needle", Path: "/", Mode: "files_with_matches", Limit: 100, Budget: 10000})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Skipped) != maxSkipsNamed || res.SkippedTotal != 40 {
		t.Fatalf("%d skips carried, %d counted; want %d and 40", len(res.Skipped), res.SkippedTotal, maxSkipsNamed)
	}
	out := call(t, Tools()[5], mem, `{"pattern":"needle"}`)
	if !strings.Contains(out.Content, "Skipped 40 files") || !strings.Contains(out.Content, "and 35 more") {
		t.Errorf("the answer says %q", out.Content)
	}
}
