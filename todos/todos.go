// Package todos gives an agent a plan it keeps itself: the write_todos tool
// replaces the agent's todo list, the list is shown to the model on every
// call after the cached part of the system prompt (so changing it never
// invalidates the cached prefix), and a run that ends with unfinished items
// says so.
//
// The list belongs to one agent instance: it lives in the run's state under
// the name StateName, so a subagent neither sees nor changes its parent's
// list, and a subagent's own list ends with its run.
//
//	a, err := agent.New(agent.Config{Model: m, Middleware: []agent.Middleware{todos.Middleware()}})
package todos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/tool"
)

// ToolName is the name of the tool that replaces the list.
const ToolName = "write_todos"

// StateName is the run state value that holds the list (a JSON array of
// Items); read it with List.
const StateName = "todos"

// Limits on one list. The list is sent with every model call, so it is kept
// to what a plan needs.
const (
	MaxItems   = 100
	MaxContent = 2000 // characters per content or activeForm
)

// Status is where an item stands.
type Status string

// The three statuses an item can have.
const (
	Pending    Status = "pending"
	InProgress Status = "in_progress"
	Completed  Status = "completed"
)

// Item is one entry of the list.
type Item struct {
	Content string `json:"content"`
	Status  Status `json:"status"`
	// ActiveForm is the item in the present continuous ("Running the
	// tests"), for displays that show what is being done; optional.
	ActiveForm string `json:"activeForm,omitempty"`
}

// Done reports whether the item is completed.
func (it Item) Done() bool { return it.Status == Completed }

const params = `{"type":"object","properties":{"todos":{"type":"array","description":"The complete list, in order. It replaces the previous list.","items":{"type":"object","properties":{` +
	`"content":{"type":"string","description":"What to do, in the imperative."},` +
	`"status":{"type":"string","enum":["pending","in_progress","completed"]},` +
	`"activeForm":{"type":"string","description":"The same in the present continuous, e.g. \"Running the tests\"."}},` +
	`"required":["content","status"],"additionalProperties":false}}},"required":["todos"],"additionalProperties":false}`

const description = "Replace your todo list with a new one. Use it for work of three or more steps: " +
	"write the plan first, keep exactly the item you are working on in_progress, and mark each item completed " +
	"as soon as it is done. Every call sends the whole list; items left out are removed, and an empty list " +
	"clears it. Call it at most once per message. The current list is shown to you with every request."

// Tool returns the write_todos tool. It keeps the list in the calling
// agent's run state; bind it with Middleware, which also shows the list to
// the model.
func Tool() tool.Tool { return writeTodos{} }

type writeTodos struct{}

func (writeTodos) Spec() llm.ToolSpec {
	return llm.ToolSpec{Name: ToolName, Description: description, Parameters: json.RawMessage(params)}
}

// Run replaces the list. A message with more than one call of the tool gets
// the same error for every call and changes nothing: the calls would
// overwrite each other in an order the model cannot see.
func (writeTodos) Run(_ context.Context, env *tool.Env, args json.RawMessage) (tool.Result, error) {
	if env != nil {
		n := 0
		for _, c := range env.Calls {
			if c.Name == ToolName {
				n++
			}
		}
		if n > 1 {
			return tool.Errorf("%s was called %d times in one message; only one call per message is allowed, "+
				"because each call replaces the whole list. Nothing was changed: send one call with the complete list.", ToolName, n), nil
		}
	}
	items, err := Decode(args)
	if err != nil {
		return tool.Errorf("%s: %v. Nothing was changed.", ToolName, err), nil
	}
	var raw json.RawMessage
	if len(items) > 0 {
		raw, err = json.Marshal(items)
		if err != nil {
			return tool.Result{}, err
		}
	} else {
		raw = json.RawMessage("null")
	}
	return tool.Result{Content: reply(items), State: map[string]json.RawMessage{StateName: raw}}, nil
}

// reply is the tool's answer: a count by status and the list as the model
// will see it.
func reply(items []Item) string {
	if len(items) == 0 {
		return "Todo list cleared; it has no items now."
	}
	var done, doing, open int
	for _, it := range items {
		switch it.Status {
		case Completed:
			done++
		case InProgress:
			doing++
		default:
			open++
		}
	}
	return fmt.Sprintf("Todo list updated: %s (%d completed, %d in progress, %d pending).\n%s",
		plural(len(items), "item"), done, doing, open, Lines(items))
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// Lines renders the list one item a line: "[ ] " pending, "[~] " in
// progress, "[x] " completed, then the content (line breaks in it become
// spaces).
func Lines(items []Item) string {
	var b strings.Builder
	for i, it := range items {
		if i > 0 {
			b.WriteByte('\n')
		}
		switch it.Status {
		case Completed:
			b.WriteString("[x] ")
		case InProgress:
			b.WriteString("[~] ")
		default:
			b.WriteString("[ ] ")
		}
		b.WriteString(oneLine(it.Content))
	}
	return b.String()
}

func oneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return strings.Join(strings.Fields(strings.NewReplacer("\r", " ", "\n", " ").Replace(s)), " ")
}

// Block is the list as the model sees it with each request: the lines of
// Lines inside a <current_todos> element. Empty for an empty list.
func Block(items []Item) string {
	if len(items) == 0 {
		return ""
	}
	return "<current_todos>\n" + Lines(items) + "\n</current_todos>"
}

