package fstools

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/vfs"
)

func step(calls ...scripted.StepCall) scripted.Step { return scripted.Step{ToolCalls: calls} }

func sc(id, name, args string) scripted.StepCall {
	return scripted.StepCall{ID: id, Name: name, Args: json.RawMessage(args)}
}

// The tools through the real loop: parallel calls of one batch each get a
// layer, merged in call order, and the results reach the model.
func TestThroughAgentLoop(t *testing.T) {
	model := scripted.New(scripted.Script{"parent": {Steps: []scripted.Step{
		step(
			sc("c1", "write_file", `{"file_path":"/notes/a.md","content":"alpha\nbeta\n"}`),
			sc("c2", "write_file", `{"file_path":"/notes/b.md","content":"gamma\n"}`),
			sc("c3", "edit_file", `{"file_path":"/seed.txt","old_string":"one","new_string":"ONE"}`),
			sc("c4", "delete", `{"file_path":"/old"}`),
		),
		step(
			sc("c5", "ls", `{"path":"/notes"}`),
			sc("c6", "grep", `{"pattern":"a","path":"/notes","output_mode":"count"}`),
			sc("c7", "read_file", `{"file_path":"/nope"}`),
		),
		{Content: "done"},
	}}}, scripted.Options{NoUsage: true})
	a, err := agent.New(agent.Config{Model: model, Tools: Tools()})
	if err != nil {
		t.Fatal(err)
	}
	if a.System() != "" {
		t.Errorf("the file tools should add no system prompt, got %q", a.System())
	}
	in := agent.Prompt("go")
	in.Files = map[string]vfs.File{"/seed.txt": {Content: "one two"}, "/old/x": {Content: "x"}, "/old/y": {Content: "y"}}
	res, err := a.Invoke(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for p, f := range res.State.Files {
		got[p] = f.Content
	}
	want := map[string]string{"/notes/a.md": "alpha\nbeta\n", "/notes/b.md": "gamma\n", "/seed.txt": "ONE two"}
	if len(got) != len(want) {
		t.Errorf("files = %q, want %q", got, want)
	}
	for p, c := range want {
		if got[p] != c {
			t.Errorf("%s = %q, want %q", p, got[p], c)
		}
	}
	results := map[string]llm.Message{}
	for _, m := range res.State.Messages {
		if m.Role == llm.RoleTool {
			results[m.ToolCallID] = m
		}
	}
	for id, want := range map[string]string{
		"c1": "Created /notes/a.md (2 lines, 11 bytes).",
		"c4": "Deleted directory /old: 2 files removed.",
		"c5": "/notes/a.md (11 bytes)\n/notes/b.md (6 bytes)",
		"c6": "/notes/a.md: 2\n/notes/b.md: 1",
	} {
		if results[id].Content != want {
			t.Errorf("%s answered %q, want %q", id, results[id].Content, want)
		}
	}
	if !results["c7"].IsError || !strings.Contains(results["c7"].Content, "does not exist") {
		t.Errorf("c7 = %+v", results["c7"])
	}
}
