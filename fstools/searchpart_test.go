package fstools

import (
	"fmt"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/vfs"
	"github.com/deepagents-go/deepagents/vfs/perm"
	"github.com/deepagents-go/deepagents/vfs/vfstest"
)

// mounted builds what a worker's tools see: a directory (fallback) with
// skills mounted at /skills/ and memory at /memory/, one composite over
// the other, as the middleware mount them.
func mounted(t *testing.T, fallback vfs.Backend) vfs.Backend {
	t.Helper()
	skills := vfs.NewMemory(vfstest.Files(map[string]string{
		"/web/SKILL.md":         "---\nname: web\n---\nneedle in a skill\n",
		"/web/ref/notes.md":     strings.Repeat("needle note\n", 30),
		"/web/bin.dat":          "needle\x00",
		"/a-first/SKILL.md":     "needle first\n",
		"/zed/SKILL.md":         "no match\n",
		"/zed/.hidden/x.md":     "needle hidden\n",
		"/nested/deep/file.txt": "needle deep\n",
	}))
	memory := vfs.NewMemory(vfstest.Files(map[string]string{
		"/AGENTS.md": "needle memory\nneedle twice\n",
		"/0.dat":     "\x00needle",
	}))
	inner, err := vfs.NewComposite(fallback, vfs.Route{Prefix: "/skills/", Backend: skills, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	outer, err := vfs.NewComposite(inner, vfs.Route{Prefix: "/memory/", Backend: memory, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	return outer
}

// dirFiles are the directory's files, some next to the mounts in path
// order, some that a mount point hides.
func dirFiles() map[string]string {
	files := map[string]string{
		"/README.md":           "needle in the readme\nno\nneedle again",
		"/skills-old/a.md":     "needle old",
		"/skills0.txt":         "needle zero",
		"/skills/hidden.md":    "needle under the mount point",
		"/memory":              "needle a file where memory is mounted",
		"/memorya/x.txt":       "needle memorya",
		"/src/a.go":            "package a\n// needle\n",
		"/src/sub/c.go":        "needle needle\nneedle\n",
		"/docs/bin.dat":        "needle\x00",
		"/docs/big.log":        strings.Repeat("needle\n", 400),
		"/docs/private.md":     "needle private",
		"/.env":                "NEEDLE=needle",
		"/zzz/last.md":         "needle last",
		"/a.txt":               "needle a",
		"/secret/key.txt":      "needle: hunter2",
		"/src/sub/deep/e.md":   "e needle",
		"/memory-notes/n.md":   "needle notes",
		"/skills.md":           "needle skills.md",
		"/skillsZ/q.md":        "needle q",
		"/zz/bin2.dat":         "\x00needle",
		"/zz/bin3.dat":         "\x00needle",
		"/zz/bin4.dat":         "\x00needle",
		"/zz/bin5.dat":         "\x00needle",
		"/zz/bin6.dat":         "\x00needle",
		"/zz/bin7.dat":         "\x00needle",
		"/zz/bin8.dat":         "\x00needle",
		"/docs/more/notes.txt": "needle more",
	}
	for i := range 40 {
		files[fmt.Sprintf("/n/f%02d.md", i)] = fmt.Sprintf("needle %d with a longer line of text to fill the budget\n", i)
	}
	return files
}

// A search over a directory with mounts below it is one search of the
// directory plus the mounts searched in process, and answers exactly as
// the same search done file by file over the whole composite, in every
// output mode and at every cap, under rules or none.
func TestSearchAcrossMountsAnswersAsFileByFile(t *testing.T) {
	rules := []string{"deny read /secret/**", "deny read /docs/private.md", "deny read /skills/zed/**"}
	var cases []struct{ tool, args string }
	for _, path := range []string{"", `,"path":"/"`} {
		for _, mode := range []string{"files_with_matches", "content", "count"} {
			for _, max := range []string{"", `,"max_count":1`, `,"max_count":5`, `,"max_count":12`, `,"max_count":60`} {
				cases = append(cases, struct{ tool, args string }{"grep", `{"pattern":"needle","output_mode":"` + mode + `"` + max + path + `}`})
			}
		}
	}
	for _, g := range []string{"*.md", "**/*.md", "skills/**", "memory/*", "*", "{.env,*.dat}", "**/SKILL.md"} {
		cases = append(cases, struct{ tool, args string }{"grep", `{"pattern":"needle","output_mode":"content","glob":"` + g + `"}`})
		cases = append(cases, struct{ tool, args string }{"glob", `{"pattern":"` + g + `"}`})
	}
	cases = append(cases,
		struct{ tool, args string }{"grep", `{"pattern":"no such text"}`},
		struct{ tool, args string }{"glob", `{"pattern":"nothing*"}`},
	)
	for _, budget := range []int{0, 600, 1100, 1700, 2500} {
		tools := byName(New(Options{GrepMaxFileBytes: 1024, MaxOutputChars: budget}))
		for _, rs := range [][]string{nil, rules} {
			for _, c := range cases {
				t.Run(fmt.Sprintf("%d %v %s %s", budget, rs != nil, c.tool, c.args), func(t *testing.T) {
					parsed, err := perm.ParseRules(rs)
					if err != nil {
						t.Fatal(err)
					}
					local := &failFS{Memory: vfs.NewMemory(vfstest.Files(dirFiles()))}
					want := call(t, tools[c.tool], vfs.Track(perm.Wrap(mounted(t, local), parsed)), c.args)
					remote := &remoteFS{inner: &failFS{Memory: vfs.NewMemory(vfstest.Files(dirFiles()))}}
					got := call(t, tools[c.tool], vfs.Track(perm.Wrap(mounted(t, remote), parsed)), c.args)
					if got.Content != want.Content || got.IsError != want.IsError {
						t.Errorf("in one call:\n%s (error %v)\nfile by file:\n%s (error %v)", got.Content, got.IsError, want.Content, want.IsError)
					}
					if n, m := remote.searches.Load(), remote.calls.Load(); n != 1 || m != 0 {
						t.Errorf("%d searches and %d other calls of the directory, want 1 and nothing else", n, m)
					}
				})
			}
		}
	}
}
