package deepagents_test

import (
	"encoding/json"
	"strings"
	"testing"

	deepagents "github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/subagent"
	"github.com/deepagents-go/deepagents/todos"
)

func todoCall(id, content string) scripted.StepCall {
	return scripted.StepCall{ID: id, Name: "write_todos",
		Args: json.RawMessage(`{"todos":[{"content":"` + content + `","status":"pending"}]}`)}
}

func taskCall(id, typ string) scripted.StepCall {
	return scripted.StepCall{ID: id, Name: "task", Args: json.RawMessage(`{"description":"Do part ` + id + `.","subagent_type":"` + typ + `"}`)}
}

// With Config.Todos every agent instance keeps its own list: subagents (two
// of one type and a fork) start without the parent's list, write their own,
// and the parent's list is the same after they return. Forks and subagents
// of one type send the byte-identical static prefix (system prompt and
// tools) that prompt caching needs.
func TestTodosPerAgentInstance(t *testing.T) {
	m := scripted.New(scripted.Script{
		"parent": {Steps: []scripted.Step{
			{ToolCalls: []scripted.StepCall{todoCall("p1", "Parent plan")}},
			{ToolCalls: []scripted.StepCall{taskCall("c1", "general-purpose"), taskCall("c2", "general-purpose"), taskCall("c3", "forker")}},
			{Content: "all done"},
		}},
		"general-purpose": {Steps: []scripted.Step{
			{ToolCalls: []scripted.StepCall{todoCall("g1", "Child plan")}},
			{Content: "child done"},
		}},
		"forker": {Steps: []scripted.Step{
			{ToolCalls: []scripted.StepCall{todoCall("f1", "Fork plan")}},
			{Content: "fork done"},
		}},
	}, scripted.Options{})
	a, err := deepagents.New(deepagents.Config{Model: m, Todos: true,
		Subagents: []subagent.Spec{{Name: "forker", Description: "Continues the work.", Mode: subagent.Fork}}})
	if err != nil {
		t.Fatal(err)
	}
	var notices []agent.Event
	res, err := agent.Drain(a.Run(t.Context(), agent.Prompt("go")), func(ev agent.Event) {
		if ev.Type == agent.Notice && ev.Notice.Source == "todos" {
			notices = append(notices, ev)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	parentBlock := "<current_todos>\n[ ] Parent plan\n</current_todos>"
	byWho := map[string][]*llm.Request{}
	for _, r := range m.Records() {
		byWho[r.Who+"/"+r.Instance] = append(byWho[r.Who+"/"+r.Instance], r.Request)
	}
	parent := byWho["parent/"]
	if len(parent) != 3 || parent[1].SystemTail != parentBlock || parent[2].SystemTail != parentBlock {
		t.Fatalf("parent requests %d, tails %q", len(parent), tails(parent))
	}
	children := map[string]string{"general-purpose/c1": "Child plan", "general-purpose/c2": "Child plan", "forker/c3": "Fork plan"}
	for who, plan := range children {
		reqs := byWho[who]
		if len(reqs) != 2 {
			t.Fatalf("%s made %d calls", who, len(reqs))
		}
		if reqs[0].SystemTail != "" || reqs[1].SystemTail != "<current_todos>\n[ ] "+plan+"\n</current_todos>" {
			t.Errorf("%s tails %q", who, tails(reqs))
		}
		if c, ok := res.Child(strings.TrimPrefix(who[strings.Index(who, "/"):], "/")); !ok || len(todos.Unfinished(c)) != 1 {
			t.Errorf("%s result list %v", who, c)
		}
	}
	if items, _ := todos.List(&res.State); len(items) != 1 || items[0].Content != "Parent plan" {
		t.Fatalf("parent list after delegation %+v", items)
	}

	// The static prefix: two instances of one type send the same system
	// prompt and tools; a fork sends its parent's.
	same := func(what string, a, b *llm.Request) {
		t.Helper()
		aj, _ := json.Marshal(a.Tools)
		bj, _ := json.Marshal(b.Tools)
		if a.System != b.System || string(aj) != string(bj) {
			t.Errorf("%s: static prefixes differ:\n%q %s\n%q %s", what, a.System, aj, b.System, bj)
		}
	}
	same("general-purpose instances", byWho["general-purpose/c1"][0], byWho["general-purpose/c2"][0])
	same("fork and parent", parent[1], byWho["forker/c3"][0])

	// Each run that ended with its plan open said so, under its own path.
	got := map[string]string{}
	for _, ev := range notices {
		got[ev.Agent.String()] = ev.Notice.Text
	}
	if len(got) != 4 || got["parent"] != "the run ended with 1 todo of 1 not completed:\n[ ] Parent plan" {
		t.Fatalf("notices %q", got)
	}
}

func tails(reqs []*llm.Request) []string {
	var out []string
	for _, r := range reqs {
		out = append(out, r.SystemTail)
	}
	return out
}

// Todos are off unless asked for.
func TestTodosOffByDefault(t *testing.T) {
	m := scripted.New(scripted.Script{"parent": {Steps: []scripted.Step{{Content: "hi"}}}}, scripted.Options{})
	for _, on := range []bool{false, true} {
		a, err := deepagents.New(deepagents.Config{Model: m, Todos: on})
		if err != nil {
			t.Fatal(err)
		}
		has := false
		for _, s := range a.ToolSpecs() {
			has = has || s.Name == "write_todos"
		}
		if has != on {
			t.Errorf("Todos=%v: write_todos bound = %v", on, has)
		}
		gp, _ := a.Tools()[len(deepagents.BuiltinToolNames)-1].(*subagent.Task).Agent("general-purpose")
		has = false
		for _, s := range gp.ToolSpecs() {
			has = has || s.Name == "write_todos"
		}
		if has != on {
			t.Errorf("Todos=%v: the general-purpose subagent's write_todos = %v", on, has)
		}
	}
}
