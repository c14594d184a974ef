package offload_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/fstools"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/offload"
	"github.com/deepagents-go/deepagents/tokens"
	"github.com/deepagents-go/deepagents/tool"
	"github.com/deepagents-go/deepagents/vfs"
)

// numberedLines returns n lines "row 1: ...", newline-terminated.
func numberedLines(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "row %d: alpha beta gamma delta epsilon\n", i)
	}
	return b.String()
}

// readOnly is a backend whose writes fail.
type readOnly struct{ vfs.Backend }

func (readOnly) Write(context.Context, string, string) error { return vfs.ErrPermission }

// callTool runs one tool call through the middleware, the tool answering res.
func callTool(t *testing.T, cfg offload.Config, name, callID, agentPath string, files vfs.Backend, res tool.Result) (tool.Result, []string) {
	t.Helper()
	m, err := offload.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var progress []string
	env := &tool.Env{CallID: callID, Agent: agentPath, Files: files, Progress: func(s string) { progress = append(progress, s) }}
	call := &agent.ToolCall{Call: llm.ToolCall{ID: callID, Name: name, Args: json.RawMessage(`{}`)}, Env: env}
	next := func(context.Context, *agent.ToolCall) (tool.Result, error) { return res, nil }
	if m.WrapTool == nil {
		out, _ := next(t.Context(), call)
		return out, progress
	}
	out, err := m.WrapTool(t.Context(), call, next)
	if err != nil {
		t.Fatal(err)
	}
	return out, progress
}

func TestToolResultThresholds(t *testing.T) {
	text := numberedLines(40)
	n := tokens.Count(tokens.O200k, text)
	if n <= 100 {
		t.Fatalf("test text too small: %d tokens", n)
	}
	cases := []struct {
		name    string
		cfg     offload.Config
		tool    string
		offload bool
	}{
		{"one token over the threshold", offload.Config{ToolResultTokens: n - 1}, "search", true},
		{"exactly at the threshold", offload.Config{ToolResultTokens: n}, "search", false},
		{"under the threshold", offload.Config{ToolResultTokens: n + 50}, "search", false},
		{"default threshold is far above", offload.Defaults(), "search", false},
		{"zero disables", offload.Config{}, "search", false},
		{"per-tool lower than global", offload.Config{ToolResultTokens: n + 50, PerTool: map[string]int{"search": 10}}, "search", true},
		{"per-tool higher than global", offload.Config{ToolResultTokens: 10, PerTool: map[string]int{"search": n}}, "search", false},
		{"per-tool zero disables that tool", offload.Config{ToolResultTokens: 10, PerTool: map[string]int{"search": 0}}, "search", false},
		{"per-tool of another tool leaves this one at global", offload.Config{ToolResultTokens: 10, PerTool: map[string]int{"other": 0}}, "search", true},
		{"global zero, per-tool on", offload.Config{PerTool: map[string]int{"search": 10}}, "search", true},
		{"task receipts are offloaded", offload.Config{ToolResultTokens: 10}, "task", true},
	}
	for _, exempt := range []string{"ls", "read_file", "write_file", "edit_file", "glob", "grep", "delete"} {
		cases = append(cases, struct {
			name    string
			cfg     offload.Config
			tool    string
			offload bool
		}{"exempt " + exempt, offload.Config{ToolResultTokens: 10}, exempt, false})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			files := vfs.NewMemory(nil)
			got, progress := callTool(t, c.cfg, c.tool, "call_1", "parent", files, tool.Text(text))
			saved, err := files.Read(t.Context(), "/large_tool_results/call_1")
			if !c.offload {
				if got.Content != text {
					t.Errorf("result changed:\n%.300s", got.Content)
				}
				if err == nil {
					t.Error("a file was saved for a result that stays")
				}
				return
			}
			if err != nil {
				t.Fatalf("not saved: %v", err)
			}
			if saved != text {
				t.Error("the saved file does not hold the whole result")
			}
			if !strings.Contains(got.Content, "/large_tool_results/call_1") || strings.Contains(got.Content, "row 20:") {
				t.Errorf("the model should get a notice, got:\n%s", got.Content)
			}
			if len(progress) != 0 {
				t.Errorf("unexpected progress: %q", progress)
			}
		})
	}
}

