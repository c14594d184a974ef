package skills_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/deepagents-go/deepagents/skills"
)

// Whatever a SKILL.md holds, parsing never panics, and a skill built from
// what it accepts keeps to the format's limits and never puts a line break
// into the one-line listing entry.
func FuzzParseFile(f *testing.F) {
	f.Add([]byte("---\nname: pdf\ndescription: Fill PDF forms.\n---\nbody\n"))
	f.Add([]byte("---\nname: csv-tools\ndescription: >\n  Clean\n  CSV.\nlicense: MIT\nallowed-tools: [read_file, ls]\nmetadata:\n  a: b\n---\n"))
	f.Add([]byte("\ufeff---\r\nname: a\r\ndescription: \"x\\ny\"\r\n---\r\n"))
	f.Add([]byte("---\nname: &a [x]\ndescription: *a\n---\n"))
	f.Add([]byte("---\n---\n"))
	f.Add([]byte("---\nname: a\n"))
	f.Add([]byte("---\nmetadata: {a: [1]}\n---\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := skills.ParseFile(data)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error text")
			}
			return
		}
		if !utf8.ValidString(h.Name) || !utf8.ValidString(h.Description) {
			t.Fatal("invalid UTF-8 accepted")
		}
		s, warns, ok := skills.Build(h, h.Name)
		if !ok {
			if len(warns) == 0 {
				t.Fatal("skipped without a warning")
			}
			return
		}
		if s.Name == "" || s.Description == "" || utf8.RuneCountInString(s.Description) > skills.MaxDescription {
			t.Fatalf("bad skill accepted: %+v", s)
		}
		s.Path = "/skills/" + s.Name + "/SKILL.md"
		l := skills.Render(&skills.Set{Skills: []skills.Skill{s}}, 1<<20, nil)
		entry := l.Text[strings.LastIndex(l.Text, "\n- ")+1:]
		if strings.ContainsAny(entry, "\n\r") || !strings.HasSuffix(entry, " — read "+s.Path) {
			t.Fatalf("entry %q", entry)
		}
	})
}
