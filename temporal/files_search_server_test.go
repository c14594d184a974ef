package temporal_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	deepagents "github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/fstools"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/temporal"
	"github.com/deepagents-go/deepagents/vfs/osfs"
	"github.com/deepagents-go/deepagents/vfs/perm"
)

// searchHistory is recorded by TestSearchOfADirectoryOnADevServer.
const searchHistory = "testdata/search.history.json"

// searchRegistry runs an agent on the directory dir (searchTree's) that
// greps, globs and reads a page, under a rule that hides /secret.
func searchRegistry(t *testing.T, dir string) *temporal.Registry {
	t.Helper()
	reg := temporal.NewRegistry()
	reg.Store = openStore(t)
	m := reg.Model("scripted", scripted.New(scripted.Script{"coder": {Steps: []scripted.Step{
		step("",
			scripted.StepCall{ID: "g", Name: "grep", Args: json.RawMessage(`{"pattern":"needle","output_mode":"count"}`)},
			scripted.StepCall{ID: "l", Name: "glob", Args: json.RawMessage(`{"pattern":"**/f00*.go"}`)},
			scripted.StepCall{ID: "r", Name: "read_file", Args: json.RawMessage(`{"file_path":"/big.txt","offset":1000,"limit":3}`)}),
		step("found"),
	}}}, scripted.Options{}))
	fs, err := osfs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	rules, err := perm.ParseRules([]string{"deny read /secret/**"})
	if err != nil {
		t.Fatal(err)
	}
	a := mustAgent(t, agent.Config{Name: "coder", Model: m, Tools: fstools.Tools(), Backend: reg.Directory(dir, fs),
		Middleware: []agent.Middleware{deepagents.PermissionsMiddleware(rules)}})
	if err := reg.Agent("coder", a); err != nil {
		t.Fatal(err)
	}
	return reg
}

// On a real server a search and a page of a directory of the workers are
// one files activity each, their answers hide what the rules deny, and the
// history replays; with DEEPAGENTS_TEMPORAL_RECORD=1 it is written to
// testdata for TestSearchHistoryReplays.
func TestSearchOfADirectoryOnADevServer(t *testing.T) {
	c := devClient(t)
	dir := t.TempDir()
	searchTree(t, dir)
	reg := searchRegistry(t, dir)
	w := worker.New(c, "deepagents-search", worker.Options{})
	reg.Register(w)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "search", TaskQueue: "deepagents-search"},
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
	if files != 3 {
		t.Errorf("%d files activities, want 3 (a grep, a glob, a page)", files)
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
	if !strings.Contains(answers["g"], "/src/pkg00/f000.go: 1") || strings.Contains(answers["g"], "secret") {
		t.Errorf("grep answered %.300q", answers["g"])
	}
	if !strings.HasPrefix(answers["l"], "/src/pkg00/f000.go\n") {
		t.Errorf("glob answered %.300q", answers["l"])
	}
	if !strings.HasPrefix(answers["r"], "  1001\t") || !strings.Contains(answers["r"], "Call read_file with offset=1003") {
		t.Errorf("read_file answered %.300q", answers["r"])
	}
	if err := replayerOf(t, searchRegistry(t, t.TempDir())).ReplayWorkflowHistory(nil, h); err != nil {
		t.Fatalf("the history does not replay: %v", err)
	}
	record(t, searchHistory, h)
}

// The committed history of a search, a glob and a page of a directory of
// the workers, each one files activity, replays.
func TestSearchHistoryReplays(t *testing.T) {
	if err := replayerOf(t, searchRegistry(t, t.TempDir())).ReplayWorkflowHistoryFromJSONFile(nil, searchHistory); err != nil {
		t.Fatalf("%s does not replay: %v", searchHistory, err)
	}
}
