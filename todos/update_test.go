package todos_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/todos"
)

func upd(id, args string) scripted.StepCall {
	return scripted.StepCall{ID: id, Name: todos.UpdateToolName, Args: json.RawMessage(args)}
}

func runUpdate(t *testing.T, s ...scripted.Step) (*agent.Result, *scripted.Model) {
	t.Helper()
	m := scripted.New(scripted.Script{"parent": {Steps: s}}, scripted.Options{})
	a, err := agent.New(agent.Config{Model: m, Middleware: []agent.Middleware{todos.MiddlewareWith(todos.Options{Update: true})}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Invoke(t.Context(), agent.Prompt("plan it"))
	if err != nil {
		t.Fatal(err)
	}
	return res, m
}

// todo_update changes the items it names by number and keeps the rest;
// the next request's tail shows the new list.
func TestUpdateByID(t *testing.T) {
	res, m := runUpdate(t,
		scripted.Step{ToolCalls: []scripted.StepCall{call("a", three)}},
		scripted.Step{ToolCalls: []scripted.StepCall{upd("b", `{"updates":[{"id":2,"status":"completed"},{"id":3,"status":"in_progress","activeForm":"Adding tests"}]}`)}},
		scripted.Step{ToolCalls: []scripted.StepCall{upd("c", `{"updates":[{"id":3,"content":"Add fuzz tests","activeForm":""}]}`)}},
		scripted.Step{Content: "done"},
	)
	r := toolResults(res)
	if r[1].IsError || !strings.HasPrefix(r[1].Content, "Todo list updated: 3 items (2 completed, 1 in progress, 0 pending).") {
		t.Fatalf("update answer %+v", r[1])
	}
	items, _ := todos.List(&res.State)
	want := []todos.Item{{Content: "Read the spec", Status: todos.Completed},
		{Content: "Write the parser", Status: todos.Completed, ActiveForm: "Writing the parser"},
		{Content: "Add fuzz tests", Status: todos.InProgress}}
	if !reflect.DeepEqual(items, want) {
		t.Fatalf("list %+v, want %+v", items, want)
	}
	if got := m.Records()[2].Request.SystemTail; got != "<current_todos>\n[x] Read the spec\n[x] Write the parser\n[~] Add tests\n</current_todos>" {
		t.Fatalf("tail after the first update %q", got)
	}
	specs := m.Records()[0].Request.Tools
	if len(specs) != 2 || specs[0].Name != "write_todos" || specs[1].Name != "todo_update" {
		t.Fatalf("tools %+v", specs)
	}
}

// Updates that do not fit the list, and a second list call in the same
// message, are refused in plain words and change nothing.
func TestUpdateRefusals(t *testing.T) {
	for _, tc := range []struct {
		name  string
		calls []scripted.StepCall
		want  string
	}{
		{"no such item", []scripted.StepCall{upd("b", `{"updates":[{"id":1,"status":"completed"},{"id":4,"status":"completed"}]}`)},
			"todo_update: update 2: there is no item 4; the list has 3 items, numbered from 1. Nothing was changed."},
		{"with write_todos", []scripted.StepCall{upd("b", `{"updates":[{"id":1,"status":"pending"}]}`), call("c", three)},
			"todo_update was called together with another todo_update or write_todos call in one message; the calls would undo each other. Nothing was changed: send one call per message."},
		{"bad status", []scripted.StepCall{upd("b", `{"updates":[{"id":1,"status":"done"}]}`)},
			`todo_update: update 1: status "done" is not one of pending, in_progress, completed. Nothing was changed.`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, _ := runUpdate(t,
				scripted.Step{ToolCalls: []scripted.StepCall{call("a", three)}},
				scripted.Step{ToolCalls: tc.calls},
				scripted.Step{Content: "done"},
			)
			r := toolResults(res)
			if !r[1].IsError || r[1].Content != tc.want {
				t.Fatalf("answer %+v\nwant %q", r[1], tc.want)
			}
			var before struct{ Todos []todos.Item }
			_ = json.Unmarshal([]byte(three), &before)
			if items, _ := todos.List(&res.State); !reflect.DeepEqual(items, before.Todos) {
				t.Fatalf("list changed: %+v", items)
			}
		})
	}
	// Before any list there is nothing to update.
	res, _ := runUpdate(t, scripted.Step{ToolCalls: []scripted.StepCall{upd("b", `{"updates":[{"id":1,"status":"completed"}]}`)}}, scripted.Step{Content: "done"})
	if r := toolResults(res); !r[0].IsError || r[0].Content != "todo_update: the todo list is empty; write it first with write_todos. Nothing was changed." {
		t.Fatalf("empty list: %+v", r[0])
	}
}

func TestDecodeUpdates(t *testing.T) {
	for _, tc := range []struct{ args, err string }{
		{``, "the arguments are empty"},
		{`[]`, "the arguments are not a JSON object"},
		{`{"updates":[],"x":1}`, `unknown argument "x"`},
		{`{}`, "updates is missing"},
		{`{"updates":{}}`, "updates must be a list of changes, got an object"},
		{`{"updates":[]}`, "updates is empty"},
		{`{"updates":[{"status":"completed"}]}`, "update 1: id is missing"},
		{`{"updates":[{"id":"1","status":"completed"}]}`, "update 1: id must be a whole number, got a string"},
		{`{"updates":[{"id":1.5,"status":"completed"}]}`, "update 1: id must be a whole number from 1 to 100, got 1.5"},
		{`{"updates":[{"id":0,"status":"completed"}]}`, "from 1 to 100, got 0"},
		{`{"updates":[{"id":1}]}`, "update 1: nothing to change"},
		{`{"updates":[{"id":1,"content":"  "}]}`, "update 1: content is blank"},
		{`{"updates":[{"id":1,"status":"completed"},{"id":1,"status":"pending"}]}`, "update 2: item 1 is changed twice"},
		{`{"updates":[{"id":1,"status":"completed","note":"x"}]}`, `update 1: unknown field "note"`},
		{`{"updates":[{"id":2,"status":"in_progress","content":"New","activeForm":""}]}`, ""},
	} {
		ups, err := todos.DecodeUpdates(json.RawMessage(tc.args))
		if tc.err == "" {
			if err != nil || len(ups) != 1 || ups[0].ID != 2 || ups[0].Status != todos.InProgress || *ups[0].Content != "New" || *ups[0].ActiveForm != "" {
				t.Errorf("%s: %+v %v", tc.args, ups, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: error %v, want %q", tc.args, err, tc.err)
		}
	}
}

// Whatever the model sends, DecodeUpdates never panics and accepts only
// updates Apply can check against a list; Apply never changes its input and
// keeps the list's length and validity.
func FuzzDecodeUpdates(f *testing.F) {
	f.Add([]byte(`{"updates":[{"id":1,"status":"completed"}]}`))
	f.Add([]byte(`{"updates":[{"id":2,"status":"in_progress","content":"New","activeForm":""}]}`))
	f.Add([]byte(`{"updates":[{"id":3,"content":"x"},{"id":1,"activeForm":"Doing"}]}`))
	f.Add([]byte(`{"updates":[{"id":1e2,"status":"pending"}]}`))
	f.Add([]byte(`{"updates":[{"id":-1}]}`))
	f.Add([]byte(`{"updates":null}`))
	var base struct{ Todos []todos.Item }
	if err := json.Unmarshal([]byte(three), &base); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, args []byte) {
		ups, err := todos.DecodeUpdates(args)
		if err != nil {
			if ups != nil || err.Error() == "" {
				t.Fatalf("updates %v with error %q", ups, err)
			}
			return
		}
		if len(ups) == 0 || len(ups) > todos.MaxItems {
			t.Fatalf("%d updates accepted", len(ups))
		}
		seen := map[int]bool{}
		for _, u := range ups {
			if u.ID < 1 || u.ID > todos.MaxItems || seen[u.ID] {
				t.Fatalf("bad id accepted: %+v", u)
			}
			seen[u.ID] = true
			switch u.Status {
			case "", todos.Pending, todos.InProgress, todos.Completed:
			default:
				t.Fatalf("bad status accepted: %q", u.Status)
			}
			if u.Content != nil && (strings.TrimSpace(*u.Content) == "" || utf8.RuneCountInString(*u.Content) > todos.MaxContent) {
				t.Fatalf("bad content accepted: %q", *u.Content)
			}
		}
		orig := append([]todos.Item(nil), base.Todos...)
		next, err := todos.Apply(base.Todos, ups)
		if !reflect.DeepEqual(orig, base.Todos) {
			t.Fatal("Apply changed its input")
		}
		if err != nil {
			return
		}
		if len(next) != len(base.Todos) {
			t.Fatalf("Apply changed the length: %d", len(next))
		}
		raw, _ := json.Marshal(map[string]any{"todos": next})
		if _, err := todos.Decode(raw); err != nil {
			t.Fatalf("Apply made a list write_todos refuses: %v", err)
		}
	})
}
