package fstools

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/deepagents-go/deepagents/tool"
	"github.com/deepagents-go/deepagents/vfs"
)

func run(t *testing.T, name string, fs vfs.Backend, args any) tool.Result {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return call(t, defaults[name], fs, string(raw))
}

// crlf converts text to CRLF line endings, as edit_file's fallback does.
func crlf(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\n", "\r\n")
}

func FuzzEditFile(f *testing.F) {
	f.Add("hello world", "world", "there", false)
	f.Add("a a a", "a", "b", false)
	f.Add("a a a", "a", "b", true)
	f.Add("x\r\ny\r\nz\r\n", "x\ny", "1\n2", false)
	f.Add("aaa", "aa", "a", true)
	f.Add("", "x", "y", false)
	f.Add("", "", "filled\n", false)
	f.Add("same", "same", "same", false)
	f.Fuzz(func(t *testing.T, content, old, new string, replaceAll bool) {
		if !utf8.ValidString(old) || !utf8.ValidString(new) {
			t.Skip("JSON arguments are UTF-8")
		}
		fs := vfs.NewMemory(map[string]vfs.File{"/f": {Content: content}})
		res := run(t, "edit_file", fs, map[string]any{"file_path": "/f", "old_string": old, "new_string": new, "replace_all": replaceAll})
		got := content2(t, fs)
		if old == "" && content == "" && new != "" { // filling an empty file
			if res.IsError || got != new {
				t.Fatalf("filling an empty file: %q, file %q", res.Content, got)
			}
			return
		}
		exact := 0
		if old != "" {
			exact = strings.Count(content, old)
		}
		if res.IsError {
			if got != content {
				t.Fatalf("a failed edit changed the file: %q -> %q", content, got)
			}
			if old != "" && old != new && (exact == 1 || exact > 1 && replaceAll) {
				t.Fatalf("edit refused although old_string occurs %d times: %q", exact, res.Content)
			}
			return
		}
		if old == "" || old == new {
			t.Fatalf("edit with old=%q new=%q succeeded", old, new)
		}
		o, n, count := old, new, exact
		if exact == 0 {
			// Only the CRLF fallback can have matched.
			o, n = crlf(old), crlf(new)
			count = strings.Count(content, o)
			if !strings.Contains(content, "\r\n") || count == 0 {
				t.Fatalf("edit succeeded without a match: %q", res.Content)
			}
		}
		if count > 1 && !replaceAll {
			t.Fatalf("non-unique edit succeeded (%d matches)", count)
		}
		limit := 1
		if replaceAll {
			limit = -1
		}
		if want := strings.Replace(content, o, n, limit); got != want {
			t.Fatalf("file is %q, want %q", got, want)
		}
		replaced := 1
		if replaceAll {
			replaced = count
		}
		if want := fmt.Sprintf("Replaced %s in /f.", plural(replaced, "occurrence")); res.Content != want {
			t.Fatalf("result %q, want %q", res.Content, want)
		}
	})
}

