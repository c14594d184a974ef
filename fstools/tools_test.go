package fstools

import (
	"fmt"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/vfs"
)

var tree = map[string]string{
	"/a.txt":         "hello",
	"/docs/x.md":     "xx",
	"/docs/y.md":     "y",
	"/b/c/d.txt":     "",
	"/b/e.txt":       "eee",
	"/docs/.hidden":  "h",
	"/zeta/one.json": "{}",
}

func TestLs(t *testing.T) {
	cases := []tcase{
		{name: "root", files: tree, args: `{}`,
			want: "/a.txt (5 bytes)\n/b/\n/docs/\n/zeta/", check: unchanged(tree)},
		{name: "root explicit", files: tree, args: `{"path":"/"}`,
			want: "/a.txt (5 bytes)\n/b/\n/docs/\n/zeta/"},
		{name: "empty path means root", files: tree, args: `{"path":""}`,
			want: "/a.txt (5 bytes)\n/b/\n/docs/\n/zeta/"},
		{name: "subdirectory", files: tree, args: `{"path":"/docs"}`,
			want: "/docs/.hidden (1 byte)\n/docs/x.md (2 bytes)\n/docs/y.md (1 byte)"},
		{name: "relative and trailing slash", files: tree, args: `{"path":"docs/"}`,
			want: "/docs/.hidden (1 byte)\n/docs/x.md (2 bytes)\n/docs/y.md (1 byte)"},
		{name: "dot segments", files: tree, args: `{"path":"/b/./c/"}`,
			want: "/b/c/d.txt (0 bytes)"},
		{name: "mixed files and dirs", files: tree, args: `{"path":"/b"}`,
			want: "/b/c/\n/b/e.txt (3 bytes)"},
		{name: "empty filesystem", files: nil, args: `{}`,
			want: "The filesystem is empty: there are no files yet. Create one with write_file."},
		{name: "missing directory", files: tree, args: `{"path":"/nope"}`,
			wantErr: []string{"/nope does not exist", "ls", "glob"}},
		{name: "a file", files: tree, args: `{"path":"/a.txt"}`,
			wantErr: []string{"/a.txt is a file", "read_file"}},
		{name: "below a file", files: tree, args: `{"path":"/a.txt/x"}`,
			wantErr: []string{"does not exist"}},
		{name: "unknown argument", files: tree, args: `{"dir":"/"}`,
			wantErr: []string{`unknown argument "dir"`, "path"}},
		{name: "wrong type", files: tree, args: `{"path":3}`,
			wantErr: []string{`"path" must be a string`}},
		{name: "not an object", files: tree, args: `[]`,
			wantErr: []string{"must be a JSON object"}},
		{name: "broken JSON", files: tree, args: `{"path":`,
			wantErr: []string{"not valid JSON"}},
	}
	cases = append(cases, badPathCases("path", "")...)
	runTable(t, "ls", cases)
}

func numbered(from int, lines ...string) string {
	var b strings.Builder
	for i, l := range lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%6d\t%s", from+i, l)
	}
	return b.String()
}

