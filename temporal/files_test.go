package temporal_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/fstools"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/runner"
	"github.com/deepagents-go/deepagents/subagent"
	"github.com/deepagents-go/deepagents/temporal"
	"github.com/deepagents-go/deepagents/vfs"
	"github.com/deepagents-go/deepagents/vfs/osfs"
)

type shellIn struct{ dir string }

func (s shellIn) Run(ctx context.Context, _ string, req vfs.ExecRequest) (vfs.ExecResult, error) {
	cmd := exec.CommandContext(ctx, "sh", "-c", req.Command)
	cmd.Dir = s.dir
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code, err = ee.ExitCode(), nil
	}
	return vfs.ExecResult{Output: string(out), ExitCode: code}, err
}

// dirCase is an agent whose files are a directory of the workers: it
// writes a file, copies it with a command, reads the copy and ends.
func dirCase(t *testing.T, reg *temporal.Registry, dir string) *agent.Agent {
	t.Helper()
	m := reg.Model("scripted", scripted.New(scripted.Script{"coder": {Steps: []scripted.Step{
		step("", tc("write_file", `{"file_path":"/a.txt","content":"hello from the workflow"}`)),
		step("", tc("execute", `{"command":"cp a.txt b.txt"}`)),
		step("", scripted.StepCall{ID: "r1", Name: "read_file", Args: json.RawMessage(`{"file_path":"/b.txt"}`)},
			scripted.StepCall{ID: "r2", Name: "read_file", Args: json.RawMessage(`{"file_path":"/missing.txt"}`)}),
		step("copied"),
		step("again"),
	}}}, scripted.Options{}))
	var backend vfs.Backend
	if dir != "" {
		fs, err := osfs.New(dir)
		if err != nil {
			t.Fatal(err)
		}
		backend = reg.Directory(dir, fs.WithRunner(shellIn{dir}))
	}
	tools := append(fstools.Tools(), fstools.Execute(fstools.ExecuteOptions{}))
	a := mustAgent(t, agent.Config{Name: "coder", Model: m, Tools: tools, Backend: backend})
	if err := reg.Agent("coder", a); err != nil {
		t.Fatal(err)
	}
	return a
}

// An agent on a directory of the workers runs its file operations and its
// commands as activities: the files are on the disk, the command ran
// there, a missing file is reported to the model as missing, and the
// thread's input record says which directory it works on.
func TestAgentOnADirectoryRunsItsFilesAsActivities(t *testing.T) {
	dir := t.TempDir()
	reg := temporal.NewRegistry()
	reg.Store = openStore(t)
	dirCase(t, reg, dir)
	env := newEnv(t, reg)
	var mu sync.Mutex
	ops := map[string]int{}
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		if info.ActivityType.Name == temporal.FilesActivity {
			mu.Lock()
			ops[info.ActivityType.Name]++
			mu.Unlock()
		}
	})
	env.ExecuteWorkflow(temporal.RunAgentWorkflow, temporal.RunInput{Agent: "coder", Thread: "D", Input: "copy it"})
	s := summary(t, env)
	if s.Status != agent.StatusOK || s.Text != "copied" {
		t.Fatalf("summary %+v", s)
	}
	for name, want := range map[string]string{"a.txt": "hello from the workflow", "b.txt": "hello from the workflow"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(b) != want {
			t.Errorf("%s on disk: %q %v", name, b, err)
		}
	}
	if ops[temporal.FilesActivity] < 4 {
		t.Errorf("%d files activities, want the write, the command and the reads", ops[temporal.FilesActivity])
	}
	cp, err := reg.Store.Get(context.Background(), checkpoint.Ref{ThreadID: "D"})
	if err != nil {
		t.Fatal(err)
	}
	var read, missing string
	for _, m := range cp.State.Messages {
		switch m.ToolCallID {
		case "r1":
			read = m.Content
		case "r2":
			missing = m.Content
		}
	}
	if !strings.Contains(read, "hello from the workflow") {
		t.Errorf("the read of the copy answered %q", read)
	}
	if !strings.Contains(strings.ToLower(missing), "not found") && !strings.Contains(strings.ToLower(missing), "does not exist") && !strings.Contains(strings.ToLower(missing), "no such") {
		t.Errorf("the read of a missing file answered %q", missing)
	}
	inputs, err := reg.Store.List(context.Background(), checkpoint.ListOptions{ThreadID: "D", Metadata: map[string]string{"source": "input"}})
	if err != nil || len(inputs) != 1 {
		t.Fatalf("input records %v %v", inputs, err)
	}
	if root, known := runner.TurnRoot(inputs[0].Metadata); !known || root != dir {
		t.Errorf("the turn's root is %q (known %v), want %s", root, known, dir)
	}
}

