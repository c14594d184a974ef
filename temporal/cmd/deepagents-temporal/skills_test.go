package main

import (
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/temporal"
)

// writeFile writes text at path, making its directory.
func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// skillsProject makes a project with a skill (and a file in its folder),
// an AGENTS.md importing another file, a user AGENTS.md, and an agent file
// whose isolated subagent names the skill.
func skillsProject(t *testing.T) (project, home string) {
	project, home = t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	writeFile(t, filepath.Join(project, "deepagents.toml"), `model = "local:m"
[providers.local]
type = "openai-compatible"
base_url = "http://127.0.0.1:1/v1"
`)
	writeFile(t, filepath.Join(project, ".deepagents", "skills", "pdf", "SKILL.md"), "---\nname: pdf\ndescription: Fill PDF forms.\n---\nSteps for pdf.\n")
	writeFile(t, filepath.Join(project, ".deepagents", "skills", "pdf", "forms.md"), "the field list")
	writeFile(t, filepath.Join(project, "AGENTS.md"), "Project rule: tabs, not spaces.\n@docs/style.md\n")
	writeFile(t, filepath.Join(project, "docs", "style.md"), "Imported rule: short names.")
	writeFile(t, filepath.Join(home, ".deepagents", "AGENTS.md"), "User rule: answer in English.")
	writeFile(t, filepath.Join(project, ".deepagents", "agents", "filler.md"), `---
name: filler
description: Fills forms.
skills: [pdf]
---
Fill the form.
`)
	return project, home
}

// runOnTestEnv runs a RunAgent workflow of agent "main" on the SDK's test
// environment (no server), its model replaced by m.
func runOnTestEnv(t *testing.T, reg *temporal.Registry, m llm.Model) temporal.Summary {
	t.Helper()
	reg.Model("local:m", m)
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	env := s.NewTestWorkflowEnvironment()
	env.SetDataConverter(temporal.DataConverter())
	reg.Register(env)
	env.ExecuteWorkflow(temporal.RunAgentWorkflow, temporal.RunInput{Agent: "main", Input: "fill the form"})
	if !env.IsWorkflowCompleted() {
		t.Fatal("the workflow did not complete")
	}
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var sum temporal.Summary
	if err := env.GetWorkflowResult(&sum); err != nil {
		t.Fatal(err)
	}
	return sum
}

func stepCall(id, name, args string) scripted.StepCall {
	return scripted.StepCall{ID: id, Name: name, Args: json.RawMessage(args)}
}

