package fstools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/vfs"
	"github.com/deepagents-go/deepagents/vfs/vfstest"
)

// read_file forgives bad paging: a negative offset reads from the start and
// says so; a limit of 0 or less answers that no lines were read. Neither is
// an error.
func TestReadFileForgivesBadPaging(t *testing.T) {
	files := map[string]string{"/ten.txt": manyLines(10), "/three.txt": "one\ntwo\nthree", "/empty.txt": ""}
	cases := []tcase{
		{name: "negative offset", files: files, args: `{"file_path":"/three.txt","offset":-1}`,
			want: "     1\tone\n     2\ttwo\n     3\tthree\n\n[offset -1 is before the first line, so reading started at the first line (offset 0).]"},
		{name: "negative offset with a page", files: files, args: `{"file_path":"/ten.txt","offset":-7,"limit":2}`,
			want: "     1\tline 1\n     2\tline 2\n\n[offset -7 is before the first line, so reading started at the first line (offset 0).]\n[Lines 1-2 of 10 shown; 8 more lines remain. Call read_file with offset=2 to continue.]"},
		{name: "negative offset as a string", files: files, args: `{"file_path":"/three.txt","offset":"-2","limit":"1"}`,
			want: "     1\tone\n\n[offset -2 is before the first line, so reading started at the first line (offset 0).]\n[Lines 1-1 of 3 shown; 2 more lines remain. Call read_file with offset=1 to continue.]"},
		{name: "zero limit", files: files, args: `{"file_path":"/three.txt","limit":0}`,
			want: "No lines were read from /three.txt: limit is 0. Give a limit of 1 or more, or leave it out to read up to 100 lines."},
		{name: "negative limit", files: files, args: `{"file_path":"/ten.txt","offset":3,"limit":-5}`,
			want: "No lines were read from /ten.txt: limit is -5. Give a limit of 1 or more, or leave it out to read up to 100 lines."},
		{name: "zero limit on an empty file", files: files, args: `{"file_path":"/empty.txt","limit":0}`,
			want: "/empty.txt is empty (0 lines)."},
		{name: "negative offset on an empty file", files: files, args: `{"file_path":"/empty.txt","offset":-3}`,
			want: "/empty.txt is empty (0 lines)."},
		{name: "zero limit past the end", files: files, args: `{"file_path":"/ten.txt","offset":10,"limit":0}`,
			want: "No lines were read from /ten.txt: limit is 0. Give a limit of 1 or more, or leave it out to read up to 100 lines."},
	}
	runTable(t, "read_file", cases)
}

