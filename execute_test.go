package deepagents_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/fstools"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/subagent"
	"github.com/deepagents-go/deepagents/tool"
	"github.com/deepagents-go/deepagents/vfs"
	"github.com/deepagents-go/deepagents/vfs/osfs"
)

type echoRunner struct{}

func (echoRunner) Run(ctx context.Context, dir string, req vfs.ExecRequest) (vfs.ExecResult, error) {
	return vfs.ExecResult{Output: req.Command + "\n"}, nil
}

func toolNames(specs []llm.ToolSpec) []string {
	var out []string
	for _, s := range specs {
		out = append(out, s.Name)
	}
	return out
}

// execute is bound, after the task tool, for the agent and its subagents
// exactly when the backend can run commands.
func TestExecuteBoundForExecutors(t *testing.T) {
	f, err := osfs.New(t.TempDir(), osfs.NoSweep())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := scripted.New(scripted.Script{}, scripted.Options{})
	for _, tc := range []struct {
		name    string
		backend vfs.Backend
		want    bool
	}{
		{"in-memory files", nil, false},
		{"a plain directory", f, false},
		{"a directory with a runner", f.WithRunner(echoRunner{}), true},
	} {
		a, err := deepagents.New(deepagents.Config{Model: m, Backend: tc.backend,
			Subagents: []subagent.Spec{{Name: "worker", Description: "works", Tools: nil}}})
		if err != nil {
			t.Fatal(err)
		}
		names := toolNames(a.ToolSpecs())
		if got := slices.Contains(names, "execute"); got != tc.want {
			t.Errorf("%s: execute bound = %v, want %v (tools %v)", tc.name, got, tc.want, names)
		}
		if names[7] != "task" {
			t.Errorf("%s: the task tool moved: %v", tc.name, names)
		}
		if tc.want && names[8] != "execute" {
			t.Errorf("%s: execute should follow task: %v", tc.name, names)
		}
		task := a.Tools()[7].(*subagent.Task)
		for _, sub := range []string{"general-purpose", "worker"} {
			child, ok := task.Agent(sub)
			if !ok {
				t.Fatalf("no subagent %s", sub)
			}
			if got := slices.Contains(toolNames(child.ToolSpecs()), "execute"); got != tc.want {
				t.Errorf("%s: subagent %s has execute = %v, want %v", tc.name, sub, got, tc.want)
			}
		}
	}
}

// A tool of yours named execute collides with the bound one.
func TestExecuteNameCollision(t *testing.T) {
	f, err := osfs.New(t.TempDir(), osfs.NoSweep())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := scripted.New(scripted.Script{}, scripted.Options{})
	mine := fstools.Execute(fstools.ExecuteOptions{Description: "mine"})
	_, err = deepagents.New(deepagents.Config{Model: m, Backend: f.WithRunner(echoRunner{}), Tools: []tool.Tool{mine}})
	var ce *deepagents.ConfigError
	if !errors.As(err, &ce) || err.Error() != "Tool name(s) execute collide with built-in tools; rename your tools." {
		t.Fatalf("err = %v, want a ConfigError naming execute", err)
	}
	// Without a runner there is no built-in execute, so yours is bound.
	a, err := deepagents.New(deepagents.Config{Model: m, Backend: f, Tools: []tool.Tool{mine}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(toolNames(a.ToolSpecs()), "execute") {
		t.Error("your execute tool is missing")
	}
}
