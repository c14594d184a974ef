package acp

import (
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync"
	"unicode/utf8"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/todos"
)

// maxDiffBytes caps each side of a diff read from disk; a bigger file is
// shown without one.
const maxDiffBytes = 1 << 20

// maxResultText caps the text of a tool's result shown in the editor.
const maxResultText = 16 << 10

// translator turns the events of one turn's runs into session updates.
type translator struct {
	cwd  string
	send func(sdk.SessionUpdate)

	mu sync.Mutex
	// calls are the tool calls announced and not finished, by their id in
	// the editor.
	calls map[string]*shownCall
	// sawText is set once the current model call streamed its text.
	sawText bool
}

type shownCall struct {
	info callInfo
	// old is the edited file's text before the call (nil: it did not
	// exist, or it could not be read); oldOK says it was read.
	old   *string
	oldOK bool
	args  json.RawMessage
}

func newTranslator(cwd string, send func(sdk.SessionUpdate)) *translator {
	return &translator{cwd: cwd, send: send, calls: map[string]*shownCall{}}
}

// callID is a call's id in the editor: the model's own for the agent's
// calls, prefixed with the subagent's path for a subagent's (whose ids
// may repeat the parent's).
func callID(p agent.Path, id string) sdk.ToolCallId {
	if !p.IsNested() {
		return sdk.ToolCallId(id)
	}
	return sdk.ToolCallId(strings.ReplaceAll(p.String(), " / ", "/") + "/" + id)
}

func (t *translator) event(ev agent.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	top := !ev.Agent.IsNested()
	switch ev.Type {
	case agent.ModelRequest:
		if top {
			t.sawText = false
		}
	case agent.ModelDelta:
		if !top || ev.Delta == nil || ev.Delta.Text == "" {
			return
		}
		switch ev.Delta.Type {
		case llm.EventTextDelta:
			t.sawText = true
			t.send(sdk.UpdateAgentMessageText(ev.Delta.Text))
		case llm.EventReasoningDelta:
			t.send(sdk.UpdateAgentThoughtText(ev.Delta.Text))
		}
	case agent.ModelResponse:
		// A model read without streaming: its text at once.
		if top && !t.sawText && ev.Response != nil && ev.Response.Text != "" {
			t.send(sdk.UpdateAgentMessageText(ev.Response.Text))
		}
	case agent.ToolStart:
		if ev.Tool != nil {
			t.start(ev.Agent, ev.Tool.CallID, ev.Tool.Name, ev.Tool.Args)
		}
	case agent.ToolEnd:
		if ev.Tool != nil {
			t.end(ev.Agent, ev.Tool)
		}
	}
}

// start announces a call as running (or, when it was announced waiting,
// moves it on).
func (t *translator) start(p agent.Path, id, name string, args json.RawMessage) {
	cid := callID(p, id)
	sc, known := t.calls[string(cid)]
	if !known {
		sc = t.announce(cid, name, args, sdk.ToolCallStatusInProgress)
		return
	}
	if sc.info.Edit != "" {
		sc.old, sc.oldOK = t.read(sc.info.Edit) // what the file is as it runs
	}
	t.send(sdk.UpdateToolCall(cid, sdk.WithUpdateStatus(sdk.ToolCallStatusInProgress)))
}

// announce sends a new tool call with status st and remembers it.
func (t *translator) announce(cid sdk.ToolCallId, name string, args json.RawMessage, st sdk.ToolCallStatus) *shownCall {
	info := describe(name, args, t.cwd)
	sc := &shownCall{info: info, args: args}
	if info.Edit != "" {
		sc.old, sc.oldOK = t.read(info.Edit)
	}
	t.calls[string(cid)] = sc
	opts := []sdk.ToolCallStartOpt{sdk.WithStartKind(info.Kind), sdk.WithStartStatus(st)}
	if len(info.Paths) > 0 {
		locs := make([]sdk.ToolCallLocation, len(info.Paths))
		for i, p := range info.Paths {
			locs[i] = sdk.ToolCallLocation{Path: p}
		}
		opts = append(opts, sdk.WithStartLocations(locs))
	}
	if json.Valid(args) {
		opts = append(opts, sdk.WithStartRawInput(json.RawMessage(args)))
	}
	t.send(sdk.StartToolCall(cid, info.Title, opts...))
	return sc
}

