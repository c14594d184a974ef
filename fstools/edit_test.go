package fstools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/deepagents-go/deepagents/vfs"
	"github.com/deepagents-go/deepagents/vfs/osfs"
)

// onDisk is the agent loop's view of a real directory: osfs in vfs.Track.
var onDisk = backend{"osfs", func(t *testing.T, files map[string]string) vfs.Backend {
	t.Helper()
	dir := t.TempDir()
	for p, c := range files {
		full := filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(p, "/")))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := osfs.New(dir, osfs.NoSync(), osfs.NoSweep())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return vfs.Track(f)
}}

// runEditTable runs edit_file cases on every backend of runTable and on a
// real directory.
func runEditTable(t *testing.T, cases []tcase) {
	t.Helper()
	runTable(t, "edit_file", cases)
	for _, tc := range cases {
		t.Run(onDisk.name+"/"+tc.name, func(t *testing.T) {
			fs := onDisk.make(t, tc.files)
			res := call(t, defaults["edit_file"], fs, tc.args)
			switch {
			case tc.wantErr == nil && (res.IsError || res.Content != tc.want):
				t.Errorf("got %q (error %v), want %q", res.Content, res.IsError, tc.want)
			case tc.wantErr != nil && !res.IsError:
				t.Errorf("want an error result, got %q", res.Content)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(res.Content, w) {
					t.Errorf("error %q does not mention %q", res.Content, w)
				}
			}
			if tc.check != nil {
				tc.check(t, fs)
			}
		})
	}
}

// edit_file with an empty old_string fills an empty file and is refused on
// any other.
func TestEditEmptyFile(t *testing.T) {
	files := map[string]string{"/empty.txt": "", "/full.txt": "text\n"}
	runEditTable(t, []tcase{
		{name: "fills an empty file", files: files, args: `{"file_path":"/empty.txt","old_string":"","new_string":"first line\nsecond\n"}`,
			want: "Wrote new_string (2 lines, 18 bytes) into the empty file /empty.txt.", check: hasContent("/empty.txt", "first line\nsecond\n")},
		{name: "fills without a final newline", files: files, args: `{"file_path":"empty.txt","old_string":"","new_string":"x"}`,
			want: "Wrote new_string (1 line, 1 byte) into the empty file /empty.txt.", check: hasContent("/empty.txt", "x")},
		{name: "refused on a non-empty file", files: files, args: `{"file_path":"/full.txt","old_string":"","new_string":"x"}`,
			wantErr: []string{"old_string is empty", "only allowed when the file is empty", "/full.txt is not", "write_file"}, check: unchanged(files)},
		{name: "both empty", files: files, args: `{"file_path":"/empty.txt","old_string":"","new_string":""}`,
			wantErr: []string{"identical"}, check: unchanged(files)},
		{name: "missing file", files: files, args: `{"file_path":"/new.txt","old_string":"","new_string":"x"}`,
			wantErr: []string{"/new.txt does not exist", "write_file"}, check: unchanged(files)},
		{name: "replace_all on an empty file", files: files, args: `{"file_path":"/empty.txt","old_string":"","new_string":"y","replace_all":true}`,
			want: "Wrote new_string (1 line, 1 byte) into the empty file /empty.txt.", check: hasContent("/empty.txt", "y")},
	})
}

