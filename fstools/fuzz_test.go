package fstools

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
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
	"/.git/HEAD", "/src/.hidden/h.go", "/lib.go/in.go",
}

func FuzzGlob(f *testing.F) {
	for _, s := range [][2]string{
		{"*.go", "/"}, {"**/*.go", "/src"}, {"src/**", "/"}, {"/src/*", "/"}, {"{a,b}.*", "/"},
		{"[a-c]*", "/src"}, {"?", "/x*y"}, {"**", "/deep/a"}, {"[", "/"}, {"{{{", "/"}, {"\\", "/"},
		{"*", "../x"}, {"*", "/missing"}, {"*", "/a.go"}, {"é/*", "/"},
		{".*", "/"}, {"**/.e", "/src"}, {"a.go/**", "/"}, {"lib.go/**", "/"}, {"**/.hidden/*", "/"},
		{"{.git,src}/*", "/"}, {"*", `\src\sub`}, {"src\\*.go", "/"}, {"/**/**/**", "/"},
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
			// Dotfile rule: without a dot in the pattern, nothing below
			// the search directory whose name starts with a dot matches.
			rel := strings.TrimPrefix(p, dir)
			if !strings.Contains(pattern, ".") && (strings.Contains(rel, "/.") || strings.HasPrefix(rel, ".")) {
				t.Fatalf("glob(%q, %q) returned the dotfile %q", pattern, base, p)
			}
			// A trailing /** matches only what is below: never a file
			// whose path is the part before it.
			if pre, ok := strings.CutSuffix(pattern, "/**"); ok && !strings.ContainsAny(pre, "*?[{\\") {
				if p == pre || strings.TrimPrefix(rel, "/") == pre {
					t.Fatalf("glob(%q, %q) returned %q itself", pattern, base, p)
				}
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
			if strings.Contains(c, pattern) && !looksBinary(c) {
				want = append(want, p)
				counts[p] = startLines(c, pattern)
				total += counts[p]
			}
		}
		// Skipped files are named after the matches; binary ones only.
		body, skipped, _ := strings.Cut(res.Content, "\n\n[Skipped ")
		if strings.HasPrefix(body, "No matches") {
			body, skipped, _ = strings.Cut(res.Content, " (Skipped ")
		}
		nbin := 0
		for _, c := range contents {
			if looksBinary(c) {
				nbin++
			}
		}
		if (nbin > 0) != (skipped != "") || nbin > 0 && !strings.HasPrefix(skipped, plural(nbin, "file")+": ") {
			t.Fatalf("%d binary files, skip notice %q", nbin, skipped)
		}
		got := []string{}
		if !strings.HasPrefix(body, "No matches") {
			got = strings.Split(body, "\n")
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
		if body, _, _ := strings.Cut(res.Content, "\n\n[Skipped "); body != strings.Join(wantCount, "\n") {
			t.Fatalf("count = %q, want %q", res.Content, wantCount)
		}
		res = run(t, "grep", fs, map[string]any{"pattern": pattern, "output_mode": "content", "max_count": 100000})
		if n := strings.Count(res.Content, "\n") + 1; total <= 100000 && n < total {
			t.Fatalf("content shows %d lines for %d matching lines", n, total)
		}
	})
}

