// Package demoagent holds the agent that "deepagents serve --demo" serves:
// a scripted model behind the real harness, so the server, its clients and
// the web UI can be tried and tested without an API key.
package demoagent

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/approve"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
)

// New returns an agent answered by a built-in script instead of a model,
// so that the server, its clients and the web UI can be tried and tested
// without an API key. Every turn goes the same way: the agent delegates two
// research tasks to parallel general-purpose subagents, asks to write
// /report.md (a call that waits for approval), then answers. A message
// containing "slow" makes each model call take a minute instead (for
// cancelling), and stepDelayMS slows every call down (0: none). When the
// write is rejected, the answer says the report was not written.
func New(name string, stepDelayMS float64) (*agent.Agent, error) {
	return deepagents.New(deepagents.Config{
		Name: name, Model: Model(stepDelayMS), Stream: true,
		InterruptOn: map[string]approve.Policy{"write_file": {}},
	})
}

// Model returns the demo's scripted model on its own, for agents that put
// other rules around the same script.
func Model(stepDelayMS float64) llm.Model {
	return scripted.New(nil, scripted.Options{Func: func(ci llm.CallInfo, req *llm.Request) (scripted.Step, error) {
		return demoStep(ci, req, stepDelayMS), nil
	}})
}

func demoStep(ci llm.CallInfo, req *llm.Request, delayMS float64) scripted.Step {
	var st scripted.Step
	if strings.Contains(ci.Task, "slow") {
		delayMS = 60_000
	}
	if delayMS > 0 {
		st.DelayMS = &delayMS
	}
	if ci.Instance != "" {
		st.Content = "Findings: " + ci.Task + " — three sources agree."
		return st
	}
	// The parent's step follows from what its history holds so far, so a
	// new turn on the same thread starts the plan again.
	last := req.Messages[len(req.Messages)-1]
	turn := 0
	for _, m := range req.Messages {
		if m.Role == llm.RoleUser {
			turn++
		}
	}
	switch {
	case last.Role == llm.RoleUser:
		args := func(topic string) json.RawMessage {
			b, _ := json.Marshal(map[string]string{"description": "Research " + topic + " for: " + last.Content, "subagent_type": "general-purpose"})
			return b
		}
		st.ToolCalls = []scripted.StepCall{
			{ID: fmt.Sprintf("task_a_%d", turn), Name: "task", Args: args("topic A")},
			{ID: fmt.Sprintf("task_b_%d", turn), Name: "task", Args: args("topic B")},
		}
	case last.Role == llm.RoleTool && last.Name == "task":
		b, _ := json.Marshal(map[string]string{"file_path": "/report.md", "content": "# Report\n\nTopic A and topic B, summarised.\n"})
		st.ToolCalls = []scripted.StepCall{{ID: fmt.Sprintf("write_%d", turn), Name: "write_file", Args: b}}
	case last.Role == llm.RoleTool && last.Name == "write_file" && last.IsError:
		// Rejected (or failed): the answer must not claim the report exists.
		st.Content = "I did not write /report.md (" + demoReason(last.Content) + "), so there is no report file. " +
			"The findings on topic A and topic B are in the subagents' answers above."
	default:
		st.Content = "Done: the report is in /report.md."
	}
	return st
}

// demoReason says why the write did not happen, from what the model was
// told.
func demoReason(result string) string {
	if strings.Contains(result, "rejected") {
		return "you rejected it"
	}
	return "it failed"
}
