package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/approve"
	"github.com/deepagents-go/deepagents/fstools"
	ot "github.com/deepagents-go/deepagents/providers/openai/openaitest"
	"github.com/deepagents-go/deepagents/subagent"
	"github.com/deepagents-go/deepagents/vfs"
	"github.com/deepagents-go/deepagents/vfs/osfs"
)

// shellServer asks for one execute call when the tool is offered, then
// answers with what it saw; without the tool it says so.
func shellServer(t *testing.T) *ot.Server {
	return ot.NewServer(t, func(r *ot.Request) ot.Reply {
		if !r.HasTool("execute") {
			return ot.Text("no execute tool")
		}
		if r.Round() == 0 {
			return ot.Tools(ot.Call{ID: "c1", Name: "execute", Args: `{"command":"echo from-the-shell > made.txt; cat made.txt; pwd"}`})
		}
		res, _ := r.ToolResult("c1")
		return ot.Text("saw: " + res.Text())
	})
}

func needBwrap(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		if os.Getenv("DEEPAGENTS_TEST_SANDBOX_REQUIRED") != "" {
			t.Fatal("bubblewrap (bwrap) is not installed, and DEEPAGENTS_TEST_SANDBOX_REQUIRED says the sandbox must be tested")
		}
		t.Skip("bubblewrap (bwrap) is not installed; install Debian's bubblewrap package (CI does)")
	}
}

// hideBwrap makes the sandbox unavailable by leaving bwrap out of PATH.
func hideBwrap(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
}

// With --root and a sandbox, execute asks first; once approved it runs in
// the root and its file is on disk.
func TestExecuteAsksThenRuns(t *testing.T) {
	needBwrap(t)
	srv := shellServer(t)
	runEnv(t, srv)
	root := t.TempDir()
	code, out, errs := runCLI(t, "run", "-p", "make a file", "--model", "openai:gpt-test", "--root", root, "--output", "json")
	if code != exitInterrupted {
		t.Fatalf("exit %d, want %d (waiting): %s\n%s", code, exitInterrupted, errs, out)
	}
	for _, w := range []string{"deepagents: execute: commands run in a bubblewrap sandbox", "no network", "each command waits for your approval (--allow execute to skip that)"} {
		if !strings.Contains(errs, w) {
			t.Errorf("stderr lacks %q:\n%s", w, errs)
		}
	}
	sum := decode(t, out)
	if len(sum.Interrupts) != 1 || sum.Interrupts[0].Tool != "execute" {
		t.Fatalf("interrupts %+v", sum.Interrupts)
	}
	if _, err := os.Stat(filepath.Join(root, "made.txt")); err == nil {
		t.Fatal("the command ran before it was approved")
	}
	code, out, errs = runCLI(t, "resume", "--thread", sum.ThreadID, "--approve", "c1", "--model", "openai:gpt-test", "--root", root, "--output", "json")
	if code != 0 {
		t.Fatalf("resume: exit %d: %s\n%s", code, errs, out)
	}
	done := decode(t, out)
	if want := "saw: from-the-shell\n" + root + "\n[exit code 0]"; done.Result != want {
		t.Errorf("result %q, want %q", done.Result, want)
	}
	if data, err := os.ReadFile(filepath.Join(root, "made.txt")); err != nil || string(data) != "from-the-shell\n" {
		t.Errorf("made.txt: %q %v", data, err)
	}
}

func TestExecuteAllowed(t *testing.T) {
	needBwrap(t)
	srv := shellServer(t)
	runEnv(t, srv)
	root := t.TempDir()
	code, out, errs := runCLI(t, "run", "-p", "go", "--model", "openai:gpt-test", "--root", root, "--allow", "execute")
	if code != 0 || strings.TrimSpace(out) != "saw: from-the-shell\n"+root+"\n[exit code 0]" {
		t.Fatalf("exit %d, out %q: %s", code, out, errs)
	}
	if !strings.Contains(errs, "commands run without asking (--allow execute)") {
		t.Errorf("stderr: %s", errs)
	}
	// --quiet leaves out the notice of a sandboxed execute.
	code, _, errs = runCLI(t, "run", "-p", "go", "--model", "openai:gpt-test", "--root", root, "--allow", "execute", "--quiet")
	if code != 0 || strings.Contains(errs, "execute") {
		t.Errorf("quiet: exit %d, stderr %q", code, errs)
	}
}

