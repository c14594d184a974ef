package fstools

import (
	"context"
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
	return mountedWith(t, fallback, nil)
}

// mountedWith is mounted with the skills' backend wrapped by wrap (nil:
// as it is).
func mountedWith(t *testing.T, fallback vfs.Backend, wrap func(vfs.Backend) vfs.Backend) vfs.Backend {
	t.Helper()
	var skills vfs.Backend = vfs.NewMemory(vfstest.Files(map[string]string{
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
	if wrap != nil {
		skills = wrap(skills)
	}
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
					// The skills on a backend that searches too: one
					// search of it, and the same answer.
					remote = &remoteFS{inner: &failFS{Memory: vfs.NewMemory(vfstest.Files(dirFiles()))}}
					var skills *remoteFS
					b := mountedWith(t, remote, func(b vfs.Backend) vfs.Backend {
						skills = &remoteFS{inner: b}
						return skills
					})
					got = call(t, tools[c.tool], vfs.Track(perm.Wrap(b, parsed)), c.args)
					if got.Content != want.Content || got.IsError != want.IsError {
						t.Errorf("with the skills searched in one call:\n%s (error %v)\nfile by file:\n%s (error %v)", got.Content, got.IsError, want.Content, want.IsError)
					}
					if n, m := remote.searches.Load()+skills.searches.Load(), remote.calls.Load()+skills.calls.Load(); n != 2 || m != 0 {
						t.Errorf("%d searches and %d other calls of the directory and the skills, want 2 and nothing else", n, m)
					}
				})
			}
		}
	}
}

// FuzzSearchAcrossMounts spreads files, from the fuzzer's bytes, over a
// directory and the mounts below its root (some of the directory's files
// where a mount hides them), and checks a grep or glob of the root in one
// search of the directory (and one of the skills, when they can search)
// answers exactly as file by file, at any caps.
func FuzzSearchAcrossMounts(f *testing.F) {
	f.Add([]byte("\x00\x11\x22\x33\x44\x55\x66\x77\x88\x99\xaa\xbb\xcc\xdd\xee\xff"), uint8(3), uint16(300), uint8(1))
	f.Add([]byte("skills and memory"), uint8(200), uint16(0), uint8(8))
	f.Add([]byte{7, 14, 21, 28, 35, 42, 49, 56, 63, 70}, uint8(1), uint16(40), uint8(4))
	f.Add([]byte("\x01\x11\x21\x31\x41\x51\x02\x12\x22"), uint8(4), uint16(401), uint8(8|16|32))
	dirs := []string{"/", "/skills/", "/skills/a/", "/memory/", "/a/", "/skills-x/", "/memoryz/", "/skills0/", "/m/"}
	names := []string{"f", "g.md", ".h", "SKILL.md", "z.txt"}
	f.Fuzz(func(t *testing.T, data []byte, limit uint8, budget uint16, mode uint8) {
		if len(data) > 200 {
			return
		}
		dir, skills, memory := map[string]string{}, map[string]string{}, map[string]string{}
		for i, b := range data {
			p := dirs[int(b)%len(dirs)] + names[int(b>>4)%len(names)]
			body := strings.Repeat(fmt.Sprintf("line %d has the needle\n", i), int(b)%4) + "tail\n"
			if b%7 == 0 {
				body = "\x00" + body
			}
			switch {
			case i%3 == 1 && strings.HasPrefix(p, "/skills/"):
				skills[strings.TrimPrefix(p, "/skills")] = body
			case i%3 == 2 && strings.HasPrefix(p, "/memory/"):
				memory[strings.TrimPrefix(p, "/memory")] = body
			default:
				dir[p] = body
			}
		}
		var skillsFS *remoteFS
		// Rules, picked by mode: outside the composites on its paths, and
		// inside the skills' mount on the mount's own.
		outerRules := perm.Rules{{Ops: perm.Read, Glob: []string{"/skills/a/**", "/m/**", "/memory/*.md", "/**/.h"}[int(limit)%4]}}
		innerRules := perm.Rules{{Ops: perm.Read, Glob: []string{"/a/**", "/SKILL.md", "/**/g.md", "/f"}[int(budget)%4]}}
		build := func(fallback vfs.Backend) vfs.Backend {
			var sk vfs.Backend = vfs.NewMemory(vfstest.Files(skills))
			if _, remote := fallback.(*remoteFS); remote && mode&8 != 0 {
				skillsFS = &remoteFS{inner: sk}
				sk = skillsFS // the skills search in one call too
			}
			if mode&16 != 0 {
				sk = perm.Wrap(sk, innerRules)
			}
			inner, err := vfs.NewComposite(fallback, vfs.Route{Prefix: "/skills/", Backend: sk})
			if err != nil {
				t.Fatal(err)
			}
			outer, err := vfs.NewComposite(inner, vfs.Route{Prefix: "/memory/", Backend: vfs.NewMemory(vfstest.Files(memory))})
			if err != nil {
				t.Fatal(err)
			}
			if mode&32 != 0 {
				return vfs.Track(perm.Wrap(outer, outerRules))
			}
			return vfs.Track(outer)
		}
		modes := []string{"files_with_matches", "content", "count"}
		args := fmt.Sprintf(`{"pattern":"needle","output_mode":%q,"max_count":%d}`, modes[int(mode)%3], int(limit)+1)
		name := "grep"
		if mode%5 == 4 {
			name, args = "glob", `{"pattern":"**/*"}`
		}
		tl := byName(New(Options{GrepMaxFileBytes: 1024, MaxOutputChars: int(budget)}))[name]
		want := call(t, tl, build(&failFS{Memory: vfs.NewMemory(vfstest.Files(dir))}), args)
		remote := &remoteFS{inner: vfs.NewMemory(vfstest.Files(dir))}
		got := call(t, tl, build(remote), args)
		if got.Content != want.Content || got.IsError != want.IsError {
			t.Fatalf("%s %s in one call:\n%s\nfile by file:\n%s", name, args, got.Content, want.Content)
		}
		if remote.calls.Load() != 0 || skillsFS != nil && skillsFS.calls.Load() != 0 {
			t.Fatalf("%d calls of the directory besides its search", remote.calls.Load())
		}
	})
}