// chunked renders one line the way read_file splits it: a gutter, then
// chunks of 2000 characters labelled N.1, N.2, ...
func chunked(n int, chunks ...string) string {
	var b strings.Builder
	for i, c := range chunks {
		label := fmt.Sprint(n)
		if i > 0 {
			label = fmt.Sprintf("%d.%d", n, i)
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%6s\t%s", label, c)
	}
	return b.String()
}

// read_file caps its answer at 80,000 characters, whatever the line count,
// and names the offset to continue from; one line longer than that is cut
// with the same notice.
func TestReadFileCapsOutput(t *testing.T) {
	x := strings.Repeat("x", 1000)
	var hundred strings.Builder
	for range 100 {
		hundred.WriteString(x + "\n")
	}
	huge := strings.Repeat("a", 9_000_000)
	files := map[string]string{
		"/wide.txt": hundred.String(),
		"/one.txt":  huge + "\nsecond\n",
		"/only.txt": huge,
	}
	lines := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = x
		}
		return out
	}
	// A 9 MB line: 39 whole chunks of 2000 characters and a cut one fit.
	cut := make([]string, 40)
	for i := range 39 {
		cut[i] = strings.Repeat("a", 2000)
	}
	cut[39] = strings.Repeat("a", 1381)
	cases := []tcase{
		{name: "capped by characters, not lines", files: files, args: `{"file_path":"/wide.txt"}`,
			want: numbered(1, lines(79)...) + "\n\n[Output capped at 80,000 characters: lines 1-79 of 100 shown; 21 more lines remain. Call read_file with offset=79 to continue.]"},
		{name: "continuing from the notice", files: files, args: `{"file_path":"/wide.txt","offset":79}`,
			want: numbered(80, lines(21)...)},
		{name: "a page under the cap is whole", files: files, args: `{"file_path":"/wide.txt","offset":10,"limit":5}`,
			want: numbered(11, lines(5)...) + "\n\n[Lines 11-15 of 100 shown; 85 more lines remain. Call read_file with offset=15 to continue.]"},
		{name: "one long line is cut", files: files, args: `{"file_path":"/one.txt"}`,
			want: chunked(1, cut...) + "\n\n[Output capped at 80,000 characters, so line 1 (8.6 MiB long) is cut short: lines 1-1 of 2 shown; 1 more line remains. Call read_file with offset=1 to continue.]"},
		{name: "the line after the long one", files: files, args: `{"file_path":"/one.txt","offset":1}`,
			want: "     2\tsecond"},
		{name: "the long line is the last", files: files, args: `{"file_path":"/only.txt","limit":3}`,
			want: chunked(1, cut...) + "\n\n[Output capped at 80,000 characters, so line 1 (8.6 MiB long) is cut short: lines 1-1 of 1 shown; no more lines remain.]"},
		{name: "a smaller cap", files: files, args: `{"file_path":"/wide.txt"}`, tools: New(Options{MaxOutputChars: 5000}),
			want: numbered(1, lines(4)...) + "\n\n[Output capped at 5,000 characters: lines 1-4 of 100 shown; 96 more lines remain. Call read_file with offset=4 to continue.]"},
	}
	runTable(t, "read_file", cases)
	fs := vfs.NewMemory(vfstest.Files(files))
	for _, args := range []string{`{"file_path":"/one.txt"}`, `{"file_path":"/wide.txt"}`, `{"file_path":"/only.txt","offset":-1}`} {
		if got := call(t, defaults["read_file"], fs, args).Content; len(got) > 80_000 {
			t.Errorf("%s: %d characters, over the cap", args, len(got))
		}
	}
}

// A binary file is named as such, with its size and detected type, instead
// of being dumped as garbled text.
func TestReadFileBinary(t *testing.T) {
	png := "\x89PNG\r\n\x1a\n" + strings.Repeat("\x00", 16)
	files := map[string]string{
		"/img.png":    png,
		"/nul.txt":    "text\x00more",
		"/ctrl.bin":   "\x01\x02\x03abc",
		"/data.gz":    "\x1f\x8b\x08\x00" + strings.Repeat("z", 2000),
		"/pdf":        "%PDF-1.7\n%\xe2\xe3\xcf\xd3\n" + strings.Repeat("q", 3000),
		"/bmw.txt":    "BMW and Audi\n",
		"/id3.txt":    "ID3 tags hold the title\n",
		"/pdf.txt":    "%PDF-1.7 is a version\n",
		"/latin1.txt": "caf\xe9\n",
		"/late-nul":   strings.Repeat("t", 9000) + "\x00",
	}
	cases := []tcase{
		{name: "png", files: files, args: `{"file_path":"/img.png"}`,
			want: "/img.png is a binary file (image/png, 24 B), not text, so read_file does not show it."},
		{name: "nul byte", files: files, args: `{"file_path":"/nul.txt"}`,
			want: "/nul.txt is a binary file (binary data, 9 B), not text, so read_file does not show it."},
		{name: "control bytes", files: files, args: `{"file_path":"/ctrl.bin"}`,
			want: "/ctrl.bin is a binary file (binary data, 6 B), not text, so read_file does not show it."},
		{name: "gzip", files: files, args: `{"file_path":"/data.gz","offset":3,"limit":1}`,
			want: "/data.gz is a binary file (application/x-gzip, 2 KiB), not text, so read_file does not show it."},
		{name: "pdf", files: files, args: `{"file_path":"/pdf"}`,
			want: "/pdf is a binary file (application/pdf, 2.9 KiB), not text, so read_file does not show it."},
		{name: "text that starts like a bitmap", files: files, args: `{"file_path":"/bmw.txt"}`,
			want: "     1\tBMW and Audi"},
		{name: "text that starts like an mp3", files: files, args: `{"file_path":"/id3.txt"}`,
			want: "     1\tID3 tags hold the title"},
		{name: "text that starts like a pdf", files: files, args: `{"file_path":"/pdf.txt"}`,
			want: "     1\t%PDF-1.7 is a version"},
		{name: "latin-1 text is text", files: files, args: `{"file_path":"/latin1.txt"}`,
			want: "     1\tcaf\xe9"},
		{name: "a NUL past the first 8000 bytes", files: files, args: `{"file_path":"/late-nul"}`, tools: New(Options{MaxLineChars: 9001}),
			want: "     1\t" + strings.Repeat("t", 9000) + "\x00"},
	}
	runTable(t, "read_file", cases)
}

