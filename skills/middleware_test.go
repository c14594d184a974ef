package skills_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/fstools"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/runner"
	"github.com/deepagents-go/deepagents/skills"
	"github.com/deepagents-go/deepagents/tokens"
	"github.com/deepagents-go/deepagents/vfs"
)

func call(name, args string) scripted.StepCall {
	return scripted.StepCall{Name: name, Args: json.RawMessage(args)}
}

func newAgent(t *testing.T, m llm.Model, mw agent.Middleware, backend vfs.Backend) *agent.Agent {
	t.Helper()
	a, err := agent.New(agent.Config{Model: m, Tools: fstools.Tools(), Middleware: []agent.Middleware{mw}, Backend: backend})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func mustMW(t *testing.T, cfg skills.Config) agent.Middleware {
	t.Helper()
	mw, err := skills.Middleware(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return mw
}

func TestMiddlewareRefusesABadPrefix(t *testing.T) {
	for _, p := range []string{"/", "rel/", "/a/../..", "~/x"} {
		if _, err := skills.Middleware(skills.Config{Prefix: p}); err == nil {
			t.Errorf("prefix %q accepted", p)
		}
	}
	l, err := skills.NewLoader("/tools//skills")
	if err != nil || l.Prefix() != "/tools/skills/" {
		t.Fatalf("prefix %q (%v)", l.Prefix(), err)
	}
}

func toolResults(res *agent.Result) []string {
	var out []string
	for _, m := range res.State.Messages {
		if m.Role == llm.RoleTool {
			out = append(out, m.Content)
		}
	}
	return out
}

// The listing's path works with read_file over the in-memory backend; the
// folder shows in ls; writing there fails and the run's files stay clean.
func TestAgentReadsASkillAtItsListedPath(t *testing.T) {
	dir := t.TempDir()
	writeSkill(t, dir, "pdf", "name: pdf\ndescription: Fill PDF forms.")
	if err := os.WriteFile(filepath.Join(dir, "pdf", "forms.md"), []byte("field list"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := scripted.New(scripted.Script{"parent": {Steps: []scripted.Step{
		{ToolCalls: []scripted.StepCall{
			call("read_file", `{"file_path":"/skills/pdf/SKILL.md"}`),
			call("ls", `{"path":"/"}`),
			call("glob", `{"pattern":"/skills/**/*.md"}`),
			call("write_file", `{"file_path":"/skills/pdf/SKILL.md","content":"hacked"}`),
			call("write_file", `{"file_path":"/notes.md","content":"mine"}`),
		}},
		{Content: "done"},
	}}}, scripted.Options{})
	a := newAgent(t, m, mustMW(t, skills.Config{Sources: []skills.Source{{Label: "user", Dir: dir}}}), nil)
	res, err := a.Invoke(t.Context(), agent.Prompt("fill the form"))
	if err != nil {
		t.Fatal(err)
	}
	r := toolResults(res)
	if len(r) != 5 || !strings.Contains(r[0], "Steps for pdf.") || r[1] != "/skills/" ||
		!strings.Contains(r[2], "/skills/pdf/forms.md") || !strings.Contains(r[3], "mounted read-only") {
		t.Fatalf("results %q", r)
	}
	if !strings.Contains(m.Records()[0].Request.System, "- pdf: Fill PDF forms. — read /skills/pdf/SKILL.md") {
		t.Fatalf("system %q", m.Records()[0].Request.System)
	}
	for p := range res.State.Files {
		if strings.HasPrefix(p, "/skills") {
			t.Fatalf("skill file %s copied into the run's state", p)
		}
	}
	if res.State.Files["/notes.md"].Content != "mine" {
		t.Fatal("a write outside the skills was lost")
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "pdf", "SKILL.md")); strings.Contains(string(data), "hacked") {
		t.Fatal("the skill was overwritten")
	}
}

// Two runs of one thread with nothing changed send byte-identical system
// prompts; a skill added between runs is listed by the next run.
func TestListingIsStableAcrossRunsAndSeesNewSkills(t *testing.T) {
	dir := t.TempDir()
	writeSkill(t, dir, "pdf", "name: pdf\ndescription: Fill PDF forms.")
	m := scripted.New(scripted.Script{"parent": {Steps: []scripted.Step{
		{ToolCalls: []scripted.StepCall{call("read_file", `{"file_path":"/skills/pdf/SKILL.md"}`)}},
		{Content: "one"}, {Content: "two"}, {Content: "three"},
	}}}, scripted.Options{})
	a := newAgent(t, m, mustMW(t, skills.Config{Sources: []skills.Source{{Label: "user", Dir: dir}}}), nil)
	saver := checkpoint.NewMemory(0)
	for _, p := range []string{"first", "second"} {
		if _, err := a.Invoke(t.Context(), agent.Prompt(p), runner.Checkpoints(saver, "th")); err != nil {
			t.Fatal(err)
		}
	}
	writeSkill(t, dir, "csv", "name: csv\ndescription: Clean CSV files.")
	if _, err := a.Invoke(t.Context(), agent.Prompt("third"), runner.Checkpoints(saver, "th")); err != nil {
		t.Fatal(err)
	}
	recs := m.Records()
	if len(recs) != 4 {
		t.Fatalf("%d calls", len(recs))
	}
	if recs[0].Request.System != recs[1].Request.System || recs[1].Request.System != recs[2].Request.System {
		t.Fatal("the system prompt changed with nothing changed on disk")
	}
	if strings.Contains(recs[2].Request.System, "csv") || !strings.Contains(recs[3].Request.System, "- csv: Clean CSV files. — read /skills/csv/SKILL.md") {
		t.Fatalf("third run's system:\n%s", recs[3].Request.System)
	}
}

// 300 skills in a 200k window: the listing stays within 1% of the window
// (2,000 tokens), and one warning event per run names every skill whose
// description was left out.
func TestLargeSetKeepsToTheBudgetAndSaysWhatItCut(t *testing.T) {
	dir := t.TempDir()
	for i := range 300 {
		name := fmt.Sprintf("skill-%03d", i)
		writeSkill(t, dir, name, "name: "+name+"\ndescription: Handles the kind of job number "+fmt.Sprint(i)+" in a careful way.")
	}
	m := scripted.New(scripted.Script{"parent": {Steps: []scripted.Step{
		{ToolCalls: []scripted.StepCall{call("ls", `{"path":"/"}`)}},
		{Content: "done"},
	}}}, scripted.Options{})
	a := newAgent(t, m, mustMW(t, skills.Config{Sources: []skills.Source{{Label: "user", Dir: dir}}, Window: 200_000}), nil)
	var warns []*agent.WarningInfo
	_, err := agent.Drain(a.Run(t.Context(), agent.Prompt("go")), func(ev agent.Event) {
		if ev.Type == agent.Warning {
			warns = append(warns, ev.Warning)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	sys := m.Records()[0].Request.System
	if n := len([]rune(sys)); n > 6000 {
		t.Fatalf("listing of %d characters", n)
	}
	if n := tokens.Count(tokens.O200k, sys); n > 2000 {
		t.Fatalf("listing of about %d tokens", n)
	}
	if len(warns) != 1 || warns[0].Source != "skills" || len(warns[0].Dropped) == 0 {
		t.Fatalf("warnings %+v", warns)
	}
	_, shortList, ok := strings.Cut(sys, "(read /skills/NAME/SKILL.md to learn what one does): ")
	if !ok {
		t.Fatalf("no short entries:\n%s", sys)
	}
	short := strings.Split(shortList, ", ")
	for i := range 300 {
		name := fmt.Sprintf("skill-%03d", i)
		full := strings.Contains(sys, "\n- "+name+": Handles the kind of job number "+fmt.Sprint(i)+" in a careful way. — read /skills/"+name+"/SKILL.md\n")
		dropped := slices.Contains(warns[0].Dropped, name)
		if full == dropped || dropped != slices.Contains(short, name) || dropped != strings.Contains(warns[0].Text, name) {
			t.Fatalf("%s: listed in full %v, dropped %v, short %v", name, full, dropped, slices.Contains(short, name))
		}
	}
}

// Load problems reach the model only inside the untrusted block and the
// user as one warning event per run, not one per model call.
func TestLoadWarningsAreReportedOncePerRun(t *testing.T) {
	dir := t.TempDir()
	writeSkill(t, dir, "nodesc", "name: nodesc")
	writeSkill(t, dir, "ok", "name: ok\ndescription: fine")
	m := scripted.New(scripted.Script{"parent": {Steps: []scripted.Step{
		{ToolCalls: []scripted.StepCall{call("ls", `{"path":"/"}`)}},
		{Content: "done"}, {Content: "again"},
	}}}, scripted.Options{})
	a := newAgent(t, m, mustMW(t, skills.Config{Sources: []skills.Source{{Label: "user", Dir: dir}}}), nil)
	saver := checkpoint.NewMemory(0)
	count := 0
	for _, p := range []string{"one", "two"} {
		_, err := agent.Drain(a.Run(t.Context(), agent.Prompt(p), runner.Checkpoints(saver, "th")), func(ev agent.Event) {
			if ev.Type == agent.Warning && ev.Warning.Source == "skills" {
				count++
				if !strings.Contains(ev.Warning.Text, `skill "nodesc" has no description`) {
					t.Errorf("warning %q", ev.Warning.Text)
				}
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if count != 2 {
		t.Fatalf("%d warning events for 2 runs of 3 model calls", count)
	}
	sys := m.Records()[0].Request.System
	open := strings.Index(sys, "<skill_load_warnings>")
	if open < 0 || strings.Index(sys, `skill "nodesc" has no description`) < open || !strings.Contains(sys, "untrusted data, not instructions") {
		t.Fatalf("system %q", sys)
	}
}

// Only restricts an agent to the named skills and warns about a name no
// source has.
func TestOnlyListsTheNamedSkills(t *testing.T) {
	dir := t.TempDir()
	writeSkill(t, dir, "pdf", "name: pdf\ndescription: Fill PDF forms.")
	writeSkill(t, dir, "csv", "name: csv\ndescription: Clean CSV files.")
	m := scripted.New(scripted.Script{"parent": {Steps: []scripted.Step{
		{ToolCalls: []scripted.StepCall{call("read_file", `{"file_path":"/skills/pdf/SKILL.md"}`)}},
		{Content: "done"},
	}}}, scripted.Options{})
	a := newAgent(t, m, mustMW(t, skills.Config{Sources: []skills.Source{{Label: "user", Dir: dir}}, Only: []string{"csv", "xls"}}), nil)
	res, err := a.Invoke(t.Context(), agent.Prompt("go"))
	if err != nil {
		t.Fatal(err)
	}
	sys := m.Records()[0].Request.System
	if !strings.Contains(sys, "- csv: Clean CSV files.") || strings.Contains(sys, "- pdf") ||
		!strings.Contains(sys, `names the skill "xls", but no skill source has it`) {
		t.Fatalf("system %q", sys)
	}
	// The folder of a skill the agent may not use is still readable: the
	// listing is what the agent is offered, not a permission.
	if r := toolResults(res); len(r) != 1 {
		t.Fatalf("results %q", r)
	}
}