// The whole notice, written out: what the model reads instead of a 12-line
// result.
func TestToolResultNoticeText(t *testing.T) {
	var b strings.Builder
	for i := 1; i <= 12; i++ {
		fmt.Fprintf(&b, "L%d\n", i)
	}
	text := b.String()
	n := tokens.Count(tokens.O200k, text)
	got, _ := callTool(t, offload.Config{ToolResultTokens: 5}, "fetch", "c7", "parent", vfs.NewMemory(nil), tool.Text(text))
	want := fmt.Sprintf("[This result of fetch was too large to show here (%d tokens, 39 B, 12 lines). It was saved in full to /large_tool_results/c7.\n", n) +
		"Read it in pages with read_file: file_path \"/large_tool_results/c7\", offset = the first line to read (0-based), limit = how many lines; each page says where the next one starts. grep can search it too.]\n\n" +
		"Its first and last 5 lines:\n" +
		"     1\tL1\n     2\tL2\n     3\tL3\n     4\tL4\n     5\tL5\n" +
		"[... 2 lines left out: lines 6 to 7 ...]\n" +
		"     8\tL8\n     9\tL9\n    10\tL10\n    11\tL11\n    12\tL12"
	if got.Content != want {
		t.Errorf("notice:\n%s\n\nwant:\n%s", got.Content, want)
	}
}

func TestToolResultKeepsFlagsAndStructured(t *testing.T) {
	text := numberedLines(30)
	orig := tool.Result{Content: text, IsError: true, Structured: json.RawMessage(`{"k":1}`), Stop: true}
	got, _ := callTool(t, offload.Config{ToolResultTokens: 10}, "fetch", "e1", "parent", vfs.NewMemory(nil), orig)
	if !got.IsError || !got.Stop || string(got.Structured) != `{"k":1}` {
		t.Errorf("flags lost: %+v", got)
	}
	if got.Content == text {
		t.Error("an error result over the threshold should be offloaded too")
	}
}

// A result that cannot be saved is passed on whole, and a progress event
// says why.
func TestToolResultSaveFailureKeepsOriginal(t *testing.T) {
	text := numberedLines(30)
	orig := tool.Result{Content: text, IsError: true}
	got, progress := callTool(t, offload.Config{ToolResultTokens: 10}, "fetch", "c1", "parent", readOnly{vfs.NewMemory(nil)}, orig)
	if got.Content != text || !got.IsError {
		t.Errorf("the original result was not kept: %+v", got)
	}
	if len(progress) != 1 || !strings.Contains(progress[0], "could not be saved") || !strings.Contains(progress[0], "permission denied") {
		t.Errorf("progress = %q, want one line saying the save failed and why", progress)
	}
}

func TestResultPaths(t *testing.T) {
	long := strings.Repeat("x", 1500)
	hashed := regexp.MustCompile(`^/large_tool_results/[0-9a-f]{16}$`)
	cases := []struct {
		name, agent, id string
		want            string // "" means a hashed name
	}{
		{"plain id", "parent", "call_abc-123", "/large_tool_results/call_abc-123"},
		{"40 characters", "parent", strings.Repeat("a", 40), "/large_tool_results/" + strings.Repeat("a", 40)},
		{"41 characters", "parent", strings.Repeat("a", 41), ""},
		{"1500 characters", "parent", long, ""},
		{"slash", "parent", "a/b", ""},
		{"dot-dot", "parent", "..", ""},
		{"leading dot", "parent", ".x", ""},
		{"dot inside", "parent", "a.b", ""},
		{"space", "parent", "a b", ""},
		{"backslash", "parent", `a\b`, ""},
		{"non-ASCII", "parent", "é", ""},
		{"empty", "parent", "", ""},
		{"NUL", "parent", "a\x00b", ""},
		{"inside a subagent", "parent / general-purpose#call_1", "call_1", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := offload.ResultPath(c.agent, c.id)
			if c.want != "" && got != c.want {
				t.Errorf("ResultPath = %q, want %q", got, c.want)
			}
			if c.want == "" && !hashed.MatchString(got) {
				t.Errorf("ResultPath = %q, want a 16-hex-digit name", got)
			}
			if len(got) > 80 {
				t.Errorf("path is %d bytes", len(got))
			}
			if clean, err := vfs.Clean(got); err != nil || clean != got {
				t.Errorf("not a clean path: %q %v", clean, err)
			}
		})
	}
	if offload.ResultPath("parent", "a/b") == offload.ResultPath("parent", "a.b") {
		t.Error("two different ids map to one file")
	}
	if offload.ResultPath("parent / a#c1", "x") == offload.ResultPath("parent / b#c2", "x") {
		t.Error("sibling subagents reusing a call id map to one file")
	}
}