func content2(t *testing.T, fs vfs.Backend) string {
	t.Helper()
	s, err := fs.Read(context.Background(), "/f")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var fuzzTree = []string{
	"/a.go", "/b.txt", "/src/c.go", "/src/sub/d.go", "/src/sub/.e", "/docs/f.md",
	"/weird [x]/{g}.txt", "/x*y/?", "/é/ü.txt", "/deep/a/b/c/d/e/f.go",
}

func FuzzGlob(f *testing.F) {
	for _, s := range [][2]string{
		{"*.go", "/"}, {"**/*.go", "/src"}, {"src/**", "/"}, {"/src/*", "/"}, {"{a,b}.*", "/"},
		{"[a-c]*", "/src"}, {"?", "/x*y"}, {"**", "/deep/a"}, {"[", "/"}, {"{{{", "/"}, {"\\", "/"},
		{"*", "../x"}, {"*", "/missing"}, {"*", "/a.go"}, {"é/*", "/"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, base string) {
		if !utf8.ValidString(pattern) || !utf8.ValidString(base) {
			t.Skip("JSON arguments are UTF-8")
		}
		files := map[string]vfs.File{}
		for _, p := range fuzzTree {
			files[p] = vfs.File{}
		}
		fs := vfs.NewMemory(files)
		res := run(t, "glob", fs, map[string]any{"pattern": pattern, "path": base})
		if res.IsError || strings.HasPrefix(res.Content, "No files match") {
			return
		}
		if base == "" {
			base = "/" // an empty optional path means the root
		}
		dir, err := vfs.Clean(base)
		if err != nil {
			t.Fatalf("glob accepted bad path %q", base)
		}
		list, _, _ := strings.Cut(res.Content, "\n\n[")
		paths := strings.Split(list, "\n")
		if !slices.IsSorted(paths) {
			t.Fatalf("unsorted: %q", paths)
		}
		for _, p := range paths {
			if !vfs.Under(p, dir) || !slices.Contains(fuzzTree, p) {
				t.Fatalf("glob(%q, %q) returned %q, not a file under %s", pattern, base, p, dir)
			}
		}
	})
}

func FuzzGrep(f *testing.F) {
	f.Add("hello", "hello world\nbye", "say hello\nhello again")
	f.Add("a\nb", "a\nb\n", "ab")
	f.Add("x", "\x00x", "")
	f.Add(".*", "a.*b", "nothing")
	f.Add("\r", "a\r\nb", "a\rb")
	f.Fuzz(func(t *testing.T, pattern, c1, c2 string) {
		if !utf8.ValidString(pattern) {
			t.Skip("JSON arguments are UTF-8")
		}
		contents := map[string]string{"/a.txt": c1, "/dir/b.txt": c2, "/dir/c.txt": c1 + c2, "/dir/e.txt": ""}
		files := map[string]vfs.File{}
		for p, c := range contents {
			files[p] = vfs.File{Content: c}
		}
		fs := vfs.NewMemory(files)
		res := run(t, "grep", fs, map[string]any{"pattern": pattern, "max_count": 1000})
		if pattern == "" {
			if !res.IsError {
				t.Fatal("empty pattern accepted")
			}
			return
		}
		if res.IsError {
			t.Fatalf("grep failed: %q", res.Content)
		}
		var want []string
		counts := map[string]int{}
		total := 0
		for _, p := range slices.Sorted(func(yield func(string) bool) {
			for p := range contents {
				if !yield(p) {
					return
				}
			}
		}) {
			c := contents[p]
			if strings.Contains(c, pattern) && !strings.Contains(c, "\x00") {
				want = append(want, p)
				counts[p] = startLines(c, pattern)
				total += counts[p]
			}
		}
		got := []string{}
		if !strings.HasPrefix(res.Content, "No matches") {
			got = strings.Split(res.Content, "\n")
		}
		if want == nil {
			want = []string{}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("files_with_matches = %q, want %q", got, want)
		}
		if len(want) == 0 {
			return
		}
		res = run(t, "grep", fs, map[string]any{"pattern": pattern, "output_mode": "count", "max_count": 1000})
		var wantCount []string
		for _, p := range want {
			wantCount = append(wantCount, fmt.Sprintf("%s: %d", p, counts[p]))
		}
		if res.Content != strings.Join(wantCount, "\n") {
			t.Fatalf("count = %q, want %q", res.Content, wantCount)
		}
		res = run(t, "grep", fs, map[string]any{"pattern": pattern, "output_mode": "content", "max_count": 100000})
		if n := strings.Count(res.Content, "\n") + 1; total <= 100000 && n < total {
			t.Fatalf("content shows %d lines for %d matching lines", n, total)
		}
	})
}

// startLines counts the lines on which an occurrence of pat starts, the slow
// way.
func startLines(c, pat string) int {
	lines := map[int]bool{}
	for k := 0; k+len(pat) <= len(c); k++ {
		if strings.HasPrefix(c[k:], pat) {
			lines[strings.Count(c[:k], "\n")] = true
		}
	}
	return len(lines)
}

func FuzzToolArgs(f *testing.F) {
	for i, name := range Names {
		f.Add(uint8(i), []byte(minimalArgs[name]))
	}
	f.Add(uint8(0), []byte(`{"path":null}`))
	f.Add(uint8(1), []byte(`{"file_path":"/a","offset":-1,"limit":1e400}`))
	f.Add(uint8(3), []byte(`{"file_path":"/a","old_string":"a","new_string":"b","replace_all":"x"}`))
	f.Add(uint8(5), []byte(`{"pattern":"a","output_mode":"count","max_count":-1,"glob":"{"}`))
	f.Add(uint8(2), []byte(`not json`))
	f.Add(uint8(6), []byte(`{"file_path":"/"} {}`))
	f.Fuzz(func(t *testing.T, which uint8, args []byte) {
		tl := Tools()[int(which)%len(Names)]
		for _, fs := range []vfs.Backend{
			vfs.NewMemory(map[string]vfs.File{"/a": {Content: "a\nb\r\n"}, "/d/e": {Content: "e"}}),
			vfs.NewMemory(map[string]vfs.File{"/a": {Content: "a"}}).Branch(),
		} {
			res, err := tl.Run(context.Background(), &tool.Env{Files: fs}, json.RawMessage(args))
			if err == nil && res.Content == "" {
				t.Fatalf("%s(%q) returned an empty result", tl.Spec().Name, args)
			}
		}
	})
}
