//go:build unix

package memory_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/memory"
	"github.com/deepagents-go/deepagents/tool"
	"github.com/deepagents-go/deepagents/vfs"
)

func symlink(t testing.TB, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// homeFixture is a project (with a .git directory) beside a directory
// outside it that holds a secret, and links from the project out to it.
func homeFixture(t testing.TB) (project, outside string) {
	t.Helper()
	base := t.TempDir()
	project, outside = filepath.Join(base, "project"), filepath.Join(base, "outside")
	write(t, filepath.Join(outside, "secret.md"), "OUTSIDE-SECRET")
	write(t, filepath.Join(project, ".git", "config"), "[remote]\nurl = https://user:GIT-TOKEN@example.com/r.git")
	write(t, filepath.Join(project, "docs", "style.md"), "Use tabs.\n@../more/deep.md")
	write(t, filepath.Join(project, "more", "deep.md"), "Deep fact.")
	symlink(t, outside, filepath.Join(project, "linkdir"))
	symlink(t, filepath.Join(outside, "secret.md"), filepath.Join(project, "leak.md"))
	symlink(t, "docs/style.md", filepath.Join(project, "style-link.md"))
	return project, outside
}

// An AGENTS.md of a project imports only files inside the project, once
// links are resolved: the shapes an attacker would write (a climb to
// /proc/self/environ, an absolute /etc/passwd, a link out of the project,
// a link to a file outside, the repository's .git/config) stay as they are
// in the text, each with a warning naming the import and why; imports
// inside, nested or through a link that stays inside, are expanded.
func TestImportsStayInTheProject(t *testing.T) {
	project, outside := homeFixture(t)
	climb := strings.Repeat("../", strings.Count(project, "/")+2) + "proc/self/environ"
	refused := map[string]string{
		"../../proc/self/environ": "lies outside " + project,
		climb:                     "/proc/self/environ is the system's view of processes and devices",
		"/etc/passwd":             "lies outside " + project,
		"/proc/self/environ":      "/proc/self/environ is the system's view of processes and devices",
		"linkdir/secret.md":       "a symbolic link leads to " + filepath.Join(outside, "secret.md") + ", outside " + project,
		"leak.md":                 "a symbolic link leads to " + filepath.Join(outside, "secret.md") + ", outside " + project,
		"../outside/secret.md":    "lies outside " + project,
		".git/config":             "it is inside .git",
	}
	var text strings.Builder
	text.WriteString("# Project\n@docs/style.md\n@style-link.md\n@" + filepath.Join(project, "more", "deep.md") + "\n")
	for target := range refused {
		text.WriteString("@" + target + "\n")
	}
	main := write(t, filepath.Join(project, "AGENTS.md"), text.String())
	files, warns, err := memory.Load([]memory.Source{{Path: main, Within: []string{project}}})
	if err != nil {
		t.Fatal(err)
	}
	got := files[0].Text
	for _, secret := range []string{"OUTSIDE-SECRET", "GIT-TOKEN", "root:", "PATH="} {
		if strings.Contains(got, secret) {
			t.Errorf("the memory text holds %q:\n%s", secret, got)
		}
	}
	if !strings.HasPrefix(got, "# Project\nUse tabs.\nDeep fact.\nUse tabs.\nDeep fact.\nDeep fact.\n") {
		t.Errorf("the imports inside the project were not expanded:\n%s", got)
	}
	all := strings.Join(warns, "\n")
	for target, why := range refused {
		if !strings.Contains(got, "\n@"+target+"\n") && !strings.HasSuffix(got, "\n@"+target) {
			t.Errorf("the import line of %s was changed:\n%s", target, got)
		}
		want := main + ": the import of " + target + " was not read: "
		found := false
		for _, w := range warns {
			found = found || strings.HasPrefix(w, want) && strings.Contains(w, why)
		}
		if !found {
			t.Errorf("no warning %q…%q in:\n%s", want, why, all)
		}
	}
	if len(warns) != len(refused) {
		t.Errorf("%d warnings for %d refused imports:\n%s", len(warns), len(refused), all)
	}
}

// Without Within, a memory file imports only from its own directory and
// below; the user's memory, given its folder and the project, imports
// from both.
func TestWithinDefaultsToTheFilesDirectory(t *testing.T) {
	project, _ := homeFixture(t)
	home := t.TempDir()
	mine := write(t, filepath.Join(home, ".deepagents", "AGENTS.md"), "@notes/tea.md\n@"+filepath.Join(project, "more", "deep.md"))
	write(t, filepath.Join(home, ".deepagents", "notes", "tea.md"), "Likes tea.")
	files, warns, err := memory.Load([]memory.Source{{Path: mine}})
	if err != nil {
		t.Fatal(err)
	}
	if files[0].Text != "Likes tea.\n@"+filepath.Join(project, "more", "deep.md") || len(warns) != 1 || !strings.Contains(warns[0], "lies outside "+filepath.Dir(mine)) {
		t.Errorf("text %q, warnings %q", files[0].Text, warns)
	}
	files, warns, err = memory.Load([]memory.Source{{Path: mine, Within: []string{filepath.Dir(mine), project}}})
	if err != nil || files[0].Text != "Likes tea.\nDeep fact." || len(warns) != 0 {
		t.Errorf("text %q, warnings %q, %v", files[0].Text, warns, err)
	}
	if want := []string{filepath.Join(home, ".deepagents", "notes", "tea.md"), filepath.Join(project, "more", "deep.md")}; !slices.Equal(files[0].Imports, want) {
		t.Errorf("imports %q, want %q", files[0].Imports, want)
	}
}

// A memory file that is itself a link out of its directories is not read:
// the block says so, a warning names it, and the rest of memory loads.
func TestSourceLinkingOutIsNotRead(t *testing.T) {
	project, outside := homeFixture(t)
	own := write(t, filepath.Join(project, ".deepagents", "AGENTS.md"), "Own notes.")
	files, warns, err := memory.Load([]memory.Source{
		{Path: filepath.Join(project, "leak.md"), Within: []string{project}},
		{Path: own, Within: []string{project}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if files[0].Refused == "" || files[0].Text != "" || files[1].Text != "Own notes." {
		t.Fatalf("files %+v", files)
	}
	if len(warns) != 1 || !strings.Contains(warns[0], filepath.Join(project, "leak.md")+" was not read: a symbolic link leads to "+filepath.Join(outside, "secret.md")) {
		t.Errorf("warnings %q", warns)
	}
	block := memory.Render(files, 0).Text
	if strings.Contains(block, "OUTSIDE-SECRET") || !strings.Contains(block, "(not read: a symbolic link leads to") {
		t.Errorf("block:\n%s", block)
	}
}

// The agent's file tools reach a mounted memory file only where its
// source allows: a memory file linking out of the project is neither read
// nor written through, and a memory directory linking out takes no file.
func TestMountedMemoryStaysInTheProject(t *testing.T) {
	project, outside := homeFixture(t)
	symlink(t, outside, filepath.Join(project, ".deepagents"))
	mw, err := memory.Middleware(memory.Config{Sources: []memory.Source{
		{Path: filepath.Join(project, "leak.md"), Show: "/memory/project/leak.md", Within: []string{project}},
		{Path: filepath.Join(project, ".deepagents", "AGENTS.md"), Show: "/memory/project/.deepagents/AGENTS.md", Within: []string{project}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	call := &agent.ToolCall{Call: llm.ToolCall{Name: "read_file"}, Env: &tool.Env{Files: vfs.NewMemory(nil)}}
	_, _ = mw.WrapTool(t.Context(), call, func(ctx context.Context, c *agent.ToolCall) (tool.Result, error) {
		if s, err := c.Env.Files.Read(ctx, "/memory/project/leak.md"); !errors.Is(err, vfs.ErrPermission) || strings.Contains(s, "SECRET") {
			t.Errorf("Read of a memory file linking out: %q, %v", s, err)
		}
		if _, err := c.Env.Files.Stat(ctx, "/memory/project/leak.md"); !errors.Is(err, vfs.ErrPermission) {
			t.Errorf("Stat of a memory file linking out: %v", err)
		}
		if err := c.Env.Files.Write(ctx, "/memory/project/.deepagents/AGENTS.md", "planted"); !errors.Is(err, vfs.ErrPermission) {
			t.Errorf("Write into a memory directory linking out: %v", err)
		}
		return tool.Result{}, nil
	})
	entries, err := os.ReadDir(outside)
	if err != nil || len(entries) != 1 {
		t.Errorf("the directory outside holds %d entries (%v); only secret.md expected", len(entries), err)
	}
	if data, _ := os.ReadFile(filepath.Join(outside, "secret.md")); string(data) != "OUTSIDE-SECRET" {
		t.Errorf("the secret outside became %q", data)
	}
}

// A link that makes a file import itself is a cycle, reported once; a
// loop of links is refused with a warning; neither stops the load.
func TestLinkCyclesAndLoops(t *testing.T) {
	dir := t.TempDir()
	main := write(t, filepath.Join(dir, "AGENTS.md"), "Top.\n@again.md\n@loop1.md")
	symlink(t, "AGENTS.md", filepath.Join(dir, "again.md"))
	symlink(t, "loop2.md", filepath.Join(dir, "loop1.md"))
	symlink(t, "loop1.md", filepath.Join(dir, "loop2.md"))
	files, warns, err := memory.Load([]memory.Source{{Path: main}})
	if err != nil {
		t.Fatal(err)
	}
	if files[0].Text != "Top.\n@again.md\n@loop1.md" || len(warns) != 2 ||
		!strings.Contains(warns[0], "the import of again.md was not expanded: it imports itself") ||
		!strings.Contains(warns[1], "the import of loop1.md was not read: its symbolic links cannot be followed") {
		t.Errorf("text %q, warnings %q", files[0].Text, warns)
	}
}

// Whatever a project's AGENTS.md imports ($PROJ and $OUT stand for the
// project's and the outside directory's paths), nothing outside the
// project, nothing in its .git and nothing of /proc reaches the memory
// text, and the load neither fails nor panics.
func FuzzImportStaysHome(f *testing.F) {
	for _, s := range []string{"docs/style.md", "../../proc/self/environ", "/etc/passwd", "linkdir/secret.md", "leak.md",
		"$OUT/secret.md", "$PROJ/../outside/secret.md", ".git/config", "$PROJ/.git/config", "style-link.md", "./.GIT/config",
		"/proc/self/environ", "docs/../../outside/secret.md", "$PROJ/linkdir/../secret.md"} {
		f.Add(s)
	}
	project, outside := homeFixture(f)
	f.Fuzz(func(t *testing.T, target string) {
		target = strings.ReplaceAll(strings.ReplaceAll(target, "$PROJ", project), "$OUT", outside)
		main := write(t, filepath.Join(project, "AGENTS.md"), "@"+target)
		files, _, err := memory.Load([]memory.Source{{Path: main, Within: []string{project}}})
		if err != nil {
			// A file inside the project that cannot be read (a
			// directory, say) fails the load with its path: never a
			// file outside.
			for _, secret := range []string{"OUTSIDE-SECRET", "GIT-TOKEN"} {
				if strings.Contains(err.Error(), secret) {
					t.Fatalf("the error shows %q: %v", secret, err)
				}
			}
			return
		}
		for _, secret := range []string{"OUTSIDE-SECRET", "GIT-TOKEN", "root:", "PATH="} {
			if strings.Contains(files[0].Text, secret) {
				t.Fatalf("@%s brought in %q: %q", target, secret, files[0].Text)
			}
		}
	})
}

// A directory in Exclude is never read, though inside Within: not by an
// import as written, nor through a link to it or to a file in it; and a
// memory file whose directory leads into it is not read either.
func TestExcludedDirectoriesAreNeverRead(t *testing.T) {
	base := t.TempDir()
	settings := filepath.Join(base, ".deepagents")
	write(t, filepath.Join(settings, "trusted.json"), "SECRET-TRUST")
	write(t, filepath.Join(base, "ok.md"), "FINE")
	symlink(t, settings, filepath.Join(base, "proj", "s"))
	symlink(t, filepath.Join(settings, "trusted.json"), filepath.Join(base, "proj", "t.md"))
	symlink(t, settings, filepath.Join(base, "linked"))
	write(t, filepath.Join(settings, "AGENTS.md"), "SETTINGS-MEMORY")
	main := write(t, filepath.Join(base, "proj", "AGENTS.md"), "@../ok.md\n@../.deepagents/trusted.json\n@s/trusted.json\n@t.md\n")
	files, warns, err := memory.Load([]memory.Source{
		{Path: main, Within: []string{base}, Exclude: []string{settings}},
		{Path: filepath.Join(base, "linked", "AGENTS.md"), Within: []string{base}, Exclude: []string{settings}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := files[0].Text; !strings.Contains(got, "FINE") || strings.Contains(got, "SECRET") {
		t.Errorf("text %q", got)
	}
	if files[1].Refused == "" || strings.Contains(files[1].Text, "SETTINGS") {
		t.Errorf("a memory file in the excluded directory through a link: %+v", files[1])
	}
	if n := strings.Count(strings.Join(warns, "\n"), "which this memory file may not read"); n != 4 {
		t.Errorf("%d refusals, want 4: %q", n, warns)
	}
	// Without Exclude the same imports are read: the test shows something.
	files, _, _ = memory.Load([]memory.Source{{Path: main, Within: []string{base}}})
	if !strings.Contains(files[0].Text, "SECRET-TRUST") {
		t.Errorf("control: %q", files[0].Text)
	}
}

// A mounted memory file whose directory leads into an excluded directory
// is not written there.
func TestExcludedDirectoriesAreNeverWritten(t *testing.T) {
	base := t.TempDir()
	settings := filepath.Join(base, ".deepagents")
	if err := os.MkdirAll(settings, 0o755); err != nil {
		t.Fatal(err)
	}
	symlink(t, settings, filepath.Join(base, "proj", ".deepagents"))
	m := scripted.New(scripted.Script{"parent": {Steps: []scripted.Step{
		{ToolCalls: []scripted.StepCall{call("write_file", `{"file_path":"/memory/AGENTS.md","content":"INJECTED"}`)}},
		{Content: "done"},
	}}}, scripted.Options{})
	disk := filepath.Join(base, "proj", ".deepagents", "AGENTS.md")
	for _, exclude := range [][]string{{settings}, nil} {
		a := newAgent(t, m, memory.Config{Sources: []memory.Source{{Path: disk, Show: "/memory/AGENTS.md", Within: []string{base}, Exclude: exclude}}})
		res, err := agent.Drain(a.Run(t.Context(), agent.Prompt("remember")), nil)
		if err != nil {
			t.Fatal(err)
		}
		var result llm.Message
		for _, msg := range res.State.Messages {
			if msg.Role == llm.RoleTool {
				result = msg
			}
		}
		_, err = os.Stat(filepath.Join(settings, "AGENTS.md"))
		if exclude != nil && (!result.IsError || err == nil) {
			t.Fatalf("the memory file was written into the excluded directory: %+v", result)
		}
		if exclude == nil && (result.IsError || err != nil) {
			t.Fatalf("control: without Exclude the write fails: %+v %v", result, err)
		}
	}
}