// olderFS searches in one call as a worker from before parts did: it
// knows nothing of Part, Exclude and Mount.
type olderFS struct{ *remoteFS }

func (o olderFS) Search(ctx context.Context, req vfs.SearchRequest) (vfs.SearchResult, bool, error) {
	o.searches.Add(1)
	req.Part, req.Exclude, req.Mount = false, nil, ""
	res, err := Search(ctx, o.inner, req)
	return res, true, err
}

// An answer to a part from a backend that does not search parts (an
// older worker) is not used: the tool searches file by file, and answers
// as in process.
func TestAPartAnsweredByAnOlderSearcherIsNotUsed(t *testing.T) {
	tools := byName(New(Options{GrepMaxFileBytes: 1024}))
	args := `{"pattern":"needle","output_mode":"content"}`
	want := call(t, tools["grep"], mounted(t, &failFS{Memory: vfs.NewMemory(vfstest.Files(dirFiles()))}), args)
	older := olderFS{&remoteFS{inner: &failFS{Memory: vfs.NewMemory(vfstest.Files(dirFiles()))}}}
	got := call(t, tools["grep"], mounted(t, older), args)
	if got.Content != want.Content {
		t.Errorf("with an older searcher:\n%s\nin process:\n%s", got.Content, want.Content)
	}
	if older.searches.Load() != 1 || older.calls.Load() == 0 {
		t.Errorf("%d searches and %d other calls, want the one search and then file by file", older.searches.Load(), older.calls.Load())
	}
}