// The worker's agent lists the project's skills and sees its memory (with
// the import), as "deepagents run" gives them, and so does a subagent
// whose agent file names the skill (isolated, it gets no memory). They are read when the worker starts:
// the files are deleted before the run, which still sees them, so nothing
// is read from disk in workflow code.
func TestWorkerAgentHasSkillsAndMemory(t *testing.T) {
	project, home := skillsProject(t)
	reg := temporal.NewRegistry()
	var stderr strings.Builder
	if err := configAgent(t.Context(), reg, "main", project, "", &agentSetup{}, &stderr); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stderr.String(), "skills are left out") || !strings.Contains(stderr.String(), "read once, now (snapshot ") {
		t.Errorf("notices %q", stderr.String())
	}
	if reg.Snapshot == "" || !strings.Contains(stderr.String(), "(snapshot "+reg.Snapshot+")") {
		t.Errorf("the registry's snapshot %q is not the one the notice names: %q", reg.Snapshot, stderr.String())
	}
	for _, p := range []string{filepath.Join(project, ".deepagents"), filepath.Join(project, "AGENTS.md"), filepath.Join(project, "docs"), filepath.Join(home, ".deepagents")} {
		if err := os.RemoveAll(p); err != nil {
			t.Fatal(err)
		}
	}
	m := scripted.New(scripted.Script{
		"main": {Steps: []scripted.Step{
			{ToolCalls: []scripted.StepCall{
				stepCall("r1", "read_file", `{"file_path":"/skills/pdf/forms.md"}`),
				stepCall("r2", "read_file", `{"file_path":"/memory/project/AGENTS.md"}`),
				stepCall("w1", "edit_file", `{"file_path":"/memory/project/AGENTS.md","old_string":"tabs","new_string":"spaces"}`),
			}},
			{ToolCalls: []scripted.StepCall{stepCall("t1", "task", `{"description":"fill it","subagent_type":"filler"}`)}},
			{Content: "done"},
		}},
		"filler": {Steps: []scripted.Step{{Content: "filled"}}},
	}, scripted.Options{})
	sum := runOnTestEnv(t, reg, m)
	if sum.Text != "done" {
		t.Fatalf("summary %+v", sum)
	}
	var mainReq, fillerReq *llm.Request
	var results []string
	for _, r := range m.Records() {
		switch r.Who {
		case "main":
			if mainReq == nil {
				mainReq = r.Request
			}
			if r.Round == 1 {
				for _, msg := range r.Request.Messages {
					if msg.Role == llm.RoleTool {
						results = append(results, msg.Content)
					}
				}
			}
		case "filler":
			fillerReq = r.Request
		}
	}
	if mainReq == nil || fillerReq == nil {
		t.Fatalf("records %+v", m.Records())
	}
	if !strings.Contains(mainReq.System, "- pdf: Fill PDF forms.") {
		t.Errorf("the agent's system prompt does not list the skill: %q", mainReq.System)
	}
	for _, want := range []string{"Project rule: tabs, not spaces.", "Imported rule: short names.", "User rule: answer in English.", "/memory/project/AGENTS.md"} {
		if !strings.Contains(mainReq.SystemTail, want) {
			t.Errorf("the memory block lacks %q: %q", want, mainReq.SystemTail)
		}
	}
	if len(results) != 3 || !strings.Contains(results[0], "the field list") || !strings.Contains(results[1], "Project rule") ||
		!strings.Contains(results[2], "read-only") {
		t.Errorf("tool results %q", results)
	}
	if !strings.Contains(fillerReq.System, "- pdf: Fill PDF forms.") {
		t.Errorf("the subagent naming the skill does not list it: %q", fillerReq.System)
	}
	if strings.Contains(fillerReq.SystemTail, "Project rule") {
		t.Errorf("an isolated subagent got the memory block, which \"deepagents run\" does not give it: %q", fillerReq.SystemTail)
	}
}

// With --no-skills and --no-memory the agent has neither, and a subagent's
// skills are dropped with a notice.
func TestWorkerAgentWithoutSkillsAndMemory(t *testing.T) {
	project, _ := skillsProject(t)
	reg := temporal.NewRegistry()
	var stderr strings.Builder
	if err := configAgent(t.Context(), reg, "main", project, "", &agentSetup{knowledge: knowledge{noSkills: true, noMemory: true}}, &stderr); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr.String(), "agent filler") || !strings.Contains(stderr.String(), "--no-skills") {
		t.Errorf("notices %q", stderr.String())
	}
	m := scripted.New(scripted.Script{"main": {Steps: []scripted.Step{{Content: "done"}}}}, scripted.Options{})
	runOnTestEnv(t, reg, m)
	req := m.Records()[0].Request
	if strings.Contains(req.System, "pdf") || strings.Contains(req.SystemTail, "Project rule") {
		t.Errorf("system %q, tail %q", req.System, req.SystemTail)
	}
}

// The skills listing keeps to the budget of the model's context window
// (from the configuration's model table), as in "deepagents run": a tiny
// window leaves the description out.
func TestWorkerSkillsListingFollowsTheWindow(t *testing.T) {
	project, _ := skillsProject(t)
	writeFile(t, filepath.Join(project, "deepagents.toml"), `model = "local:m"
[providers.local]
type = "openai-compatible"
base_url = "http://127.0.0.1:1/v1"
[models."local:m"]
context_window = 1000
`)
	reg := temporal.NewRegistry()
	var stderr strings.Builder
	if err := configAgent(t.Context(), reg, "main", project, "", &agentSetup{}, &stderr); err != nil {
		t.Fatal(err)
	}
	m := scripted.New(scripted.Script{"main": {Steps: []scripted.Step{{Content: "done"}}}}, scripted.Options{})
	runOnTestEnv(t, reg, m)
	sys := m.Records()[0].Request.System
	if !strings.Contains(sys, "pdf") || strings.Contains(sys, "Fill PDF forms.") {
		t.Errorf("system %q: want pdf listed without its description", sys)
	}
}