func manyLines(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

func TestReadFile(t *testing.T) {
	files := map[string]string{
		"/three.txt": "one\ntwo\nthree",
		"/nl.txt":    "one\ntwo\n",
		"/blank.txt": "a\n\nb\n",
		"/crlf.txt":  "a\r\nb\r\n",
		"/ten.txt":   manyLines(10),
		"/150.txt":   manyLines(150),
		"/empty.txt": "",
		"/nl-only":   "\n",
		"/long.txt":  "abcdefghij\nxy\n",
		"/wide.txt":  strings.Repeat("a", 2000) + strings.Repeat("b", 2000) + "ccc\nend",
		"/utf8.txt":  "ééééé",
		"/dir/f":     "f",
		"/tab.txt":   "\tindented\n",
	}
	small := New(Options{MaxLineChars: 4})
	cases := []tcase{
		{name: "whole file", files: files, args: `{"file_path":"/three.txt"}`,
			want: "     1\tone\n     2\ttwo\n     3\tthree"},
		{name: "relative path", files: files, args: `{"file_path":"three.txt"}`,
			want: "     1\tone\n     2\ttwo\n     3\tthree"},
		{name: "final newline ends the last line", files: files, args: `{"file_path":"/nl.txt"}`,
			want: "     1\tone\n     2\ttwo"},
		{name: "blank line", files: files, args: `{"file_path":"/blank.txt"}`,
			want: "     1\ta\n     2\t\n     3\tb"},
		{name: "newline only is one empty line", files: files, args: `{"file_path":"/nl-only"}`,
			want: "     1\t"},
		{name: "tab kept", files: files, args: `{"file_path":"/tab.txt"}`,
			want: "     1\t\tindented"},
		{name: "crlf", files: files, args: `{"file_path":"/crlf.txt"}`,
			want: "     1\ta\n     2\tb"},
		{name: "offset and limit", files: files, args: `{"file_path":"/ten.txt","offset":2,"limit":3}`,
			want: numbered(3, "line 3", "line 4", "line 5") + "\n\n[Lines 3-5 of 10 shown; 5 more lines remain. Call read_file with offset=5 to continue.]"},
		{name: "one line remains", files: files, args: `{"file_path":"/ten.txt","offset":0,"limit":9}`,
			want: numbered(1, "line 1", "line 2", "line 3", "line 4", "line 5", "line 6", "line 7", "line 8", "line 9") + "\n\n[Lines 1-9 of 10 shown; 1 more line remains. Call read_file with offset=9 to continue.]"},
		{name: "limit reaching the end", files: files, args: `{"file_path":"/ten.txt","offset":8,"limit":2}`,
			want: numbered(9, "line 9", "line 10")},
		{name: "limit past the end", files: files, args: `{"file_path":"/ten.txt","offset":8,"limit":1000000000000}`,
			want: numbered(9, "line 9", "line 10")},
		{name: "last line", files: files, args: `{"file_path":"/ten.txt","offset":9}`,
			want: numbered(10, "line 10")},
		{name: "default limit is 100", files: files, args: `{"file_path":"/150.txt"}`,
			want: numbered(1, strings.Split(strings.TrimSuffix(manyLines(100), "\n"), "\n")...) + "\n\n[Lines 1-100 of 150 shown; 50 more lines remain. Call read_file with offset=100 to continue.]"},
		{name: "continue from the notice", files: files, args: `{"file_path":"/150.txt","offset":100}`,
			want: numbered(101, strings.Split(strings.TrimSuffix(manyLines(150), "\n"), "\n")[100:]...)},
		{name: "custom read limit", files: files, args: `{"file_path":"/ten.txt"}`, tools: New(Options{ReadLimit: 2}),
			want: numbered(1, "line 1", "line 2") + "\n\n[Lines 1-2 of 10 shown; 8 more lines remain. Call read_file with offset=2 to continue.]"},
		{name: "long line chunks", files: files, args: `{"file_path":"/long.txt"}`, tools: small,
			want: "     1\tabcd\n   1.1\tefgh\n   1.2\tij\n     2\txy"},
		{name: "exactly max chars is one chunk", files: map[string]string{"/f": "abcd"}, args: `{"file_path":"/f"}`, tools: small,
			want: "     1\tabcd"},
		{name: "default chunk size 2000", files: files, args: `{"file_path":"/wide.txt"}`,
			want: "     1\t" + strings.Repeat("a", 2000) + "\n   1.1\t" + strings.Repeat("b", 2000) + "\n   1.2\tccc\n     2\tend"},
		{name: "chunks split on characters", files: files, args: `{"file_path":"/utf8.txt"}`, tools: New(Options{MaxLineChars: 2}),
			want: "     1\téé\n   1.1\téé\n   1.2\té"},
		{name: "empty file", files: files, args: `{"file_path":"/empty.txt"}`,
			want: "/empty.txt is empty (0 lines)."},
		{name: "empty file with offset", files: files, args: `{"file_path":"/empty.txt","offset":5}`,
			want: "/empty.txt is empty (0 lines)."},
		{name: "offset past the end", files: files, args: `{"file_path":"/three.txt","offset":3}`,
			wantErr: []string{"offset 3 is past the end of /three.txt", "has 3 lines (offsets 0 to 2)"}},
		{name: "offset past the end of one line", files: files, args: `{"file_path":"/nl-only","offset":1}`,
			wantErr: []string{"has 1 line (offsets 0 to 0)"}},
		{name: "fractional offset", files: files, args: `{"file_path":"/three.txt","offset":1.5}`,
			wantErr: []string{`"offset" must be an integer`}},
		{name: "huge offset", files: files, args: `{"file_path":"/three.txt","offset":1e300}`,
			wantErr: []string{`"offset" must be an integer`}},
		{name: "string limit", files: files, args: `{"file_path":"/three.txt","limit":"ten"}`,
			wantErr: []string{`"limit" must be an integer, got the string "ten"`}},
		{name: "missing file", files: files, args: `{"file_path":"/nope.txt"}`,
			wantErr: []string{"/nope.txt does not exist", "ls or glob"}},
		{name: "directory", files: files, args: `{"file_path":"/dir"}`,
			wantErr: []string{"/dir is a directory", "ls"}},
		{name: "root", files: files, args: `{"file_path":"/"}`,
			wantErr: []string{"/ is a directory"}},
		{name: "no path", files: files, args: `{}`,
			wantErr: []string{`missing required argument "file_path"`}},
		{name: "empty path", files: files, args: `{"file_path":""}`,
			wantErr: []string{"the path is empty"}},
	}
	cases = append(cases, badPathCases("file_path", "")...)
	runTable(t, "read_file", cases)
}

func TestWriteNumberedWideNumbers(t *testing.T) {
	var b strings.Builder
	writeNumbered(&b, 1234567, "abc", 2, -1)
	if got, want := b.String(), "1234567\tab\n1234567.1\tc"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestWriteFile(t *testing.T) {
	files := map[string]string{"/a.txt": "old", "/dir/f.txt": "f"}
	cases := []tcase{
		{name: "create", files: files, args: `{"file_path":"/new.txt","content":"one\ntwo\n"}`,
			want: "Created /new.txt (2 lines, 8 bytes).", check: hasContent("/new.txt", "one\ntwo\n")},
		{name: "create without final newline", files: files, args: `{"file_path":"/n.txt","content":"one\ntwo"}`,
			want: "Created /n.txt (2 lines, 7 bytes)."},
		{name: "create in new directories", files: files, args: `{"file_path":"notes/2024/a.md","content":"x"}`,
			want: "Created /notes/2024/a.md (1 line, 1 byte).", check: hasContent("/notes/2024/a.md", "x")},
		{name: "replace", files: files, args: `{"file_path":"/a.txt","content":"new"}`,
			want: "Replaced /a.txt (1 line, 3 bytes).", check: hasContent("/a.txt", "new")},
		{name: "replace via unclean path", files: files, args: `{"file_path":"//dir/./f.txt","content":"g"}`,
			want: "Replaced /dir/f.txt (1 line, 1 byte).", check: hasContent("/dir/f.txt", "g")},
		{name: "empty content", files: files, args: `{"file_path":"/e.txt","content":""}`,
			want: "Created /e.txt (0 lines, 0 bytes).", check: hasContent("/e.txt", "")},
		{name: "multibyte size in bytes", files: files, args: `{"file_path":"/u.txt","content":"é"}`,
			want: "Created /u.txt (1 line, 2 bytes)."},
		{name: "onto a directory", files: files, args: `{"file_path":"/dir","content":"x"}`,
			wantErr: []string{"/dir is a directory", "/dir/file.txt"}, check: unchanged(files)},
		{name: "onto the root", files: files, args: `{"file_path":"/","content":"x"}`,
			wantErr: []string{"/ is the root directory"}, check: unchanged(files)},
		{name: "below a file", files: files, args: `{"file_path":"/a.txt/b.txt","content":"x"}`,
			wantErr: []string{"cannot write /a.txt/b.txt because /a.txt is a file", "delete /a.txt first"}, check: unchanged(files)},
		{name: "deep below a file", files: files, args: `{"file_path":"/dir/f.txt/x/y","content":"x"}`,
			wantErr: []string{"because /dir/f.txt is a file"}, check: unchanged(files)},
		{name: "no content", files: files, args: `{"file_path":"/a.txt"}`,
			wantErr: []string{`missing required argument "content"`}, check: unchanged(files)},
		{name: "no arguments", files: files, args: `{}`,
			wantErr: []string{"missing required arguments", "file_path", "content"}},
		{name: "content not a string", files: files, args: `{"file_path":"/a.txt","content":["x"]}`,
			wantErr: []string{`"content" must be a string`}, check: unchanged(files)},
	}
	cases = append(cases, badPathCases("file_path", `,"content":"x"`)...)
	runTable(t, "write_file", cases)
}

func TestEditFile(t *testing.T) {
	files := map[string]string{
		"/f.go":     "package f\n\nfunc A() int { return 1 }\nfunc B() int { return 1 }\n",
		"/crlf.txt": "alpha\r\nbeta\r\ngamma\r\nbeta\r\n",
		"/rep.txt":  "x x x",
		"/dir/a":    "a",
	}
	cases := []tcase{
		{name: "unique", files: files, args: `{"file_path":"/f.go","old_string":"func A() int { return 1 }","new_string":"func A() int { return 2 }"}`,
			want: "Replaced 1 occurrence in /f.go.", check: hasContent("/f.go", "package f\n\nfunc A() int { return 2 }\nfunc B() int { return 1 }\n")},
		{name: "multi-line", files: files, args: `{"file_path":"/f.go","old_string":"package f\n\nfunc A","new_string":"package g\n\nfunc A"}`,
			want: "Replaced 1 occurrence in /f.go.", check: hasContent("/f.go", "package g\n\nfunc A() int { return 1 }\nfunc B() int { return 1 }\n")},
		{name: "delete text", files: files, args: `{"file_path":"/f.go","old_string":"\nfunc B() int { return 1 }","new_string":""}`,
			want: "Replaced 1 occurrence in /f.go.", check: hasContent("/f.go", "package f\n\nfunc A() int { return 1 }\n")},
		{name: "not unique", files: files, args: `{"file_path":"/f.go","old_string":"return 1","new_string":"return 2"}`,
			wantErr: []string{"occurs 2 times in /f.go", "more surrounding lines", "replace_all"}, check: unchanged(files)},
		{name: "replace all", files: files, args: `{"file_path":"/f.go","old_string":"return 1","new_string":"return 2","replace_all":true}`,
			want: "Replaced 2 occurrences in /f.go.", check: hasContent("/f.go", "package f\n\nfunc A() int { return 2 }\nfunc B() int { return 2 }\n")},
		{name: "replace all once", files: files, args: `{"file_path":"/f.go","old_string":"package f","new_string":"package g","replace_all":true}`,
			want: "Replaced 1 occurrence in /f.go."},
		{name: "replace all false explicitly", files: files, args: `{"file_path":"/rep.txt","old_string":"x","new_string":"y","replace_all":false}`,
			wantErr: []string{"occurs 3 times"}},
		{name: "replace all growing", files: files, args: `{"file_path":"/rep.txt","old_string":"x","new_string":"xx","replace_all":true}`,
			want: "Replaced 3 occurrences in /rep.txt.", check: hasContent("/rep.txt", "xx xx xx")},
		{name: "not found", files: files, args: `{"file_path":"/f.go","old_string":"func C","new_string":"func D"}`,
			wantErr: []string{"old_string was not found in /f.go", "read_file", "copy the text exactly", "without the line-number gutter"}, check: unchanged(files)},
		{name: "gutter left in", files: files, args: `{"file_path":"/f.go","old_string":"     3\tfunc A() int { return 1 }","new_string":"x"}`,
			wantErr: []string{"seems to include read_file's line-number gutter"}, check: unchanged(files)},
		{name: "continuation gutter left in", files: files, args: `{"file_path":"/f.go","old_string":"   3.1\tfunc A","new_string":"x"}`,
			wantErr: []string{"line-number gutter"}},
		{name: "crlf single line", files: files, args: `{"file_path":"/crlf.txt","old_string":"alpha","new_string":"ALPHA"}`,
			want: "Replaced 1 occurrence in /crlf.txt.", check: hasContent("/crlf.txt", "ALPHA\r\nbeta\r\ngamma\r\nbeta\r\n")},
		{name: "crlf multi-line from LF text", files: files, args: `{"file_path":"/crlf.txt","old_string":"alpha\nbeta","new_string":"one\ntwo\nthree"}`,
			want: "Replaced 1 occurrence in /crlf.txt.", check: hasContent("/crlf.txt", "one\r\ntwo\r\nthree\r\ngamma\r\nbeta\r\n")},
		{name: "crlf verbatim", files: files, args: `{"file_path":"/crlf.txt","old_string":"gamma\r\n","new_string":""}`,
			want: "Replaced 1 occurrence in /crlf.txt.", check: hasContent("/crlf.txt", "alpha\r\nbeta\r\nbeta\r\n")},
		{name: "crlf not unique", files: files, args: `{"file_path":"/crlf.txt","old_string":"beta\n","new_string":"b\n"}`,
			wantErr: []string{"occurs 2 times"}, check: unchanged(files)},
		{name: "crlf replace all", files: files, args: `{"file_path":"/crlf.txt","old_string":"beta\n","new_string":"b\n","replace_all":true}`,
			want: "Replaced 2 occurrences in /crlf.txt.", check: hasContent("/crlf.txt", "alpha\r\nb\r\ngamma\r\nb\r\n")},
		{name: "crlf no match either way", files: files, args: `{"file_path":"/crlf.txt","old_string":"alpha\ngamma","new_string":"x"}`,
			wantErr: []string{"not found"}, check: unchanged(files)},
		{name: "crlf change only line endings", files: files, args: `{"file_path":"/crlf.txt","old_string":"alpha\nbeta","new_string":"alpha\r\nbeta"}`,
			wantErr: []string{"not found"}, check: unchanged(files)},
		{name: "lf file keeps lf", files: files, args: `{"file_path":"/f.go","old_string":"package f\n","new_string":"package f\n// x\n"}`,
			want: "Replaced 1 occurrence in /f.go.", check: hasContent("/f.go", "package f\n// x\n\nfunc A() int { return 1 }\nfunc B() int { return 1 }\n")},
		{name: "empty old_string", files: files, args: `{"file_path":"/f.go","old_string":"","new_string":"x"}`,
			wantErr: []string{"old_string is empty", "write_file"}, check: unchanged(files)},
		{name: "identical strings", files: files, args: `{"file_path":"/f.go","old_string":"package f","new_string":"package f"}`,
			wantErr: []string{"identical"}, check: unchanged(files)},
		{name: "missing file", files: files, args: `{"file_path":"/nope","old_string":"a","new_string":"b"}`,
			wantErr: []string{"/nope does not exist", "ls or glob", "write_file"}},
		{name: "directory", files: files, args: `{"file_path":"/dir","old_string":"a","new_string":"b"}`,
			wantErr: []string{"/dir is a directory"}, check: unchanged(files)},
		{name: "missing new_string", files: files, args: `{"file_path":"/f.go","old_string":"a"}`,
			wantErr: []string{`missing required argument "new_string"`}},
		{name: "replace_all not boolean", files: files, args: `{"file_path":"/f.go","old_string":"a","new_string":"b","replace_all":"yes"}`,
			wantErr: []string{`"replace_all" must be a boolean`}},
	}
	cases = append(cases, badPathCases("file_path", `,"old_string":"a","new_string":"b"`)...)
	runTable(t, "edit_file", cases)
}

func TestDelete(t *testing.T) {
	files := map[string]string{"/a.txt": "a", "/src/b.go": "b", "/src/sub/c.go": "c", "/srcx": "x"}
	cases := []tcase{
		{name: "file", files: files, args: `{"file_path":"/a.txt"}`,
			want: "Deleted file /a.txt.", check: missing("/a.txt")},
		{name: "directory", files: files, args: `{"file_path":"/src"}`,
			want: "Deleted directory /src: 2 files removed.", check: func(t *testing.T, fs vfs.Backend) {
				missing("/src", "/src/b.go", "/src/sub/c.go")(t, fs)
				hasContent("/srcx", "x")(t, fs) // a sibling sharing the prefix stays
			}},
		{name: "nested directory", files: files, args: `{"file_path":"src/sub/"}`,
			want: "Deleted directory /src/sub: 1 file removed.", check: hasContent("/src/b.go", "b")},
		{name: "root refused", files: files, args: `{"file_path":"/"}`,
			wantErr: []string{"refusing to delete /", "every file"}, check: unchanged(files)},
		{name: "root by dots refused", files: files, args: `{"file_path":"/./"}`,
			wantErr: []string{"refusing to delete /"}, check: unchanged(files)},
		{name: "missing", files: files, args: `{"file_path":"/nope"}`,
			wantErr: []string{"nothing exists at /nope", "ls or glob"}, check: unchanged(files)},
		{name: "prefix of a name is not a directory", files: files, args: `{"file_path":"/sr"}`,
			wantErr: []string{"nothing exists at /sr"}, check: unchanged(files)},
		{name: "empty path", files: files, args: `{"file_path":""}`,
			wantErr: []string{"the path is empty"}, check: unchanged(files)},
		{name: "no path", files: files, args: `{}`,
			wantErr: []string{`missing required argument "file_path"`}},
	}
	cases = append(cases, badPathCases("file_path", "")...)
	runTable(t, "delete", cases)
}

var globTree = map[string]string{
	"/a.go":          "",
	"/src/b.go":      "",
	"/src/sub/c.go":  "",
	"/src/d.txt":     "",
	"/docs/read.md":  "",
	"/src/.hid.go":   "",
	"/x/src/e.go":    "",
	"/weird[1].txt":  "",
	"/brace{x}.conf": "",
}

func TestGlob(t *testing.T) {
	cases := []tcase{
		{name: "name at any depth", files: globTree, args: `{"pattern":"*.go"}`,
			want: "/a.go\n/src/b.go\n/src/sub/c.go\n/x/src/e.go"},
		{name: "name under a path", files: globTree, args: `{"pattern":"*.go","path":"/src"}`,
			want: "/src/b.go\n/src/sub/c.go"},
		{name: "relative pattern", files: globTree, args: `{"pattern":"src/*.go"}`,
			want: "/src/b.go"},
		{name: "relative pattern with dot slash", files: globTree, args: `{"pattern":"./src/*.go"}`,
			want: "/src/b.go"},
		{name: "relative to path", files: globTree, args: `{"pattern":"sub/*.go","path":"src"}`,
			want: "/src/sub/c.go"},
		{name: "doublestar", files: globTree, args: `{"pattern":"**/*.go"}`,
			want: "/a.go\n/src/b.go\n/src/sub/c.go\n/x/src/e.go"},
		{name: "doublestar in the middle", files: globTree, args: `{"pattern":"src/**/*.go"}`,
			want: "/src/b.go\n/src/sub/c.go"},
		{name: "doublestar directory name", files: globTree, args: `{"pattern":"**/src/*.go"}`,
			want: "/src/b.go\n/x/src/e.go"},
		{name: "absolute", files: globTree, args: `{"pattern":"/src/**/*.go"}`,
			want: "/src/b.go\n/src/sub/c.go"},
		{name: "absolute outside path", files: globTree, args: `{"pattern":"/docs/*","path":"/src"}`,
			want: `No files match "/docs/*" under /src.`},
		{name: "braces", files: globTree, args: `{"pattern":"*.{md,txt}"}`,
			want: "/docs/read.md\n/src/d.txt\n/weird[1].txt"},
		{name: "class", files: globTree, args: `{"pattern":"[a-c].go"}`,
			want: "/a.go\n/src/b.go\n/src/sub/c.go"},
		{name: "negated class", files: globTree, args: `{"pattern":"[!a-c].go"}`,
			want: "/x/src/e.go"},
		{name: "question mark", files: globTree, args: `{"pattern":"?.txt"}`,
			want: "/src/d.txt"},
		{name: "escaped bracket", files: globTree, args: `{"pattern":"weird\\[1].txt"}`,
			want: "/weird[1].txt"},
		{name: "escaped brace", files: globTree, args: `{"pattern":"brace\\{x\\}.conf"}`,
			want: "/brace{x}.conf"},
		{name: "everything", files: globTree, args: `{"pattern":"**","path":"/src/sub"}`,
			want: "/src/sub/c.go"},
		{name: "no match", files: globTree, args: `{"pattern":"*.rs"}`,
			want: `No files match "*.rs" under /.`},
		{name: "no match relative hint", files: globTree, args: `{"pattern":"sub/*.go"}`,
			want: `No files match "sub/*.go" under /. A pattern with / is matched against paths relative to /; start it with **/ to match at any depth.`},
		{name: "empty filesystem", files: nil, args: `{"pattern":"*"}`,
			want: `No files match "*" under /.`},
		{name: "capped", files: globTree, args: `{"pattern":"*.go"}`, tools: New(Options{GlobMaxResults: 2}),
			want: "/a.go\n/src/b.go\n\n[Showing the first 2 of 4 matching files. Narrow the pattern or the path to see the rest.]"},
		{name: "unclosed class", files: globTree, args: `{"pattern":"[a-c.go"}`,
			wantErr: []string{`invalid glob pattern "[a-c.go"`, "a [ is never closed by ]"}},
		{name: "empty class", files: globTree, args: `{"pattern":"[].go"}`,
			wantErr: []string{"empty character class"}},
		{name: "unclosed brace", files: globTree, args: `{"pattern":"*.{go,md"}`,
			wantErr: []string{"a { is never closed by }"}},
		{name: "stray brace", files: globTree, args: `{"pattern":"*.go}"}`,
			wantErr: []string{"a } has no matching {"}},
		{name: "trailing backslash", files: globTree, args: `{"pattern":"*.go\\"}`,
			wantErr: []string{`lone \`}},
		{name: "too many alternatives", files: globTree, args: `{"pattern":"` + strings.Repeat("{a,b}", 10) + `"}`,
			wantErr: []string{"more than 1000 combinations"}},
		{name: "too long", files: globTree, args: `{"pattern":"` + strings.Repeat("a", 1001) + `"}`,
			wantErr: []string{"longer than 1000 bytes"}},
		{name: "empty pattern", files: globTree, args: `{"pattern":""}`,
			wantErr: []string{"pattern is empty"}},
		{name: "missing pattern", files: globTree, args: `{}`,
			wantErr: []string{`missing required argument "pattern"`}},
		{name: "missing directory", files: globTree, args: `{"pattern":"*","path":"/nope"}`,
			wantErr: []string{"directory /nope does not exist"}},
		{name: "path is a file", files: globTree, args: `{"pattern":"*","path":"/a.go"}`,
			wantErr: []string{"/a.go is a file", "read_file"}},
	}
	cases = append(cases, badPathCases("path", `,"pattern":"*"`)...)
	runTable(t, "glob", cases)
}

func TestAlternatives(t *testing.T) {
	for _, c := range []struct {
		pat  string
		want int
	}{
		{"*.go", 1},
		{"{a,b}", 2},
		{"{a,b,c}{d,e}", 6},
		{"{a,{b,c}}", 3},
		{"{a,b}/{c,d}/{e,f}", 8},
		{"\\{a,b}", 1},
		{"[{]a,b}", 1},
		{"{,}", 2},
		{strings.Repeat("{a,b}", 20), 1001}, // saturates just above the limit of 1000
	} {
		if got, _ := alternatives(c.pat, 0, false); got != c.want {
			t.Errorf("alternatives(%q) = %d, want %d", c.pat, got, c.want)
		}
	}
}

var grepTree = map[string]string{
	"/a.txt":       "hello world\nbye\n",
	"/src/x.go":    "package x\n\nfunc Hello() {}\n// hello again, hello\n",
	"/src/y.py":    "print('hello')\n",
	"/bin.dat":     "hello\x00world",
	"/crlf.txt":    "hello\r\nthere\r\n",
	"/regex.txt":   "a.*b and (x|y)\n",
	"/other/z.txt": "nothing here",
}

// binSkip is the notice grep adds when it searched grepTree's root, which
// holds one binary file.
const binSkip = "\n\n[Skipped 1 file: /bin.dat (binary, 11 B).]"

func TestGrep(t *testing.T) {
	long := map[string]string{"/l.txt": "xx" + strings.Repeat("a", 30) + "\n"}
	cases := []tcase{
		{name: "files with matches", files: grepTree, args: `{"pattern":"hello"}`,
			want: "/a.txt\n/crlf.txt\n/src/x.go\n/src/y.py" + binSkip},
		{name: "files mode explicit", files: grepTree, args: `{"pattern":"hello","output_mode":"files_with_matches"}`,
			want: "/a.txt\n/crlf.txt\n/src/x.go\n/src/y.py" + binSkip},
		{name: "content", files: grepTree, args: `{"pattern":"hello","output_mode":"content"}`,
			want: "/a.txt:1: hello world\n/crlf.txt:1: hello\n/src/x.go:4: // hello again, hello\n/src/y.py:1: print('hello')" + binSkip},
		{name: "count", files: grepTree, args: `{"pattern":"hello","output_mode":"count"}`,
			want: "/a.txt: 1\n/crlf.txt: 1\n/src/x.go: 1\n/src/y.py: 1" + binSkip},
		{name: "count lines not occurrences", files: map[string]string{"/f": "a a\nb\na\n"}, args: `{"pattern":"a","output_mode":"count"}`,
			want: "/f: 2"},
		{name: "case sensitive", files: grepTree, args: `{"pattern":"Hello","output_mode":"content"}`,
			want: "/src/x.go:3: func Hello() {}" + binSkip},
		{name: "literal regex characters", files: grepTree, args: `{"pattern":"(x|y)","output_mode":"content"}`,
			want: "/regex.txt:1: a.*b and (x|y)" + binSkip},
		{name: "literal dot star", files: grepTree, args: `{"pattern":"a.*b"}`,
			want: "/regex.txt" + binSkip},
		{name: "glob by name", files: grepTree, args: `{"pattern":"hello","glob":"*.go"}`,
			want: "/src/x.go"},
		{name: "glob braces", files: grepTree, args: `{"pattern":"hello","glob":"*.{go,py}"}`,
			want: "/src/x.go\n/src/y.py"},
		{name: "glob relative to path", files: grepTree, args: `{"pattern":"hello","glob":"src/*"}`,
			want: "/src/x.go\n/src/y.py"},
		{name: "glob empty is no filter", files: grepTree, args: `{"pattern":"bye","glob":""}`,
			want: "/a.txt" + binSkip},
		{name: "path directory", files: grepTree, args: `{"pattern":"hello","path":"/src"}`,
			want: "/src/x.go\n/src/y.py"},
		{name: "path single file", files: grepTree, args: `{"pattern":"hello","path":"/src/x.go","output_mode":"content"}`,
			want: "/src/x.go:4: // hello again, hello"},
		{name: "path single file with glob", files: grepTree, args: `{"pattern":"hello","path":"/src/x.go","glob":"*.py"}`,
			want: `No matches for "hello" in /src/x.go.`},
		{name: "multi-line pattern", files: grepTree, args: `{"pattern":"world\nbye","output_mode":"content"}`,
			want: "/a.txt:1: hello world" + binSkip},
		{name: "pattern with newline in crlf file", files: grepTree, args: `{"pattern":"\nthere","output_mode":"count"}`,
			want: "/crlf.txt: 1" + binSkip},
		{name: "line number after blank lines", files: map[string]string{"/f": "\n\n\nx\n\nx"}, args: `{"pattern":"x","output_mode":"content"}`,
			want: "/f:4: x\n/f:6: x"},
		{name: "long line cut", files: long, args: `{"pattern":"xx","output_mode":"content"}`, tools: New(Options{MaxLineChars: 5}),
			want: "/l.txt:1: xxaaa..."},
		{name: "max_count files", files: grepTree, args: `{"pattern":"hello","max_count":1}`,
			want: "/a.txt\n\n[Showing the first 1 of 4 matching files. Narrow the search with path or glob, or raise max_count.]" + binSkip},
		{name: "max_count content", files: grepTree, args: `{"pattern":"hello","output_mode":"content","max_count":2}`,
			want: "/a.txt:1: hello world\n/crlf.txt:1: hello\n\n[Showing the first 2 of 4 matching lines. Narrow the search with path or glob, or raise max_count.]" + binSkip},
		{name: "default cap", files: grepTree, args: `{"pattern":"hello","output_mode":"count"}`, tools: New(Options{GrepMaxResults: 3}),
			want: "/a.txt: 1\n/crlf.txt: 1\n/src/x.go: 1\n\n[Showing the first 3 of 4 matching files. Narrow the search with path or glob, or raise max_count.]" + binSkip},
		{name: "max_count exactly enough", files: grepTree, args: `{"pattern":"hello","max_count":4}`,
			want: "/a.txt\n/crlf.txt\n/src/x.go\n/src/y.py" + binSkip},
		{name: "no match", files: grepTree, args: `{"pattern":"absent"}`,
			want: `No matches for "absent" in /. (Skipped 1 file: /bin.dat (binary, 11 B).)`},
		{name: "no match in subdir", files: grepTree, args: `{"pattern":"absent","path":"/src"}`,
			want: `No matches for "absent" in /src.`},
		{name: "binary only match", files: grepTree, args: `{"pattern":"world","path":"/bin.dat"}`,
			want: `No matches for "world" in /bin.dat. (Skipped 1 file: /bin.dat (binary, 11 B).)`},
		{name: "regex hint", files: grepTree, args: `{"pattern":"hel+o","path":"/src"}`,
			want: `No matches for "hel+o" in /src. Note: grep matches the pattern as literal text, not as a regular expression, so characters such as . * + | ( [ ^ $ \ match only themselves. Search for a plain piece of the text instead.`},
		{name: "regex hint anchors", files: grepTree, args: `{"pattern":"^func","path":"/src"}`,
			want: `No matches for "^func" in /src. Note: grep matches the pattern as literal text, not as a regular expression, so characters such as . * + | ( [ ^ $ \ match only themselves. Search for a plain piece of the text instead.`},
		{name: "regex hint class and escape", files: grepTree, args: `{"pattern":"\\d+ [a-z]","path":"/src"}`,
			want: `No matches for "\\d+ [a-z]" in /src. Note: grep matches the pattern as literal text, not as a regular expression, so characters such as . * + | ( [ ^ $ \ match only themselves. Search for a plain piece of the text instead.`},
		{name: "empty filesystem", files: nil, args: `{"pattern":"x"}`,
			want: `No matches for "x" in /.`},
		{name: "empty pattern", files: grepTree, args: `{"pattern":""}`,
			wantErr: []string{"pattern is empty"}},
		{name: "missing pattern", files: grepTree, args: `{"path":"/"}`,
			wantErr: []string{`missing required argument "pattern"`}},
		{name: "bad output mode", files: grepTree, args: `{"pattern":"x","output_mode":"lines"}`,
			wantErr: []string{`"output_mode"`, "lines", "files_with_matches"}},
		{name: "zero max_count", files: grepTree, args: `{"pattern":"x","max_count":0}`,
			wantErr: []string{"max_count must be 1 or more", "200"}},
		{name: "negative max_count", files: grepTree, args: `{"pattern":"x","max_count":-3}`,
			wantErr: []string{"max_count must be 1 or more", "got -3"}},
		{name: "bad glob", files: grepTree, args: `{"pattern":"x","glob":"*.{go"}`,
			wantErr: []string{`invalid glob "*.{go"`, "never closed"}},
		{name: "missing path", files: grepTree, args: `{"pattern":"x","path":"/nope"}`,
			wantErr: []string{"/nope does not exist", "ls or glob"}},
	}
	cases = append(cases, badPathCases("path", `,"pattern":"x"`)...)
	runTable(t, "grep", cases)
}

func TestLooksLikeRegex(t *testing.T) {
	for p, want := range map[string]bool{
		"foo.*bar": true, `\d+`: true, "a|b": true, "^start": true, "end$": true, "[abc]": true,
		"a+": true, "f(x)": true, `\.`: true, "plain text": false, "foo.bar": false, "[": false,
		"price $5": false, "under_score": false,
	} {
		if got := looksLikeRegex(p); got != want {
			t.Errorf("looksLikeRegex(%q) = %v, want %v", p, got, want)
		}
	}
}
