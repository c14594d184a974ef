package openai

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/providers/openai/openaitest"
	"github.com/deepagents-go/deepagents/tool"
)

// A tool call whose arguments are not valid JSON (a model that was cut off)
// is kept as text everywhere: its tool.start event encodes, the tool answers
// with an error saying the arguments are not valid JSON, and the transcript
// saves and loads with the text intact.
func TestBadToolArgumentsAreKeptAndAnswered(t *testing.T) {
	const bad = `{"path":"/notes/todo.md","text":"buy`
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			srv := openaitest.NewServer(t, openaitest.Sequence(
				openaitest.Tools(openaitest.Call{ID: "call_bad", Name: "write_note", Args: bad}),
				openaitest.Text("Sorry."),
			))
			m, _ := newModel(t, srv, Config{})
			a, err := agent.New(agent.Config{Model: m, Tools: []tool.Tool{noteTool()}, Stream: stream})
			if err != nil {
				t.Fatal(err)
			}
			var starts []string
			res, err := agent.Drain(a.Run(testCtx(t), agent.Prompt("Save a note")), func(ev agent.Event) {
				b, err := json.Marshal(ev)
				if err != nil {
					t.Errorf("event %s does not encode: %v", ev.Type, err)
				}
				if ev.Type == agent.ToolStart {
					starts = append(starts, string(b))
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(starts) != 1 || !strings.Contains(starts[0], `"args_invalid":true`) || !strings.Contains(starts[0], `buy`) {
				t.Errorf("tool.start events: %v", starts)
			}
			msgs := res.State.Messages
			if len(msgs) < 3 || !msgs[2].IsError || !strings.Contains(msgs[2].Content, "not valid JSON") {
				t.Fatalf("the tool's answer: %+v", msgs)
			}
			b, err := json.Marshal(msgs)
			if err != nil {
				t.Fatalf("saving the transcript: %v", err)
			}
			var back []struct {
				ToolCalls []struct {
					Args json.RawMessage `json:"args"`
				} `json:"tool_calls"`
			}
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			var text string
			if err := json.Unmarshal(back[1].ToolCalls[0].Args, &text); err != nil || text != bad {
				t.Errorf("saved args %s, want the text %q", back[1].ToolCalls[0].Args, bad)
			}
		})
	}
}
