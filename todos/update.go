package todos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/tool"
)

// UpdateToolName is the name of the tool that changes items by id.
const UpdateToolName = "todo_update"

// Update changes one item of the list: ID is its number in the current
// list, counting from 1; a non-empty Status and the non-nil fields replace
// the item's (an empty ActiveForm removes it).
type Update struct {
	ID         int
	Status     Status
	Content    *string
	ActiveForm *string
}

const updateParams = `{"type":"object","properties":{"updates":{"type":"array","description":"The items to change; each names an item by its number in the current list.","minItems":1,"items":{"type":"object","properties":{` +
	`"id":{"type":"integer","minimum":1,"description":"The item's number in the current list, counting from 1."},` +
	`"status":{"type":"string","enum":["pending","in_progress","completed"]},` +
	`"content":{"type":"string","description":"New wording of the item."},` +
	`"activeForm":{"type":"string","description":"New present-continuous form; empty to remove it."}},` +
	`"required":["id"],"additionalProperties":false}}},"required":["updates"],"additionalProperties":false}`

const updateDescription = "Change items of your todo list without resending it: each update names an item by its number " +
	"in the current list (counting from 1, in the order shown to you) and gives its new status, and optionally new wording. " +
	"Use it to mark an item completed and start the next one in one call. It cannot add or remove items; use " +
	ToolName + " for that. Call it at most once per message, and not in the same message as " + ToolName + "."

// UpdateTool returns the todo_update tool, which changes items of the list
// by id instead of replacing it. It needs the list kept by write_todos
// (bind both with MiddlewareWith(Options{Update: true})).
func UpdateTool() tool.Tool { return updateTodos{} }

type updateTodos struct{}

func (updateTodos) Spec() llm.ToolSpec {
	return llm.ToolSpec{Name: UpdateToolName, Description: updateDescription, Parameters: json.RawMessage(updateParams)}
}

// Run applies the updates to the current list, all or none.
func (updateTodos) Run(_ context.Context, env *tool.Env, args json.RawMessage) (tool.Result, error) {
	var values map[string]json.RawMessage
	if env != nil {
		n := 0
		for _, c := range env.Calls {
			if c.Name == ToolName || c.Name == UpdateToolName {
				n++
			}
		}
		if n > 1 {
			return tool.Errorf("%s was called together with another %s or %s call in one message; the calls would undo each other. "+
				"Nothing was changed: send one call per message.", UpdateToolName, UpdateToolName, ToolName), nil
		}
		values = env.State
	}
	ups, err := DecodeUpdates(args)
	if err != nil {
		return tool.Errorf("%s: %v. Nothing was changed.", UpdateToolName, err), nil
	}
	items, err := List(&agent.State{Values: values})
	if err != nil {
		return tool.Errorf("%s: the current list cannot be read (%v); send the whole list with %s.", UpdateToolName, err, ToolName), nil
	}
	next, err := Apply(items, ups)
	if err != nil {
		return tool.Errorf("%s: %v. Nothing was changed.", UpdateToolName, err), nil
	}
	raw, err := json.Marshal(next)
	if err != nil {
		return tool.Result{}, err
	}
	return tool.Result{Content: reply(next), State: map[string]json.RawMessage{StateName: raw}}, nil
}

// Apply returns items with ups applied, or an error naming the first
// update that does not fit the list; items is not changed.
func Apply(items []Item, ups []Update) ([]Item, error) {
	if len(items) == 0 {
		return nil, fmt.Errorf("the todo list is empty; write it first with %s", ToolName)
	}
	next := append([]Item(nil), items...)
	for i, u := range ups {
		if u.ID < 1 || u.ID > len(next) {
			return nil, fmt.Errorf("update %d: there is no item %d; the list has %s, numbered from 1", i+1, u.ID, plural(len(next), "item"))
		}
		it := &next[u.ID-1]
		if u.Status != "" {
			it.Status = u.Status
		}
		if u.Content != nil {
			it.Content = *u.Content
		}
		if u.ActiveForm != nil {
			it.ActiveForm = *u.ActiveForm
		}
	}
	return next, nil
}

