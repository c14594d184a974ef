package agent

import (
	"encoding/json"
	"testing"
)

// A tool.start event for a call whose arguments were cut off mid-stream
// still encodes, keeps the text, and reads back.
func TestToolInfoJSONKeepsBadArguments(t *testing.T) {
	for _, tc := range []struct{ args, wire string }{
		{`{"path":"/a"}`, `{"call_id":"c1","name":"ls","args":{"path":"/a"}}`},
		{`{"path":"/a`, `{"call_id":"c1","name":"ls","args":"{\"path\":\"/a","args_invalid":true}`},
		{``, `{"call_id":"c1","name":"ls"}`},
	} {
		ev := Event{Type: ToolStart, Tool: &ToolInfo{CallID: "c1", Name: "ls", Args: json.RawMessage(tc.args)}}
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatalf("args %q: %v", tc.args, err)
		}
		var raw struct{ Tool json.RawMessage }
		if err := json.Unmarshal(b, &raw); err != nil || string(raw.Tool) != tc.wire {
			t.Errorf("args %q: tool = %s, want %s (%v)", tc.args, raw.Tool, tc.wire, err)
		}
		var back ToolInfo
		if err := json.Unmarshal(raw.Tool, &back); err != nil || string(back.Args) != tc.args || back.CallID != "c1" || back.Name != "ls" {
			t.Errorf("args %q: read back %+v (args %q), %v", tc.args, back, back.Args, err)
		}
	}
}
