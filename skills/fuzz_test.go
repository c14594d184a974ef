package skills_test

import (
	"os"
	"path/filepath"
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

// Whatever path a tool sends, the skills backend serves only files inside
// a skill's folder: a secret beside the skills (or beside the source) is
// never read, and nothing can be written.
func FuzzFSPath(f *testing.F) {
	root := f.TempDir()
	src := filepath.Join(root, "skills")
	if err := os.MkdirAll(filepath.Join(src, "pdf"), 0o755); err != nil {
		f.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "pdf", "SKILL.md"), []byte("---\nname: pdf\ndescription: d\n---\nbody\n"), 0o644); err != nil {
		f.Fatal(err)
	}
	for _, p := range []string{filepath.Join(root, "secret.txt"), filepath.Join(src, "secret.txt")} {
		if err := os.WriteFile(p, []byte("SECRET"), 0o644); err != nil {
			f.Fatal(err)
		}
	}
	_ = os.Symlink(filepath.Join(root, "secret.txt"), filepath.Join(src, "pdf", "link.txt"))
	l, err := skills.NewLoader("", skills.Source{Label: "user", Dir: src})
	if err != nil {
		f.Fatal(err)
	}
	fs := l.FS()
	for _, p := range []string{"/pdf/SKILL.md", "/pdf/../secret.txt", "/../secret.txt", "/pdf/link.txt", "pdf\\..\\..\\secret.txt", "/", "/secret.txt"} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		ctx := t.Context()
		if s, err := fs.Read(ctx, p); err == nil && strings.Contains(s, "SECRET") {
			t.Fatalf("Read(%q) reached a file outside the skill", p)
		}
		for e, err := range fs.Walk(ctx, p) {
			if err != nil {
				break
			}
			if s, err := fs.Read(ctx, e.Path); err == nil && strings.Contains(s, "SECRET") {
				t.Fatalf("Walk(%q) led to %q outside the skill", p, e.Path)
			}
		}
		if err := fs.Write(ctx, p, "x"); err == nil {
			t.Fatalf("Write(%q) succeeded", p)
		}
		if _, err := fs.Delete(ctx, p); err == nil {
			t.Fatalf("Delete(%q) succeeded", p)
		}
	})
}
