package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/tool"
)

// A run cut off by its step limit returns its result and an error that says
// so; checking err alone is enough to notice.
func ExampleAgent_Invoke_stepLimit() {
	noop := tool.MustFunc("noop", "Do nothing.", func(context.Context, *tool.Env, struct{}) (string, error) { return "ok", nil })
	again := scripted.Step{Content: "working", ToolCalls: []scripted.StepCall{{Name: "noop", Args: json.RawMessage(`{}`)}}}
	model := scripted.New(scripted.Script{"parent": {Steps: []scripted.Step{again, again, again}}}, scripted.Options{})
	a, err := agent.New(agent.Config{Model: model, Tools: []tool.Tool{noop}, MaxSteps: 2})
	if err != nil {
		panic(err)
	}
	res, err := a.Invoke(context.Background(), agent.Prompt("go"))
	switch {
	case errors.Is(err, agent.ErrLimit):
		fmt.Printf("cut off (%v) after %d model calls; last text %q\n", err, res.Rounds, res.FinalText())
	case err != nil:
		fmt.Println("failed:", err)
	default:
		fmt.Println(res.FinalText())
	}
	// Output: cut off (stopped after 2 model calls (the step limit)) after 2 model calls; last text "working"
}