// Decode reads write_todos arguments: an object whose "todos" is an array of
// items with a non-blank content, a status of pending, in_progress or
// completed, and optionally an activeForm. Every problem is described in
// plain words, naming the item.
func Decode(args json.RawMessage) ([]Item, error) {
	args = bytes.TrimSpace(args)
	if len(args) == 0 {
		return nil, fmt.Errorf(`the arguments are empty; send {"todos": [...]}`)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(args, &top); err != nil || top == nil {
		return nil, fmt.Errorf(`the arguments are not a JSON object; send {"todos": [{"content": "...", "status": "pending"}]}`)
	}
	for k := range top {
		if k != "todos" {
			return nil, fmt.Errorf("unknown argument %q; the only argument is todos", k)
		}
	}
	raw, ok := top["todos"]
	if !ok {
		return nil, fmt.Errorf("todos is missing; send the complete list (an empty list clears it)")
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil || (list == nil && !bytes.Equal(bytes.TrimSpace(raw), []byte("[]"))) {
		return nil, fmt.Errorf("todos must be a list of items, got %s", kind(raw))
	}
	if len(list) > MaxItems {
		return nil, fmt.Errorf("todos has %d items; at most %d are allowed, so merge or drop some", len(list), MaxItems)
	}
	items := make([]Item, 0, len(list))
	for i, r := range list {
		it, err := decodeItem(r)
		if err != nil {
			return nil, fmt.Errorf("item %d: %v", i+1, err)
		}
		items = append(items, it)
	}
	return items, nil
}

func decodeItem(raw json.RawMessage) (Item, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return Item{}, fmt.Errorf(`must be an object with content and status, got %s`, kind(raw))
	}
	var it Item
	for k, v := range fields {
		var s string
		switch k {
		case "content", "status", "activeForm":
			if err := json.Unmarshal(v, &s); err != nil {
				return Item{}, fmt.Errorf("%s must be a string, got %s", k, kind(v))
			}
		default:
			return Item{}, fmt.Errorf("unknown field %q; an item has only content, status and activeForm", k)
		}
		switch k {
		case "content":
			it.Content = s
		case "status":
			it.Status = Status(s)
		case "activeForm":
			it.ActiveForm = s
		}
	}
	if _, ok := fields["content"]; !ok || strings.TrimSpace(it.Content) == "" {
		return Item{}, fmt.Errorf("content is missing or blank; say what is to be done")
	}
	if n := utf8.RuneCountInString(it.Content); n > MaxContent {
		return Item{}, fmt.Errorf("content is %d characters long; at most %d are allowed", n, MaxContent)
	}
	if n := utf8.RuneCountInString(it.ActiveForm); n > MaxContent {
		return Item{}, fmt.Errorf("activeForm is %d characters long; at most %d are allowed", n, MaxContent)
	}
	switch it.Status {
	case Pending, InProgress, Completed:
	case "":
		return Item{}, fmt.Errorf("status is missing; use pending, in_progress or completed")
	default:
		return Item{}, fmt.Errorf("status %q is not one of pending, in_progress, completed", clip(string(it.Status), 40))
	}
	return it, nil
}

// kind names the JSON type of raw for error messages.
func kind(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "a list"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}

// List returns the todo list kept in a run's state (nil when there is none).
func List(s *agent.State) ([]Item, error) {
	if s == nil {
		return nil, nil
	}
	items, _, err := agent.GetValue[[]Item](s, StateName)
	return items, err
}

// Unfinished returns the items of a finished run's list that are not
// completed, in order: what the run left undone.
func Unfinished(res *agent.Result) []Item {
	if res == nil {
		return nil
	}
	items, err := List(&res.State)
	if err != nil {
		return nil
	}
	var open []Item
	for _, it := range items {
		if !it.Done() {
			open = append(open, it)
		}
	}
	return open
}

// Middleware binds write_todos, shows the current list to the model with
// every call (appended to the request's SystemTail, the part of the system
// prompt after the cache breakpoint) and, when a run ends with items not
// completed, emits a notice naming them (the list stays in the Result's
// state: see Unfinished). An agent and each of its subagents get their own
// copy of the middleware through their own configs, and each run keeps its
// own list.
func Middleware() agent.Middleware {
	return agent.Middleware{
		Name:        "todos",
		Tools:       []tool.Tool{Tool()},
		BeforeModel: showList,
		AfterRun:    reportUnfinished,
	}
}

func showList(_ context.Context, st agent.StepInfo, req *llm.Request) error {
	items, err := List(st.State)
	if err != nil {
		// A value this package did not write; the model's next call
		// replaces it.
		return nil
	}
	if block := Block(items); block != "" {
		if req.SystemTail != "" {
			req.SystemTail += "\n\n"
		}
		req.SystemTail += block
	}
	return nil
}

func reportUnfinished(_ context.Context, st agent.StepInfo, status agent.Status) {
	// An interrupted run is not over: it goes on when a person decides.
	if status == agent.StatusInterrupted || st.Emit == nil {
		return
	}
	items, err := List(st.State)
	if err != nil {
		return
	}
	var open []Item
	for _, it := range items {
		if !it.Done() {
			open = append(open, it)
		}
	}
	if len(open) == 0 {
		return
	}
	st.Emit(agent.Event{Type: agent.Notice, Notice: &agent.NoticeInfo{
		Source: "todos", Count: len(open),
		Text: fmt.Sprintf("the run ended with %s of %d not completed:\n%s",
			plural(len(open), "todo"), len(items), Lines(open)),
	}})
}
