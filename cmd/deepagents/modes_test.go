package main

import (
	"context"
	"fmt"
	"github.com/deepagents-go/deepagents/fstools"
	"github.com/deepagents-go/deepagents/vfs"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/deepagents-go/deepagents/approve"
	ot "github.com/deepagents-go/deepagents/providers/openai/openaitest"
	"github.com/deepagents-go/deepagents/runner"
)

// classifierServer answers the agent as promptServer does (the calls its
// first user message lists) and the classifier of auto mode with safe.
func classifierServer(t *testing.T, safe bool) (*ot.Server, *atomic.Int32) {
	judged := &atomic.Int32{}
	return ot.NewServer(t, func(r *ot.Request) ot.Reply {
		if strings.Contains(r.System(), "You check one tool call") {
			judged.Add(1)
			if safe {
				return ot.Text(`{"safe": true, "reason": "it serves the request"}`)
			}
			return ot.Text(`{"safe": false, "reason": "it touches the network"}`)
		}
		if r.Round() > 0 {
			return ot.Text("done")
		}
		var calls []ot.Call
		for i, line := range strings.Split(strings.TrimSpace(r.FirstUser()), "\n") {
			name, args, _ := strings.Cut(line, " ")
			calls = append(calls, ot.Call{ID: fmt.Sprintf("c%d", i+1), Name: name, Args: args})
		}
		return ot.Tools(calls...)
	}), judged
}

// --approval-mode and approval_mode choose who decides on gated calls;
// the flag wins over the config.
func TestApprovalModeByFlagAndConfig(t *testing.T) {
	srv := gatedServer(t)
	_, home := runEnv(t, srv)
	run := func(extra ...string) (int, string) {
		t.Helper()
		args := append([]string{"run", "-p", "write it", "--model", "openai:gpt-test", "--interrupt-on", "write_file", "--output", "json"}, extra...)
		code, _, errs := runCLI(t, args...)
		return code, errs
	}
	if code, errs := run(); code != exitInterrupted {
		t.Fatalf("manual: exit %d: %s", code, errs)
	}
	if code, errs := run("--approval-mode", "accept-edits"); code != exitOK {
		t.Fatalf("accept-edits: exit %d: %s", code, errs)
	}
	writeFileAt(t, filepath.Join(home, ".deepagents", "config.toml"), "approval_mode = \"accept-edits\"\n")
	if code, errs := run(); code != exitOK {
		t.Fatalf("accept-edits from the config: exit %d: %s", code, errs)
	}
	if code, errs := run("--approval-mode", "manual"); code != exitInterrupted {
		t.Fatalf("--approval-mode manual over the config: exit %d: %s", code, errs)
	}
	if code, errs := run("--approval-mode", "fast"); code != exitUsage || !strings.Contains(errs, `approval mode "fast" is not one of manual, accept-edits, auto, yolo`) {
		t.Fatalf("unknown mode: exit %d: %s", code, errs)
	}
	// A project file may not loosen the user's choice.
	writeFileAt(t, "deepagents.toml", "approval_mode = \"yolo\"\n")
	if code, errs := run(); code != exitUsage || !strings.Contains(errs, "approval_mode \"yolo\" can only be set in your own config file") {
		t.Fatalf("project yolo: exit %d: %s", code, errs)
	}
}

// Yolo is refused without a sandbox and said loudly with one.
func TestYoloNeedsASandbox(t *testing.T) {
	srv := gatedServer(t)
	project, _ := runEnv(t, srv)
	code, _, errs := runCLI(t, "run", "-p", "write it", "--model", "openai:gpt-test", "--root", project, "--no-sandbox", "--approval-mode", "yolo")
	if code != exitUsage || !strings.Contains(errs, "approval mode yolo needs a sandbox") {
		t.Fatalf("yolo with --no-sandbox: exit %d: %s", code, errs)
	}
	hideBwrap(t)
	code, _, errs = runCLI(t, "run", "-p", "write it", "--model", "openai:gpt-test", "--root", project, "--approval-mode", "yolo")
	if code != exitUsage || !strings.Contains(errs, "approval mode yolo needs a sandbox") {
		t.Fatalf("yolo with no sandbox to run in: exit %d: %s", code, errs)
	}
	// In memory, it runs, and says so even with --quiet.
	code, _, errs = runCLI(t, "run", "-p", "write it", "--model", "openai:gpt-test", "--interrupt-on", "write_file", "--approval-mode", "yolo", "--quiet")
	if code != exitOK || !strings.Contains(errs, "WARNING: approval mode yolo: NO CALL ASKS FOR APPROVAL") {
		t.Fatalf("yolo in memory: exit %d: %s", code, errs)
	}
}

