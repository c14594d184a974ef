package acp_test

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/acp"
	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/approve"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/runner"
	"github.com/deepagents-go/deepagents/tool"
	"github.com/deepagents-go/deepagents/vfs/osfs"
)

// editor is the client side of a test: it records the updates and answers
// permission requests with answer.
type editor struct {
	mu      sync.Mutex
	updates []sdk.SessionUpdate
	asked   []sdk.RequestPermissionRequest
	answer  func(sdk.RequestPermissionRequest) sdk.RequestPermissionOutcome
}

func (e *editor) RequestPermission(ctx context.Context, p sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	e.mu.Lock()
	e.asked = append(e.asked, p)
	answer := e.answer
	e.mu.Unlock()
	return sdk.RequestPermissionResponse{Outcome: answer(p)}, nil
}

func (e *editor) SessionUpdate(ctx context.Context, n sdk.SessionNotification) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.updates = append(e.updates, n.Update)
	return nil
}

func (e *editor) text() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var b strings.Builder
	for _, u := range e.updates {
		if u.AgentMessageChunk != nil && u.AgentMessageChunk.Content.Text != nil {
			b.WriteString(u.AgentMessageChunk.Content.Text.Text)
		}
	}
	return b.String()
}

func (e *editor) setAnswer(f func(sdk.RequestPermissionRequest) sdk.RequestPermissionOutcome) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.answer = f
}

func (e *editor) reset() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.updates, e.asked = nil, nil
}

func (*editor) ReadTextFile(context.Context, sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error) {
	return sdk.ReadTextFileResponse{}, sdk.NewMethodNotFound("fs/read_text_file")
}
func (*editor) WriteTextFile(context.Context, sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error) {
	return sdk.WriteTextFileResponse{}, sdk.NewMethodNotFound("fs/write_text_file")
}
func (*editor) CreateTerminal(context.Context, sdk.CreateTerminalRequest) (sdk.CreateTerminalResponse, error) {
	return sdk.CreateTerminalResponse{}, sdk.NewMethodNotFound("terminal/create")
}
func (*editor) KillTerminal(context.Context, sdk.KillTerminalRequest) (sdk.KillTerminalResponse, error) {
	return sdk.KillTerminalResponse{}, sdk.NewMethodNotFound("terminal/kill")
}
func (*editor) TerminalOutput(context.Context, sdk.TerminalOutputRequest) (sdk.TerminalOutputResponse, error) {
	return sdk.TerminalOutputResponse{}, sdk.NewMethodNotFound("terminal/output")
}
func (*editor) ReleaseTerminal(context.Context, sdk.ReleaseTerminalRequest) (sdk.ReleaseTerminalResponse, error) {
	return sdk.ReleaseTerminalResponse{}, sdk.NewMethodNotFound("terminal/release")
}
func (*editor) WaitForTerminalExit(context.Context, sdk.WaitForTerminalExitRequest) (sdk.WaitForTerminalExitResponse, error) {
	return sdk.WaitForTerminalExitResponse{}, sdk.NewMethodNotFound("terminal/wait_for_exit")
}

// script writes /a.txt with the prompt's text, then answers with what
// became of the write, naming the model.
func script(model string) llm.Model {
	return scripted.New(nil, scripted.Options{Func: func(ci llm.CallInfo, req *llm.Request) (scripted.Step, error) {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == llm.RoleUser {
			b, _ := json.Marshal(map[string]string{"file_path": "/a.txt", "content": last.Content})
			return scripted.Step{ToolCalls: []scripted.StepCall{{Name: "write_file", Args: b}}}, nil
		}
		if last.IsError {
			return scripted.Step{Content: model + ": not written: " + last.Content}, nil
		}
		return scripted.Step{Content: model + ": written"}, nil
	}})
}

