package deepagents_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/approve"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/runner"
	"github.com/deepagents-go/deepagents/vfs"
)

// toolResults maps call id to the content of its result.
func toolResults(msgs []llm.Message) map[string]string {
	out := map[string]string{}
	for _, m := range msgs {
		if m.Role == llm.RoleTool {
			out[m.ToolCallID] = m.Content
		}
	}
	return out
}

// A composite without a fallback mounts /memories/ over the run's own
// files: parallel writes of one step go through layers and merge to the
// right backend, the run's files are checkpointed and come back on the
// thread's next run, and the store is shared by every thread.
func TestCompositeOverRunState(t *testing.T) {
	store := vfs.NewMemory(nil)
	skills := vfs.NewMemory(map[string]vfs.File{"/web/SKILL.md": {Content: "how to browse"}})
	files, err := vfs.NewComposite(nil,
		vfs.Route{Prefix: "/memories/", Backend: store},
		vfs.Route{Prefix: "/skills/", Backend: skills, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	// The thread's second run goes on with the case its first prompt chose.
	reads := scripted.Step{ToolCalls: []scripted.StepCall{
		call("r1", "read_file", `{"file_path":"/notes.md"}`),
		call("r2", "read_file", `{"file_path":"/memories/prefs.md"}`),
		call("l1", "ls", `{"path":"/"}`),
	}}
	m := scripted.New(scripted.Script{
		"parent": {Cases: []scripted.Case{
			{Match: "first", Steps: []scripted.Step{
				{ToolCalls: []scripted.StepCall{
					call("w1", "write_file", `{"file_path":"/memories/prefs.md","content":"likes tea"}`),
					call("w2", "write_file", `{"file_path":"/notes.md","content":"draft one"}`),
					call("w3", "write_file", `{"file_path":"/notes.md","content":"draft two"}`),
					call("w4", "write_file", `{"file_path":"/skills/web/SKILL.md","content":"hacked"}`),
					call("t1", "task", `{"description":"note it","subagent_type":"general-purpose"}`),
				}},
				{Content: "done"},
				reads, {Content: "done"},
			}},
			{Match: "second", Steps: []scripted.Step{
				reads, {Content: "done"},
			}},
		}},
		// The subagent writes through its call's layer; the merge takes
		// the file to the store.
		"general-purpose": {Steps: []scripted.Step{
			{ToolCalls: []scripted.StepCall{call("c1", "write_file", `{"file_path":"/memories/child.md","content":"from the child"}`)}},
			{Content: "noted"},
		}},
	}, scripted.Options{})
	a, err := deepagents.New(deepagents.Config{Model: m, Backend: files})
	if err != nil {
		t.Fatal(err)
	}
	saver := checkpoint.NewMemory(0)
	res, err := a.Invoke(t.Context(), agent.Prompt("first"), runner.Checkpoints(saver, "A"))
	if err != nil {
		t.Fatal(err)
	}
	got := toolResults(res.State.Messages)
	if !strings.Contains(got["w4"], "/skills/ is mounted read-only") {
		t.Errorf("write to a read-only route: %q", got["w4"])
	}
	if s, err := store.Read(t.Context(), "/prefs.md"); err != nil || s != "likes tea" {
		t.Errorf("store /prefs.md = %q, %v", s, err)
	}
	if s, err := store.Read(t.Context(), "/child.md"); err != nil || s != "from the child" {
		t.Errorf("store /child.md = %q, %v", s, err)
	}
	if s, _ := skills.Read(t.Context(), "/web/SKILL.md"); s != "how to browse" {
		t.Errorf("the read-only route changed: %q", s)
	}
	// The run's state holds its own files only, and the parallel writes of
	// /notes.md were layered and merged: the later kept, the other saved.
	paths := slices.Sorted(func(yield func(string) bool) {
		for p := range res.State.Files {
			if !yield(p) {
				return
			}
		}
	})
	if want := []string{"/notes.md", "/notes.md.conflict-w2"}; !slices.Equal(paths, want) {
		t.Errorf("run state files = %v, want %v", paths, want)
	}
	if f := res.State.Files["/notes.md"]; f.Content != "draft two" {
		t.Errorf("/notes.md = %q", f.Content)
	}

	// The thread's next run gets its files back from the checkpoint.
	res, err = a.Invoke(t.Context(), agent.Prompt("next"), runner.Checkpoints(saver, "A"))
	if err != nil {
		t.Fatal(err)
	}
	got = toolResults(res.State.Messages)
	if !strings.Contains(got["r1"], "draft two") || !strings.Contains(got["r2"], "likes tea") {
		t.Errorf("second run of thread A read %q and %q", got["r1"], got["r2"])
	}
	for _, want := range []string{"/memories/", "/notes.md", "/skills/"} {
		if !strings.Contains(got["l1"], want) {
			t.Errorf("ls / = %q, missing %s", got["l1"], want)
		}
	}

	// Another thread shares the store but not thread A's files.
	m.Reset()
	res, err = a.Invoke(t.Context(), agent.Prompt("second"), runner.Checkpoints(saver, "B"))
	if err != nil {
		t.Fatal(err)
	}
	got = toolResults(res.State.Messages)
	if strings.Contains(got["r1"], "draft two") || !strings.Contains(got["r2"], "likes tea") {
		t.Errorf("thread B read %q and %q", got["r1"], got["r2"])
	}
}

// A step that stops for an approval keeps its finished calls' changes,
// routes included, until the step is merged on resume; the run's own files
// come back from the checkpoint.
func TestCompositeAcrossAnApproval(t *testing.T) {
	store := vfs.NewMemory(nil)
	files, err := vfs.NewComposite(nil, vfs.Route{Prefix: "/memories/", Backend: store})
	if err != nil {
		t.Fatal(err)
	}
	m := scripted.New(scripted.Script{"parent": {Steps: []scripted.Step{
		{ToolCalls: []scripted.StepCall{
			call("w1", "write_file", `{"file_path":"/memories/x","content":"kept"}`),
			call("w2", "write_file", `{"file_path":"/own.md","content":"mine"}`),
			call("d1", "delete", `{"file_path":"/old.md"}`),
		}},
		{ToolCalls: []scripted.StepCall{
			call("r1", "read_file", `{"file_path":"/own.md"}`),
			call("r2", "read_file", `{"file_path":"/memories/x"}`),
		}},
		{Content: "done"},
	}}}, scripted.Options{})
	a, err := deepagents.New(deepagents.Config{Model: m, Backend: files, InterruptOn: map[string]approve.Policy{"delete": {}}})
	if err != nil {
		t.Fatal(err)
	}
	saver := checkpoint.NewMemory(0)
	in := agent.Prompt("go")
	in.Files = map[string]vfs.File{"/old.md": {Content: "old"}}
	res, err := a.Invoke(t.Context(), in, runner.Checkpoints(saver, "T"))
	if res == nil || res.Status != agent.StatusInterrupted {
		t.Fatalf("first run: %v, %v", res, err)
	}
	if _, err := store.Read(t.Context(), "/x"); err == nil {
		t.Error("a call's write reached the store before its step was merged")
	}
	res, err = a.Invoke(t.Context(), agent.Input{}, runner.Checkpoints(saver, "T"),
		agent.WithDecisions(agent.Decision{Type: agent.Approve, CallID: "d1"}))
	if err != nil {
		t.Fatal(err)
	}
	got := toolResults(res.State.Messages)
	if !strings.Contains(got["r1"], "mine") || !strings.Contains(got["r2"], "kept") {
		t.Errorf("after the approval: %q, %q", got["r1"], got["r2"])
	}
	if s, err := store.Read(t.Context(), "/x"); err != nil || s != "kept" {
		t.Errorf("store /x = %q, %v", s, err)
	}
	if _, ok := res.State.Files["/old.md"]; ok || res.State.Files["/own.md"].Content != "mine" {
		t.Errorf("run files = %v", res.State.Files)
	}
}
