package config

import (
	"strings"
	"testing"
)

// max_response_bytes and max_tool_calls are read as whole numbers of at
// least 1, a project's replacing the user's, and anything else is an error
// with the file and line.
func TestResponseLimits(t *testing.T) {
	projectDir, homeDir := setup(t, "max_response_bytes = 1_048_576\nmax_tool_calls = 50\n", "max_tool_calls = 20\n")
	c, err := Load(projectDir, homeDir)
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxResponseBytes != 1<<20 || c.MaxToolCalls != 20 {
		t.Errorf("limits %d bytes, %d calls; want %d, 20", c.MaxResponseBytes, c.MaxToolCalls, 1<<20)
	}
	for in, want := range map[string]string{
		"max_response_bytes = 0\n":       `x.toml:1: max_response_bytes must be at least 1, got 0`,
		"\nmax_tool_calls = -3\n":        `x.toml:2: max_tool_calls must be at least 1, got -3`,
		"max_response_bytes = \"16MiB\"": `x.toml:1: max_response_bytes must be a whole number, got a string`,
	} {
		_, err := Parse("x.toml", []byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %s", in, err, want)
		}
	}
}
