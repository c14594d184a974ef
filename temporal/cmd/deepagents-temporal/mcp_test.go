package main

import (
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/mcp"
	"github.com/deepagents-go/deepagents/temporal"
)

// mcpProject is a project whose agent file "helper" names the user's MCP
// server "mine" (the test server, built into bin), and whose model has a
// window of window tokens (2,000: so small that the server's tools are
// found through mcp_search).
func mcpProject(t *testing.T, bin string, window int) (project string) {
	project, home := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	writeFile(t, filepath.Join(project, "deepagents.toml"), `model = "local:m"
[providers.local]
type = "openai-compatible"
base_url = "http://127.0.0.1:1/v1"
[models."local:m"]
context_window = `+strconv.Itoa(window)+`
`)
	writeFile(t, filepath.Join(home, ".deepagents", ".mcp.json"), `{"mcpServers":{"mine":{"command":"`+bin+`"}}}`)
	writeFile(t, filepath.Join(project, ".deepagents", "agents", "helper.md"), `---
name: helper
description: Asks the server.
mcpServers: [mine]
---
Ask the server.
`)
	return project
}

func buildTestMCPServer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "mcpserver")
	if out, err := exec.Command("go", "build", "-o", bin, "../../../mcp/testdata/server").CombinedOutput(); err != nil {
		t.Fatalf("building the test MCP server: %v\n%s", err, out)
	}
	return bin
}

// On a worker, the MCP tools too large for the window are found through
// mcp_search, whose finds are then called as activities; a subagent whose
// agent file names the server gets its tools (behind its own mcp_search)
// and calls them on the worker too.
func TestWorkerBindsMCPToolsAsTheCLIDoes(t *testing.T) {
	project := mcpProject(t, buildTestMCPServer(t), 2000)
	reg := temporal.NewRegistry()
	setup := &agentSetup{}
	defer setup.close()
	setup.mcp = workerMCP(false, &setup.closers)
	var stderr strings.Builder
	if err := configAgent(t.Context(), reg, "main", project, "", setup, &stderr); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr.String(), "found through mcp_search") {
		t.Errorf("notices %q; want the tools found through mcp_search", stderr.String())
	}
	echo, pid := mcp.ToolName("mine", "echo"), mcp.ToolName("mine", "pid")
	m := scripted.New(scripted.Script{
		"main": {Steps: []scripted.Step{
			{ToolCalls: []scripted.StepCall{stepCall("s1", mcp.SearchToolName, `{"query":"echo"}`)}},
			{ToolCalls: []scripted.StepCall{stepCall("e1", echo, `{"text":"hello from the worker"}`)}},
			{ToolCalls: []scripted.StepCall{stepCall("t1", "task", `{"description":"ask","subagent_type":"helper"}`)}},
			{Content: "done"},
		}},
		"helper": {Steps: []scripted.Step{
			{ToolCalls: []scripted.StepCall{stepCall("s2", mcp.SearchToolName, `{"query":"`+pid+`"}`)}},
			{ToolCalls: []scripted.StepCall{stepCall("p1", pid, `{}`)}},
			{Content: "asked"},
		}},
	}, scripted.Options{})
	if sum := runOnSessionTestEnv(t, reg, m); sum.Text != "done" {
		t.Fatalf("summary %+v", sum)
	}
	results := map[string]string{}
	var firstTools []string
	for _, r := range m.Records() {
		if r.Who == "main" && r.Round == 0 {
			for _, s := range r.Request.Tools {
				firstTools = append(firstTools, s.Name)
			}
		}
		for _, msg := range r.Request.Messages {
			if msg.Role == llm.RoleTool {
				results[msg.ToolCallID] = msg.Content
			}
		}
	}
	if !slices.Contains(firstTools, mcp.SearchToolName) || slices.Contains(firstTools, echo) {
		t.Errorf("the agent's first tools %v; want mcp_search and no MCP tool bound yet", firstTools)
	}
	if !strings.Contains(results["s1"], echo) || results["e1"] != "hello from the worker" {
		t.Errorf("the search found %q, the echo answered %q", results["s1"], results["e1"])
	}
	if n, err := strconv.Atoi(results["p1"]); err != nil || n <= 0 {
		t.Errorf("the subagent's call of %s answered %q (the search %q); want the server's process id", pid, results["p1"], results["s2"])
	}
}

