package agent

import (
	"testing"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm"
)

// A result write keeps the tool's text once, in its message; writes saved
// before that (the text in the data too) still read back.
func TestOutcomeContentFromTheResultMessage(t *testing.T) {
	for _, c := range []struct {
		name, data, msg, want string
	}{
		{"the text in the message only", `{"content":"","content_in_result":true,"duration_ms":2}`, "listing of /", "listing of /"},
		{"an older write with both", `{"content":"old text","duration_ms":2}`, "old text", "old text"},
		{"text that differs from the message", `{"content":"raw"}`, "raw, shortened", "raw"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var done map[string]CallOutcome
			w := checkpoint.Write{CallID: "call_1", Kind: checkpoint.KindResult, Data: []byte(c.data),
				Result: llm.Message{Role: llm.RoleTool, ToolCallID: "call_1", Content: c.msg}}
			if err := decodeOutcome(&done, w); err != nil {
				t.Fatal(err)
			}
			if got := done["call_1"].Content; got != c.want {
				t.Errorf("content %q, want %q", got, c.want)
			}
		})
	}
}
