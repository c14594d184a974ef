package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/deepagents-go/deepagents/acp"
	ot "github.com/deepagents-go/deepagents/providers/openai/openaitest"
)

// driveOut is what acp/testdata/client/drive.mjs prints.
type driveOut struct {
	ClientProtocolVersion int `json:"clientProtocolVersion"`
	Initialize            struct {
		ProtocolVersion   int `json:"protocolVersion"`
		AgentCapabilities struct {
			LoadSession bool `json:"loadSession"`
		} `json:"agentCapabilities"`
	} `json:"initialize"`
	SessionID string      `json:"sessionId"`
	Steps     []driveStep `json:"steps"`
}

type driveStep struct {
	Op          string            `json:"op"`
	Updates     []json.RawMessage `json:"updates"`
	Permissions []struct {
		ToolCall struct {
			ToolCallID string `json:"toolCallId"`
			Kind       string `json:"kind"`
			Status     string `json:"status"`
		} `json:"toolCall"`
		Options []string `json:"options"`
	} `json:"permissions"`
	Response json.RawMessage `json:"response"`
	Error    *struct {
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// update is the part of a session update the tests look at.
type update struct {
	Kind    string `json:"sessionUpdate"`
	Content json.RawMessage
	ID      string `json:"toolCallId"`
	Status  string `json:"status"`
	Title   string `json:"title"`
	Entries []struct {
		Content, Status string
	} `json:"entries"`
}

func (s driveStep) updates(t *testing.T) []update {
	t.Helper()
	out := make([]update, len(s.Updates))
	for i, raw := range s.Updates {
		if err := json.Unmarshal(raw, &out[i]); err != nil {
			t.Fatalf("update %s: %v", raw, err)
		}
	}
	return out
}

// text is the text of the updates of kind (agent_message_chunk, ...).
func (s driveStep) text(t *testing.T, kind string) string {
	var b strings.Builder
	for _, u := range s.updates(t) {
		if u.Kind != kind {
			continue
		}
		var c struct{ Text string }
		_ = json.Unmarshal(u.Content, &c)
		b.WriteString(c.Text)
	}
	return b.String()
}

func (s driveStep) stopReason(t *testing.T) string {
	t.Helper()
	if s.Error != nil {
		t.Fatalf("%s failed: %s %s", s.Op, s.Error.Message, s.Error.Data)
	}
	var r struct{ StopReason string }
	if err := json.Unmarshal(s.Response, &r); err != nil {
		t.Fatalf("%s: response %s: %v", s.Op, s.Response, err)
	}
	return r.StopReason
}

// statuses are the statuses a tool call went through, in order.
func (s driveStep) statuses(t *testing.T, id string) []string {
	var out []string
	for _, u := range s.updates(t) {
		if (u.Kind == "tool_call" || u.Kind == "tool_call_update") && u.ID == id && u.Status != "" {
			out = append(out, u.Status)
		}
	}
	return out
}

// nodeClient returns node and the client's directory, or skips (fails
// when DEEPAGENTS_TEST_NODE_REQUIRED is set) when either is missing.
func nodeClient(t *testing.T) (string, string) {
	skip := t.Skip
	if os.Getenv("DEEPAGENTS_TEST_NODE_REQUIRED") != "" {
		skip = t.Fatal
	}
	node, err := exec.LookPath("node")
	if err != nil {
		skip("node is not installed; CI runs this test (install Node.js, then npm ci in acp/testdata/client)")
	}
	dir, err := filepath.Abs(filepath.Join("..", "..", "acp", "testdata", "client"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@agentclientprotocol", "sdk", "package.json")); err != nil {
		skip("the ACP TypeScript SDK is not installed; run `npm ci` in acp/testdata/client (CI does)")
	}
	return node, dir
}

// drive runs drive.mjs with steps against a new `deepagents acp` process
// (this test binary as the command) on db, in cwd.
func drive(t *testing.T, db, cwd string, steps []map[string]any, extra ...string) driveOut {
	t.Helper()
	node, dir := nodeClient(t)
	js, err := json.Marshal(steps)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	args := append([]string{"drive.mjs", os.Args[0], cwd, string(js), "-test.run=^TestMainChildProcess$", "--", "acp", "--demo", "--db", db}, extra...)
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "DEEPAGENTS_MAIN_CHILD=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node drive.mjs: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	var out driveOut
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("drive.mjs printed %q: %v\nstderr: %s", stdout.String(), err, stderr.String())
	}
	if len(out.Steps) != len(steps) {
		t.Fatalf("drive.mjs ran %d steps of %d", len(out.Steps), len(steps))
	}
	return out
}

// TestACPWithTheOfficialClient drives `deepagents acp --demo` with the
// official TypeScript client as an editor would: an edit after a
// permission request, a cancel in the middle of a slow tool, and a session
// loaded again by a new process.
func TestACPWithTheOfficialClient(t *testing.T) {
	nodeClient(t)
	tmp := t.TempDir()
	cwd := filepath.Join(tmp, "project")
	if err := os.Mkdir(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	notes := filepath.Join(cwd, "notes.md")
	if err := os.WriteFile(notes, []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	db := "sqlite:" + filepath.Join(tmp, "state.db")
	var first string

	t.Run("edit after permission", func(t *testing.T) {
		out := drive(t, db, cwd, []map[string]any{{"op": "new"}, {"op": "prompt", "text": "please edit notes.md"}})
		// The npm client and the Go SDK speak the same protocol version:
		// when one of them moves, this fails until both are pinned again.
		if out.ClientProtocolVersion != acp.ProtocolVersion || out.Initialize.ProtocolVersion != acp.ProtocolVersion {
			t.Fatalf("protocol versions: client %d, agent %d, Go SDK %d", out.ClientProtocolVersion, out.Initialize.ProtocolVersion, acp.ProtocolVersion)
		}
		if !out.Initialize.AgentCapabilities.LoadSession {
			t.Error("initialize does not advertise loadSession")
		}
		first = out.SessionID
		p := out.Steps[1]
		if r := p.stopReason(t); r != "end_turn" {
			t.Fatalf("stopReason %q", r)
		}
		if len(p.Permissions) != 1 || p.Permissions[0].ToolCall.ToolCallID != "edit_1" || p.Permissions[0].ToolCall.Kind != "edit" {
			t.Fatalf("permission requests: %+v", p.Permissions)
		}
		if got, _ := os.ReadFile(notes); string(got) != "hello, editor\n" {
			t.Errorf("notes.md = %q after the approved edit", got)
		}
		if got := p.statuses(t, "edit_1"); strings.Join(got, ",") != "pending,in_progress,completed" {
			t.Errorf("edit_1 statuses %v", got)
		}
		var diff struct {
			Type, Path, OldText, NewText string
		}
		for _, u := range p.updates(t) {
			if u.Kind == "tool_call_update" && u.ID == "edit_1" && u.Status == "completed" {
				var cs []json.RawMessage
				_ = json.Unmarshal(u.Content, &cs)
				if len(cs) > 0 {
					_ = json.Unmarshal(cs[0], &diff)
				}
			}
		}
		if diff.Type != "diff" || diff.Path != notes || diff.OldText != "hello\n" || diff.NewText != "hello, editor\n" {
			t.Errorf("the edit's diff: %+v", diff)
		}
		if th := p.text(t, "agent_thought_chunk"); !strings.Contains(th, "a short plan first") {
			t.Errorf("thought chunks %q", th)
		}
		if msg := p.text(t, "agent_message_chunk"); msg != "Turn 1: done, /notes.md is changed. The plan is complete." {
			t.Errorf("message chunks %q", msg)
		}
		var plans [][]string
		for _, u := range p.updates(t) {
			if u.Kind == "plan" {
				var st []string
				for _, e := range u.Entries {
					st = append(st, e.Status)
				}
				plans = append(plans, st)
			}
		}
		if len(plans) != 2 || strings.Join(plans[0], ",") != "in_progress,pending" || strings.Join(plans[1], ",") != "completed,completed" {
			t.Errorf("plans %v", plans)
		}
	})

	t.Run("cancel mid-tool", func(t *testing.T) {
		start := time.Now()
		out := drive(t, db, cwd, []map[string]any{{"op": "new"},
			{"op": "prompt", "text": "something slow", "cancelOnTool": "wait"},
			{"op": "prompt", "text": "now write the notes"}})
		if r := out.Steps[1].stopReason(t); r != "cancelled" {
			t.Fatalf("stopReason %q after session/cancel", r)
		}
		if el := time.Since(start); el > 40*time.Second {
			t.Errorf("the cancelled turn took %s: the 60 s tool did not stop", el)
		}
		if got := out.Steps[1].statuses(t, "wait_1"); strings.Join(got, ",") != "in_progress,failed" {
			t.Errorf("wait_1 statuses %v", got)
		}
		// The thread goes on: the next prompt is its second turn.
		p := out.Steps[2]
		if r := p.stopReason(t); r != "end_turn" {
			t.Fatalf("the prompt after the cancel: stopReason %q", r)
		}
		if msg := p.text(t, "agent_message_chunk"); !strings.HasPrefix(msg, "Turn 2: done") {
			t.Errorf("the prompt after the cancel said %q", msg)
		}
	})

	t.Run("load after restart", func(t *testing.T) {
		if first == "" {
			t.Skip("the first session failed")
		}
		out := drive(t, db, cwd, []map[string]any{{"op": "load", "session": first},
			{"op": "mode", "id": "accept-edits"},
			{"op": "model", "value": "demo-brief"},
			{"op": "prompt", "text": "write the notes again"}})
		load := out.Steps[0]
		if load.Error != nil {
			t.Fatalf("session/load: %s %s", load.Error.Message, load.Error.Data)
		}
		if u := load.text(t, "user_message_chunk"); u != "please edit notes.md" {
			t.Errorf("replayed user messages %q", u)
		}
		if a := load.text(t, "agent_message_chunk"); a != "Turn 1: done, /notes.md is changed. The plan is complete." {
			t.Errorf("replayed agent messages %q", a)
		}
		if got := load.statuses(t, "edit_1"); strings.Join(got, ",") != "pending,completed" {
			t.Errorf("replayed edit_1 statuses %v", got)
		}
		for _, s := range out.Steps[1:3] {
			if s.Error != nil {
				t.Fatalf("%s: %s %s", s.Op, s.Error.Message, s.Error.Data)
			}
		}
		p := out.Steps[3]
		if r := p.stopReason(t); r != "end_turn" {
			t.Fatalf("stopReason %q", r)
		}
		if len(p.Permissions) != 0 {
			t.Errorf("accept-edits asked about %+v", p.Permissions)
		}
		if msg := p.text(t, "agent_message_chunk"); msg != "Turn 2: done, /notes.md is changed." {
			t.Errorf("the loaded session's next turn said %q (want turn 2, brief model)", msg)
		}
		if got, _ := os.ReadFile(notes); string(got) != "# Notes\n\nWritten in turn 2.\n" {
			t.Errorf("notes.md = %q", got)
		}
	})
}

func TestACPModels(t *testing.T) {
	got, err := acpModels(" openai:gpt-4.1, ,anthropic:claude-sonnet-4-5,openai:gpt-4.1", "x:y")
	if err != nil || len(got) != 2 || got[0].ID != "openai:gpt-4.1" || got[1].ID != "anthropic:claude-sonnet-4-5" {
		t.Fatalf("acpModels = %v, %v", got, err)
	}
	if got, _ := acpModels("", "ollama:qwen3"); len(got) != 1 || got[0].ID != "ollama:qwen3" {
		t.Errorf("without --models: %v", got)
	}
	if got, _ := acpModels("", ""); len(got) != 0 {
		t.Errorf("without a model: %v", got)
	}
	if _, err := acpModels("a b", ""); err == nil {
		t.Error("a reference with a space is taken")
	}
}

// acpEditor is a minimal editor for the in-process tests: it approves
// every call and keeps the updates.
type acpEditor struct {
	mu      sync.Mutex
	updates []sdk.SessionUpdate
	asked   int
}

func (e *acpEditor) RequestPermission(ctx context.Context, p sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	e.mu.Lock()
	e.asked++
	e.mu.Unlock()
	return sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeSelected("allow_once")}, nil
}

func (e *acpEditor) SessionUpdate(ctx context.Context, n sdk.SessionNotification) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.updates = append(e.updates, n.Update)
	return nil
}

func (*acpEditor) ReadTextFile(context.Context, sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error) {
	return sdk.ReadTextFileResponse{}, sdk.NewMethodNotFound("fs/read_text_file")
}
func (*acpEditor) WriteTextFile(context.Context, sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error) {
	return sdk.WriteTextFileResponse{}, sdk.NewMethodNotFound("fs/write_text_file")
}
func (*acpEditor) CreateTerminal(context.Context, sdk.CreateTerminalRequest) (sdk.CreateTerminalResponse, error) {
	return sdk.CreateTerminalResponse{}, sdk.NewMethodNotFound("terminal/create")
}
func (*acpEditor) KillTerminal(context.Context, sdk.KillTerminalRequest) (sdk.KillTerminalResponse, error) {
	return sdk.KillTerminalResponse{}, sdk.NewMethodNotFound("terminal/kill")
}
func (*acpEditor) TerminalOutput(context.Context, sdk.TerminalOutputRequest) (sdk.TerminalOutputResponse, error) {
	return sdk.TerminalOutputResponse{}, sdk.NewMethodNotFound("terminal/output")
}
func (*acpEditor) ReleaseTerminal(context.Context, sdk.ReleaseTerminalRequest) (sdk.ReleaseTerminalResponse, error) {
	return sdk.ReleaseTerminalResponse{}, sdk.NewMethodNotFound("terminal/release")
}
func (*acpEditor) WaitForTerminalExit(context.Context, sdk.WaitForTerminalExitRequest) (sdk.WaitForTerminalExitResponse, error) {
	return sdk.WaitForTerminalExitResponse{}, sdk.NewMethodNotFound("terminal/wait_for_exit")
}

// The agent of 'deepagents acp' on a real provider (a fake OpenAI server):
// the session's directory is its root, a write waits for the editor's
// approval by default, stdout carries nothing but JSON-RPC, and the
// session is a thread that 'threads show' reads.
func TestACPRealAgentWritesInTheSessionDirectory(t *testing.T) {
	srv := ot.NewServer(t, func(r *ot.Request) ot.Reply {
		if r.Round() == 0 {
			return ot.Tools(ot.Call{ID: "c1", Name: "write_file", Args: `{"file_path":"/a.md","content":"A\n"}`})
		}
		return ot.Text("wrote it")
	})
	project, home := runEnv(t, srv)
	cwd := filepath.Join(project, "work")
	if err := os.Mkdir(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	db := "sqlite:" + filepath.Join(home, "acp.db")
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		code := run(t.Context(), []string{"acp", "--model", "openai:gpt-test", "--db", db}, inR, outW, &stderr)
		_ = outW.Close()
		done <- code
	}()
	// Every line the agent writes is a JSON-RPC message.
	pr, pw := io.Pipe()
	var bad []string
	var badMu sync.Mutex
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			var m struct {
				JSONRPC string `json:"jsonrpc"`
			}
			if json.Unmarshal(sc.Bytes(), &m) != nil || m.JSONRPC != "2.0" {
				badMu.Lock()
				bad = append(bad, sc.Text())
				badMu.Unlock()
			}
			_, _ = pw.Write(append(sc.Bytes(), '\n'))
		}
		_ = pw.Close()
	}()
	ed := &acpEditor{}
	conn := sdk.NewClientSideConnection(ed, inW, pr)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if _, err := conn.Initialize(ctx, sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber}); err != nil {
		t.Fatal(err)
	}
	s, err := conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: cwd, McpServers: []sdk.McpServer{}})
	if err != nil {
		t.Fatalf("session/new: %v\n%s", err, stderr.String())
	}
	r, err := conn.Prompt(ctx, sdk.PromptRequest{SessionId: s.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock("write a.md")}})
	if err != nil || r.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("prompt: %+v %v\n%s", r, err, stderr.String())
	}
	_ = inW.Close()
	if code := <-done; code != 0 {
		t.Errorf("exit %d: %s", code, stderr.String())
	}
	badMu.Lock()
	if len(bad) > 0 {
		t.Errorf("stdout carried more than the protocol: %q", bad)
	}
	badMu.Unlock()
	if ed.asked != 1 {
		t.Errorf("the write asked the editor %d times", ed.asked)
	}
	if b, err := os.ReadFile(filepath.Join(cwd, "a.md")); err != nil || string(b) != "A\n" {
		t.Errorf("a.md in the session's directory: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(project, "a.md")); err == nil {
		t.Error("a.md was written in the process's directory, not the session's")
	}
	code, out, errs := runCLI(t, "threads", "show", string(s.SessionId), "--db", db)
	if code != 0 || !strings.Contains(out, "wrote it") || !strings.Contains(out, "write a.md") {
		t.Errorf("threads show %s: exit %d\n%s\n%s", s.SessionId, code, out, errs)
	}
}