// The user's memory, a protected place, asks in every mode, yolo
// included.
func TestProtectedPlacesAskInEveryMode(t *testing.T) {
	srv, judged := classifierServer(t, true)
	_, home := runEnv(t, srv)
	mem := filepath.Join(home, ".deepagents", "AGENTS.md")
	writeFileAt(t, mem, "I like tea.\n")
	prompt := callLine("edit_file", map[string]any{"file_path": "/memory/user/AGENTS.md", "old_string": "tea", "new_string": "coffee"}) + "\n" +
		callLine("write_file", map[string]any{"file_path": "/notes.md", "content": "x"})
	for _, mode := range []string{"manual", "accept-edits", "auto", "yolo"} {
		t.Run(mode, func(t *testing.T) {
			code, out, errs := runCLI(t, "run", "-p", prompt, "--model", "openai:gpt-test", "--interrupt-on", "write_file,edit_file",
				"--approval-mode", mode, "--output", "json")
			if code != exitInterrupted {
				t.Fatalf("exit %d: %s\n%s", code, errs, out)
			}
			sum := decode(t, out)
			want := 1 // the memory edit
			if mode == "manual" {
				want = 2
			}
			if len(sum.Interrupts) != want || !strings.Contains(sum.Interrupts[0].Reason, "your user memory") {
				t.Fatalf("interrupts %+v", sum.Interrupts)
			}
			if b, _ := os.ReadFile(mem); string(b) != "I like tea.\n" {
				t.Fatalf("memory changed without approval: %q", b)
			}
		})
	}
	if judged.Load() != 1 {
		t.Errorf("the classifier judged %d calls, want 1 (the note; never the protected edit)", judged.Load())
	}
}

// In auto, the classifier's unsafe verdict asks, with its reason told and
// recorded; threads show lists the mode and the decisions.
func TestAutoModeThroughTheCLI(t *testing.T) {
	srv, judged := classifierServer(t, false)
	runEnv(t, srv)
	prompt := callLine("write_file", map[string]any{"file_path": "/notes.md", "content": "x"})
	code, out, errs := runCLI(t, "run", "-p", prompt, "--model", "openai:gpt-test", "--interrupt-on", "write_file", "--approval-mode", "auto", "--output", "json")
	if code != exitInterrupted || judged.Load() != 1 {
		t.Fatalf("exit %d, judged %d: %s", code, judged.Load(), errs)
	}
	if !strings.Contains(errs, "the classifier judged it unsafe: it touches the network") {
		t.Errorf("stderr lacks the verdict:\n%s", errs)
	}
	sum := decode(t, out)
	code, _, errs = runCLI(t, "resume", "--thread", sum.ThreadID, "--approve", "c1", "--output", "json")
	if code != exitOK {
		t.Fatalf("resume: exit %d: %s", code, errs)
	}
	code, shown, errs := runCLI(t, "threads", "show", sum.ThreadID)
	if code != exitOK {
		t.Fatalf("threads show: exit %d: %s", code, errs)
	}
	for _, want := range []string{"approval mode: auto", "auto write_file c1: asked by classifier (it touches the network)", "write_file c1: approve by person"} {
		if !strings.Contains(shown, want) {
			t.Errorf("threads show lacks %q:\n%s", want, shown)
		}
	}
}

