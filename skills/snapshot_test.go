package skills_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/skills"
)

// A snapshot lists and serves the skills as they were when it was taken:
// a folder deleted or a skill added afterwards changes nothing.
func TestSnapshotReadsTheDiskOnce(t *testing.T) {
	dir := t.TempDir()
	writeSkill(t, dir, "pdf", "name: pdf\ndescription: Fill PDF forms.")
	if err := os.WriteFile(filepath.Join(dir, "pdf", "forms.md"), []byte("field list"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := skills.Snapshot("", skills.Source{Label: "user", Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "pdf")); err != nil {
		t.Fatal(err)
	}
	writeSkill(t, dir, "late", "name: late\ndescription: Added after the snapshot.")
	if set := l.Current(); len(set.Skills) != 1 || set.Skills[0].Name != "pdf" {
		t.Fatalf("snapshot's skills %+v", set.Skills)
	}
	m := scripted.New(scripted.Script{"parent": {Steps: []scripted.Step{
		{ToolCalls: []scripted.StepCall{
			call("read_file", `{"file_path":"/skills/pdf/forms.md"}`),
			call("glob", `{"pattern":"/skills/**/*.md"}`),
			call("write_file", `{"file_path":"/skills/pdf/SKILL.md","content":"hacked"}`),
		}},
		{Content: "done"},
	}}}, scripted.Options{})
	a := newAgent(t, m, mustMW(t, skills.Config{Loader: l}), nil)
	res, err := a.Invoke(t.Context(), agent.Prompt("fill the form"))
	if err != nil {
		t.Fatal(err)
	}
	r := toolResults(res)
	if len(r) != 3 || !strings.Contains(r[0], "field list") || !strings.Contains(r[1], "/skills/pdf/SKILL.md") ||
		!strings.Contains(r[2], "read-only") {
		t.Fatalf("results %q", r)
	}
	sys := m.Records()[0].Request.System
	if !strings.Contains(sys, "- pdf: Fill PDF forms.") || strings.Contains(sys, "- late:") {
		t.Fatalf("system %q", sys)
	}
}

// A snapshot of folders over the cap is refused with the skill's name.
func TestSnapshotRefusesHugeFolders(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 64 MiB")
	}
	dir := t.TempDir()
	writeSkill(t, dir, "big", "name: big\ndescription: Large assets.")
	chunk := strings.Repeat("x", 9<<20)
	for i := range 8 {
		if err := os.WriteFile(filepath.Join(dir, "big", "asset"+string(rune('a'+i))), []byte(chunk), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := skills.Snapshot("", skills.Source{Label: "user", Dir: dir}); err == nil || !strings.Contains(err.Error(), `"big"`) {
		t.Fatalf("err %v", err)
	}
}

// A snapshot of folders holding more files than the cap is refused, with
// the cap and the skill's name; at the cap it is taken.
func TestSnapshotRefusesTooManyFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 10,000 files")
	}
	dir := t.TempDir()
	writeSkill(t, dir, "many", "name: many\ndescription: Many small files.")
	assets := filepath.Join(dir, "many", "assets")
	if err := os.MkdirAll(assets, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range skills.MaxSnapshotFiles - 1 {
		if err := os.WriteFile(filepath.Join(assets, fmt.Sprintf("a%05d.txt", i)), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l, err := skills.Snapshot("", skills.Source{Label: "user", Dir: dir})
	if err != nil {
		t.Fatalf("at the cap: %v", err)
	}
	if _, err := l.FS().Read(t.Context(), "/many/assets/a00000.txt"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(assets, "one-more.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = skills.Snapshot("", skills.Source{Label: "user", Dir: dir})
	if err == nil || !strings.Contains(err.Error(), `"many"`) || !strings.Contains(err.Error(), "10000 files") {
		t.Fatalf("err %v", err)
	}
}
