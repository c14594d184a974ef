package temporal_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/fstools"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/temporal"
	"github.com/deepagents-go/deepagents/tool"
	"github.com/deepagents-go/deepagents/vfs"
	"github.com/deepagents-go/deepagents/vfs/osfs"
)

// mountsHistory is recorded by TestSearchOverMountsOnADevServer;
// mountsHistoryBefore is the same run recorded before a search over mounts
// was one files activity (each file was one).
const (
	mountsHistory       = "testdata/search-mounts.history.json"
	mountsHistoryBefore = "testdata/search-mounts-before.history.json"
)

// mountsRegistry runs an agent on the directory dir, with
// skills and memory mounted below its root as a worker's middleware mount
// them, that greps a directory without mounts (one files activity since
// an earlier change), then greps and globs the root.
func mountsRegistry(t *testing.T, dir string) *temporal.Registry {
	t.Helper()
	reg := temporal.NewRegistry()
	reg.Store = openStore(t)
	m := reg.Model("scripted", scripted.New(scripted.Script{"coder": {Steps: []scripted.Step{
		step("", scripted.StepCall{ID: "s", Name: "grep", Args: json.RawMessage(`{"pattern":"needle","path":"/src"}`)}),
		step("",
			scripted.StepCall{ID: "g", Name: "grep", Args: json.RawMessage(`{"pattern":"needle","output_mode":"content","max_count":20}`)},
			scripted.StepCall{ID: "l", Name: "glob", Args: json.RawMessage(`{"pattern":"**/*.md"}`)}),
		step("found"),
	}}}, scripted.Options{}))
	fs, err := osfs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	routes := []vfs.Route{
		{Prefix: "/skills/", Backend: vfs.NewMemory(map[string]vfs.File{"/web/SKILL.md": {Content: "---\nname: web\n---\nthe needle of a skill\n"}}), ReadOnly: true},
		{Prefix: "/memory/", Backend: vfs.NewMemory(map[string]vfs.File{"/AGENTS.md": {Content: "a needle to remember\n"}}), ReadOnly: true},
	}
	mount := agent.Middleware{Name: "mounts", WrapTool: func(ctx context.Context, call *agent.ToolCall, next agent.ToolFunc) (tool.Result, error) {
		return agent.RunMounted(ctx, call, next, routes...)
	}}
	a := mustAgent(t, agent.Config{Name: "coder", Model: m, Tools: fstools.Tools(), Backend: reg.Directory(dir, fs),
		Middleware: []agent.Middleware{mount}})
	if err := reg.Agent("coder", a); err != nil {
		t.Fatal(err)
	}
	return reg
}

// On a real server a grep and a glob over a directory with mounts below
// the searched path are one files activity each, their answers show the
// mounts' files, and the history replays; with
// DEEPAGENTS_TEMPORAL_RECORD=1 it is written to testdata for
// TestSearchOverMountsHistoryReplays.
func TestSearchOverMountsOnADevServer(t *testing.T) {
	c := devClient(t)
	dir := t.TempDir()
	for name, body := range map[string]string{"README.md": "a needle in the readme\n", "src/a.go": "// needle\n", "src/b.go": "package b\n", "notes/n.md": "no\n"} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	reg := mountsRegistry(t, dir)
	w := worker.New(c, "deepagents-mounts", worker.Options{})
	reg.Register(w)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "search-mounts", TaskQueue: "deepagents-mounts"},
		temporal.RunAgentWorkflow, temporal.RunInput{Agent: "coder", Thread: "S", Input: "search"})
	if err != nil {
		t.Fatal(err)
	}
	var s temporal.Summary
	if err := run.Get(ctx, &s); err != nil {
		t.Fatal(err)
	}
	if s.Status != agent.StatusOK || s.Text != "found" {
		t.Fatalf("summary %+v", s)
	}
	h := history(ctx, t, c, run)
	files := 0
	for _, ev := range h.Events {
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == temporal.FilesActivity {
			files++
		}
	}
	if files != 3 && os.Getenv("DEEPAGENTS_TEMPORAL_RECORD_BEFORE") == "" {
		t.Errorf("%d files activities, want 3 (a grep of /src, a grep and a glob of /)", files)
	}
	cp, err := reg.Store.Get(ctx, checkpoint.Ref{ThreadID: "S"})
	if err != nil {
		t.Fatal(err)
	}
	answers := map[string]string{}
	for _, m := range cp.State.Messages {
		if m.ToolCallID != "" {
			answers[m.ToolCallID] = m.Content
		}
	}
	if answers["s"] != "/src/a.go" {
		t.Errorf("grep of /src answered %.300q", answers["s"])
	}
	if !strings.Contains(answers["g"], "/memory/AGENTS.md:1: a needle to remember") || !strings.Contains(answers["g"], "/skills/web/SKILL.md:4: the needle of a skill") {
		t.Errorf("grep answered %.600q", answers["g"])
	}
	if answers["l"] != "/README.md\n/memory/AGENTS.md\n/notes/n.md\n/skills/web/SKILL.md" {
		t.Errorf("glob answered %.300q", answers["l"])
	}
	if err := replayerOf(t, mountsRegistry(t, t.TempDir())).ReplayWorkflowHistory(nil, h); err != nil {
		t.Fatalf("the history does not replay: %v", err)
	}
	path := mountsHistory
	if os.Getenv("DEEPAGENTS_TEMPORAL_RECORD_BEFORE") != "" {
		path = mountsHistoryBefore
	}
	record(t, path, h)
}

// The committed history of a grep and a glob over mounts, each one files
// activity, replays, and so does the same run recorded before, when each
// file was one.
func TestSearchOverMountsHistoryReplays(t *testing.T) {
	for _, h := range []string{mountsHistory, mountsHistoryBefore} {
		if err := replayerOf(t, mountsRegistry(t, t.TempDir())).ReplayWorkflowHistoryFromJSONFile(nil, h); err != nil {
			t.Errorf("%s does not replay: %v", h, err)
		}
	}
}
