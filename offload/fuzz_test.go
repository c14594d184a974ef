package offload

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/deepagents-go/deepagents/tokens"
	"github.com/deepagents-go/deepagents/vfs"
)

// Whatever the call id and agent path, the saved path is one short, clean
// file name under /large_tool_results, and a safe top-level id is kept as it
// is.
func FuzzResultPath(f *testing.F) {
	for _, s := range [][2]string{
		{"parent", "call_1"}, {"parent", "../../etc/passwd"}, {"parent / gp#c1", "c1"},
		{"parent", strings.Repeat("a", 41)}, {"parent", "a\\b"}, {"parent", ""}, {"", "x y"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, agentPath, id string) {
		p := ResultPath(agentPath, id)
		if len(p) > 80 {
			t.Fatalf("path %q is %d bytes", p, len(p))
		}
		name, ok := strings.CutPrefix(p, ToolResultDir+"/")
		if !ok || name == "" || strings.ContainsAny(name, "/\\.") {
			t.Fatalf("path %q is not one plain name under %s", p, ToolResultDir)
		}
		if c, err := vfs.Clean(p); err != nil || c != p {
			t.Fatalf("path %q cleans to %q, %v", p, c, err)
		}
		if ResultPath(agentPath, id) != p {
			t.Fatal("not deterministic")
		}
		if safeID(id) && topLevel(agentPath) && name != id {
			t.Fatalf("safe id %q became %q", id, name)
		}
	})
}

// Skipping texts by byte length is sound: a text mayExceed lets pass never
// has more tokens than the limit, and measureText decides like a full count.
func FuzzMayExceed(f *testing.F) {
	f.Add("hello world", uint16(2))
	f.Add("\xff\xfe\xfd", uint16(3))
	f.Add("日本語のテキスト", uint16(5))
	f.Add("    \n\n\t\t", uint16(1))
	f.Fuzz(func(t *testing.T, s string, limit uint16) {
		n := tokens.Count(tokens.O200k, s)
		if !mayExceed(s, int(limit)) && n > int(limit) {
			t.Fatalf("%q has %d tokens, over %d, but was skipped", s, n, limit)
		}
		// Under exactBelow bytes the decision is always exact.
		if m := measureText(s, int(limit)); len(s) < exactBelow && m.over(int(limit)) != (n > int(limit)) {
			t.Fatalf("%q: measured %+v, counted %d, limit %d", s, m, n, limit)
		}
	})
}

// The preview has at most 5+5 lines plus the left-out line, each numbered
// and clipped, and reports read_file's line count.
func FuzzPreview(f *testing.F) {
	f.Add("a\nb\r\nc")
	f.Add(strings.Repeat("x\n", 30))
	f.Add("\n\n\n")
	f.Add(strings.Repeat("é", 1200))
	f.Fuzz(func(t *testing.T, s string) {
		got, lines := Preview(s)
		if lines != len(splitLines(s)) {
			t.Fatalf("lines = %d", lines)
		}
		if got == "" {
			if lines != 0 {
				t.Fatal("empty preview of a non-empty text")
			}
			return
		}
		// Lines of s may hold '\r' or other control bytes but never '\n', so
		// each preview row is one split piece.
		rows := strings.Split(got, "\n")
		want := min(lines, 2*PreviewLines)
		if lines > 2*PreviewLines {
			want++
		}
		if len(rows) != want {
			t.Fatalf("%d rows for %d lines", len(rows), lines)
		}
		for i, r := range rows {
			if lines > 2*PreviewLines && i == PreviewLines {
				if !strings.HasPrefix(r, "[... ") {
					t.Fatalf("row %d = %q, want the left-out line", i, r)
				}
				continue
			}
			_, text, ok := strings.Cut(r, "\t")
			if !ok {
				t.Fatalf("row %q has no gutter", r)
			}
			body, _, _ := strings.Cut(text, " [... ")
			if utf8.RuneCountInString(body) > PreviewLineChars {
				t.Fatalf("row %d not clipped: %d characters", i, utf8.RuneCountInString(body))
			}
		}
	})
}