// waiting announces a call that waits for approval (status pending) and
// returns it as the permission request shows it.
func (t *translator) waiting(in agent.Interrupt) sdk.ToolCallUpdate {
	t.mu.Lock()
	defer t.mu.Unlock()
	cid := callID(in.Path, in.CallID)
	sc, ok := t.calls[string(cid)]
	if !ok {
		sc = t.announce(cid, in.Tool, in.Args, sdk.ToolCallStatusPending)
	}
	u := sdk.ToolCallUpdate{ToolCallId: cid, Title: sdk.Ptr(sc.info.Title), Kind: sdk.Ptr(sc.info.Kind), Status: sdk.Ptr(sdk.ToolCallStatusPending)}
	if json.Valid(in.Args) {
		u.RawInput = json.RawMessage(in.Args)
	}
	// What is approved is shown whole: the diff of an edit, the full
	// command (the title keeps only its first line), and why the call
	// waits when a gate said so.
	if in.Reason != "" {
		u.Content = append(u.Content, sdk.ToolContent(sdk.TextBlock("Why it asks: "+in.Reason)))
	}
	if d, ok := t.proposed(in.Tool, in.Args, sc); ok {
		u.Content = append(u.Content, d)
	} else if cmd, ok := commandOf(in.Tool, in.Args); ok {
		u.Content = append(u.Content, sdk.ToolContent(sdk.TextBlock("Command:\n"+cmd)))
	} else if in.Description != "" && in.Description != in.Reason {
		u.Content = append(u.Content, sdk.ToolContent(sdk.TextBlock(in.Description)))
	}
	return u
}

// commandOf is the whole command of an execute call.
func commandOf(tool string, args json.RawMessage) (string, bool) {
	if tool != "execute" {
		return "", false
	}
	var in struct {
		Command string `json:"command"`
	}
	if json.Unmarshal(args, &in) != nil {
		return "", false
	}
	return strings.ToValidUTF8(in.Command, "\uFFFD"), true
}

// proposed is the diff a waiting write_file or edit_file would make, for
// the person to judge before it runs: the file's whole text before and
// after, or, for an edit whose file cannot be read or does not hold the
// old text, the old text and its replacement. Deletes show theirs when
// they ran.
func (t *translator) proposed(tool string, args json.RawMessage, sc *shownCall) (sdk.ToolCallContent, bool) {
	if tool != "write_file" && tool != "edit_file" {
		return sdk.ToolCallContent{}, false
	}
	var in struct {
		FilePath   string `json:"file_path"`
		Content    string `json:"content"`
		OldString  string `json:"old_string"`
		NewString  string `json:"new_string"`
		ReplaceAll bool   `json:"replace_all"`
	}
	if json.Unmarshal(args, &in) != nil {
		return sdk.ToolCallContent{}, false
	}
	abs, ok := onDisk(in.FilePath, t.cwd)
	if !ok {
		return sdk.ToolCallContent{}, false
	}
	if tool == "edit_file" {
		if sc.old != nil && in.OldString != "" && strings.Contains(*sc.old, in.OldString) {
			n := 1
			if in.ReplaceAll {
				n = -1
			}
			return sdk.ToolDiffContent(abs, strings.Replace(*sc.old, in.OldString, in.NewString, n), *sc.old), true
		}
		return sdk.ToolDiffContent(abs, in.NewString, in.OldString), true
	}
	if sc.old != nil {
		return sdk.ToolDiffContent(abs, in.Content, *sc.old), true
	}
	return sdk.ToolDiffContent(abs, in.Content), true
}

// end reports a finished call: completed or failed, with the diff of the
// file it changed or the text of its result; the plan of a write_todos.
func (t *translator) end(p agent.Path, ti *agent.ToolInfo) {
	cid := callID(p, ti.CallID)
	sc, ok := t.calls[string(cid)]
	if !ok {
		sc = t.announce(cid, ti.Name, ti.Args, sdk.ToolCallStatusInProgress)
	}
	delete(t.calls, string(cid))
	st := sdk.ToolCallStatusCompleted
	if ti.IsError {
		st = sdk.ToolCallStatusFailed
	}
	var content []sdk.ToolCallContent
	if !ti.IsError && sc.info.Edit != "" {
		if d, ok := t.diff(sc); ok {
			content = append(content, d)
		}
	}
	if len(content) == 0 && ti.Result != "" {
		content = append(content, sdk.ToolContent(sdk.TextBlock(clipText(ti.Result, maxResultText))))
	}
	opts := []sdk.ToolCallUpdateOpt{sdk.WithUpdateStatus(st)}
	if len(content) > 0 {
		opts = append(opts, sdk.WithUpdateContent(content))
	}
	t.send(sdk.UpdateToolCall(cid, opts...))
	if !ti.IsError && !p.IsNested() && ti.Name == todos.ToolName {
		if items, err := todos.Decode(sc.args); err == nil {
			t.send(planOf(items))
		}
	}
}