// /mode switches an interactive session's mode for the calls that follow.
func TestModeCommandSwitchesTheSession(t *testing.T) {
	srv := gatedServer(t)
	runEnv(t, srv)
	f := runFlags{model: "openai:gpt-test", output: "text", set: map[string]bool{}, gates: map[string]approve.Policy{"write_file": {}}}
	var errb strings.Builder
	s, err := assemble(t.Context(), f, &errb)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	var out strings.Builder
	sess := &session{setup: s, flags: f, stdout: &out, stderr: &errb, askAtPrompt: true}
	input := "/mode\n/mode careful\n/mode yolo\n/mode accept-edits\nwrite it\n"
	if code := sess.interactive(t.Context(), strings.NewReader(input)); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	text := errb.String()
	for _, want := range []string{"approval mode: manual. The modes:", "accept-edits  File edits pass", `/mode: approval mode "careful" is not one of`,
		"approval mode: yolo, from the next call on.", "approval mode: accept-edits, from the next call on."} {
		if !strings.Contains(text, want) {
			t.Errorf("stderr lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "⏸ Approval") {
		t.Errorf("a file edit asked in accept-edits:\n%s", text)
	}
	rs, err := runner.LoadRunState(t.Context(), s.saver, sess.thread, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := rs.Files["/a.md"]; !ok {
		t.Errorf("/a.md was not written")
	}
	rec, ok := approve.ModeRecordOf(rs.Values)
	if !ok || rec.Mode != approve.AcceptEdits || len(rec.Calls) != 1 || rec.Calls[0].Outcome != "passed" || rec.Calls[0].By != "mode" {
		t.Errorf("record %+v", rec)
	}
}

// serve gives each thread the mode of --approval-mode, and a run's
// config.configurable.approval_mode overrides it for its thread.
func TestServeApprovalModes(t *testing.T) {
	srv := gatedServer(t)
	runEnv(t, srv)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	base, _ := serveInProcess(t, ctx, "--model", "openai:gpt-test", "--interrupt-on", "write_file", "--addr", "127.0.0.1:0",
		"--db", "sqlite:"+filepath.Join(t.TempDir(), "s.db"), "--approval-mode", "accept-edits")
	wait := func(thread, extra string) string {
		t.Helper()
		resp := call(t, "POST", base+"/threads/"+thread+"/runs/wait",
			`{"assistant_id":"agent","if_not_exists":"create","input":{"messages":[{"role":"user","content":"write it"}]}`+extra+`}`)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("thread %s: %d %s", thread, resp.StatusCode, b)
		}
		return string(b)
	}
	if out := wait("a", ""); strings.Contains(out, "__interrupt__") || !strings.Contains(out, `"/a.md"`) {
		t.Errorf("the server's accept-edits: %s", out)
	}
	if out := wait("m", `,"config":{"configurable":{"approval_mode":"manual"}}`); !strings.Contains(out, "__interrupt__") {
		t.Errorf("a run in manual did not stop at the write: %s", out)
	}
	resp := call(t, "GET", base+"/info", "")
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(b), `"approval_mode":"accept-edits"`) || !strings.Contains(string(b), `"approval_modes":true`) {
		t.Errorf("/info: %s", b)
	}
}

// With --root and the sandbox on, yolo runs: a plain edit and commands
// pass without asking, and an agent file of the project still waits.
func TestYoloOnRootWithTheSandbox(t *testing.T) {
	needBwrap(t)
	srv := promptServer(t)
	project, _ := runEnv(t, srv)
	controlProject(t, project)
	prompt := callLine("write_file", map[string]any{"file_path": "/notes.md", "content": "x"}) + "\n" +
		callLine("execute", map[string]any{"command": "echo hi"}) + "\n" +
		callLine("write_file", map[string]any{"file_path": "/.deepagents/agents/evil.md", "content": "---\ndescription: x\n---\nx\n"})
	code, out, errs := runCLI(t, "run", "-p", prompt, "--model", "openai:gpt-test", "--root", project, "--interrupt-on", "write_file",
		"--approval-mode", "yolo", "--output", "json")
	if code != exitInterrupted {
		t.Fatalf("exit %d: %s\n%s", code, errs, out)
	}
	if !strings.Contains(errs, "WARNING: approval mode yolo") {
		t.Errorf("yolo not said:\n%s", errs)
	}
	sum := decode(t, out)
	if len(sum.Interrupts) != 1 || sum.Interrupts[0].CallID != "c3" || !strings.Contains(sum.Interrupts[0].Reason, "an agent file") {
		t.Fatalf("interrupts %+v, want only the agent file", sum.Interrupts)
	}
	if b, err := os.ReadFile(filepath.Join(project, "notes.md")); err != nil || string(b) != "x" {
		t.Errorf("notes.md: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(project, ".deepagents", "agents", "evil.md")); err == nil {
		t.Error("the agent file was written without approval")
	}
}

// MCP tools run on the host and a sandbox with the network reaches past
// itself: neither is confined, so yolo is refused with them.
func TestConfinedOnlyWithoutMCPOrNetwork(t *testing.T) {
	if !isConfined("", nil, fstools.ExecuteOptions{}, false) {
		t.Errorf("files in memory, no MCP: not confined")
	}
	if isConfined("", nil, fstools.ExecuteOptions{}, true) {
		t.Errorf("MCP servers configured: confined")
	}
	sandboxed := execBackend{vfs.NewMemory(nil)}
	if !isConfined("/p", sandboxed, fstools.ExecuteOptions{}, false) {
		t.Errorf("--root under the sandbox: not confined")
	}
	if isConfined("/p", sandboxed, fstools.ExecuteOptions{Network: true}, false) {
		t.Errorf("--root under the sandbox with the network: confined")
	}
}

// execBackend is files that can run commands, as a sandboxed --root is.
type execBackend struct{ vfs.Backend }

func (execBackend) Execute(context.Context, vfs.ExecRequest) (vfs.ExecResult, error) {
	return vfs.ExecResult{}, nil
}
