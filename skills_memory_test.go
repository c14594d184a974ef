package deepagents_test

import (
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/memory"
	"github.com/deepagents-go/deepagents/skills"
	"github.com/deepagents-go/deepagents/subagent"
	"github.com/deepagents-go/deepagents/tokens"
)

func skillDir(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range names {
		if err := os.MkdirAll(filepath.Join(dir, n), 0o755); err != nil {
			t.Fatal(err)
		}
		body := "---\nname: " + n + "\ndescription: The " + n + " skill.\n---\nHow to " + n + ".\n"
		if err := os.WriteFile(filepath.Join(dir, n, "SKILL.md"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// The agent and its fork list every skill (the fork's system prompt is the
// parent's, byte for byte); an isolated subagent lists only the skills its
// spec names and can read them; one that names none lists none. Memory is
// the agent's and its fork's only.
func TestSkillsAndMemoryReachTheRightAgents(t *testing.T) {
	dir := skillDir(t, "pdf", "csv")
	mem := filepath.Join(t.TempDir(), "AGENTS.md")
	if err := os.WriteFile(mem, []byte("Team fact: ship on Fridays."), 0o644); err != nil {
		t.Fatal(err)
	}
	task := func(typ, what string) scripted.StepCall {
		args, _ := json.Marshal(map[string]string{"description": what, "subagent_type": typ})
		return scripted.StepCall{Name: "task", Args: args}
	}
	m := scripted.New(scripted.Script{
		"parent": {Steps: []scripted.Step{
			{ToolCalls: []scripted.StepCall{task("reader", "Read the pdf skill."), task("plain", "Do a plain job."), task("forker", "Carry on.")}},
			{Content: "all done"},
		}},
		"reader": {Steps: []scripted.Step{
			{ToolCalls: []scripted.StepCall{{Name: "read_file", Args: json.RawMessage(`{"file_path":"/skills/pdf/SKILL.md"}`)}}},
			{Content: "read it"},
		}},
		"plain":  {Steps: []scripted.Step{{Content: "plain done"}}},
		"forker": {Steps: []scripted.Step{{Content: "fork done"}}},
	}, scripted.Options{})
	a, err := deepagents.New(deepagents.Config{Model: m, SystemPrompt: "You lead.",
		Skills: &skills.Config{Sources: []skills.Source{{Label: "user", Dir: dir}}},
		Memory: &memory.Config{Sources: []memory.Source{{Path: mem, Show: "/memory/AGENTS.md"}}},
		Subagents: []subagent.Spec{
			{Name: "reader", Description: "Reads.", Skills: []string{"pdf"}},
			{Name: "plain", Description: "Plain."},
			{Name: "forker", Description: "Continues.", Mode: subagent.Fork},
		}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Invoke(t.Context(), agent.Prompt("Start."))
	if err != nil {
		t.Fatal(err)
	}
	first := map[string]*scripted.Record{}
	recs := m.Records()
	for i := range recs {
		if first[recs[i].Who] == nil {
			first[recs[i].Who] = &recs[i]
		}
	}
	parent := first["parent"].Request
	if !strings.Contains(parent.System, "- csv: The csv skill.") || !strings.Contains(parent.System, "- pdf: The pdf skill.") ||
		!strings.Contains(parent.SystemTail, "ship on Fridays") {
		t.Fatalf("parent system %q tail %q", parent.System, parent.SystemTail)
	}
	if f := first["forker"].Request; f.System != parent.System || !strings.Contains(f.SystemTail, "ship on Fridays") {
		t.Fatalf("fork system %q tail %q", f.System, f.SystemTail)
	}
	reader := first["reader"].Request
	if !strings.Contains(reader.System, "- pdf: The pdf skill.") || strings.Contains(reader.System, "csv") || strings.Contains(reader.SystemTail, "Fridays") {
		t.Fatalf("reader system %q tail %q", reader.System, reader.SystemTail)
	}
	if p := first["plain"].Request; strings.Contains(p.System, "## Skills") || strings.Contains(p.SystemTail, "Fridays") {
		t.Fatalf("plain system %q tail %q", p.System, p.SystemTail)
	}
	var readerRes *agent.Result
	for _, c := range res.Children {
		if c.Agent.String() != "" && strings.Contains(c.Agent.String(), "reader") {
			readerRes = c
		}
	}
	if readerRes == nil {
		t.Fatalf("no reader run among %d children", len(res.Children))
	}
	found := false
	for _, msg := range readerRes.State.Messages {
		if strings.Contains(msg.Content, "How to pdf.") {
			found = true
		}
	}
	if !found {
		t.Fatal("the reader could not read its skill")
	}
}

func TestSkillsConfigErrors(t *testing.T) {
	m := scripted.New(nil, scripted.Options{})
	_, err := deepagents.New(deepagents.Config{Model: m, Skills: &skills.Config{Prefix: "/"}})
	var ce *deepagents.ConfigError
	if err == nil || !errors.As(err, &ce) || !strings.Contains(err.Error(), `the prefix "/" is not a directory below the root`) {
		t.Fatalf("err %v", err)
	}
	_, err = deepagents.New(deepagents.Config{Model: m, Memory: &memory.Config{Sources: []memory.Source{{Path: "/x", Show: "rel"}}}})
	if err == nil || !errors.As(err, &ce) {
		t.Fatalf("err %v", err)
	}
	// With skills configured, a spec that names them is accepted; a fork
	// that does is still refused.
	if _, err := deepagents.New(deepagents.Config{Model: m, Skills: &skills.Config{},
		Subagents: []subagent.Spec{{Name: "x", Description: "d", Skills: []string{"pdf"}}}}); err != nil {
		t.Fatal(err)
	}
	_, err = deepagents.New(deepagents.Config{Model: m, Skills: &skills.Config{},
		Subagents: []subagent.Spec{{Name: "x", Description: "d", Mode: subagent.Fork, Skills: []string{"pdf"}}}})
	if err == nil || err.Error() != "SubAgent 'x' cannot set skills under mode='fork'; the parent's skills are inherited instead." {
		t.Fatalf("err %v", err)
	}
}

// The context report counts the memory block and the skills listing apart
// from the rest of the system prompt, and its parts still add up.
func TestContextReportCountsMemoryAndSkills(t *testing.T) {
	dir := skillDir(t, "pdf", "csv")
	mem := filepath.Join(t.TempDir(), "AGENTS.md")
	if err := os.WriteFile(mem, []byte(strings.Repeat("Team fact: ship on Fridays. ", 40)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, with := range []bool{true, false} {
		m := scripted.New(scripted.Script{"parent": {Steps: []scripted.Step{{Content: "done"}}}}, scripted.Options{})
		cfg := deepagents.Config{Model: m, SystemPrompt: "You lead."}
		if with {
			cfg.Skills = &skills.Config{Sources: []skills.Source{{Label: "user", Dir: dir}}}
			cfg.Memory = &memory.Config{Sources: []memory.Source{{Path: mem, Show: "/memory/AGENTS.md"}}}
		}
		a, err := deepagents.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var rep *tokens.Report
		if _, err := agent.Drain(a.Run(t.Context(), agent.Prompt("Start.")), func(e agent.Event) {
			if e.Type == agent.ModelRequest && rep == nil {
				rep = e.Request.Context
			}
		}); err != nil {
			t.Fatal(err)
		}
		if rep == nil {
			t.Fatal("no context report")
		}
		sum := rep.System + rep.Tools + rep.Messages + rep.ToolResults + rep.Memory + rep.Skills
		if sum != rep.Calibrated {
			t.Errorf("with=%v: parts add up to %d, calibrated %d", with, sum, rep.Calibrated)
		}
		req := m.Records()[0].Request
		whole := tokens.EstimateText(req.System) + tokens.EstimateText(req.SystemTail)
		switch {
		case with && (rep.Memory < 200 || rep.Skills == 0 || rep.System >= whole-rep.Memory):
			t.Errorf("memory %d, skills %d, system %d of a prompt of %d", rep.Memory, rep.Skills, rep.System, whole)
		case !with && (rep.Memory != 0 || rep.Skills != 0):
			t.Errorf("without either: memory %d, skills %d", rep.Memory, rep.Skills)
		}
	}
}

// A fork runs under its parent's prompt as sent: the memory block and the
// skills listing in it count as memory and skills in the fork's context
// report too, not as its own system prompt.
func TestForkContextReportCountsInheritedMemoryAndSkills(t *testing.T) {
	dir := skillDir(t, "pdf", "csv")
	mem := filepath.Join(t.TempDir(), "AGENTS.md")
	if err := os.WriteFile(mem, []byte(strings.Repeat("Team fact: ship on Fridays. ", 40)), 0o644); err != nil {
		t.Fatal(err)
	}
	m := scripted.New(scripted.Script{
		"parent": {Steps: []scripted.Step{
			{ToolCalls: []scripted.StepCall{{ID: "t1", Name: "task", Args: json.RawMessage(`{"description":"check","subagent_type":"twin"}`)}}},
			{Content: "done"},
		}},
		"twin": {Steps: []scripted.Step{{Content: "checked"}}},
	}, scripted.Options{})
	a, err := deepagents.New(deepagents.Config{Model: m, SystemPrompt: "You lead.",
		Skills:    &skills.Config{Sources: []skills.Source{{Label: "user", Dir: dir}}},
		Memory:    &memory.Config{Sources: []memory.Source{{Path: mem, Show: "/memory/AGENTS.md"}}},
		Subagents: []subagent.Spec{{Name: "twin", Description: "A copy of you.", Mode: subagent.Fork}}})
	if err != nil {
		t.Fatal(err)
	}
	reports := map[string]*tokens.Report{}
	if _, err := agent.Drain(a.Run(t.Context(), agent.Prompt("Start.")), func(e agent.Event) {
		if e.Type == agent.ModelRequest && reports[e.Agent.String()] == nil {
			reports[e.Agent.String()] = e.Request.Context
		}
	}); err != nil {
		t.Fatal(err)
	}
	var parent, fork *tokens.Report
	for who, rep := range reports {
		if strings.Contains(who, "twin") {
			fork = rep
		} else {
			parent = rep
		}
	}
	if parent == nil || fork == nil {
		t.Fatalf("reports of %v", slices.Collect(maps.Keys(reports)))
	}
	if fork.Memory != parent.Memory || fork.Skills != parent.Skills || parent.Memory < 200 || parent.Skills == 0 {
		t.Errorf("fork: memory %d, skills %d; parent: memory %d, skills %d", fork.Memory, fork.Skills, parent.Memory, parent.Skills)
	}
	if sum := fork.System + fork.Tools + fork.Messages + fork.ToolResults + fork.Memory + fork.Skills; sum != fork.Calibrated {
		t.Errorf("the fork's parts add up to %d, calibrated %d", sum, fork.Calibrated)
	}
	if fork.System > parent.System+50 {
		t.Errorf("the fork's own system prompt %d is far above its parent's %d", fork.System, parent.System)
	}
}
