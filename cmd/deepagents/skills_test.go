package main

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/memory"
	ot "github.com/deepagents-go/deepagents/providers/openai/openaitest"
)

func skillFile(t *testing.T, dir, name, desc string) {
	t.Helper()
	writeFileAt(t, filepath.Join(dir, name, "SKILL.md"), "---\nname: "+name+"\ndescription: "+desc+"\n---\nSteps of "+desc+"\n")
}

// `run` lists the user's and the project's skills (the project's winning
// by name), reads one at its listed path, and shows the AGENTS.md files
// from the repository root down to the working directory after the user's.
func TestRunListsSkillsAndMemory(t *testing.T) {
	srv := ot.NewServer(t, func(r *ot.Request) ot.Reply {
		if !r.HasTool("task") {
			return ot.Text("child")
		}
		if r.Round() == 0 {
			return ot.Tools(ot.Call{ID: "c1", Name: "read_file", Args: `{"file_path":"/skills/pdf/SKILL.md"}`})
		}
		return ot.Text("done")
	})
	project, home := runEnv(t, srv)
	if err := os.Mkdir(filepath.Join(project, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(project, "svc", "api")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(work)
	skillFile(t, filepath.Join(home, ".deepagents", "skills"), "pdf", "user pdf")
	skillFile(t, filepath.Join(home, ".deepagents", "skills"), "csv", "user csv")
	skillFile(t, filepath.Join(work, ".deepagents", "skills"), "pdf", "project pdf")
	skillFile(t, filepath.Join(home, ".claude", "skills"), "xls", "claude xls")
	writeFileAt(t, filepath.Join(home, ".deepagents", "AGENTS.md"), "User: likes tables.")
	writeFileAt(t, filepath.Join(project, "AGENTS.md"), "Repo: use make.")
	writeFileAt(t, filepath.Join(work, "AGENTS.md"), "API: JSON only.")

	code, out, errs := runCLI(t, "run", "-p", "go", "--model", "openai:gpt-test")
	if code != 0 || strings.TrimSpace(out) != "done" {
		t.Fatalf("exit %d out %q: %s", code, out, errs)
	}
	reqs := srv.Requests()
	sys := reqs[0].System()
	for _, want := range []string{
		"- csv: user csv — read /skills/csv/SKILL.md",
		"- pdf: project pdf — read /skills/pdf/SKILL.md",
		"## /memory/user/AGENTS.md\n\nUser: likes tables.\n\n## /memory/project/AGENTS.md\n\nRepo: use make.\n\n## /memory/project/svc/api/AGENTS.md\n\nAPI: JSON only.\n\n## /memory/project/svc/api/.deepagents/AGENTS.md\n\n(this file does not exist yet)",
	} {
		if !strings.Contains(sys, want) {
			t.Fatalf("system lacks %q:\n%s", want, sys)
		}
	}
	if strings.Contains(sys, "xls") || strings.Contains(sys, "user pdf") {
		t.Fatalf("a skill that should not be listed is:\n%s", sys)
	}
	if res, ok := reqs[1].ToolResult("c1"); !ok || !strings.Contains(res.Text(), "Steps of project pdf") {
		t.Fatalf("read_file of the skill: %q", res.Text())
	}

	// --claude-skills adds ~/.claude/skills; --no-skills and --no-memory
	// turn each off.
	if code, _, errs := runCLI(t, "run", "-p", "go", "--model", "openai:gpt-test", "--claude-skills"); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if sys := srv.Requests()[2].System(); !strings.Contains(sys, "- xls: claude xls") {
		t.Fatalf("--claude-skills: %s", sys)
	}
	if code, _, errs := runCLI(t, "run", "-p", "go", "--model", "openai:gpt-test", "--no-skills", "--no-memory"); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if sys := srv.Requests()[4].System(); strings.Contains(sys, "## Skills") || strings.Contains(sys, "agent_memory") {
		t.Fatalf("--no-skills --no-memory: %q", sys)
	}
}

// With --root, a memory file inside the root is edited at its own path and
// the next model call sees the change, once the person approved the edit
// (or, with [protect] allow = ["memory"] in the user's config, without
// asking); a broken SKILL.md is a warning on stderr, not a failure.
func TestRunMemoryEditUnderRoot(t *testing.T) {
	srv := ot.NewServer(t, func(r *ot.Request) ot.Reply {
		if !r.HasTool("task") {
			return ot.Text("child")
		}
		if r.Round() == 0 {
			old, now := "alpha", "beta"
			if strings.Contains(r.FirstUser(), "gamma") {
				old, now = "beta", "gamma"
			}
			return ot.Tools(ot.Call{ID: "e1", Name: "edit_file", Args: `{"file_path":"/AGENTS.md","old_string":"` + old + `","new_string":"` + now + `"}`})
		}
		return ot.Text("saved")
	})
	project, home := runEnv(t, srv)
	writeFileAt(t, filepath.Join(project, "AGENTS.md"), "Codename alpha.")
	writeFileAt(t, filepath.Join(home, ".deepagents", "skills", "bad", "SKILL.md"), "---\nname: bad\n---\n")
	code, out, errs := runCLI(t, "run", "-p", "remember beta", "--model", "openai:gpt-test", "--root", project, "--output", "json")
	if code != exitInterrupted {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(errs, `skill "bad" has no description`) {
		t.Fatalf("no warning on stderr:\n%s", errs)
	}
	sum := decode(t, out)
	if len(sum.Interrupts) != 1 || !strings.Contains(sum.Interrupts[0].Reason, "a memory file (AGENTS.md)") {
		t.Fatalf("interrupts %+v", sum.Interrupts)
	}
	if data, _ := os.ReadFile(filepath.Join(project, "AGENTS.md")); string(data) != "Codename alpha." {
		t.Fatalf("the edit ran before it was approved: %q", data)
	}
	code, out, errs = runCLI(t, "resume", "--thread", sum.ThreadID, "--approve", "e1", "--output", "json")
	if code != 0 {
		t.Fatalf("resume: exit %d: %s", code, errs)
	}
	reqs := srv.Requests()
	if !strings.Contains(reqs[0].System(), "## /AGENTS.md\n\nCodename alpha.") || !strings.Contains(reqs[1].System(), "## /AGENTS.md\n\nCodename beta.") {
		t.Fatalf("systems:\n%s\n---\n%s", reqs[0].System(), reqs[1].System())
	}
	if data, _ := os.ReadFile(filepath.Join(project, "AGENTS.md")); string(data) != "Codename beta." {
		t.Fatalf("file %q", data)
	}
	if done := decode(t, out); !slices.Contains(done.FilesChanged, "/AGENTS.md") {
		t.Errorf("files changed %v: the approved edit is missing", done.FilesChanged)
	}

	// The user lets memory files change without asking.
	writeFileAt(t, filepath.Join(home, ".deepagents", "config.toml"), "[protect]\nallow = [\"memory\"]\n")
	if code, _, errs := runCLI(t, "run", "-p", "remember gamma", "--model", "openai:gpt-test", "--root", project); code != 0 {
		t.Fatalf("allowed: exit %d: %s", code, errs)
	}
	if data, _ := os.ReadFile(filepath.Join(project, "AGENTS.md")); string(data) != "Codename gamma." {
		t.Fatalf("file %q", data)
	}
}

func TestMemorySources(t *testing.T) {
	home, top := t.TempDir(), t.TempDir()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Mkdir(filepath.Join(top, ".git"), 0o755))
	cwd := filepath.Join(top, "a", "b")
	must(os.MkdirAll(cwd, 0o755))
	writeFileAt(t, filepath.Join(top, "AGENTS.md"), "x")
	writeFileAt(t, filepath.Join(cwd, "AGENTS.md"), "y")
	must(os.Mkdir(filepath.Join(top, "a", "AGENTS.md"), 0o755)) // a directory: not a memory file

	got := memorySources(cwd, home, "")
	// The project's files import from the project only; the user's from
	// their ~/.deepagents too.
	// Neither ever reads the user's settings.
	project, user := []string{top}, []string{filepath.Join(home, ".deepagents"), top}
	settings := []string{filepath.Join(home, ".deepagents")}
	want := []memory.Source{
		{Path: filepath.Join(home, ".deepagents", "AGENTS.md"), Show: "/memory/user/AGENTS.md", Within: user},
		{Path: filepath.Join(top, "AGENTS.md"), Show: "/memory/project/AGENTS.md", Within: project, Exclude: settings},
		{Path: filepath.Join(cwd, "AGENTS.md"), Show: "/memory/project/a/b/AGENTS.md", Within: project, Exclude: settings},
		{Path: filepath.Join(cwd, ".deepagents", "AGENTS.md"), Show: "/memory/project/a/b/.deepagents/AGENTS.md", Within: project, Exclude: settings},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("sources\n%+v\nwant\n%+v", got, want)
	}
	// Under --root (the a directory), the files inside it are reached at
	// their own paths; the ones outside stay mounted.
	got = memorySources(cwd, home, filepath.Join(top, "a"))
	want[2] = memory.Source{Path: filepath.Join(cwd, "AGENTS.md"), Show: "/b/AGENTS.md", InBackend: true, Within: project, Exclude: settings}
	want[3] = memory.Source{Path: filepath.Join(cwd, ".deepagents", "AGENTS.md"), Show: "/b/.deepagents/AGENTS.md", InBackend: true, Within: project, Exclude: settings}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("sources under root\n%+v\nwant\n%+v", got, want)
	}
	// Without a repository the working directory is the top.
	solo := t.TempDir()
	got = memorySources(solo, "", "")
	if len(got) != 1 || got[0].Show != "/memory/project/.deepagents/AGENTS.md" {
		t.Fatalf("sources without a repository %+v", got)
	}
}

func TestSkillSources(t *testing.T) {
	var labels []string
	for _, s := range skillSources("/p", "/h", true) {
		labels = append(labels, s.Label+"="+s.Dir)
	}
	want := []string{"user (.claude)=/h/.claude/skills", "user=/h/.deepagents/skills", "project (.claude)=/p/.claude/skills", "project=/p/.deepagents/skills"}
	if !reflect.DeepEqual(labels, want) {
		t.Fatalf("sources %q", labels)
	}
	if n := len(skillSources("/p", "/h", false)); n != 2 {
		t.Fatalf("%d sources without the flag", n)
	}
}

// An agent file's skills key gives that subagent those skills only; the
// agent lists them all.
func TestRunAgentFileSkills(t *testing.T) {
	srv := ot.NewServer(t, func(r *ot.Request) ot.Reply {
		if r.HasTool("task") {
			if r.Round() == 0 {
				return ot.Tools(ot.Call{ID: "t1", Name: "task", Args: `{"description":"fill the form","subagent_type":"filler"}`})
			}
			return ot.Text("done")
		}
		return ot.Text("filled")
	})
	project, home := runEnv(t, srv)
	skillFile(t, filepath.Join(home, ".deepagents", "skills"), "pdf", "pdf forms")
	skillFile(t, filepath.Join(home, ".deepagents", "skills"), "csv", "csv files")
	writeFileAt(t, filepath.Join(project, ".deepagents", "agents", "filler.md"), "---\ndescription: Fills forms.\nskills: [pdf]\n---\nYou fill forms.\n")
	if code, _, errs := runCLI(t, "run", "-p", "go", "--model", "openai:gpt-test"); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	reqs := srv.Requests()
	parent, child := reqs[0].System(), reqs[1].System()
	if !strings.Contains(parent, "- csv: csv files") || !strings.Contains(parent, "- pdf: pdf forms") {
		t.Fatalf("parent:\n%s", parent)
	}
	if !strings.HasPrefix(child, "You fill forms.\n\n## Skills") || !strings.Contains(child, "- pdf: pdf forms") || strings.Contains(child, "csv") {
		t.Fatalf("child:\n%s", child)
	}
}