// diff is what an edit changed on disk: the text before the call and
// after. False when a side could not be read (too big, not text).
func (t *translator) diff(sc *shownCall) (sdk.ToolCallContent, bool) {
	abs, ok := onDisk(sc.info.Edit, t.cwd)
	if !ok || !sc.oldOK {
		return sdk.ToolCallContent{}, false
	}
	now, ok := t.read(sc.info.Edit)
	if !ok {
		return sdk.ToolCallContent{}, false
	}
	// A file that is not in the directory before and after (an edit of a
	// mount such as /memories/) has no diff to show here.
	if (now == nil) != (sc.info.Kind == sdk.ToolKindDelete) || sc.info.Kind == sdk.ToolKindDelete && sc.old == nil {
		return sdk.ToolCallContent{}, false
	}
	newText := ""
	if now != nil {
		newText = *now
	}
	if sc.old == nil {
		return sdk.ToolDiffContent(abs, newText), true
	}
	return sdk.ToolDiffContent(abs, newText, *sc.old), true
}

// read returns the text of file p (as the agent names it) in the
// session's directory, confined to it: nil when there is no such file;
// false when it cannot be shown (too big, not UTF-8, outside).
func (t *translator) read(p string) (*string, bool) {
	root, err := os.OpenRoot(t.cwd)
	if err != nil {
		return nil, false
	}
	defer root.Close()
	rel := strings.TrimPrefix(path.Clean("/"+p), "/")
	if rel == "" {
		return nil, false
	}
	f, err := root.Open(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, true
	}
	if err != nil {
		return nil, false
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxDiffBytes+1))
	if err != nil || len(b) > maxDiffBytes || !utf8.Valid(b) {
		return nil, false
	}
	s := string(b)
	return &s, true
}

// cancelAll marks the calls still shown running or waiting as failed:
// the turn was cancelled (ACP has no status of its own for that).
func (t *translator) cancelAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for id := range t.calls {
		t.send(sdk.UpdateToolCall(sdk.ToolCallId(id), sdk.WithUpdateStatus(sdk.ToolCallStatusFailed),
			sdk.WithUpdateContent([]sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock("cancelled"))})))
		delete(t.calls, id)
	}
}

// planOf is the plan update of a todo list.
func planOf(items []todos.Item) sdk.SessionUpdate {
	entries := make([]sdk.PlanEntry, len(items))
	for i, it := range items {
		st := sdk.PlanEntryStatusPending
		switch it.Status {
		case todos.InProgress:
			st = sdk.PlanEntryStatusInProgress
		case todos.Completed:
			st = sdk.PlanEntryStatusCompleted
		}
		entries[i] = sdk.PlanEntry{Content: it.Content, Priority: sdk.PlanEntryPriorityMedium, Status: st}
	}
	return sdk.UpdatePlan(entries...)
}

// clipText cuts s to at most n bytes, on a rune boundary, saying so.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "\n… (cut: the whole result is in the thread)"
}

// replay is the history of a thread as the updates a load sends: the
// user's and the agent's messages, the agent's reasoning, each tool call
// and its outcome.
func replay(msgs []llm.Message, cwd string) []sdk.SessionUpdate {
	var out []sdk.SessionUpdate
	names := map[string]string{}
	for _, m := range msgs {
		switch m.Role {
		case llm.RoleUser:
			if m.Content != "" {
				out = append(out, sdk.UpdateUserMessageText(m.Content))
			}
		case llm.RoleAssistant:
			text := false
			for _, p := range m.Parts {
				switch {
				case p.Type == llm.PartReasoning && p.Text != "":
					out = append(out, sdk.UpdateAgentThoughtText(p.Text))
				case p.Type == llm.PartText && p.Text != "":
					out = append(out, sdk.UpdateAgentMessageText(p.Text))
					text = true
				}
			}
			if !text && m.Content != "" {
				out = append(out, sdk.UpdateAgentMessageText(m.Content))
			}
			for _, c := range m.ToolCalls {
				info := describe(c.Name, c.Args, cwd)
				names[c.ID] = c.Name
				opts := []sdk.ToolCallStartOpt{sdk.WithStartKind(info.Kind), sdk.WithStartStatus(sdk.ToolCallStatusPending)}
				if json.Valid(c.Args) {
					opts = append(opts, sdk.WithStartRawInput(json.RawMessage(c.Args)))
				}
				out = append(out, sdk.StartToolCall(sdk.ToolCallId(c.ID), info.Title, opts...))
				if c.Name == todos.ToolName {
					if items, err := todos.Decode(c.Args); err == nil {
						out = append(out, planOf(items))
					}
				}
			}
		case llm.RoleTool:
			if _, ok := names[m.ToolCallID]; !ok {
				continue
			}
			st := sdk.ToolCallStatusCompleted
			if m.IsError {
				st = sdk.ToolCallStatusFailed
			}
			out = append(out, sdk.UpdateToolCall(sdk.ToolCallId(m.ToolCallID), sdk.WithUpdateStatus(st),
				sdk.WithUpdateContent([]sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock(clipText(m.Content, maxResultText)))})))
		}
	}
	return out
}