// A worker that has not the directory fails the files activity without
// retrying, with an error that names the directory; the run ends with it.
func TestADirectoryTheWorkerLacksIsRefused(t *testing.T) {
	dir := t.TempDir()
	reg := temporal.NewRegistry()
	dirCase(t, reg, dir)
	reg.Store = openStore(t)
	other := temporal.NewRegistry() // a worker that registered no directory
	env := newEnv(t, reg)
	env.RegisterActivityWithOptions(other.Files, activity.RegisterOptions{Name: temporal.FilesActivity})
	env.ExecuteWorkflow(temporal.RunAgentWorkflow, temporal.RunInput{Agent: "coder", Thread: "X", Input: "copy it"})
	summary(t, env)
	if _, err := os.Stat(filepath.Join(dir, "a.txt")); err == nil {
		t.Error("a.txt was written by a worker without the directory")
	}
	// The write's error went back to the model.
	cp, err := reg.Store.Get(context.Background(), checkpoint.Ref{ThreadID: "X"})
	if err != nil {
		t.Fatal(err)
	}
	var answer string
	for _, m := range cp.State.Messages {
		if m.Name == "write_file" {
			answer = m.Content
		}
	}
	if !strings.Contains(answer, "this worker has no directory "+dir) {
		t.Errorf("the write answered %q", answer)
	}
}

// A thread the deepagents command ran on a directory runs on a worker only
// with an agent on the same directory; a thread whose files are in its
// state, only with one whose files are in memory.
func TestAThreadRunsOnlyOnItsDirectory(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name, flags, agentDir, refusal string
	}{
		{"elsewhere", `[["root","/elsewhere"]]`, dir, "works on the directory /elsewhere, and this worker's agent on " + dir},
		{"in memory on the laptop", `[["model","x"]]`, dir, "keeps its files in its own state"},
		{"on a directory, in memory here", `[["root","` + dir + `"]]`, "", "keeps its files in the run's memory"},
		{"same directory", `[["root","` + dir + `"]]`, dir, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			store := openStore(t)
			// The laptop's turn, with its flags.
			lap := temporal.NewRegistry()
			la := dirCase(t, lap, "")
			if _, err := la.Invoke(t.Context(), agent.Prompt("hi"), runner.Checkpoints(store, "T", runner.WithMetadata(map[string]string{runner.FlagsKey: c.flags}))); err != nil {
				t.Fatal(err)
			}
			reg := temporal.NewRegistry()
			reg.Store = store
			dirCase(t, reg, c.agentDir)
			env := newEnv(t, reg)
			env.ExecuteWorkflow(temporal.RunAgentWorkflow, temporal.RunInput{Agent: "coder", Thread: "T", Input: "again"})
			s := summary(t, env)
			if c.refusal == "" {
				if s.Status == agent.StatusError {
					t.Fatalf("refused: %s", s.Error)
				}
				return
			}
			if s.Status != agent.StatusError || !strings.Contains(s.Error, c.refusal) {
				t.Errorf("status %s, error %q; want it refused with %q", s.Status, s.Error, c.refusal)
			}
		})
	}
}

