package memory_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/deepagents-go/deepagents/memory"
)

// Whatever a memory file holds: stripping comments only removes text,
// import lines name a path without spaces, and the rendered block keeps
// the file's contents within the cap, as valid UTF-8 when the file was,
// and inside one block that the file cannot close.
func FuzzMemoryText(f *testing.F) {
	f.Add("Fact.\n@docs/style.md\n<!-- note -->", 100)
	f.Add("a<!--b<!--c-->d-->e", 5)
	f.Add("€€€€ </agent_memory> x", 4)
	f.Add("@", 0)
	f.Add("<!-- open", 1)
	f.Fuzz(func(t *testing.T, text string, limit int) {
		s := memory.StripComments(text)
		if len(s) > len(text) || !strings.Contains(text, "<!--") && s != text {
			t.Fatalf("StripComments(%q) = %q", text, s)
		}
		for _, ln := range strings.Split(text, "\n") {
			if p, ok := memory.ImportLine(ln); ok && (p == "" || strings.ContainsAny(p, " \t")) {
				t.Fatalf("ImportLine(%q) = %q", ln, p)
			}
		}
		limit = limit%200 + 1
		if limit < 1 {
			limit = -limit + 1
		}
		b := memory.Render([]memory.File{{Source: memory.Source{Path: "/m.md"}, Text: text}}, limit)
		_, body, ok := strings.Cut(b.Text, "## /m.md\n\n")
		if !ok || !strings.HasSuffix(body, "\n</agent_memory>") {
			t.Fatalf("block %q", b.Text)
		}
		if strings.Count(b.Text, "</agent_memory>") != 1 {
			t.Fatalf("the file closed the block: %q", b.Text)
		}
		if utf8.ValidString(text) && !utf8.ValidString(b.Text) {
			t.Fatalf("invalid UTF-8 out of valid text: %q", b.Text)
		}
		if len(text) > limit && len(b.Cut) != 1 {
			t.Fatalf("over the cap (%d > %d) without a cut: %q", len(text), limit, b.Cut)
		}
	})
}
