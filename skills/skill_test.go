package skills_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/skills"
)

func TestParseFile(t *testing.T) {
	cases := []struct {
		name, src string
		want      skills.Header
		err       string
	}{
		{"minimal", "---\nname: pdf\ndescription: Fill PDF forms.\n---\n# PDF\nbody\n",
			skills.Header{Name: "pdf", Description: "Fill PDF forms.", Body: "# PDF\nbody\n"}, ""},
		{"all fields, tools as a string", "---\nname: csv-tools\ndescription: >\n  Clean and join\n  CSV files.\nlicense: MIT\ncompatibility: needs python3\nallowed-tools: read_file grep\nmetadata:\n  author: ann\n  version: \"1.0\"\nextra: ignored\n---\n",
			skills.Header{Name: "csv-tools", Description: "Clean and join CSV files.", License: "MIT", Compatibility: "needs python3",
				AllowedTools: []string{"read_file", "grep"}, Metadata: map[string]string{"author": "ann", "version": "1.0"}}, ""},
		{"tools as a list", "---\nname: a\ndescription: d\nallowed-tools:\n  - read_file\n  - ls\n---\n",
			skills.Header{Name: "a", Description: "d", AllowedTools: []string{"read_file", "ls"}}, ""},
		{"CRLF and BOM", "\ufeff---\r\nname: a\r\ndescription: d\r\n---\r\nx\r\n", skills.Header{Name: "a", Description: "d", Body: "x\n"}, ""},
		{"empty front matter", "---\n---\n", skills.Header{}, ""},
		{"no fence", "name: a\n", skills.Header{}, `no front matter: the file must start with a line "---"`},
		{"unclosed", "---\nname: a\n", skills.Header{}, `the front matter is not closed by a line "---"`},
		{"not a mapping", "---\n- a\n---\n", skills.Header{}, "the front matter must be a mapping of fields (name: ..., description: ...)"},
		{"bad yaml", "---\nname: [a\n---\n", skills.Header{}, "the front matter is not valid YAML"},
		{"name a list", "---\nname: [a]\ndescription: d\n---\n", skills.Header{}, "name must be text, not a list or a mapping"},
		{"metadata a list", "---\nname: a\ndescription: d\nmetadata: [1]\n---\n", skills.Header{}, "metadata must be a mapping of keys to text values"},
		{"tools a mapping", "---\nname: a\ndescription: d\nallowed-tools: {a: b}\n---\n", skills.Header{}, "allowed-tools must be tool names separated by spaces, or a list of them"},
		{"not UTF-8", "---\nname: \xff\n---\n", skills.Header{}, "the file is not valid UTF-8 text"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, err := skills.ParseFile([]byte(c.src))
			if c.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), c.err) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(h, c.want) {
				t.Fatalf("got %+v\nwant %+v", h, c.want)
			}
		})
	}
}

func TestBuild(t *testing.T) {
	long := strings.Repeat("d", 1100)
	cases := []struct {
		name   string
		h      skills.Header
		folder string
		ok     bool
		desc   string
		warns  []string
	}{
		{"valid", skills.Header{Name: "pdf", Description: "Fill forms."}, "pdf", true, "Fill forms.", nil},
		{"no name", skills.Header{Description: "x"}, "pdf", false, "", []string{"it has no name in its front matter, so it was not loaded"}},
		{"no description", skills.Header{Name: "pdf"}, "pdf", false, "", []string{`skill "pdf" has no description in its front matter, so it was not loaded`}},
		{"upper case", skills.Header{Name: "PDF", Description: "x"}, "PDF", true, "x", []string{`skill "PDF": the name may hold only lowercase letters, digits and hyphens, not 'P'; it is listed anyway`}},
		{"folder differs", skills.Header{Name: "pdf", Description: "x"}, "pdf-old", true, "x", []string{`skill "pdf": the name differs from its folder's name "pdf-old"; it is listed anyway`}},
		{"long name", skills.Header{Name: strings.Repeat("a", 65), Description: "x"}, strings.Repeat("a", 65), true, "x", []string{`skill "` + strings.Repeat("a", 65) + `": the name is 65 characters long; at most 64 are allowed; it is listed anyway`}},
		{"double hyphen", skills.Header{Name: "a--b", Description: "x"}, "a--b", true, "x", []string{`skill "a--b": the name must not contain two hyphens in a row; it is listed anyway`}},
		{"long description", skills.Header{Name: "pdf", Description: long}, "pdf", true, long[:1024], []string{`skill "pdf": its description is 1100 characters long and was cut to 1024`}},
		{"line breaks folded", skills.Header{Name: "pdf", Description: "one\n\n- two"}, "pdf", true, "one - two", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, warns, ok := skills.Build(c.h, c.folder)
			if ok != c.ok || s.Description != c.desc || !reflect.DeepEqual(warns, c.warns) {
				t.Fatalf("ok %v desc %q warns %q", ok, s.Description, warns)
			}
		})
	}
}

