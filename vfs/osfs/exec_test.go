package osfs_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/fstools"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/offload"
	"github.com/deepagents-go/deepagents/sandbox"
	"github.com/deepagents-go/deepagents/tool"
	"github.com/deepagents-go/deepagents/vfs"
	"github.com/deepagents-go/deepagents/vfs/osfs"
	"github.com/deepagents-go/deepagents/vfs/vfstest"
)

// runnerForTest is the bubblewrap sandbox when bwrap is installed, else
// the unsandboxed runner: these tests are about the wiring, the sandbox
// package tests the confinement.
func runnerForTest(t *testing.T) *sandbox.Runner {
	t.Helper()
	return runnerWith(t, sandbox.Options{})
}

func runnerWith(t *testing.T, opts sandbox.Options) *sandbox.Runner {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Log("bwrap is not installed: running commands unsandboxed")
		opts.Unsandboxed = true
	}
	r, err := sandbox.New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestShellIsAnExecutor(t *testing.T) {
	dir := t.TempDir()
	f, err := osfs.New(dir, osfs.NoSync())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, ok := vfs.AsExecutor(f); ok {
		t.Fatal("a plain FS should not run commands")
	}
	sh := f.WithRunner(runnerForTest(t))
	ex, ok := vfs.AsExecutor(vfs.Track(sh))
	if !ok {
		t.Fatal("a tracked Shell should be found as an executor")
	}
	res, err := ex.Execute(context.Background(), vfs.ExecRequest{Command: "printf 'from the shell\\n' > made.txt; pwd"})
	if err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(dir)
	if res.ExitCode != 0 || (res.Output != dir+"\n" && res.Output != real+"\n") {
		t.Fatalf("pwd: %+v, want %s", res, dir)
	}
	// The file the command wrote is a file of the backend at once.
	if got, err := sh.Read(context.Background(), "/made.txt"); err != nil || got != "from the shell\n" {
		t.Fatalf("Read after the command: %q, %v", got, err)
	}
	if _, err := f.WithRunner(nil).Execute(context.Background(), vfs.ExecRequest{Command: "true"}); err == nil {
		t.Error("a Shell without a runner should fail")
	}
}

// A Shell is a full backend: the conformance suite passes on it.
func TestShellConformance(t *testing.T) {
	vfstest.Run(t, func(t *testing.T, files map[string]string) vfs.Backend {
		dir := t.TempDir()
		for p, c := range files {
			full := filepath.Join(dir, filepath.FromSlash(p[1:]))
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		f, err := osfs.New(dir, osfs.NoSync(), osfs.NoSweep())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f.WithRunner(nil)
	})
}

// Through the agent loop: execute runs in the root, the file tools see
// what it wrote in the next step, a failing command is a normal result, and
// output over the offload threshold is saved to a file like any tool's.
func TestExecuteThroughAgent(t *testing.T) {
	dir := t.TempDir()
	f, err := osfs.New(dir, osfs.NoSync())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	call := func(id, name, args string) scripted.StepCall {
		return scripted.StepCall{ID: id, Name: name, Args: json.RawMessage(args)}
	}
	model := scripted.New(scripted.Script{"parent": {Steps: []scripted.Step{
		{ToolCalls: []scripted.StepCall{call("c1", "execute", `{"command":"mkdir -p out && echo hello > out/made.txt && cat out/made.txt"}`)}},
		{ToolCalls: []scripted.StepCall{
			call("c2", "read_file", `{"file_path":"/out/made.txt"}`),
			call("c3", "execute", `{"command":"seq 1 60000; echo failing >&2; exit 3"}`),
		}},
		{Content: "done"},
	}}}, scripted.Options{NoUsage: true})
	off, err := offload.New(offload.Defaults())
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{Model: model, Backend: f.WithRunner(runnerForTest(t)),
		Tools: append(fstools.Tools(), fstools.Execute(fstools.ExecuteOptions{})), Middleware: []agent.Middleware{off}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Invoke(context.Background(), agent.Prompt("go"))
	if err != nil {
		t.Fatal(err)
	}
	results := map[string]llm.Message{}
	for _, m := range res.State.Messages {
		if m.Role == llm.RoleTool {
			results[m.ToolCallID] = m
		}
	}
	if got := results["c1"]; got.IsError || got.Content != "hello\n[exit code 0]" {
		t.Errorf("c1 = %q (error %v)", got.Content, got.IsError)
	}
	if got := results["c2"]; got.IsError || !strings.Contains(got.Content, "hello") {
		t.Errorf("read_file after execute = %q", got.Content)
	}
	c3 := results["c3"]
	if c3.IsError || !strings.HasPrefix(c3.Content, "[This result of execute was too large to show here") || !strings.Contains(c3.Content, "/large_tool_results/c3") {
		t.Fatalf("c3 was not offloaded: %.300q", c3.Content)
	}
	saved, err := os.ReadFile(filepath.Join(dir, "large_tool_results", "c3"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(saved)
	if !strings.HasPrefix(text, "1\n2\n3\n") || !strings.HasSuffix(text, "failing\n[output cut: 248902 bytes left out in the middle; redirect the output to a file and read it with read_file to see all of it]\n[exit code 3]") ||
		!strings.Contains(text, "\n[... 248902 bytes of output omitted ...]\n") {
		t.Errorf("saved result: %.200q ... %.300q", text, text[max(0, len(text)-300):])
	}
	if len(text) > 101_000 {
		t.Errorf("the saved result has %d bytes; the output cap is 100,000", len(text))
	}
}

// A Shell's commands cannot make the paths its runner protects: what a
// command creates there is gone when the execute tool answers, and the
// answer, an error result, says so after the command's own output.
func TestExecuteProtected(t *testing.T) {
	dir := t.TempDir()
	f, err := osfs.New(dir, osfs.NoSync())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := os.WriteFile(filepath.Join(dir, "AGENTS.md"), []byte("be careful"), 0o644); err != nil {
		t.Fatal(err)
	}
	runner := runnerWith(t, sandbox.Options{Protected: []string{".mcp.json", "**/AGENTS.md"}})
	sh := f.WithRunner(runner)
	res, err := fstools.Execute(fstools.ExecuteOptions{}).Run(context.Background(), &tool.Env{Files: vfs.Track(sh)},
		json.RawMessage(`{"command":"echo '{}' > .mcp.json; mkdir -p sub && echo evil > sub/AGENTS.md; echo evil >> AGENTS.md; echo made > ok.txt; echo done"}`))
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(res.Content, "done\n[the command created .mcp.json, sub/AGENTS.md at protected paths; they were removed") ||
		!strings.HasSuffix(res.Content, "[exit code 0]") {
		t.Errorf("result %q (error %v)", res.Content, res.IsError)
	}
	for _, p := range []string{".mcp.json", "sub/AGENTS.md"} {
		if _, err := os.Lstat(filepath.Join(dir, p)); err == nil {
			t.Errorf("%s is still there", p)
		}
	}
	if got, _ := sh.Read(context.Background(), "/ok.txt"); got != "made\n" {
		t.Errorf("ok.txt = %q", got)
	}
	// The existing AGENTS.md is read-only in the sandbox; without one (the
	// fallback when bwrap is missing) nothing stops the append.
	if data, _ := os.ReadFile(filepath.Join(dir, "AGENTS.md")); string(data) != "be careful" && runner.Sandboxed() {
		t.Errorf("AGENTS.md = %q", data)
	}
}