// start serves a session config over pipes and returns the client side.
func start(t *testing.T, saver checkpoint.Saver) (*sdk.ClientSideConnection, *editor) {
	t.Helper()
	cfg := acp.Config{
		NewThread: func() string { return "t-" + strings.ReplaceAll(t.Name(), "/", "-") },
		Models:    []acp.Model{{ID: "m1"}, {ID: "m2"}},
		Open: func(ctx context.Context, cwd, model, thread string, resumed bool) (*acp.Runtime, error) {
			sess, err := approve.NewSession(approve.Manual, approve.SessionOptions{FromThread: func(approve.Mode) bool { return true }})
			if err != nil {
				return nil, err
			}
			root, err := osfs.New(cwd)
			if err != nil {
				return nil, err
			}
			a, err := deepagents.New(deepagents.Config{Name: "agent", Model: script(model), Stream: true, Backend: root,
				InterruptOn: approve.WithMode(map[string]approve.Policy{"write_file": {}}, sess), Middleware: []agent.Middleware{sess.Middleware()}})
			if err != nil {
				return nil, err
			}
			return &acp.Runtime{Agent: a, Saver: saver, Mode: sess, Close: func() { _ = root.Close() }}, nil
		},
	}
	ar, aw := io.Pipe() // agent reads what the client writes
	cr, cw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- acp.Serve(ctx, cfg, ar, cw) }()
	ed := &editor{answer: func(sdk.RequestPermissionRequest) sdk.RequestPermissionOutcome {
		return sdk.NewRequestPermissionOutcomeSelected("allow_once")
	}}
	conn := sdk.NewClientSideConnection(ed, aw, cr)
	t.Cleanup(func() {
		_ = aw.Close()
		cancel()
		<-done
		_ = cw.Close()
	})
	if _, err := conn.Initialize(t.Context(), sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber}); err != nil {
		t.Fatal(err)
	}
	return conn, ed
}

func prompt(t *testing.T, conn *sdk.ClientSideConnection, id sdk.SessionId, blocks ...sdk.ContentBlock) (sdk.StopReason, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	r, err := conn.Prompt(ctx, sdk.PromptRequest{SessionId: id, Prompt: blocks})
	return r.StopReason, err
}

