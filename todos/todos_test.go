package todos_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/runner"
	"github.com/deepagents-go/deepagents/todos"
	"github.com/deepagents-go/deepagents/tool"
)

func call(id, args string) scripted.StepCall {
	return scripted.StepCall{ID: id, Name: "write_todos", Args: json.RawMessage(args)}
}

func run(t *testing.T, mws []agent.Middleware, opts []agent.RunOption, s ...scripted.Step) (*agent.Result, []agent.Event, *scripted.Model) {
	t.Helper()
	m := scripted.New(scripted.Script{"parent": {Steps: s}}, scripted.Options{})
	a, err := agent.New(agent.Config{Model: m, Middleware: append(mws, todos.Middleware())})
	if err != nil {
		t.Fatal(err)
	}
	var evs []agent.Event
	res, err := agent.Drain(a.Run(t.Context(), agent.Prompt("plan it"), opts...), func(ev agent.Event) { evs = append(evs, ev) })
	if err != nil {
		t.Fatal(err)
	}
	return res, evs, m
}

func toolResults(res *agent.Result) []llm.Message {
	var out []llm.Message
	for _, m := range res.State.Messages {
		if m.Role == llm.RoleTool {
			out = append(out, m)
		}
	}
	return out
}

const three = `{"todos":[{"content":"Read the spec","status":"completed"},{"content":"Write the parser","status":"in_progress","activeForm":"Writing the parser"},{"content":"Add tests","status":"pending"}]}`

// Setting three todos: the tool answers with a stable render, and the next
// request's system tail ends with the <current_todos> block of three lines.
func TestThreeTodosEndTheSystemTail(t *testing.T) {
	res, _, m := run(t, nil, nil,
		scripted.Step{ToolCalls: []scripted.StepCall{call("a", three)}},
		scripted.Step{Content: "done"},
	)
	results := toolResults(res)
	wantReply := "Todo list updated: 3 items (1 completed, 1 in progress, 1 pending).\n[x] Read the spec\n[~] Write the parser\n[ ] Add tests"
	if len(results) != 1 || results[0].Content != wantReply || results[0].IsError {
		t.Fatalf("results %+v", results)
	}
	recs := m.Records()
	if len(recs) != 2 {
		t.Fatalf("%d model calls", len(recs))
	}
	if tail := recs[0].Request.SystemTail; tail != "" {
		t.Fatalf("first request has a tail before any list: %q", tail)
	}
	wantBlock := "<current_todos>\n[x] Read the spec\n[~] Write the parser\n[ ] Add tests\n</current_todos>"
	if got := recs[1].Request.SystemTail; got != wantBlock {
		t.Fatalf("tail %q", got)
	}
	if recs[1].Request.System != recs[0].Request.System {
		t.Fatalf("the static system prompt changed with the list")
	}
	items, err := todos.List(&res.State)
	if err != nil || len(items) != 3 || items[1].ActiveForm != "Writing the parser" {
		t.Fatalf("state list %+v (%v)", items, err)
	}
}

// The block is appended to a tail another middleware set, after a blank
// line, and an empty list clears it.
func TestTailAppendsAndClears(t *testing.T) {
	memory := agent.Middleware{Name: "memory", BeforeModel: func(_ context.Context, _ agent.StepInfo, req *llm.Request) error {
		req.SystemTail = "<memory>x</memory>"
		return nil
	}}
	res, _, m := run(t, []agent.Middleware{memory}, nil,
		scripted.Step{ToolCalls: []scripted.StepCall{call("a", `{"todos":[{"content":"One","status":"pending"}]}`)}},
		scripted.Step{ToolCalls: []scripted.StepCall{call("b", `{"todos":[]}`)}},
		scripted.Step{Content: "done"},
	)
	recs := m.Records()
	if got := recs[1].Request.SystemTail; got != "<memory>x</memory>\n\n<current_todos>\n[ ] One\n</current_todos>" {
		t.Fatalf("tail %q", got)
	}
	if got := recs[2].Request.SystemTail; got != "<memory>x</memory>" {
		t.Fatalf("tail after clearing %q", got)
	}
	if r := toolResults(res); r[1].Content != "Todo list cleared; it has no items now." {
		t.Fatalf("clear reply %q", r[1].Content)
	}
	if _, ok := res.State.Values["todos"]; ok {
		t.Fatalf("a cleared list stays in the state: %s", res.State.Values["todos"])
	}
}

