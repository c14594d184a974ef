package fstools

import (
	"encoding/json"
	"slices"
	"testing"
)

// Backslashes are separators in every path argument: win\bar\baz is
// /win/bar/baz. Drive letters and ~ stay refused.
func TestBackslashPaths(t *testing.T) {
	files := map[string]string{"/win/bar/baz.txt": "one\ntwo\n", "/win/other.md": "needle"}
	cases := []struct {
		tool string
		tcase
	}{
		{"read_file", tcase{name: "relative", files: files, args: `{"file_path":"win\\bar\\baz.txt"}`,
			want: "     1\tone\n     2\ttwo"}},
		{"read_file", tcase{name: "rooted", files: files, args: `{"file_path":"\\win\\bar\\baz.txt","limit":1}`,
			want: "     1\tone\n\n[Lines 1-1 of 2 shown; 1 more line remains. Call read_file with offset=1 to continue.]"}},
		{"read_file", tcase{name: "mixed", files: files, args: `{"file_path":"/win\\bar/baz.txt"}`,
			want: "     1\tone\n     2\ttwo"}},
		{"read_file", tcase{name: "drive letter", files: files, args: `{"file_path":"C:\\win\\bar\\baz.txt"}`,
			wantErr: []string{"Windows drive paths are not supported"}}},
		{"read_file", tcase{name: "home", files: files, args: `{"file_path":"~\\win"}`,
			wantErr: []string{"home-relative paths (~) are not supported"}}},
		{"read_file", tcase{name: "dotdot", files: files, args: `{"file_path":"win\\..\\..\\etc\\passwd"}`,
			wantErr: []string{"path traversal with '..' is not allowed"}}},
		{"ls", tcase{name: "ls", files: files, args: `{"path":"win\\"}`,
			want: "/win/bar/\n/win/other.md (6 bytes)"}},
		{"glob", tcase{name: "glob path", files: files, args: `{"pattern":"*.txt","path":"\\win"}`,
			want: "/win/bar/baz.txt"}},
		{"grep", tcase{name: "grep path", files: files, args: `{"pattern":"needle","path":"win\\other.md"}`,
			want: "/win/other.md"}},
		{"write_file", tcase{name: "write", files: files, args: `{"file_path":"win\\new\\n.txt","content":"x"}`,
			want: "Created /win/new/n.txt (1 line, 1 byte).", check: hasContent("/win/new/n.txt", "x")}},
		{"edit_file", tcase{name: "edit", files: files, args: `{"file_path":"win\\bar\\baz.txt","old_string":"two","new_string":"2"}`,
			want: "Replaced 1 occurrence in /win/bar/baz.txt.", check: hasContent("/win/bar/baz.txt", "one\n2\n")}},
		{"delete", tcase{name: "delete", files: files, args: `{"file_path":"win\\bar"}`,
			check: missing("/win/bar/baz.txt")}},
	}
	for _, c := range cases {
		if c.tool == "delete" {
			// delete's receipt belongs to another part of the suite; check
			// only that the file went.
			runDeleteOnly(t, c.tcase)
			continue
		}
		runTable(t, c.tool, []tcase{c.tcase})
	}
}

func runDeleteOnly(t *testing.T, tc tcase) {
	t.Helper()
	for _, b := range backends {
		t.Run(b.name+"/"+tc.name, func(t *testing.T) {
			fs := b.make(t, tc.files)
			if res := call(t, defaults["delete"], fs, tc.args); res.IsError {
				t.Fatalf("delete failed: %q", res.Content)
			}
			tc.check(t, fs)
		})
	}
}

// Integer parameters accept numbers sent as strings, in every tool that has
// them; other type errors stay plain-words errors.
func TestNumberStrings(t *testing.T) {
	files := map[string]string{"/ten.txt": manyLines(10), "/a.txt": "hit\nhit\nhit\n", "/b.txt": "hit"}
	cases := []struct {
		tool string
		tcase
	}{
		{"read_file", tcase{name: "offset and limit", files: files, args: `{"file_path":"/ten.txt","offset":"8","limit":"1"}`,
			want: numbered(9, "line 9") + "\n\n[Lines 9-9 of 10 shown; 1 more line remains. Call read_file with offset=9 to continue.]"}},
		{"read_file", tcase{name: "fraction", files: files, args: `{"file_path":"/ten.txt","offset":"1.5"}`,
			wantErr: []string{`argument "offset" must be an integer, got the string "1.5"`}}},
		{"read_file", tcase{name: "words", files: files, args: `{"file_path":"/ten.txt","limit":"all"}`,
			wantErr: []string{`argument "limit" must be an integer, got the string "all"`}}},
		{"grep", tcase{name: "max_count", files: files, args: `{"pattern":"hit","output_mode":"content","max_count":"2"}`,
			want: "/a.txt:1: hit\n/a.txt:2: hit\n\n[Showing the first 2 of 4 matching lines. Narrow the search with path or glob, or raise max_count.]"}},
		{"grep", tcase{name: "max_count with spaces", files: files, args: `{"pattern":"hit","max_count":" 1 "}`,
			want: "/a.txt\n\n[Showing the first 1 of 2 matching files. Narrow the search with path or glob, or raise max_count.]"}},
		{"grep", tcase{name: "max_count zero", files: files, args: `{"pattern":"hit","max_count":"0"}`,
			wantErr: []string{"max_count must be 1 or more; got 0"}}},
		{"grep", tcase{name: "max_count boolean", files: files, args: `{"pattern":"hit","max_count":true}`,
			wantErr: []string{`argument "max_count" must be an integer, got the boolean true`}}},
		{"grep", tcase{name: "pattern stays a string", files: files, args: `{"pattern":5}`,
			wantErr: []string{`argument "pattern" must be a string, got the number 5`}}},
	}
	for _, c := range cases {
		runTable(t, c.tool, []tcase{c.tcase})
	}
}

// ChangedPath reads the path a changing call names, as the tool itself
// reads it (duplicate keys: the last wins), and nothing for other tools.
func TestChangedPath(t *testing.T) {
	for _, tc := range []struct {
		name, args string
		path       string
		del, ok    bool
	}{
		{"write_file", `{"file_path":"/a.md","content":"x"}`, "/a.md", false, true},
		{"edit_file", `{"file_path":"\\.git\\config","old_string":"a","new_string":"b"}`, `\.git\config`, false, true},
		{"delete", `{"file_path":"/d"}`, "/d", true, true},
		{"write_file", `{"file_path":"/a","file_path":"/.git/config"}`, "/.git/config", false, true},
		{"write_file", `{"file_path":"/a","FILE_PATH":"/.git/config"}`, "/.git/config", false, true},
		{"read_file", `{"file_path":"/a.md"}`, "", false, false},
		{"write_file", `{"content":"x"}`, "", false, false},
		{"write_file", `{"file_path":3}`, "", false, false},
		{"delete", `not json`, "", false, false},
	} {
		path, del, ok := ChangedPath(tc.name, json.RawMessage(tc.args))
		if path != tc.path || del != tc.del || ok != tc.ok {
			t.Errorf("%s %s: %q %v %v, want %q %v %v", tc.name, tc.args, path, del, ok, tc.path, tc.del, tc.ok)
		}
	}
	for _, name := range ChangingTools {
		if !slices.Contains(Names, name) {
			t.Errorf("%s is not a file tool", name)
		}
	}
}
