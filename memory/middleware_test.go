package memory_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/fstools"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/memory"
	"github.com/deepagents-go/deepagents/runner"
	"github.com/deepagents-go/deepagents/todos"
)

func call(name, args string) scripted.StepCall {
	return scripted.StepCall{Name: name, Args: json.RawMessage(args)}
}

func newAgent(t *testing.T, m llm.Model, cfg memory.Config, more ...agent.Middleware) *agent.Agent {
	t.Helper()
	mw, err := memory.Middleware(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{Model: m, System: "You help.", Tools: fstools.Tools(), Middleware: append([]agent.Middleware{mw}, more...)})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// Turn 1 loads "alpha"; the agent edits the file to "beta" at the path the
// block shows; its next call and turn 2 see "beta", the file on disk holds
// it, and the static system prompt never changes.
func TestAnEditIsSeenByTheNextCallAndTheNextTurn(t *testing.T) {
	disk := write(t, filepath.Join(t.TempDir(), "AGENTS.md"), "The codename is alpha.\n")
	m := scripted.New(scripted.Script{"parent": {Steps: []scripted.Step{
		{ToolCalls: []scripted.StepCall{call("edit_file", `{"file_path":"/memory/user/AGENTS.md","old_string":"alpha","new_string":"beta"}`)}},
		{Content: "noted"},
		{Content: "it is beta"},
	}}}, scripted.Options{})
	a := newAgent(t, m, memory.Config{Sources: []memory.Source{{Path: disk, Show: "/memory/user/AGENTS.md"}}})
	saver := checkpoint.NewMemory(0)
	res, err := a.Invoke(t.Context(), agent.Prompt("the codename is beta now"), runner.Checkpoints(saver, "th"))
	if err != nil {
		t.Fatal(err)
	}
	if r := res.State.Messages[2]; r.Role != llm.RoleTool || r.IsError {
		t.Fatalf("edit result %+v", r)
	}
	if _, err := a.Invoke(t.Context(), agent.Prompt("what is the codename?"), runner.Checkpoints(saver, "th")); err != nil {
		t.Fatal(err)
	}
	recs := m.Records()
	if len(recs) != 3 {
		t.Fatalf("%d calls", len(recs))
	}
	if tail := recs[0].Request.SystemTail; !strings.Contains(tail, "## /memory/user/AGENTS.md\n\nThe codename is alpha.\n</agent_memory>") {
		t.Fatalf("first call's tail %q", tail)
	}
	for i, r := range recs[1:] {
		if tail := r.Request.SystemTail; !strings.Contains(tail, "The codename is beta.") || strings.Contains(tail, "alpha") {
			t.Fatalf("call %d's tail %q", i+2, tail)
		}
		if r.Request.System != "You help." {
			t.Fatalf("memory reached the static prompt: %q", r.Request.System)
		}
	}
	if data, _ := os.ReadFile(disk); string(data) != "The codename is beta.\n" {
		t.Fatalf("file on disk %q", data)
	}
	if _, ok := res.State.Files["/memory/user/AGENTS.md"]; ok {
		t.Fatal("the memory file was copied into the run's in-state files")
	}
}

// With nothing changed the requests of two turns carry identical system
// prompts, and the memory block comes before the todo list in the tail.
func TestUnchangedMemoryIsByteIdenticalAndPrecedesTodos(t *testing.T) {
	disk := write(t, filepath.Join(t.TempDir(), "AGENTS.md"), "Fact one.")
	m := scripted.New(scripted.Script{"parent": {Steps: []scripted.Step{
		{ToolCalls: []scripted.StepCall{call("write_todos", `{"todos":[{"content":"Check","status":"pending"}]}`)}},
		{Content: "one"}, {Content: "two"},
	}}}, scripted.Options{})
	a := newAgent(t, m, memory.Config{Sources: []memory.Source{{Path: disk, Show: "/memory/AGENTS.md"}}}, todos.Middleware())
	saver := checkpoint.NewMemory(0)
	for _, p := range []string{"first", "second"} {
		if _, err := a.Invoke(t.Context(), agent.Prompt(p), runner.Checkpoints(saver, "th")); err != nil {
			t.Fatal(err)
		}
	}
	recs := m.Records()
	if recs[1].Request.SystemTail != recs[2].Request.SystemTail || recs[1].Request.System != recs[2].Request.System {
		t.Fatal("the system prompt changed across turns with nothing changed")
	}
	tail := recs[2].Request.SystemTail
	if i, j := strings.Index(tail, "</agent_memory>"), strings.Index(tail, "<current_todos>"); i < 0 || j < i {
		t.Fatalf("tail %q", tail)
	}
	if !strings.HasPrefix(recs[0].Request.SystemTail, "<agent_memory>") {
		t.Fatalf("first tail %q", recs[0].Request.SystemTail)
	}
}

// With no memory file at all there is no block; once one exists, even
// empty, the block shows where the agent may write.
func TestNoFileNoBlock(t *testing.T) {
	dir := t.TempDir()
	m := scripted.New(scripted.Script{"parent": {Steps: []scripted.Step{{Content: "one"}, {Content: "two"}}}}, scripted.Options{})
	a := newAgent(t, m, memory.Config{Sources: []memory.Source{{Path: filepath.Join(dir, "AGENTS.md"), Show: "/memory/AGENTS.md"}}})
	if _, err := a.Invoke(t.Context(), agent.Prompt("hi")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "AGENTS.md"), "")
	if _, err := a.Invoke(t.Context(), agent.Prompt("hi")); err != nil {
		t.Fatal(err)
	}
	recs := m.Records()
	if recs[0].Request.SystemTail != "" || !strings.Contains(recs[1].Request.SystemTail, "## /memory/AGENTS.md\n\n(empty)\n\n(No memory loaded)") {
		t.Fatalf("tails %q / %q", recs[0].Request.SystemTail, recs[1].Request.SystemTail)
	}
}