// streamFS serves one large generated file through Open only, and counts
// the bytes read: read_file must page through it without loading it.
type streamFS struct {
	vfs.Backend
	size int64
	gen  func(i int64) byte
	read int64
}

func (s *streamFS) Read(context.Context, string) (string, error) {
	return "", errors.New("Read must not be called: the file is streamed")
}

func (s *streamFS) Open(_ context.Context, p string) (io.ReadCloser, vfs.Entry, error) {
	return io.NopCloser(&genReader{s: s}), vfs.Entry{Path: p, Size: s.size}, nil
}

type genReader struct {
	s   *streamFS
	pos int64
}

func (g *genReader) Read(b []byte) (int, error) {
	if g.pos >= g.s.size {
		return 0, io.EOF
	}
	n := min(int64(len(b)), g.s.size-g.pos)
	for i := range n {
		b[i] = g.s.gen(g.pos + i)
	}
	g.pos += n
	g.s.read += n
	return int(n), nil
}

// Hostile review: big files are read in pages without loading them whole.
func TestReadFileStreamsLargeFiles(t *testing.T) {
	const lineLen = 100 // 99 characters and a newline
	textLine := func(i int64) byte {
		if i%lineLen == lineLen-1 {
			return '\n'
		}
		return 'a' + byte(i/lineLen%26)
	}
	cases := []struct {
		name     string
		size     int64
		gen      func(int64) byte
		args     string
		want     string
		maxBytes int64 // the most read_file may read
	}{
		{name: "first page of 200 MB, lines past 64 MiB not counted", size: 200 << 20, gen: textLine,
			args: `{"file_path":"/big.log","limit":2}`,
			want: "     1\t" + strings.Repeat("a", 99) + "\n     2\t" + strings.Repeat("b", 99) +
				"\n\n[Lines 1-2 shown; more lines remain (the file is 200 MiB). Call read_file with offset=2 to continue.]",
			maxBytes: 64<<20 + 256<<10},
		{name: "a page near the end of 20 MB, counted", size: 20_000_000, gen: textLine,
			args: `{"file_path":"/big.log","offset":199997,"limit":2}`,
			want: "199998\t" + strings.Repeat(string(rune('a'+199997%26)), 99) + "\n199999\t" + strings.Repeat(string(rune('a'+199998%26)), 99) +
				"\n\n[Lines 199998-199999 of 200000 shown; 1 more line remains. Call read_file with offset=199999 to continue.]",
			maxBytes: 20_000_000},
		{name: "binary: only the start is read", size: 1 << 30, gen: func(i int64) byte { return byte(i % 7) },
			args:     `{"file_path":"/big.log"}`,
			want:     "/big.log is a binary file (binary data, 1 GiB), not text, so read_file does not show it.",
			maxBytes: 64 << 10},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := &streamFS{Backend: vfs.NewMemory(nil), size: c.size, gen: c.gen}
			res := call(t, defaults["read_file"], fs, c.args)
			if res.IsError || res.Content != c.want {
				t.Errorf("got %q (error %v)\nwant %q", res.Content, res.IsError, c.want)
			}
			if fs.read > c.maxBytes {
				t.Errorf("read %d bytes, want at most %d", fs.read, c.maxBytes)
			}
		})
	}
}

