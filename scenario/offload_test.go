package scenario

import (
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/offload"
)

func TestOffloadKey(t *testing.T) {
	base := `{"input": "x", "script": {"parent": [{"content": "ok"}]}, "agent": {"offload": %s}}`
	cases := []struct {
		name, offload string
		want          offload.Config
		err           string
	}{
		{"absent keys keep the defaults", `{}`, offload.Config{ToolResultTokens: 20000, UserMessageTokens: 50000}, ""},
		{"tool threshold only", `{"tool_result_tokens": 40}`, offload.Config{ToolResultTokens: 40, UserMessageTokens: 50000}, ""},
		{"zero turns one off", `{"user_message_tokens": 0}`, offload.Config{ToolResultTokens: 20000}, ""},
		{"per tool", `{"tool_result_tokens": 0, "per_tool": {"fetch": 7}}`,
			offload.Config{UserMessageTokens: 50000, PerTool: map[string]int{"fetch": 7}}, ""},
		{"negative", `{"tool_result_tokens": -1}`, offload.Config{}, "1:80: agent.offload: thresholds must not be negative"},
		{"exempt tool", `{"per_tool": {"ls": 3}}`, offload.Config{}, "1:80: agent.offload: ls caps its own output"},
		{"wrong type", `{"tool_result_tokens": "many"}`, offload.Config{}, "1:103: agent.offload.tool_result_tokens must be a whole number, not a string"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := Parse([]byte(strings.Replace(base, "%s", c.offload, 1)))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := s.Agent.Offload.config()
			if got.ToolResultTokens != c.want.ToolResultTokens || got.UserMessageTokens != c.want.UserMessageTokens ||
				len(got.PerTool) != len(c.want.PerTool) || got.PerTool["fetch"] != c.want.PerTool["fetch"] {
				t.Errorf("config = %+v, want %+v", *got, c.want)
			}
		})
	}
	if (*OffloadSpec)(nil).config() != nil {
		t.Error("no offload key should leave the façade's defaults (nil)")
	}
}