// A 1,500-character call id: the write succeeds, the path is short and the
// notice does not repeat the id.
func TestLongCallIDIsHashed(t *testing.T) {
	id := strings.Repeat("id", 750)
	files := vfs.NewMemory(nil)
	got, _ := callTool(t, offload.Config{ToolResultTokens: 10}, "fetch", id, "parent", files, tool.Text(numberedLines(30)))
	path := offload.ResultPath("parent", id)
	if _, err := files.Read(t.Context(), path); err != nil {
		t.Fatalf("not saved at %s: %v", path, err)
	}
	if strings.Contains(got.Content, "idid") {
		t.Error("the notice repeats the long call id")
	}
	if !strings.Contains(got.Content, path) {
		t.Errorf("the notice does not name %s", path)
	}
}

// A call id reused for a different result (a provider numbering calls per
// run, a second run on the same files) must not overwrite the first file.
func TestReusedCallIDDoesNotOverwrite(t *testing.T) {
	files := vfs.NewMemory(nil)
	first, second := numberedLines(30), strings.ToUpper(numberedLines(30))
	callTool(t, offload.Config{ToolResultTokens: 10}, "fetch", "call_0_0", "parent", files, tool.Text(first))
	got, _ := callTool(t, offload.Config{ToolResultTokens: 10}, "fetch", "call_0_0", "parent", files, tool.Text(second))
	if s, _ := files.Read(t.Context(), "/large_tool_results/call_0_0"); s != first {
		t.Error("the first result was overwritten")
	}
	m := regexp.MustCompile(`saved in full to (/large_tool_results/call_0_0-[0-9a-f]{8})\.`).FindStringSubmatch(got.Content)
	if m == nil {
		t.Fatalf("second notice does not name a new file:\n%s", got.Content)
	}
	if s, _ := files.Read(t.Context(), m[1]); s != second {
		t.Errorf("%s does not hold the second result", m[1])
	}
}

// read_file on the saved path with offset/limit returns the original lines.
func TestSavedResultReadsBackInPages(t *testing.T) {
	files := vfs.NewMemory(nil)
	text := numberedLines(500)
	callTool(t, offload.Config{ToolResultTokens: 100}, "fetch", "big", "parent", files, tool.Text(text))
	var read tool.Tool
	for _, tl := range fstools.Tools() {
		if tl.Spec().Name == "read_file" {
			read = tl
		}
	}
	res, err := read.Run(t.Context(), &tool.Env{Files: files}, json.RawMessage(`{"file_path":"/large_tool_results/big","offset":250,"limit":2}`))
	if err != nil || res.IsError {
		t.Fatalf("read_file: %v %+v", err, res)
	}
	want := "   251\trow 251: alpha beta gamma delta epsilon\n   252\trow 252: alpha beta gamma delta epsilon"
	if !strings.HasPrefix(res.Content, want) {
		t.Errorf("read_file returned:\n%s\nwant it to start with:\n%s", res.Content, want)
	}
}

func TestPreview(t *testing.T) {
	long := strings.Repeat("é", 1003)
	cases := []struct {
		name, in, want string
		lines          int
	}{
		{"empty", "", "", 0},
		{"one line without newline", "only", "     1\tonly", 1},
		{"ten lines are shown whole", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n",
			"     1\t1\n     2\t2\n     3\t3\n     4\t4\n     5\t5\n     6\t6\n     7\t7\n     8\t8\n     9\t9\n    10\t10", 10},
		{"eleven lines leave one out", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11",
			"     1\t1\n     2\t2\n     3\t3\n     4\t4\n     5\t5\n[... 1 line left out: lines 6 to 6 ...]\n     7\t7\n     8\t8\n     9\t9\n    10\t10\n    11\t11", 11},
		{"CRLF", "a\r\nb\r\nc\r\n", "     1\ta\n     2\tb\n     3\tc", 3},
		{"blank lines kept", "a\n\n\nb", "     1\ta\n     2\t\n     3\t\n     4\tb", 4},
		{"long line clipped by characters", long, "     1\t" + strings.Repeat("é", 1000) + " [... 3 more characters]", 1},
		{"1001 characters", strings.Repeat("x", 1001), "     1\t" + strings.Repeat("x", 1000) + " [... 1 more character]", 1},
		{"1000 characters stay", strings.Repeat("x", 1000), "     1\t" + strings.Repeat("x", 1000), 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, lines := offload.Preview(c.in)
			if got != c.want || lines != c.lines {
				t.Errorf("Preview = %q, %d lines\nwant      %q, %d lines", got, lines, c.want, c.lines)
			}
		})
	}
}

