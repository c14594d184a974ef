package subagent_test

import (
	"encoding/json"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/subagent"
	"github.com/deepagents-go/deepagents/tool"
	"github.com/deepagents-go/deepagents/vfs"
)

// A child's path is its host's path plus one segment, whatever the host's
// depth; outside a loop it is read from env.Agent.
func TestChildPathExtendsTheHostPath(t *testing.T) {
	cases := []struct {
		name  string
		host  agent.Path
		agent string // env.Agent
		want  string
	}{
		{"top-level host", agent.RootPath("parent"), "parent", "parent / general-purpose#c9"},
		{"nested host", agent.RootPath("parent").Child("planner", "c1"), "parent / planner#c1", "parent / planner#c1 / general-purpose#c9"},
		{"no host path: parsed from env.Agent", nil, "lead / planner#c1", "lead / planner#c1 / general-purpose#c9"},
		{"no host path, no env.Agent", nil, "", "parent / general-purpose#c9"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := scripted.New(scripted.Script{"general-purpose": {Steps: []scripted.Step{{Content: "done"}}}}, scripted.Options{})
			task := newTask(t, subagent.Config{Model: m, Subagents: []subagent.Spec{subagent.GeneralPurpose()}})
			var events []agent.Event
			env := &tool.Env{CallID: "c9", Agent: c.agent, Files: vfs.NewMemory(nil)}
			_, child, err := task.RunNested(t.Context(), env, json.RawMessage(`{"description":"go","subagent_type":"general-purpose"}`),
				agent.Host{Path: c.host, Emit: func(e agent.Event) { events = append(events, e) }})
			if err != nil || child == nil {
				t.Fatalf("child %v, err %v", child, err)
			}
			if child.Agent.String() != c.want {
				t.Errorf("child run's agent %q, want %q", child.Agent, c.want)
			}
			want, _ := agent.ParsePath(c.want)
			parentText := want.Parent().String()
			var starts int
			for _, e := range events {
				switch {
				case e.Type == agent.SubagentStart:
					starts++
					if !e.Subagent.Path.Equal(want) || e.Agent.String() != parentText {
						t.Errorf("subagent.start path %q on agent %q, want %q on %q", e.Subagent.Path, e.Agent, c.want, parentText)
					}
				case e.Type == agent.RunStart && e.Agent.String() != c.want:
					t.Errorf("the child's run.start is tagged %q, want %q", e.Agent, c.want)
				}
			}
			if starts != 1 {
				t.Errorf("%d subagent.start events", starts)
			}
		})
	}
}