// ls caps its listing as glob and grep do, saying how many entries were
// left out.
func TestLsCapsOutput(t *testing.T) {
	many := map[string]string{}
	var want []string
	for i := range 600 {
		p := fmt.Sprintf("/d/f%03d.txt", i)
		many[p] = "x"
		if i < 500 {
			want = append(want, p+" (1 byte)")
		}
	}
	many["/d/sub/inner.txt"] = "yy"
	long := map[string]string{}
	for i := range 30 {
		long["/l/"+strings.Repeat(string(rune('a'+i%26)), 100)+fmt.Sprint(i)] = ""
	}
	cases := []tcase{
		{name: "default cap of 500", files: many, args: `{"path":"/d"}`,
			want: strings.Join(want, "\n") + "\n\n[Showing the first 500 of 601 entries; 101 left out. List a subdirectory, or use glob with a pattern, to see the rest.]"},
		{name: "custom cap", files: many, args: `{"path":"d"}`, tools: New(Options{LsMaxResults: 2}),
			want: "/d/f000.txt (1 byte)\n/d/f001.txt (1 byte)\n\n[Showing the first 2 of 601 entries; 599 left out. List a subdirectory, or use glob with a pattern, to see the rest.]"},
		{name: "directories count as entries", files: map[string]string{"/a/1": "", "/b/2": "", "/c": ""}, args: `{}`, tools: New(Options{LsMaxResults: 2}),
			want: "/a/\n/b/\n\n[Showing the first 2 of 3 entries; 1 left out. List a subdirectory, or use glob with a pattern, to see the rest.]"},
		{name: "exactly at the cap", files: map[string]string{"/a/1": "", "/b/2": ""}, args: `{}`, tools: New(Options{LsMaxResults: 2}),
			want: "/a/\n/b/"},
		{name: "capped by characters", files: long, args: `{"path":"/l"}`, tools: New(Options{MaxOutputChars: 600}),
			want: "/l/" + strings.Repeat("a", 100) + "0 (0 bytes)\n/l/" + strings.Repeat("a", 100) + "26 (0 bytes)\n\n[Showing the first 2 of 30 entries; 28 left out. List a subdirectory, or use glob with a pattern, to see the rest.]"},
	}
	runTable(t, "ls", cases)
}

var dotTree = map[string]string{
	"/a.py":               "",
	"/.env":               "",
	"/.config/app.toml":   "",
	"/.config/.secret":    "",
	"/src/main.py":        "",
	"/src/.hidden.py":     "",
	"/src/.cache/x.py":    "",
	"/src/pkg/util.py":    "",
	"/src/pkg/.gen/g.py":  "",
	"/docs/readme.md":     "",
	"/docs/.drafts/d.md":  "",
	"/lib.py/inner.py":    "",
	"/.github/ci.yml":     "",
	"/deep/a/b/.c/d/e.py": "",
}