// When old_string is not found but nearly is, the error says what differs.
func TestEditNearMisses(t *testing.T) {
	files := map[string]string{
		"/nofinal.txt": "first\nlast line",
		"/twice.txt":   "ab ab",
		"/lf.txt":      "one\ntwo\nthree\n",
		"/crlf.txt":    "one\r\ntwo\r\nthree",
		"/mixed.txt":   "one\r\ntwo\nthree\r\n",
	}
	runEditTable(t, []tcase{
		{name: "trailing newline the file lacks", files: files, args: `{"file_path":"/nofinal.txt","old_string":"last line\n","new_string":"final line\n"}`,
			wantErr: []string{"old_string was not found in /nofinal.txt exactly, but without its final line break it occurs once",
				"old_string ends with a line break that the file does not have at that point",
				"Send old_string without that final line break"}, check: unchanged(files)},
		{name: "trailing newline, twice", files: files, args: `{"file_path":"/twice.txt","old_string":"ab\n","new_string":"c"}`,
			wantErr: []string{"without its final line break it occurs 2 times"}, check: unchanged(files)},
		{name: "trailing CRLF on a CRLF file", files: files, args: `{"file_path":"/crlf.txt","old_string":"two\r\nthree\r\n","new_string":"2\r\n3\r\n"}`,
			wantErr: []string{"without its final line break it occurs once"}, check: unchanged(files)},
		{name: "trailing LF on a CRLF file", files: files, args: `{"file_path":"/crlf.txt","old_string":"two\nthree\n","new_string":"2\n3\n"}`,
			wantErr: []string{"without its final line break it occurs once"}, check: unchanged(files)},
		{name: "CRLF text on an LF file", files: files, args: `{"file_path":"/lf.txt","old_string":"one\r\ntwo","new_string":"1\r\n2"}`,
			wantErr: []string{"with LF line endings it occurs once",
				`old_string has Windows line endings (CRLF, \r\n) where the file has Unix ones (LF, \n)`,
				`Send old_string with \n line endings only`}, check: unchanged(files)},
		{name: "mixed line endings", files: files, args: `{"file_path":"/mixed.txt","old_string":"one\ntwo\nthree","new_string":"x"}`,
			wantErr: []string{"it occurs once if line endings are ignored", "the file mixes Windows (CRLF", "Edit one line at a time"}, check: unchanged(files)},
		{name: "only line endings changed", files: files, args: `{"file_path":"/crlf.txt","old_string":"one\ntwo","new_string":"one\r\ntwo"}`,
			wantErr: []string{`with the file's Windows line endings (CRLF, \r\n) it occurs once`, "differs from it only in line endings", "write_file"}, check: unchanged(files)},
		{name: "final line break and line endings", files: files, args: `{"file_path":"/nofinal.txt","old_string":"first\r\nlast line\r\n","new_string":"x"}`,
			wantErr: []string{"it occurs once without its final line break and with line endings (CRLF versus LF) ignored"}, check: unchanged(files)},
		{name: "a plain miss has no near-miss hint", files: files, args: `{"file_path":"/lf.txt","old_string":"four\n","new_string":"4\n"}`,
			wantErr: []string{"old_string was not found in /lf.txt. Read the file again with read_file"}, check: unchanged(files)},
		{name: "CRLF fallback still applies", files: files, args: `{"file_path":"/crlf.txt","old_string":"one\ntwo","new_string":"1\n2"}`,
			want: "Replaced 1 occurrence in /crlf.txt.", check: hasContent("/crlf.txt", "1\r\n2\r\nthree")},
	})
}

// A near-miss hint is only ever given when following it finds the text:
// without the final line break, or with LF line endings, old_string then
// occurs in the file.
func FuzzEditNearMiss(f *testing.F) {
	f.Add("first\nlast", "last\n")
	f.Add("a\r\nb\r\nc", "b\r\nc\r\n")
	f.Add("one\ntwo\n", "one\r\ntwo")
	f.Add("x\r\ny\nz", "x\ny\nz")
	f.Add("x\ny", "x\r\ny\r\n")
	f.Add("", "\n")
	f.Add("a\r", "a\r\n")
	f.Fuzz(func(t *testing.T, content, old string) {
		if !utf8.ValidString(old) || old == "" {
			t.Skip("JSON arguments are UTF-8; an empty old_string is another case")
		}
		fs := vfs.NewMemory(map[string]vfs.File{"/f": {Content: content}})
		res := run(t, "edit_file", fs, map[string]any{"file_path": "/f", "old_string": old, "new_string": old + "\x00new"})
		if content2(t, fs) != content && res.IsError {
			t.Fatalf("a refused edit changed the file")
		}
		lf := func(s string) string { return strings.ReplaceAll(s, "\r\n", "\n") }
		switch {
		case strings.Contains(res.Content, "without its final line break it occurs"):
			trimmed := strings.TrimSuffix(strings.TrimSuffix(old, "\n"), "\r")
			if !strings.Contains(content, trimmed) && !strings.Contains(content, strings.ReplaceAll(lf(trimmed), "\n", "\r\n")) {
				t.Fatalf("hint %q, but %q without its line break is not in %q", res.Content, old, content)
			}
		case strings.Contains(res.Content, "with LF line endings it occurs"):
			if !strings.Contains(content, lf(old)) || strings.Contains(content, "\r\n") {
				t.Fatalf("hint %q, but %q with LF endings is not in %q", res.Content, old, content)
			}
		case strings.Contains(res.Content, "line endings are ignored") || strings.Contains(res.Content, "differs from it only in line endings"):
			if !strings.Contains(lf(content), lf(old)) {
				t.Fatalf("hint %q, but %q is not in %q even ignoring line endings", res.Content, old, content)
			}
		case strings.Contains(res.Content, "with line endings (CRLF versus LF) ignored"):
			if !strings.Contains(lf(content), strings.TrimSuffix(lf(old), "\n")) {
				t.Fatalf("hint %q, but it does not hold for %q in %q", res.Content, old, content)
			}
		case res.IsError && strings.Contains(res.Content, "was not found"):
			// No hint: then none applies.
			trimmed := strings.TrimSuffix(strings.TrimSuffix(old, "\n"), "\r")
			if trimmed != old && trimmed != "" && strings.Contains(content, trimmed) {
				t.Fatalf("no hint for %q in %q, though it matches without its final line break: %q", old, content, res.Content)
			}
			if lf(old) != "" && strings.Contains(lf(content), lf(old)) {
				t.Fatalf("no hint for %q in %q, though it matches ignoring line endings: %q", old, content, res.Content)
			}
		}
	})
}
