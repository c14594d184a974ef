package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/tool"
)

// responseTool is the extra tool of an agent with a ResponseFormat: its
// parameters are the response schema, and a valid call ends the run with the
// arguments as the structured output.
type responseTool struct {
	spec   llm.ToolSpec
	schema *tool.Schema
}

func newResponseTool(rf ResponseFormat) (*responseTool, error) {
	if rf.Name == "" {
		return nil, configErr("agent: a ResponseFormat needs a name")
	}
	s, err := tool.CompileSchema(rf.Schema)
	if err != nil {
		return nil, &ConfigError{Msg: fmt.Sprintf("agent: response format %s: %v", rf.Name, err), Err: err}
	}
	desc := rf.Description
	if desc == "" {
		desc = "Give your final answer by calling this tool; its arguments are the answer. Calling it ends your turn."
	}
	return &responseTool{spec: llm.ToolSpec{Name: rf.Name, Description: desc, Parameters: s.Raw()}, schema: s}, nil
}

func (t *responseTool) Spec() llm.ToolSpec { return t.spec }

func (t *responseTool) Run(_ context.Context, _ *tool.Env, args json.RawMessage) (tool.Result, error) {
	var v any
	if err := tool.DecodeArgs(t.schema, args, &v); err != nil {
		return tool.Errorf("Invalid %s: %v. Call %s again with arguments that match its schema.", t.spec.Name, err, t.spec.Name), nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, bytes.TrimSpace(args)); err != nil {
		return tool.Result{}, err
	}
	return tool.Result{Content: "Recorded the final " + t.spec.Name + ".", Structured: buf.Bytes(), Stop: true}, nil
}