// DecodeUpdates reads todo_update arguments: an object whose "updates" is a
// non-empty list of objects, each with an integer id of 1 or more (each id
// at most once) and at least one of status, content or activeForm, checked
// as write_todos checks items. Every problem is described in plain words,
// naming the update.
func DecodeUpdates(args json.RawMessage) ([]Update, error) {
	args = bytes.TrimSpace(args)
	if len(args) == 0 {
		return nil, fmt.Errorf(`the arguments are empty; send {"updates": [{"id": 1, "status": "completed"}]}`)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(args, &top); err != nil || top == nil {
		return nil, fmt.Errorf(`the arguments are not a JSON object; send {"updates": [{"id": 1, "status": "completed"}]}`)
	}
	for k := range top {
		if k != "updates" {
			return nil, fmt.Errorf("unknown argument %q; the only argument is updates", k)
		}
	}
	raw, ok := top["updates"]
	if !ok {
		return nil, fmt.Errorf("updates is missing")
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil || list == nil {
		return nil, fmt.Errorf("updates must be a list of changes, got %s", kind(raw))
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("updates is empty; name at least one item to change")
	}
	if len(list) > MaxItems {
		return nil, fmt.Errorf("updates has %d entries; at most %d are allowed", len(list), MaxItems)
	}
	out := make([]Update, 0, len(list))
	seen := map[int]bool{}
	for i, r := range list {
		u, err := decodeUpdate(r)
		if err != nil {
			return nil, fmt.Errorf("update %d: %v", i+1, err)
		}
		if seen[u.ID] {
			return nil, fmt.Errorf("update %d: item %d is changed twice; give each item one update", i+1, u.ID)
		}
		seen[u.ID] = true
		out = append(out, u)
	}
	return out, nil
}

func decodeUpdate(raw json.RawMessage) (Update, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return Update{}, fmt.Errorf("must be an object with id and status, got %s", kind(raw))
	}
	var u Update
	idRaw, ok := fields["id"]
	if !ok {
		return Update{}, fmt.Errorf("id is missing; give the item's number in the list")
	}
	var id float64
	if err := json.Unmarshal(idRaw, &id); err != nil {
		return Update{}, fmt.Errorf("id must be a whole number, got %s", kind(idRaw))
	}
	if id != math.Trunc(id) || id < 1 || id > MaxItems {
		return Update{}, fmt.Errorf("id must be a whole number from 1 to %d, got %s", MaxItems, clip(string(bytes.TrimSpace(idRaw)), 40))
	}
	u.ID = int(id)
	for k, v := range fields {
		var s string
		switch k {
		case "id":
			continue
		case "content", "status", "activeForm":
			if err := json.Unmarshal(v, &s); err != nil {
				return Update{}, fmt.Errorf("%s must be a string, got %s", k, kind(v))
			}
		default:
			return Update{}, fmt.Errorf("unknown field %q; an update has only id, status, content and activeForm", k)
		}
		switch k {
		case "content":
			u.Content = &s
		case "status":
			u.Status = Status(s)
		case "activeForm":
			u.ActiveForm = &s
		}
	}
	if _, ok := fields["status"]; !ok && u.Content == nil && u.ActiveForm == nil {
		return Update{}, fmt.Errorf("nothing to change; give a status, content or activeForm")
	}
	if u.Content != nil {
		if strings.TrimSpace(*u.Content) == "" {
			return Update{}, fmt.Errorf("content is blank; say what is to be done, or leave content out")
		}
		if n := utf8.RuneCountInString(*u.Content); n > MaxContent {
			return Update{}, fmt.Errorf("content is %d characters long; at most %d are allowed", n, MaxContent)
		}
	}
	if u.ActiveForm != nil {
		if n := utf8.RuneCountInString(*u.ActiveForm); n > MaxContent {
			return Update{}, fmt.Errorf("activeForm is %d characters long; at most %d are allowed", n, MaxContent)
		}
	}
	if _, ok := fields["status"]; ok {
		switch u.Status {
		case Pending, InProgress, Completed:
		default:
			return Update{}, fmt.Errorf("status %q is not one of pending, in_progress, completed", clip(string(u.Status), 40))
		}
	}
	return u, nil
}

// Options choose the tools Middleware binds.
type Options struct {
	// Update binds todo_update next to write_todos.
	Update bool
}

// MiddlewareWith is Middleware with options.
func MiddlewareWith(o Options) agent.Middleware {
	m := Middleware()
	if o.Update {
		m.Tools = append(m.Tools, UpdateTool())
	}
	return m
}