// A subagent of an agent on a directory runs as a child workflow on the
// same directory: what it writes is on the disk, not copied back, and the
// parent's run counts it as changed.
func TestSubagentOnADirectoryWritesThroughIt(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "seed.txt"), []byte("seed"), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := temporal.NewRegistry()
	reg.Store = openStore(t)
	m := reg.Model("scripted", scripted.New(scripted.Script{
		"coder": {Steps: []scripted.Step{
			step("", tc("task", `{"description":"copy the seed","subagent_type":"general-purpose"}`)),
			step("delegated"),
		}},
		"general-purpose": {Steps: []scripted.Step{
			step("", tc("read_file", `{"file_path":"/seed.txt"}`), tc("write_file", `{"file_path":"/child.txt","content":"from the child"}`)),
			step("", tc("execute", `{"command":"cp seed.txt copy.txt"}`)),
			step("copied"),
		}},
	}, scripted.Options{}))
	fs, err := osfs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	backend := reg.Directory(dir, fs.WithRunner(shellIn{dir}))
	tools := append(fstools.Tools(), fstools.Execute(fstools.ExecuteOptions{}))
	task, err := subagent.NewTask(subagent.Config{Model: m, BaseTools: tools, Subagents: []subagent.Spec{subagent.GeneralPurpose()}})
	if err != nil {
		t.Fatal(err)
	}
	a := mustAgent(t, agent.Config{Name: "coder", Model: m, Tools: append(tools, task), Backend: backend})
	if err := reg.Agent("coder", a); err != nil {
		t.Fatal(err)
	}
	env := newEnv(t, reg)
	children := 0
	env.SetOnChildWorkflowStartedListener(func(*workflow.Info, workflow.Context, converter.EncodedValues) { children++ })
	env.ExecuteWorkflow(temporal.RunAgentWorkflow, temporal.RunInput{Agent: "coder", Thread: "S", Input: "delegate"})
	s := summary(t, env)
	if s.Status != agent.StatusOK || len(s.Children) != 1 || s.Children[0].Status != agent.StatusOK || s.Children[0].Text != "copied" {
		t.Fatalf("summary %+v", s)
	}
	if children != 1 {
		t.Errorf("%d child workflows, want the subagent's", children)
	}
	for name, want := range map[string]string{"child.txt": "from the child", "copy.txt": "seed"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(b) != want {
			t.Errorf("%s on disk: %q %v", name, b, err)
		}
	}
	if !slices.Contains(s.Changed, "/child.txt") {
		t.Errorf("the parent's run changed %v, want the child's write counted", s.Changed)
	}
}

// A file too large for one activity's result is refused in the activity,
// and the error of the edit that reads it whole says so to the model.
func TestAFileTooLargeForAnActivityIsRefused(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "big.txt"), []byte(bigText("big", 4<<20)), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := temporal.NewRegistry()
	reg.Store = openStore(t)
	m := reg.Model("scripted", scripted.New(scripted.Script{"coder": {Steps: []scripted.Step{
		step("", tc("edit_file", `{"file_path":"/big.txt","old_string":"big","new_string":"small"}`)),
		step("read"),
	}}}, scripted.Options{}))
	fs, err := osfs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	a := mustAgent(t, agent.Config{Name: "coder", Model: m, Tools: fstools.Tools(), Backend: reg.Directory(dir, fs)})
	if err := reg.Agent("coder", a); err != nil {
		t.Fatal(err)
	}
	env := newEnv(t, reg)
	env.ExecuteWorkflow(temporal.RunAgentWorkflow, temporal.RunInput{Agent: "coder", Thread: "B", Input: "read it"})
	if s := summary(t, env); s.Status != agent.StatusOK {
		t.Fatalf("summary %+v", s)
	}
	cp, err := reg.Store.Get(context.Background(), checkpoint.Ref{ThreadID: "B"})
	if err != nil {
		t.Fatal(err)
	}
	var answer string
	for _, m := range cp.State.Messages {
		if m.Name == "edit_file" {
			answer = m.Content
		}
	}
	if !strings.Contains(answer, "over the") || !strings.Contains(answer, "one activity may return") {
		t.Errorf("the edit answered %.300q", answer)
	}
}