// runOnSessionTestEnv is runOnTestEnv on a test worker that takes sessions
// (a stdio MCP server's calls are pinned to one worker by one), as a
// deepagents-temporal worker does.
func runOnSessionTestEnv(t *testing.T, reg *temporal.Registry, m llm.Model) temporal.Summary {
	t.Helper()
	reg.Model("local:m", m)
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	env := s.NewTestWorkflowEnvironment()
	env.SetDataConverter(temporal.DataConverter())
	env.SetWorkerOptions(worker.Options{EnableSessionWorker: true})
	reg.Register(env)
	env.ExecuteWorkflow(temporal.RunAgentWorkflow, temporal.RunInput{Agent: "main", Input: "ask the server"})
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

// serve describes the workers' agent with its MCP tools, listed from the
// servers it starts as the workers do: an edit of an MCP call's arguments
// that does not fit the tool's schema is refused before any run.
func TestServeDescribesTheAgentsMCPTools(t *testing.T) {
	project := mcpProject(t, buildTestMCPServer(t), 200_000)
	reg := temporal.NewRegistry()
	name, err := serveAgent(t.Context(), reg, serveFlags{project: project})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := reg.Lookup(name)
	echo := mcp.ToolName("mine", "echo")
	waiting := []agent.Interrupt{{Path: agent.RootPath(name), CallID: "c1", Tool: echo, Args: json.RawMessage(`{"text":"hi"}`),
		Allowed: []agent.DecisionType{agent.Approve, agent.Edit, agent.Reject}}}
	edit := func(args string) error {
		return a.CheckDecisions([]agent.Decision{{Type: agent.Edit, CallID: "c1", Args: json.RawMessage(args)}}, waiting)
	}
	if err := edit(`{"text":5}`); err == nil || !strings.Contains(err.Error(), "do not fit") {
		t.Errorf("an edit whose text is a number: %v; want it refused against %s's schema", err, echo)
	}
	if err := edit(`{"text":"hello"}`); err != nil {
		t.Errorf("an edit that fits: %v", err)
	}
	off := temporal.NewRegistry()
	if _, err := serveAgent(t.Context(), off, serveFlags{project: project, noMCP: true}); err != nil {
		t.Fatal(err)
	}
	b, _ := off.Lookup("main")
	for _, tl := range b.Tools() {
		if strings.HasPrefix(tl.Spec().Name, "mcp__") {
			t.Errorf("with --no-mcp the agent has %s", tl.Spec().Name)
		}
	}
}

// A worker's snapshot covers its MCP tools and whether mcp_search finds
// them: workflow code sees both, so a worker that binds them otherwise
// has another snapshot (and refuses the runs of this one).
func TestWorkerSnapshotCoversMCPTools(t *testing.T) {
	bin := buildTestMCPServer(t)
	snapshot := func(window int, withMCP bool) string {
		project := mcpProject(t, bin, window)
		reg := temporal.NewRegistry()
		setup := &agentSetup{}
		defer setup.close()
		if withMCP {
			setup.mcp = workerMCP(false, &setup.closers)
		}
		var stderr strings.Builder
		if err := configAgent(t.Context(), reg, "main", project, "", setup, &stderr); err != nil {
			t.Fatal(err)
		}
		return reg.Snapshot
	}
	deferred, direct, none := snapshot(2000, true), snapshot(1_000_000, true), snapshot(2000, false)
	if deferred == direct || deferred == none || direct == none {
		t.Errorf("snapshots: behind mcp_search %q, bound directly %q, without MCP %q; want three different", deferred, direct, none)
	}
	if again := snapshot(2000, true); again != deferred {
		t.Errorf("the same MCP tools give snapshots %q and %q", deferred, again)
	}
}

// A run whose workflow started before workflows checked their snapshot
// may have been recorded by a worker that bound every MCP tool directly:
// its calls of an MCP tool by name still work though the tools are now
// behind mcp_search. A new run must find the tool first.
func TestUncheckedRunCallsMCPToolsByName(t *testing.T) {
	project := mcpProject(t, buildTestMCPServer(t), 2000)
	echo := mcp.ToolName("mine", "echo")
	for _, unchecked := range []bool{true, false} {
		reg := temporal.NewRegistry()
		setup := &agentSetup{}
		setup.mcp = workerMCP(false, &setup.closers)
		var stderr strings.Builder
		if err := configAgent(t.Context(), reg, "main", project, "", setup, &stderr); err != nil {
			t.Fatal(err)
		}
		m := scripted.New(scripted.Script{"main": {Steps: []scripted.Step{
			{ToolCalls: []scripted.StepCall{stepCall("e1", echo, `{"text":"called by name"}`)}},
			{Content: "done"},
		}}}, scripted.Options{})
		reg.Model("local:m", m)
		var s testsuite.WorkflowTestSuite
		s.SetLogger(log.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))))
		env := s.NewTestWorkflowEnvironment()
		env.SetDataConverter(temporal.DataConverter())
		env.SetWorkerOptions(worker.Options{EnableSessionWorker: true})
		reg.Register(env)
		if unchecked {
			env.OnGetVersion("deepagents.snapshot-check", workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
		}
		env.ExecuteWorkflow(temporal.RunAgentWorkflow, temporal.RunInput{Agent: "main", Input: "echo"})
		if err := env.GetWorkflowError(); !env.IsWorkflowCompleted() || err != nil {
			t.Fatalf("unchecked %v: the workflow: %v", unchecked, err)
		}
		var result string
		for _, r := range m.Records() {
			for _, msg := range r.Request.Messages {
				if msg.Role == llm.RoleTool && msg.ToolCallID == "e1" {
					result = msg.Content
				}
			}
		}
		if got := result == "called by name"; got != unchecked {
			t.Errorf("unchecked %v: the call by name answered %q", unchecked, result)
		}
		setup.close()
	}
}