// glob's dotfile rules: * and ** never match a name that starts with a dot
// unless that pattern segment starts with a dot, and a trailing /** matches
// only what is below a directory.
func TestGlobDotfiles(t *testing.T) {
	cases := []tcase{
		{name: "star skips dotfiles", files: dotTree, args: `{"pattern":"*","path":"/src"}`,
			want: "/src/main.py\n/src/pkg/util.py"},
		{name: "name pattern skips hidden directories", files: dotTree, args: `{"pattern":"*.py"}`,
			want: "/a.py\n/lib.py/inner.py\n/src/main.py\n/src/pkg/util.py"},
		{name: "doublestar skips hidden directories", files: dotTree, args: `{"pattern":"**/*.py"}`,
			want: "/a.py\n/lib.py/inner.py\n/src/main.py\n/src/pkg/util.py"},
		{name: "everything visible", files: dotTree, args: `{"pattern":"**"}`,
			want: "/a.py\n/docs/readme.md\n/lib.py/inner.py\n/src/main.py\n/src/pkg/util.py"},
		{name: "dot pattern matches dotfiles", files: dotTree, args: `{"pattern":".*"}`,
			want: "/.env\n/src/.hidden.py"},
		{name: "dot pattern at the root only", files: dotTree, args: `{"pattern":"/.*"}`,
			want: "/.env"},
		{name: "dot segment in a path pattern", files: dotTree, args: `{"pattern":".config/*"}`,
			want: "/.config/app.toml"},
		{name: "dot segment and dot name", files: dotTree, args: `{"pattern":".config/.*"}`,
			want: "/.config/.secret"},
		{name: "doublestar then a dot directory", files: dotTree, args: `{"pattern":"**/.cache/*.py"}`,
			want: "/src/.cache/x.py"},
		{name: "doublestar does not enter a dot directory", files: dotTree, args: `{"pattern":"src/**/*.py"}`,
			want: "/src/main.py\n/src/pkg/util.py"},
		{name: "dot directory under the search path", files: dotTree, args: `{"pattern":"*","path":"/.config"}`,
			want: "/.config/app.toml"},
		// Braces are expanded first, as in a shell: an alternative that
		// starts with a dot names dotfiles.
		{name: "braces with a dot alternative", files: dotTree, args: `{"pattern":"src/{.hidden,main}.py"}`,
			want: "/src/.hidden.py\n/src/main.py"},
		{name: "dot-led alternative", files: dotTree, args: `{"pattern":"{.env,a.py}"}`,
			want: "/.env\n/a.py"},
		{name: "star alternative still skips dotfiles", files: dotTree, args: `{"pattern":"src/{*,x}.py"}`,
			want: "/src/main.py"},
		{name: "question mark skips a leading dot", files: dotTree, args: `{"pattern":"?env"}`,
			want: `No files match "?env" under /.`},
		{name: "class skips a leading dot", files: dotTree, args: `{"pattern":"[.]env"}`,
			want: `No files match "[.]env" under /.`},
		{name: "deep hidden directory", files: dotTree, args: `{"pattern":"deep/**/e.py"}`,
			want: `No files match "deep/**/e.py" under /. A pattern with / is matched against paths relative to /; start it with **/ to match at any depth.`},
		{name: "deep hidden directory named", files: dotTree, args: `{"pattern":"deep/**/.c/**/e.py"}`,
			want: "/deep/a/b/.c/d/e.py"},
		{name: "trailing doublestar on a file matches nothing", files: dotTree, args: `{"pattern":"a.py/**"}`,
			want: `No files match "a.py/**" under /. A pattern with / is matched against paths relative to /; start it with **/ to match at any depth.`},
		{name: "trailing doublestar on a directory", files: dotTree, args: `{"pattern":"lib.py/**"}`,
			want: "/lib.py/inner.py"},
		{name: "absolute trailing doublestar on a file", files: dotTree, args: `{"pattern":"/a.py/**"}`,
			want: `No files match "/a.py/**" under /.`},
		{name: "many doublestars", files: dotTree, args: `{"pattern":"` + strings.Repeat("**/", 200) + `*.md"}`,
			want: "/docs/readme.md"},
	}
	runTable(t, "glob", cases)
}