// writeSkill creates dir/name/SKILL.md with the given front matter body.
func writeSkill(t *testing.T, dir, name, front string) string {
	t.Helper()
	d := filepath.Join(dir, name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(d, "SKILL.md")
	if err := os.WriteFile(p, []byte("---\n"+front+"\n---\n# "+name+"\nSteps for "+name+".\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadLaterSourceWinsAndProblemsAreWarnings(t *testing.T) {
	user, proj := t.TempDir(), t.TempDir()
	writeSkill(t, user, "pdf", "name: pdf\ndescription: user pdf")
	writeSkill(t, user, "csv", "name: csv\ndescription: user csv")
	writeSkill(t, proj, "pdf", "name: pdf\ndescription: project pdf")
	writeSkill(t, proj, "nodesc", "name: nodesc")
	bad := writeSkill(t, proj, "broken", "name: [")
	if err := os.MkdirAll(filepath.Join(proj, "empty"), 0o755); err != nil { // no SKILL.md: not a skill
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proj, "README.md"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	set := skills.Load("", skills.Source{Label: "user", Dir: user}, skills.Source{Label: "project", Dir: proj},
		skills.Source{Label: "missing", Dir: filepath.Join(proj, "nope")})
	var got []string
	for _, s := range set.Skills {
		got = append(got, s.Name+"="+s.Description+"@"+s.Source+" "+s.Path)
	}
	want := []string{"csv=user csv@user /skills/csv/SKILL.md", "pdf=project pdf@project /skills/pdf/SKILL.md"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("skills %q", got)
	}
	if len(set.Warnings) != 2 || !strings.HasPrefix(set.Warnings[0], bad+": the front matter is not valid YAML") ||
		set.Warnings[1] != filepath.Join(proj, "nodesc", "SKILL.md")+`: skill "nodesc" has no description in its front matter, so it was not loaded` {
		t.Fatalf("warnings %q", set.Warnings)
	}
}

func TestLoadRefusesAnOversizedSkillFile(t *testing.T) {
	dir := t.TempDir()
	p := writeSkill(t, dir, "big", "name: big\ndescription: d")
	if err := os.Truncate(p, 10<<20+1); err != nil {
		t.Fatal(err)
	}
	set := skills.Load("", skills.Source{Label: "user", Dir: dir})
	if len(set.Skills) != 0 || len(set.Warnings) != 1 || !strings.Contains(set.Warnings[0], "the limit is 10 MiB") {
		t.Fatalf("skills %v warnings %q", set.Skills, set.Warnings)
	}
}

func TestLoaderRereadsOnlyOnChange(t *testing.T) {
	dir := t.TempDir()
	writeSkill(t, dir, "a", "name: a\ndescription: first")
	l, err := skills.NewLoader("/sk/", skills.Source{Label: "user", Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	one := l.Current()
	if two := l.Current(); two != one {
		t.Fatal("an unchanged source was read again")
	}
	if one.Skills[0].Path != "/sk/a/SKILL.md" {
		t.Fatalf("path %q", one.Skills[0].Path)
	}
	writeSkill(t, dir, "a", "name: a\ndescription: second, longer")
	if s := l.Current(); s == one || s.Skills[0].Description != "second, longer" {
		t.Fatalf("a changed skill was not read again: %+v", s.Skills)
	}
	writeSkill(t, dir, "b", "name: b\ndescription: new")
	if s := l.Current(); len(s.Skills) != 2 {
		t.Fatalf("a new skill was not seen: %+v", s.Skills)
	}
}

// An edit of SKILL.md that keeps its size (one word for another of the
// same length) is seen through the file's modification time.
func TestLoaderSeesASameSizeEdit(t *testing.T) {
	dir := t.TempDir()
	p := writeSkill(t, dir, "a", "name: a\ndescription: alpha")
	l, err := skills.NewLoader("", skills.Source{Label: "user", Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if s := l.Current(); s.Skills[0].Description != "alpha" {
		t.Fatalf("%+v", s.Skills)
	}
	writeSkill(t, dir, "a", "name: a\ndescription: omega")
	// Set the time explicitly: on a coarse clock the rewrite could fall
	// in the same tick as the first write.
	if err := os.Chtimes(p, before.ModTime().Add(2*time.Second), before.ModTime().Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if after.Size() != before.Size() || after.Mode() != before.Mode() {
		t.Fatalf("the edit changed more than the contents: %d %v → %d %v", before.Size(), before.Mode(), after.Size(), after.Mode())
	}
	if s := l.Current(); s.Skills[0].Description != "omega" {
		t.Fatalf("a same-size edit was not read again: %+v", s.Skills)
	}
}

// A skill folder replaced on disk is served afresh once the loader has
// read the sources again.
func TestFSFollowsAReplacedFolder(t *testing.T) {
	dir := t.TempDir()
	writeSkill(t, dir, "a", "name: a\ndescription: first")
	l, err := skills.NewLoader("", skills.Source{Label: "user", Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	l.Current()
	fs := l.FS()
	if s, err := fs.Read(t.Context(), "/a/SKILL.md"); err != nil || !strings.Contains(s, "first") {
		t.Fatalf("%q %v", s, err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "a")); err != nil {
		t.Fatal(err)
	}
	writeSkill(t, dir, "a", "name: a\ndescription: second one")
	l.Current()
	if s, err := fs.Read(t.Context(), "/a/SKILL.md"); err != nil || !strings.Contains(s, "second one") {
		t.Fatalf("%q %v", s, err)
	}
	if _, err := fs.Read(t.Context(), "/b/SKILL.md"); err == nil {
		t.Fatal("a skill that does not exist was read")
	}
}