// looksBinary is the rule grep skips files by: a NUL byte anywhere; in the
// first 8000 bytes, a control byte other than \t \n \f \r and escape; or a
// start that is not UTF-8 and that the standard library's content sniffer
// does not take for text.
func looksBinary(c string) bool {
	head := c[:min(len(c), 8000)]
	mime := http.DetectContentType([]byte(head))
	text := strings.HasPrefix(mime, "text/") || mime == "application/postscript"
	valid := false
	for cut := 0; cut <= 3 && cut <= len(head); cut++ {
		valid = valid || utf8.ValidString(head[:len(head)-cut])
	}
	control := strings.ContainsFunc(head, func(r rune) bool {
		return r < 0x20 && !strings.ContainsRune("\t\n\f\r\x1b", r)
	})
	return control || !text && !valid || strings.Contains(c, "\x00")
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

// FuzzReadFile pages through a file the way a model would, following each
// notice's offset, and checks that the pages give back the file's lines in
// order, none lost or repeated, with every answer under the character cap.
func FuzzReadFile(f *testing.F) {
	f.Add("one\ntwo\nthree", int8(0), int8(2), uint16(200))
	f.Add("a\r\nb\r\n\r\n", int8(-3), int8(1), uint16(60))
	f.Add(strings.Repeat("x", 500)+"\nshort\n", int8(0), int8(5), uint16(120))
	f.Add("\n\n\n", int8(1), int8(0), uint16(100))
	f.Add("", int8(0), int8(1), uint16(100))
	f.Add("é\nü\n"+strings.Repeat("ß", 90), int8(0), int8(3), uint16(80))
	f.Add("bin\x00ary", int8(0), int8(1), uint16(100))
	f.Fuzz(func(t *testing.T, content string, offset, limit int8, capChars uint16) {
		if !utf8.ValidString(content) {
			t.Skip("the check below compares characters")
		}
		cap := int(capChars)%2000 + 40
		tools := byName(New(Options{MaxOutputChars: cap, MaxLineChars: 1 << 20}))
		fs := vfs.NewMemory(map[string]vfs.File{"/f": {Content: content}})
		read := func(off int) tool.Result {
			args, _ := json.Marshal(map[string]any{"file_path": "/f", "offset": off, "limit": int(limit)})
			return call(t, tools["read_file"], fs, string(args))
		}
		res := read(int(offset))
		switch {
		case res.IsError:
			if int(offset) < countLines(content) || content == "" || looksBinary(content[:min(len(content), 8000)]) {
				t.Fatalf("error %q for offset %d of %d lines", res.Content, offset, countLines(content))
			}
			return
		case content == "":
			if res.Content != "/f is empty (0 lines)." {
				t.Fatalf("empty file: %q", res.Content)
			}
			return
		case looksBinary(content[:min(len(content), 8000)]):
			if !strings.HasPrefix(res.Content, "/f is a binary file (") {
				t.Fatalf("binary file shown: %q", res.Content)
			}
			return
		case limit <= 0:
			if !strings.HasPrefix(res.Content, "No lines were read from /f: limit is ") {
				t.Fatalf("limit %d: %q", limit, res.Content)
			}
			return
		}
		want := splitLines(content)
		start := max(int(offset), 0)
		var got []string
		next := start
		for pages := 0; ; pages++ {
			if utf8.RuneCountInString(res.Content) > cap && cap > 600 {
				t.Fatalf("answer of %d characters over the cap of %d", utf8.RuneCountInString(res.Content), cap)
			}
			body, notice, _ := strings.Cut(res.Content, "\n\n[")
			for _, l := range strings.Split(body, "\n") {
				num, text, ok := strings.Cut(strings.TrimLeft(l, " "), "\t")
				if !ok {
					t.Fatalf("line without a gutter: %q in %q", l, res.Content)
				}
				if strings.Contains(num, ".") { // a continuation chunk of the line before
					got[len(got)-1] += text
					continue
				}
				if num != fmt.Sprint(next+1) {
					t.Fatalf("line numbered %s, want %d", num, next+1)
				}
				got = append(got, text)
				next++
			}
			i := strings.LastIndex(notice, "offset=")
			if i < 0 {
				break
			}
			var off int
			if _, err := fmt.Sscanf(notice[i:], "offset=%d", &off); err != nil || off != next {
				t.Fatalf("notice %q names offset %d, want %d", notice, off, next)
			}
			if pages > len(want) {
				t.Fatal("paging does not end")
			}
			res = read(off)
		}
		if next != len(want) {
			t.Fatalf("paging ended at line %d of %d", next, len(want))
		}
		for i, g := range got {
			w := strings.TrimSuffix(want[start+i], "\r")
			if g != w && !strings.HasPrefix(w, g) {
				t.Fatalf("line %d: got %q, want %q", start+i+1, g, w)
			}
		}
	})
}

// FuzzChangedPath runs write_file, edit_file and delete on arguments the
// fuzzer writes and checks that whatever a call changed is the path
// ChangedPath read from the same arguments: an approval gate that looks at
// the arguments sees the file the tool touches.
func FuzzChangedPath(f *testing.F) {
	for _, s := range [][2]string{
		{"write_file", `{"file_path":"/a.md","content":"x"}`},
		{"write_file", `{"file_path":"/a","FILE_PATH":"/b","content":"x"}`},
		{"write_file", `{"file_path":"/a","content":"x","file_path":"/b"}`},
		{"edit_file", `{"file_path":"/old.txt","old_string":"old","new_string":"new"}`},
		{"edit_file", `{"File_Path":"win\\old.txt","old_string":"old","new_string":"x"}`},
		{"delete", `{"file_path":"/d"}`},
		{"delete", `{"file_path":"d/../x"}`},
		{"write_file", `{"file_path":"\u002fa","content":""}`},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, name, args string) {
		if !slices.Contains(ChangingTools, name) {
			return
		}
		fs := vfs.Track(vfs.NewMemory(map[string]vfs.File{"/old.txt": {Content: "old"}, "/d/x": {Content: "x"}, "/b": {Content: "b"}, "/win/old.txt": {Content: "old"}}))
		res, err := defaults[name].Run(context.Background(), &tool.Env{CallID: "c", Files: fs}, json.RawMessage(args))
		if err != nil {
			t.Fatalf("Go error %v", err)
		}
		changes := fs.Changes()
		path, del, ok := ChangedPath(name, json.RawMessage(args))
		if len(changes) == 0 {
			return
		}
		if res.IsError || !ok {
			t.Fatalf("%s %s changed %v but ChangedPath says ok=%v (result %q)", name, args, changes, ok, res.Content)
		}
		want, err := vfs.Clean(path)
		if err != nil {
			t.Fatalf("%s %s changed %v; ChangedPath gave %q, which does not clean: %v", name, args, changes, path, err)
		}
		for _, c := range changes {
			if c.Path != want || (c.File == nil) != del {
				t.Fatalf("%s %s changed %s (deleted %v); ChangedPath says %s (delete %v)", name, args, c.Path, c.File == nil, want, del)
			}
		}
	})
}
