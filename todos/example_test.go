package todos_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/todos"
)

// An agent plans with write_todos, finishes one item and stops: the run
// reports what it left undone.
func ExampleMiddleware() {
	model := scripted.New(scripted.Script{"parent": {Steps: []scripted.Step{
		{ToolCalls: []scripted.StepCall{{Name: "write_todos", Args: json.RawMessage(
			`{"todos":[{"content":"Read the notes","status":"completed"},{"content":"Write the summary","status":"pending"}]}`)}}},
		{Content: "I read the notes."},
	}}}, scripted.Options{})
	a, err := agent.New(agent.Config{Model: model, Middleware: []agent.Middleware{todos.Middleware()}})
	if err != nil {
		panic(err)
	}
	res, err := agent.Drain(a.Run(context.Background(), agent.Prompt("Summarise the notes.")), func(ev agent.Event) {
		if ev.Type == agent.Notice {
			fmt.Println(ev.Notice.Text)
		}
	})
	if err != nil {
		panic(err)
	}
	for _, it := range todos.Unfinished(res) {
		fmt.Println("left:", it.Content)
	}
	// Output:
	// the run ended with 1 todo of 2 not completed:
	// [ ] Write the summary
	// left: Write the summary
}