func TestACPUsageErrors(t *testing.T) {
	runEnv(t, nil)
	if code, _, errs := runCLI(t, "acp", "extra"); code != 2 || !strings.Contains(errs, `takes no arguments, got "extra"`) {
		t.Errorf("an operand: exit %d: %s", code, errs)
	}
	// The demo's files are on disk, unsandboxed: yolo is refused up front.
	if code, _, errs := runCLI(t, "acp", "--demo", "--approval-mode", "yolo"); code != 2 || !strings.Contains(errs, "yolo needs a sandbox") {
		t.Errorf("demo in yolo: exit %d: %s", code, errs)
	}
	if code, _, errs := runCLI(t, "acp", "--models", "a b"); code != 2 || !strings.Contains(errs, "--models") {
		t.Errorf("a bad --models: exit %d: %s", code, errs)
	}
	if code, out, _ := runCLI(t, "help", "acp"); code != 0 || !strings.Contains(out, "Agent Client Protocol") || !strings.Contains(out, "-demo") {
		t.Errorf("help acp: exit %d: %s", code, out)
	}
}

// FuzzACPModels holds --models to its promise for any text: the models it
// takes are non-empty references without spaces, each once.
func FuzzACPModels(f *testing.F) {
	f.Add("openai:gpt-4.1,anthropic:claude-sonnet-4-5", "")
	f.Add(" , ,,", "ollama:qwen3")
	f.Add("a,a,\tb", "")
	f.Add("x:y\n,z", "m")
	f.Fuzz(func(t *testing.T, list, model string) {
		got, err := acpModels(list, model)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, m := range got {
			if m.ID == "" || strings.ContainsFunc(m.ID, unicode.IsSpace) || strings.Contains(m.ID, ",") || seen[m.ID] {
				t.Fatalf("acpModels(%q, %q) = %v", list, model, got)
			}
			seen[m.ID] = true
		}
		if len(got) > strings.Count(list, ",")+1 {
			t.Fatalf("acpModels(%q) made %d models", list, len(got))
		}
	})
}
