package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	ot "github.com/deepagents-go/deepagents/providers/openai/openaitest"
)

// The response limits of the config file reach the model calls, and the
// flags override them: a response with three tool calls ends the run under
// max_tool_calls = 2 with an error naming the limit, and one with a larger
// text under max_response_bytes, while --max-tool-calls 5 lets the same
// calls run.
func TestConfiguredResponseLimits(t *testing.T) {
	calls := []ot.Call{}
	for i := range 3 {
		calls = append(calls, ot.Call{ID: fmt.Sprintf("c%d", i), Name: "ls", Args: `{"path":"/"}`})
	}
	srv := ot.NewServer(t, func(r *ot.Request) ot.Reply {
		if r.Last().Role == "tool" {
			return ot.Text("listed")
		}
		if strings.Contains(r.FirstUser(), "long") {
			return ot.Text(strings.Repeat("word ", 100))
		}
		return ot.Reply{ToolCalls: calls}
	})
	_, home := runEnv(t, srv)
	writeFileAt(t, filepath.Join(home, ".deepagents", "config.toml"), "max_tool_calls = 2\nmax_response_bytes = 200\n")
	code, _, errs := runCLI(t, "run", "-p", "list", "--model", "openai:gpt-test", "--quiet")
	if code != 1 || !strings.Contains(errs, "the model's response was cut off after 3 tool calls: its limit is 2 (max_tool_calls)") {
		t.Errorf("3 calls under max_tool_calls = 2: exit %d, stderr:\n%s", code, errs)
	}
	code, _, errs = runCLI(t, "run", "-p", "say something long", "--model", "openai:gpt-test", "--quiet")
	if code != 1 || !strings.Contains(errs, "its limit is 200 bytes (max_response_bytes)") {
		t.Errorf("500 bytes under max_response_bytes = 200: exit %d, stderr:\n%s", code, errs)
	}
	code, out, errs := runCLI(t, "run", "-p", "list", "--model", "openai:gpt-test", "--quiet", "--max-tool-calls", "5")
	if code != 0 || strings.TrimSpace(out) != "listed" {
		t.Errorf("--max-tool-calls 5: exit %d, out %q, stderr:\n%s", code, out, errs)
	}
	code, _, errs = runCLI(t, "run", "-p", "list", "--model", "openai:gpt-test", "--max-tool-calls", "-1")
	if code != 2 || !strings.Contains(errs, "must not be negative") {
		t.Errorf("--max-tool-calls -1: exit %d, stderr:\n%s", code, errs)
	}
}