// Without a sandbox execute is absent, and the CLI says why and what to
// pass; --no-sandbox brings it back with a warning.
func TestExecuteWithoutSandbox(t *testing.T) {
	srv := shellServer(t)
	runEnv(t, srv)
	hideBwrap(t)
	root := t.TempDir()
	code, out, errs := runCLI(t, "run", "-p", "go", "--model", "openai:gpt-test", "--root", root)
	if code != 0 || strings.TrimSpace(out) != "no execute tool" {
		t.Fatalf("exit %d, out %q: %s", code, out, errs)
	}
	if !strings.Contains(errs, "deepagents: execute is not available: no sandbox available: bubblewrap (bwrap) is not installed") ||
		!strings.Contains(errs, "Pass --no-sandbox to run commands without a sandbox") {
		t.Errorf("stderr: %s", errs)
	}

	code, out, errs = runCLI(t, "run", "-p", "go", "--model", "openai:gpt-test", "--root", root, "--no-sandbox", "--allow", "execute", "--quiet")
	if code != 0 || strings.TrimSpace(out) != "saw: from-the-shell\n"+root+"\n[exit code 0]" {
		t.Fatalf("--no-sandbox: exit %d, out %q: %s", code, out, errs)
	}
	for _, w := range []string{"WARNING: --no-sandbox: execute runs commands UNSANDBOXED in " + root, "WARNING: --allow execute with --no-sandbox",
		"execute: commands run UNSANDBOXED"} {
		if !strings.Contains(errs, w) {
			t.Errorf("stderr lacks %q (warnings show even with --quiet):\n%s", w, errs)
		}
	}
	if data, err := os.ReadFile(filepath.Join(root, "made.txt")); err != nil || string(data) != "from-the-shell\n" {
		t.Errorf("made.txt: %q %v", data, err)
	}
	// The model is told that its commands are not sandboxed.
	reqs := srv.Requests()
	for _, tl := range reqs[len(reqs)-1].Tools {
		if tl.Function.Name == "execute" && !strings.Contains(tl.Function.Description, "NOT in a sandbox") {
			t.Errorf("execute's description: %q", tl.Function.Description)
		}
	}
}

// Without --root there is no execute; the shell flags say they do nothing.
func TestExecuteNeedsRoot(t *testing.T) {
	srv := shellServer(t)
	runEnv(t, srv)
	code, out, errs := runCLI(t, "run", "-p", "go", "--model", "openai:gpt-test", "--allow", "execute")
	if code != 0 || strings.TrimSpace(out) != "no execute tool" {
		t.Fatalf("exit %d, out %q: %s", code, out, errs)
	}
	if !strings.Contains(errs, "there is no execute tool without --root") {
		t.Errorf("stderr: %s", errs)
	}
	if code, _, errs := runCLI(t, "run", "-p", "go", "--model", "openai:gpt-test", "--allow", "write_file"); code != exitUsage || !strings.Contains(errs, `"write_file" cannot be allowed`) {
		t.Errorf("--allow write_file: exit %d: %s", code, errs)
	}
}

// Subagents with gates of their own get execute's gate too (the others
// inherit the agent's); --allow execute adds none.
func TestExecuteGatesForSubagents(t *testing.T) {
	needBwrap(t)
	f, err := osfs.New(t.TempDir(), osfs.NoSweep())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, allow := range []bool{false, true} {
		specs := []subagent.Spec{{Name: "gated", InterruptOn: map[string]approve.Policy{"write_file": {}}}, {Name: "inherits"},
			{Name: "no-execute", ExactTools: true, Tools: fstools.Tools()[:1], InterruptOn: map[string]approve.Policy{}}}
		mine := map[string]approve.Policy{"edit_file": {}}
		var errb strings.Builder
		b, gates, _, err := wireShell(t.Context(), shellOptions{allowExecute: allow}, false, f, mine, specs, nil, &errb)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := b.(vfs.Executor); !ok {
			t.Fatalf("the backend %T cannot run commands", b)
		}
		_, agentGate := gates["execute"]
		_, subGate := specs[0].InterruptOn["execute"]
		if agentGate == allow || subGate == allow || specs[1].InterruptOn != nil {
			t.Errorf("allow=%v: agent gates %v, subagent gates %v, inheriting %v", allow, gates, specs[0].InterruptOn, specs[1].InterruptOn)
		}
		if len(specs[2].InterruptOn) != 0 {
			t.Errorf("allow=%v: a subagent without execute got gates %v", allow, specs[2].InterruptOn)
		}
		if _, ok := gates["edit_file"]; !ok || len(mine) != 1 {
			t.Errorf("allow=%v: the given gates were lost or changed: %v, %v", allow, gates, mine)
		}
	}
}