// Exactly 5+5 numbered lines and the left-out count, on a big text whose
// last line has no newline.
func TestPreviewOfManyLines(t *testing.T) {
	text := strings.TrimSuffix(numberedLines(2000), "\n")
	got, lines := offload.Preview(text)
	if lines != 2000 {
		t.Errorf("lines = %d", lines)
	}
	rows := strings.Split(got, "\n")
	if len(rows) != 11 {
		t.Fatalf("%d preview lines, want 10 plus the left-out line:\n%s", len(rows), got)
	}
	wantNums := []string{"1", "2", "3", "4", "5", "", "1996", "1997", "1998", "1999", "2000"}
	for i, r := range rows {
		if i == 5 {
			if r != "[... 1990 lines left out: lines 6 to 1995 ...]" {
				t.Errorf("left-out line = %q", r)
			}
			continue
		}
		want := fmt.Sprintf("%6s\trow %s: alpha beta gamma delta epsilon", wantNums[i], wantNums[i])
		if r != want {
			t.Errorf("line %d = %q, want %q", i, r, want)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	cases := []struct {
		name string
		cfg  offload.Config
		want string
	}{
		{"defaults", offload.Defaults(), ""},
		{"zero", offload.Config{}, ""},
		{"negative tool threshold", offload.Config{ToolResultTokens: -1}, "must not be negative"},
		{"negative message threshold", offload.Config{UserMessageTokens: -5}, "must not be negative"},
		{"negative per-tool", offload.Config{PerTool: map[string]int{"fetch": -1}}, "tool fetch must not be negative"},
		{"exempt per-tool", offload.Config{PerTool: map[string]int{"read_file": 100}}, "read_file caps its own output"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := offload.New(c.cfg)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("unexpected error %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("error = %v, want one containing %q", err, c.want)
			}
		})
	}
}

// step runs the middleware's BeforeModel on msgs, returning the request and
// the events it emitted.
func step(t *testing.T, m agent.Middleware, files vfs.Backend, msgs []llm.Message) (*llm.Request, []agent.Event) {
	t.Helper()
	var evs []agent.Event
	req := &llm.Request{Messages: msgs[:len(msgs):len(msgs)]}
	err := m.BeforeModel(t.Context(), agent.StepInfo{Path: agent.RootPath("parent"), Files: files, Emit: func(e agent.Event) { evs = append(evs, e) }}, req)
	if err != nil {
		t.Fatal(err)
	}
	return req, evs
}

func TestUserMessageOffload(t *testing.T) {
	huge := numberedLines(300)
	n := tokens.Count(tokens.O200k, huge)
	m, err := offload.New(offload.Config{UserMessageTokens: n - 1})
	if err != nil {
		t.Fatal(err)
	}
	state := []llm.Message{
		llm.User("short question"),
		llm.User(huge),
		llm.Assistant(huge),
		{Role: llm.RoleTool, Content: huge, ToolCallID: "x", Name: "fetch"},
	}
	files := vfs.NewMemory(nil)
	req, evs := step(t, m, files, state)

	path := offload.MessagePath(huge)
	if !regexp.MustCompile(`^/conversation_history/[0-9a-f]{16}\.md$`).MatchString(path) {
		t.Errorf("path %q", path)
	}
	if state[1].Content != huge {
		t.Fatal("the run's state was changed")
	}
	got := req.Messages[1].Content
	for _, want := range []string{"This user message was too long", path, "read_file", "offset", "limit",
		"     1\trow 1: alpha", "[... 290 lines left out: lines 6 to 295 ...]", "   300\trow 300: alpha"} {
		if !strings.Contains(got, want) {
			t.Errorf("request message lacks %q:\n%s", want, got)
		}
	}
	for i, wantSame := range []bool{true, false, true, true} {
		if (req.Messages[i].Content == state[i].Content) != wantSame {
			t.Errorf("message %d changed = %v", i, !wantSame)
		}
	}
	if saved, _ := files.Read(t.Context(), path); saved != huge {
		t.Error("the file does not hold the whole message")
	}
	if len(evs) != 1 || evs[0].Type != agent.FileWrite || evs[0].File.Path != path || evs[0].File.Bytes != len(huge) {
		t.Errorf("events = %+v, want one file.write of %s", evs, path)
	}

	// The next step sends the same preview and does not write again.
	req2, evs2 := step(t, m, files, append(state, llm.Assistant("ok")))
	if req2.Messages[1].Content != got {
		t.Error("the preview changed between steps")
	}
	if len(evs2) != 0 {
		t.Errorf("the message was written again: %+v", evs2)
	}

	// At the threshold, nothing happens.
	m2, _ := offload.New(offload.Config{UserMessageTokens: n})
	req3, evs3 := step(t, m2, vfs.NewMemory(nil), state)
	if req3.Messages[1].Content != huge || len(evs3) != 0 {
		t.Error("a message at the threshold was offloaded")
	}
}

func TestUserMessageSaveFailureSendsItWhole(t *testing.T) {
	huge := numberedLines(300)
	m, _ := offload.New(offload.Config{UserMessageTokens: 100})
	req, evs := step(t, m, readOnly{vfs.NewMemory(nil)}, []llm.Message{llm.User(huge)})
	if req.Messages[0].Content != huge {
		t.Error("the message was replaced although it could not be saved")
	}
	if len(evs) != 1 || evs[0].Type != agent.Notice || evs[0].Notice.Source != "offload" ||
		!strings.Contains(evs[0].Notice.Text, "could not be saved") || !strings.Contains(evs[0].Notice.Text, "permission denied") {
		t.Errorf("events = %+v, want one notice saying why", evs)
	}
}

func TestDisabledHooksAreAbsent(t *testing.T) {
	m, err := offload.New(offload.Config{})
	if err != nil || m.BeforeModel != nil || m.WrapTool != nil {
		t.Errorf("a zero config should install no hooks: %+v %v", m, err)
	}
	m, _ = offload.New(offload.Config{PerTool: map[string]int{"x": 5}})
	if m.WrapTool == nil {
		t.Error("a per-tool threshold alone should install the tool hook")
	}
}

// A tool's Go error is passed through untouched for the loop to report.
func TestToolErrorPassesThrough(t *testing.T) {
	m, _ := offload.New(offload.Config{ToolResultTokens: 1})
	boom := errors.New("boom")
	_, err := m.WrapTool(t.Context(), &agent.ToolCall{Call: llm.ToolCall{ID: "c", Name: "x"}, Env: &tool.Env{Files: vfs.NewMemory(nil)}},
		func(context.Context, *agent.ToolCall) (tool.Result, error) { return tool.Result{}, boom })
	if !errors.Is(err, boom) {
		t.Errorf("err = %v", err)
	}
}

// A directory where the file would go is left alone; the result is saved
// beside it.
func TestResultPathTakenByDirectory(t *testing.T) {
	files := vfs.NewMemory(nil)
	if err := files.Write(t.Context(), "/large_tool_results/d1/keep.txt", "mine"); err != nil {
		t.Fatal(err)
	}
	text := numberedLines(30)
	got, progress := callTool(t, offload.Config{ToolResultTokens: 10}, "fetch", "d1", "parent", files, tool.Text(text))
	m := regexp.MustCompile(`saved in full to (/large_tool_results/d1-[0-9a-f]{8})\.`).FindStringSubmatch(got.Content)
	if m == nil || len(progress) != 0 {
		t.Fatalf("notice:\n%s\nprogress %q", got.Content, progress)
	}
	if s, _ := files.Read(t.Context(), m[1]); s != text {
		t.Error("not saved beside the directory")
	}
	if s, _ := files.Read(t.Context(), "/large_tool_results/d1/keep.txt"); s != "mine" {
		t.Error("the directory's file was touched")
	}
}