// Two write_todos calls in one message: both get the same error and the
// list stays what it was; a third tool in the same message is unaffected.
func TestDoubleCallRefusedStateUnchanged(t *testing.T) {
	echo := tool.MustFunc("echo", "Echo.", func(_ context.Context, _ *tool.Env, in struct {
		S string `json:"s"`
	}) (string, error) {
		return in.S, nil
	})
	m := scripted.New(scripted.Script{"parent": {Steps: []scripted.Step{
		{ToolCalls: []scripted.StepCall{call("a", `{"todos":[{"content":"Keep me","status":"pending"}]}`)}},
		{ToolCalls: []scripted.StepCall{
			call("b", `{"todos":[{"content":"First","status":"pending"}]}`),
			{ID: "e", Name: "echo", Args: json.RawMessage(`{"s":"hi"}`)},
			call("c", `{"todos":[{"content":"Second","status":"completed"}]}`),
		}},
		{Content: "done"},
	}}}, scripted.Options{})
	a, err := agent.New(agent.Config{Model: m, Tools: []tool.Tool{echo}, Middleware: []agent.Middleware{todos.Middleware()}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Invoke(t.Context(), agent.Prompt("go"))
	if err != nil {
		t.Fatal(err)
	}
	r := toolResults(res)
	if len(r) != 4 {
		t.Fatalf("%d results", len(r))
	}
	want := "write_todos was called 2 times in one message; only one call per message is allowed, because each call replaces the whole list. Nothing was changed: send one call with the complete list."
	if !r[1].IsError || !r[3].IsError || r[1].Content != want || r[3].Content != want {
		t.Fatalf("double-call results %+v / %+v", r[1], r[3])
	}
	if r[2].IsError || r[2].Content != "hi" {
		t.Fatalf("the other tool's result %+v", r[2])
	}
	items, _ := todos.List(&res.State)
	if len(items) != 1 || items[0].Content != "Keep me" {
		t.Fatalf("list after the double call %+v", items)
	}
	if got := m.Records()[2].Request.SystemTail; got != "<current_todos>\n[ ] Keep me\n</current_todos>" {
		t.Fatalf("tail %q", got)
	}
}

// Bad arguments are answered in plain words and change nothing.
func TestBadArgumentsChangeNothing(t *testing.T) {
	res, _, _ := run(t, nil, nil,
		scripted.Step{ToolCalls: []scripted.StepCall{call("a", `{"todos":[{"content":"Keep me","status":"pending"}]}`)}},
		scripted.Step{ToolCalls: []scripted.StepCall{call("b", `{"todos":[{"content":"x","status":"done"}]}`)}},
		scripted.Step{Content: "done"},
	)
	r := toolResults(res)
	want := `write_todos: item 1: status "done" is not one of pending, in_progress, completed. Nothing was changed.`
	if !r[1].IsError || r[1].Content != want {
		t.Fatalf("result %+v", r[1])
	}
	if items, _ := todos.List(&res.State); len(items) != 1 || items[0].Content != "Keep me" {
		t.Fatalf("list %+v", items)
	}
}

// A run that ends with items not completed says so: a notice naming them,
// and the list in the Result; a run that finished everything says nothing.
func TestUnfinishedItemsAreReported(t *testing.T) {
	res, evs, _ := run(t, nil, nil,
		scripted.Step{ToolCalls: []scripted.StepCall{call("a", three)}},
		scripted.Step{Content: "done"},
	)
	var notices []agent.NoticeInfo
	endAt, noticeAt := -1, -1
	for i, ev := range evs {
		switch ev.Type {
		case agent.Notice:
			notices = append(notices, *ev.Notice)
			noticeAt = i
		case agent.RunEnd:
			endAt = i
		}
	}
	if len(notices) != 1 || noticeAt > endAt {
		t.Fatalf("notices %+v (at %d, end at %d)", notices, noticeAt, endAt)
	}
	n := notices[0]
	if n.Source != "todos" || n.Count != 2 || n.Text != "the run ended with 2 todos of 3 not completed:\n[~] Write the parser\n[ ] Add tests" {
		t.Fatalf("notice %+v", n)
	}
	open := todos.Unfinished(res)
	if len(open) != 2 || open[0].Content != "Write the parser" || open[1].Content != "Add tests" {
		t.Fatalf("unfinished %+v", open)
	}

	res, evs, _ = run(t, nil, nil,
		scripted.Step{ToolCalls: []scripted.StepCall{call("a", `{"todos":[{"content":"All","status":"completed"}]}`)}},
		scripted.Step{Content: "done"},
	)
	for _, ev := range evs {
		if ev.Type == agent.Notice {
			t.Fatalf("a finished list was reported: %+v", ev.Notice)
		}
	}
	if open := todos.Unfinished(res); len(open) != 0 {
		t.Fatalf("unfinished %+v", open)
	}
}

// The list is checkpointed with the step and a resumed thread shows it to
// the model again.
func TestListSurvivesAResume(t *testing.T) {
	saver := checkpoint.NewMemory(0)
	m := scripted.New(scripted.Script{"parent": {Steps: []scripted.Step{
		{ToolCalls: []scripted.StepCall{call("a", `{"todos":[{"content":"Carry on","status":"in_progress"}]}`)}},
		{Content: "first turn done"},
		{Content: "second turn done"},
	}}}, scripted.Options{})
	a, err := agent.New(agent.Config{Model: m, Middleware: []agent.Middleware{todos.Middleware()}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Invoke(t.Context(), agent.Prompt("one"), runner.Checkpoints(saver, "th")); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Invoke(t.Context(), agent.Prompt("two"), runner.Checkpoints(saver, "th")); err != nil {
		t.Fatal(err)
	}
	recs := m.Records()
	if got := recs[len(recs)-1].Request.SystemTail; got != "<current_todos>\n[~] Carry on\n</current_todos>" {
		t.Fatalf("tail on the next turn %q", got)
	}
}

func TestDecode(t *testing.T) {
	long := strings.Repeat("é", todos.MaxContent+1)
	many := `{"todos":[` + strings.TrimSuffix(strings.Repeat(`{"content":"x","status":"pending"},`, todos.MaxItems+1), ",") + `]}`
	cases := []struct {
		name, args, err string
		n               int
	}{
		{"three", three, "", 3},
		{"empty list", `{"todos":[]}`, "", 0},
		{"spaces", " \n" + three + "\n", "", 3},
		{"empty", ``, `the arguments are empty; send {"todos": [...]}`, 0},
		{"not an object", `[1]`, `the arguments are not a JSON object; send {"todos": [{"content": "...", "status": "pending"}]}`, 0},
		{"null", `null`, `the arguments are not a JSON object; send {"todos": [{"content": "...", "status": "pending"}]}`, 0},
		{"missing", `{}`, `todos is missing; send the complete list (an empty list clears it)`, 0},
		{"extra arg", `{"todos":[],"merge":true}`, `unknown argument "merge"; the only argument is todos`, 0},
		{"todos null", `{"todos":null}`, `todos must be a list of items, got null`, 0},
		{"todos string", `{"todos":"a, b"}`, `todos must be a list of items, got a string`, 0},
		{"item string", `{"todos":["a"]}`, `item 1: must be an object with content and status, got a string`, 0},
		{"blank content", `{"todos":[{"content":"  ","status":"pending"}]}`, `item 1: content is missing or blank; say what is to be done`, 0},
		{"no content", `{"todos":[{"status":"pending"}]}`, `item 1: content is missing or blank; say what is to be done`, 0},
		{"no status", `{"todos":[{"content":"a","status":"pending"},{"content":"b"}]}`, `item 2: status is missing; use pending, in_progress or completed`, 0},
		{"bad status", `{"todos":[{"content":"a","status":"DONE"}]}`, `item 1: status "DONE" is not one of pending, in_progress, completed`, 0},
		{"number content", `{"todos":[{"content":5,"status":"pending"}]}`, `item 1: content must be a string, got a number`, 0},
		{"unknown field", `{"todos":[{"content":"a","status":"pending","id":"1"}]}`, `item 1: unknown field "id"; an item has only content, status and activeForm`, 0},
		{"too long", `{"todos":[{"content":"` + long + `","status":"pending"}]}`, `item 1: content is 2001 characters long; at most 2000 are allowed`, 0},
		{"too many", many, `todos has 101 items; at most 100 are allowed, so merge or drop some`, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			items, err := todos.Decode(json.RawMessage(c.args))
			if c.err != "" {
				if err == nil || err.Error() != c.err {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || len(items) != c.n {
				t.Fatalf("%d items, %v", len(items), err)
			}
		})
	}
}

func TestLinesKeepOneItemPerLine(t *testing.T) {
	got := todos.Lines([]todos.Item{{Content: "a\nb\r\n c", Status: todos.Pending}, {Content: "d", Status: todos.Completed}})
	if got != "[ ] a b c\n[x] d" {
		t.Fatalf("lines %q", got)
	}
	if todos.Block(nil) != "" {
		t.Fatal("an empty list has a block")
	}
}