// A memory file that cannot be read fails the run, naming it.
func TestUnreadableMemoryFailsTheRun(t *testing.T) {
	disk := filepath.Join(t.TempDir(), "AGENTS.md")
	if err := os.Mkdir(disk, 0o755); err != nil {
		t.Fatal(err)
	}
	m := scripted.New(scripted.Script{"parent": {Steps: []scripted.Step{{Content: "never"}}}}, scripted.Options{})
	a := newAgent(t, m, memory.Config{Sources: []memory.Source{{Path: disk}}})
	_, err := a.Invoke(t.Context(), agent.Prompt("hi"))
	if err == nil || !strings.Contains(err.Error(), "memory: reading "+disk) || len(m.Records()) != 0 {
		t.Fatalf("error %v after %d calls", err, len(m.Records()))
	}
}

// The agent can create a memory file that does not exist yet, only at its
// path (the block names it once another memory file exists); other names
// in the mounted folder are refused.
func TestMountedFilesAreTheOnlyWritableOnes(t *testing.T) {
	dir := t.TempDir()
	disk := filepath.Join(dir, "sub", "AGENTS.md")
	m := scripted.New(scripted.Script{"parent": {Steps: []scripted.Step{
		{ToolCalls: []scripted.StepCall{
			call("write_file", `{"file_path":"/memory/AGENTS.md","content":"Prefers Go."}`),
			call("write_file", `{"file_path":"/memory/other.md","content":"x"}`),
		}},
		{ToolCalls: []scripted.StepCall{call("ls", `{"path":"/memory"}`)}},
		{Content: "done"},
	}}}, scripted.Options{})
	user := write(t, filepath.Join(dir, "user.md"), "")
	a := newAgent(t, m, memory.Config{Sources: []memory.Source{{Path: user}, {Path: disk, Show: "/memory/AGENTS.md"}}})
	var warns int
	res, err := agent.Drain(a.Run(t.Context(), agent.Prompt("remember")), func(ev agent.Event) {
		if ev.Type == agent.Warning {
			warns++
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	var results []llm.Message
	for _, msg := range res.State.Messages {
		if msg.Role == llm.RoleTool {
			results = append(results, msg)
		}
	}
	if len(results) != 3 || results[0].IsError || !results[1].IsError || !strings.Contains(results[2].Content, "/memory/AGENTS.md") {
		t.Fatalf("results %+v", results)
	}
	if data, _ := os.ReadFile(disk); string(data) != "Prefers Go." {
		t.Fatalf("disk %q", data)
	}
	if _, err := os.Stat(filepath.Join(dir, "sub", "other.md")); err == nil {
		t.Fatal("a file other than the memory file was written")
	}
	recs := m.Records()
	if !strings.Contains(recs[0].Request.SystemTail, "(this file does not exist yet)") || !strings.Contains(recs[1].Request.SystemTail, "Prefers Go.") {
		t.Fatalf("tails %q / %q", recs[0].Request.SystemTail, recs[1].Request.SystemTail)
	}
	if warns != 0 {
		t.Fatalf("%d warnings", warns)
	}
}

// Import problems are reported once per run, not once per model call.
func TestWarningsOncePerRun(t *testing.T) {
	disk := write(t, filepath.Join(t.TempDir(), "AGENTS.md"), "@gone.md")
	m := scripted.New(scripted.Script{"parent": {Steps: []scripted.Step{
		{ToolCalls: []scripted.StepCall{call("ls", `{"path":"/"}`)}},
		{Content: "done"},
	}}}, scripted.Options{})
	a := newAgent(t, m, memory.Config{Sources: []memory.Source{{Path: disk}}})
	var texts []string
	_, err := agent.Drain(a.Run(t.Context(), agent.Prompt("go")), func(ev agent.Event) {
		if ev.Type == agent.Warning && ev.Warning.Source == "memory" {
			texts = append(texts, ev.Warning.Text)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(texts) != 1 || !strings.Contains(texts[0], "the import of gone.md was not expanded") {
		t.Fatalf("warnings %q", texts)
	}
}

// A block over MaxBytes is cut, and a warning names the file cut and its
// sizes, once per run.
func TestCapWarningNamesWhatWasCut(t *testing.T) {
	disk := write(t, filepath.Join(t.TempDir(), "AGENTS.md"), strings.Repeat("x", 100))
	m := scripted.New(scripted.Script{"parent": {Steps: []scripted.Step{
		{ToolCalls: []scripted.StepCall{call("ls", `{"path":"/"}`)}},
		{Content: "done"},
	}}}, scripted.Options{})
	a := newAgent(t, m, memory.Config{Sources: []memory.Source{{Path: disk, Show: "/memory/AGENTS.md"}}, MaxBytes: 40})
	var texts []string
	_, err := agent.Drain(a.Run(t.Context(), agent.Prompt("go")), func(ev agent.Event) {
		if ev.Type == agent.Warning && ev.Warning.Source == "memory" {
			texts = append(texts, ev.Warning.Text)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(texts) != 1 || texts[0] != "the memory block is over its limit: /memory/AGENTS.md cut from 100 B to 40 B" {
		t.Fatalf("warnings %q", texts)
	}
	for _, r := range m.Records() {
		if tail := r.Request.SystemTail; !strings.Contains(tail, strings.Repeat("x", 40)+"\n(cut here") || strings.Contains(tail, strings.Repeat("x", 41)) {
			t.Fatalf("tail %q", tail)
		}
	}
}

func TestMiddlewareRefusesBadSources(t *testing.T) {
	cases := []memory.Config{
		{Sources: []memory.Source{{Path: ""}}},
		{Sources: []memory.Source{{Path: "/a", Show: "rel.md"}}},
		{Sources: []memory.Source{{Path: "/a", Show: "/"}}},
		{Sources: []memory.Source{{Path: "/a", Show: "/m/A.md"}, {Path: "/b", Show: "/m//A.md"}}},
	}
	for i, c := range cases {
		if _, err := memory.Middleware(c); err == nil {
			t.Errorf("case %d accepted", i)
		}
	}
}

// A file replaced by one of the same size and modification time (a rename,
// as editors and the agent's own writes do) is still read again.
func TestSameSizeReplacementIsSeen(t *testing.T) {
	dir := t.TempDir()
	disk := write(t, filepath.Join(dir, "AGENTS.md"), "alpha")
	st, err := os.Stat(disk)
	if err != nil {
		t.Fatal(err)
	}
	m := scripted.New(scripted.Script{"parent": {Steps: []scripted.Step{{Content: "one"}, {Content: "two"}}}}, scripted.Options{})
	a := newAgent(t, m, memory.Config{Sources: []memory.Source{{Path: disk}}})
	if _, err := a.Invoke(t.Context(), agent.Prompt("hi")); err != nil {
		t.Fatal(err)
	}
	tmp := write(t, filepath.Join(dir, "new.md"), "omega")
	if err := os.Chtimes(tmp, st.ModTime(), st.ModTime()); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, disk); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Invoke(t.Context(), agent.Prompt("hi")); err != nil {
		t.Fatal(err)
	}
	recs := m.Records()
	if !strings.Contains(recs[0].Request.SystemTail, "alpha") || !strings.Contains(recs[1].Request.SystemTail, "omega") {
		t.Fatalf("tails %q / %q", recs[0].Request.SystemTail, recs[1].Request.SystemTail)
	}
}