// The rules of a wrapper inside a mount that searches in one call are on
// the mount's own paths, and those outside the composite on its paths:
// each applies where it would file by file.
func TestRulesInsideASearchingMountApplyToItsPaths(t *testing.T) {
	inner, err := perm.ParseRules([]string{"deny read /zed/**", "deny read /web/ref/**"})
	if err != nil {
		t.Fatal(err)
	}
	outer, err := perm.ParseRules([]string{"deny read /skills/a-first/**", "deny read /secret/**"})
	if err != nil {
		t.Fatal(err)
	}
	tools := byName(New(Options{GrepMaxFileBytes: 1024}))
	for _, c := range []struct{ tool, args string }{
		{"grep", `{"pattern":"needle"}`},
		{"grep", `{"pattern":"needle","output_mode":"content","max_count":50}`},
		{"glob", `{"pattern":"**/*.md"}`},
		{"glob", `{"pattern":"skills/**"}`},
	} {
		local := mountedWith(t, &failFS{Memory: vfs.NewMemory(vfstest.Files(dirFiles()))}, func(b vfs.Backend) vfs.Backend { return perm.Wrap(b, inner) })
		want := call(t, tools[c.tool], vfs.Track(perm.Wrap(local, outer)), c.args)
		var skills *remoteFS
		remote := mountedWith(t, &remoteFS{inner: &failFS{Memory: vfs.NewMemory(vfstest.Files(dirFiles()))}}, func(b vfs.Backend) vfs.Backend {
			skills = &remoteFS{inner: b}
			return perm.Wrap(skills, inner)
		})
		got := call(t, tools[c.tool], vfs.Track(perm.Wrap(remote, outer)), c.args)
		if got.Content != want.Content {
			t.Errorf("%s %s with the skills searched in one call:\n%s\nfile by file:\n%s", c.tool, c.args, got.Content, want.Content)
		}
		if skills.searches.Load() != 1 || skills.calls.Load() != 0 {
			t.Errorf("%d searches and %d other calls of the skills", skills.searches.Load(), skills.calls.Load())
		}
		for _, hidden := range []string{"/skills/zed/", "/skills/web/ref/", "/skills/a-first/"} {
			if strings.Contains(got.Content, hidden) {
				t.Errorf("%s shows, which a rule denies: %s", hidden, got.Content)
			}
		}
	}
}

// A mount inside another composite's mount hides only its own subtree of
// the mount around it.
func TestAMountInsideAMountHidesOnlyItsSubtree(t *testing.T) {
	build := func(fallback vfs.Backend) vfs.Backend {
		inner, err := vfs.NewComposite(fallback, vfs.Route{Prefix: "/skills/", Backend: vfs.NewMemory(vfstest.Files(map[string]string{
			"/x/a.md": "needle hidden by the mount at /skills/x/", "/y/b.md": "needle b", "/x.md": "needle x.md",
		}))})
		if err != nil {
			t.Fatal(err)
		}
		outer, err := vfs.NewComposite(inner, vfs.Route{Prefix: "/skills/x/", Backend: vfs.NewMemory(vfstest.Files(map[string]string{"/c.md": "needle c"}))})
		if err != nil {
			t.Fatal(err)
		}
		return outer
	}
	files := map[string]string{"/a.md": "needle a", "/skills/z.md": "needle under a mount point"}
	grep := byName(New(Options{}))["grep"]
	want := call(t, grep, build(&failFS{Memory: vfs.NewMemory(vfstest.Files(files))}), `{"pattern":"needle"}`)
	remote := &remoteFS{inner: vfs.NewMemory(vfstest.Files(files))}
	got := call(t, grep, build(remote), `{"pattern":"needle"}`)
	if got.Content != want.Content || want.Content != "/a.md\n/skills/x.md\n/skills/x/c.md\n/skills/y/b.md" {
		t.Errorf("in one call:\n%s\nfile by file:\n%s", got.Content, want.Content)
	}
	if remote.searches.Load() != 1 || remote.calls.Load() != 0 {
		t.Errorf("%d searches and %d other calls", remote.searches.Load(), remote.calls.Load())
	}
}