func TestRejectedEditLeavesTheFileAndTheTurnGoesOn(t *testing.T) {
	saver := checkpoint.NewMemory(0)
	conn, ed := start(t, saver)
	dir := t.TempDir()
	s, err := conn.NewSession(t.Context(), sdk.NewSessionRequest{Cwd: dir, McpServers: []sdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	ed.setAnswer(func(sdk.RequestPermissionRequest) sdk.RequestPermissionOutcome {
		return sdk.NewRequestPermissionOutcomeSelected("reject_once")
	})
	r, err := prompt(t, conn, s.SessionId, sdk.TextBlock("hi"))
	if err != nil || r != sdk.StopReasonEndTurn {
		t.Fatalf("prompt: %v %v", r, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a.txt")); !os.IsNotExist(err) {
		t.Errorf("a.txt exists after the rejection (%v)", err)
	}
	if len(ed.asked) != 1 {
		t.Fatalf("asked %d times", len(ed.asked))
	}
	q := ed.asked[0]
	// The waiting write shows the file it would make.
	if len(q.ToolCall.Content) != 1 || q.ToolCall.Content[0].Diff == nil || q.ToolCall.Content[0].Diff.NewText != "hi" ||
		q.ToolCall.Content[0].Diff.OldText != nil || q.ToolCall.Content[0].Diff.Path != filepath.Join(dir, "a.txt") {
		t.Errorf("the permission request's content: %+v", q.ToolCall.Content)
	}
	if got := ed.text(); !strings.HasPrefix(got, "m1: not written:") || !strings.Contains(got, "rejected") {
		t.Errorf("the agent said %q", got)
	}
	failed := false
	for _, u := range ed.updates {
		if u.ToolCallUpdate != nil && u.ToolCallUpdate.Status != nil && *u.ToolCallUpdate.Status == sdk.ToolCallStatusFailed {
			failed = true
		}
	}
	if !failed {
		t.Error("the rejected call is not shown failed")
	}
	// The thread holds the turn, saved.
	rs, err := runner.LoadRunState(t.Context(), saver, string(s.SessionId), agent.RootPath("agent"), false)
	if err != nil || len(rs.Messages) < 4 || rs.Messages[0].Content != "hi" {
		t.Fatalf("the thread: %v, %+v", err, rs)
	}
}

func TestCancelledPermissionEndsTheTurnCancelled(t *testing.T) {
	saver := checkpoint.NewMemory(0)
	conn, ed := start(t, saver)
	dir := t.TempDir()
	s, err := conn.NewSession(t.Context(), sdk.NewSessionRequest{Cwd: dir, McpServers: []sdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	ed.setAnswer(func(sdk.RequestPermissionRequest) sdk.RequestPermissionOutcome {
		return sdk.NewRequestPermissionOutcomeCancelled()
	})
	if r, err := prompt(t, conn, s.SessionId, sdk.TextBlock("one")); err != nil || r != sdk.StopReasonCancelled {
		t.Fatalf("prompt: %v %v", r, err)
	}
	// The next prompt goes on in the same thread, and asks again.
	ed.reset()
	ed.setAnswer(func(sdk.RequestPermissionRequest) sdk.RequestPermissionOutcome {
		return sdk.NewRequestPermissionOutcomeSelected("allow_once")
	})
	if r, err := prompt(t, conn, s.SessionId, sdk.TextBlock("two")); err != nil || r != sdk.StopReasonEndTurn {
		t.Fatalf("second prompt: %v %v", r, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "a.txt")); err != nil || string(b) != "two" {
		t.Errorf("a.txt = %q, %v", b, err)
	}
}

func TestModesModelsAndBadRequests(t *testing.T) {
	saver := checkpoint.NewMemory(0)
	conn, ed := start(t, saver)
	dir := t.TempDir()
	ctx := t.Context()
	if _, err := conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: "relative/dir", McpServers: []sdk.McpServer{}}); err == nil {
		t.Error("a relative cwd is taken")
	}
	if _, err := conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: filepath.Join(dir, "missing"), McpServers: []sdk.McpServer{}}); err == nil {
		t.Error("a missing cwd is taken")
	}
	s, err := conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: dir, McpServers: []sdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range s.Modes.AvailableModes {
		ids = append(ids, string(m.Id))
	}
	// Not confined, no classifier: neither yolo nor auto is offered.
	if s.Modes.CurrentModeId != "manual" || strings.Join(ids, ",") != "manual,accept-edits" {
		t.Errorf("modes %s of %v", s.Modes.CurrentModeId, ids)
	}
	if len(s.ConfigOptions) != 1 || s.ConfigOptions[0].Select == nil || s.ConfigOptions[0].Select.CurrentValue != "m1" {
		t.Errorf("config options %+v", s.ConfigOptions)
	}
	if _, err := conn.SetSessionMode(ctx, sdk.SetSessionModeRequest{SessionId: s.SessionId, ModeId: "yolo"}); err == nil {
		t.Error("yolo is taken without a sandbox")
	}
	if _, err := conn.SetSessionMode(ctx, sdk.SetSessionModeRequest{SessionId: s.SessionId, ModeId: "acceptEdits"}); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.SetSessionConfigOption(ctx, sdk.SetSessionConfigOptionRequest{ValueId: &sdk.SetSessionConfigOptionValueId{SessionId: s.SessionId, ConfigId: "model", Value: "nope"}}); err == nil {
		t.Error("an unknown model is taken")
	}
	r, err := conn.SetSessionConfigOption(ctx, sdk.SetSessionConfigOptionRequest{ValueId: &sdk.SetSessionConfigOptionValueId{SessionId: s.SessionId, ConfigId: "model", Value: "m2"}})
	if err != nil || r.ConfigOptions[0].Select.CurrentValue != "m2" {
		t.Fatalf("set model: %+v %v", r, err)
	}
	// accept-edits survives the change of model: the write asks nobody.
	res := sdk.ResourceBlock(sdk.EmbeddedResourceResource{TextResourceContents: &sdk.TextResourceContents{Uri: "file:///x", Text: "body"}})
	if r, err := prompt(t, conn, s.SessionId, sdk.TextBlock("see"), res); err != nil || r != sdk.StopReasonEndTurn {
		t.Fatalf("prompt: %v %v", r, err)
	}
	if len(ed.asked) != 0 {
		t.Errorf("accept-edits asked %d times", len(ed.asked))
	}
	if got := ed.text(); got != "m2: written" {
		t.Errorf("the agent said %q", got)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "see\n\n<resource uri=\"file:///x\">\nbody\n</resource>" {
		t.Errorf("the prompt the model got: %q", b)
	}
	// The thread records the mode with the decision it took, as /mode does.
	rs, err := runner.LoadRunState(ctx, saver, string(s.SessionId), agent.RootPath("agent"), false)
	if err != nil {
		t.Fatal(err)
	}
	rec, ok := approve.ModeRecordOf(rs.Values)
	if !ok || rec.Mode != approve.AcceptEdits || len(rec.Calls) != 1 || rec.Calls[0].Outcome != "passed" || rec.Calls[0].Mode != approve.AcceptEdits {
		t.Errorf("the thread's mode record: %v %+v", ok, rec)
	}
	if _, err := prompt(t, conn, s.SessionId, sdk.ImageBlock("AAAA", "image/png")); err == nil {
		t.Error("an image prompt is taken")
	}
	if _, err := prompt(t, conn, "no-such-session", sdk.TextBlock("x")); err == nil {
		t.Error("a prompt to an unknown session is taken")
	}
	if _, err := conn.LoadSession(ctx, sdk.LoadSessionRequest{SessionId: "never-made", Cwd: dir, McpServers: []sdk.McpServer{}}); err == nil ||
		!strings.Contains(err.Error(), "never-made") {
		t.Errorf("loading an unknown session: %v", err)
	}
	// The session loads again, on this connection too, with its history.
	ed.reset()
	loaded, err := conn.LoadSession(ctx, sdk.LoadSessionRequest{SessionId: s.SessionId, Cwd: dir, McpServers: []sdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	// The mode the thread recorded, taken as the runtime's rules allow.
	if loaded.Modes == nil || loaded.Modes.CurrentModeId != "accept-edits" {
		t.Errorf("the loaded session's modes: %+v", loaded.Modes)
	}
	if got := ed.text(); got != "m2: written" {
		t.Errorf("replayed %q", got)
	}
}

// When the editor goes away in the middle of a turn, the turn is cancelled
// and ends (saving what it did) before its runtime is closed.
func TestEditorGoneMidTurnClosesAfterTheTurn(t *testing.T) {
	saver := checkpoint.NewMemory(0)
	var mu sync.Mutex
	var events []string
	note := func(s string) {
		mu.Lock()
		events = append(events, s)
		mu.Unlock()
	}
	running := make(chan struct{})
	slow, err := tool.Func("slow", "Waits until cancelled.", func(ctx context.Context, _ *tool.Env, _ struct{}) (string, error) {
		close(running)
		<-ctx.Done()
		note("tool cancelled")
		return "", ctx.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	model := scripted.New(nil, scripted.Options{Func: func(ci llm.CallInfo, req *llm.Request) (scripted.Step, error) {
		return scripted.Step{ToolCalls: []scripted.StepCall{{ID: "s1", Name: "slow", Args: json.RawMessage(`{}`)}}}, nil
	}})
	cfg := acp.Config{
		NewThread: func() string { return "gone" },
		Open: func(ctx context.Context, cwd, _, _ string, _ bool) (*acp.Runtime, error) {
			a, err := deepagents.New(deepagents.Config{Name: "agent", Model: model, Tools: []tool.Tool{slow}})
			if err != nil {
				return nil, err
			}
			return &acp.Runtime{Agent: a, Saver: saver, Close: func() { note("closed") }}, nil
		},
	}
	ar, aw := io.Pipe()
	cr, cw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- acp.Serve(t.Context(), cfg, ar, cw) }()
	conn := sdk.NewClientSideConnection(&editor{}, aw, cr)
	if _, err := conn.Initialize(t.Context(), sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber}); err != nil {
		t.Fatal(err)
	}
	s, err := conn.NewSession(t.Context(), sdk.NewSessionRequest{Cwd: t.TempDir(), McpServers: []sdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		_, _ = conn.Prompt(context.Background(), sdk.PromptRequest{SessionId: s.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock("go")}})
	}()
	select {
	case <-running:
	case <-time.After(20 * time.Second):
		t.Fatal("the tool never ran")
	}
	_ = aw.Close() // the editor is gone
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(40 * time.Second):
		t.Fatal("Serve did not return after the editor left")
	}
	_ = cw.Close()
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(events, ",") != "tool cancelled,closed" {
		t.Errorf("events %v: the runtime must close after the turn ended", events)
	}
	rs, err := runner.LoadRunState(context.Background(), saver, "gone", agent.RootPath("agent"), false)
	// Saved up to the call in flight, left unfinished (resumable), as a
	// turn stopped with Ctrl-C is.
	if err != nil || len(rs.Messages) != 2 || len(rs.Messages[1].ToolCalls) != 1 || rs.Messages[1].ToolCalls[0].ID != "s1" || rs.Status != "" {
		t.Errorf("the thread after the editor left: %v %+v", err, rs)
	}
}

// A prompt sent while a turn runs cancels that turn (as the editor's
// connection does) and runs once it has ended.
func TestSecondPromptRunsAfterTheCancelledFirst(t *testing.T) {
	saver := checkpoint.NewMemory(0)
	conn, ed := start(t, saver)
	dir := t.TempDir()
	s, err := conn.NewSession(t.Context(), sdk.NewSessionRequest{Cwd: dir, McpServers: []sdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	asked, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	ed.setAnswer(func(p sdk.RequestPermissionRequest) sdk.RequestPermissionOutcome {
		first := false
		once.Do(func() { first = true })
		if !first {
			return sdk.NewRequestPermissionOutcomeSelected("allow_once")
		}
		close(asked)
		select {
		case <-release:
		case <-time.After(10 * time.Second):
		}
		return sdk.NewRequestPermissionOutcomeCancelled()
	})
	defer close(release)
	type result struct {
		r   sdk.StopReason
		err error
	}
	firstDone := make(chan result, 1)
	go func() {
		r, err := prompt(t, conn, s.SessionId, sdk.TextBlock("one"))
		firstDone <- result{r, err}
	}()
	<-asked
	if r, err := prompt(t, conn, s.SessionId, sdk.TextBlock("two")); err != nil || r != sdk.StopReasonEndTurn {
		t.Fatalf("second prompt: %v %v", r, err)
	}
	if got := <-firstDone; got.err != nil || got.r != sdk.StopReasonCancelled {
		t.Errorf("first prompt: %v %v", got.r, got.err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "a.txt")); err != nil || string(b) != "two" {
		t.Errorf("a.txt = %q, %v", b, err)
	}
}

// session/load of a session whose turn runs is refused: it would close
// the runtime under the turn.
func TestLoadIsRefusedDuringATurn(t *testing.T) {
	saver := checkpoint.NewMemory(0)
	conn, ed := start(t, saver)
	dir := t.TempDir()
	s, err := conn.NewSession(t.Context(), sdk.NewSessionRequest{Cwd: dir, McpServers: []sdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	asked, release := make(chan struct{}), make(chan struct{})
	ed.setAnswer(func(p sdk.RequestPermissionRequest) sdk.RequestPermissionOutcome {
		close(asked)
		select {
		case <-release:
		case <-time.After(10 * time.Second):
		}
		return sdk.NewRequestPermissionOutcomeSelected("allow_once")
	})
	done := make(chan sdk.StopReason, 1)
	go func() {
		r, _ := prompt(t, conn, s.SessionId, sdk.TextBlock("one"))
		done <- r
	}()
	<-asked
	_, err = conn.LoadSession(t.Context(), sdk.LoadSessionRequest{SessionId: s.SessionId, Cwd: dir, McpServers: []sdk.McpServer{}})
	close(release)
	if err == nil || !strings.Contains(err.Error(), "turn of this session is running") {
		t.Errorf("session/load during a turn: %v", err)
	}
	if r := <-done; r != sdk.StopReasonEndTurn {
		t.Errorf("the turn ended %v", r)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "a.txt")); err != nil || string(b) != "one" {
		t.Errorf("a.txt = %q, %v", b, err)
	}
}
