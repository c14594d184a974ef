package config

import (
	"slices"
	"testing"
)

// mcpServers in an agent file narrows the subagent's MCP servers; absent,
// the spec inherits all of them.
func TestAgentFileMCPServers(t *testing.T) {
	af, err := ParseAgentFile("/a/gh.md", []byte("---\ndescription: Files issues.\nmcpServers: [github, docs]\n---\nFile issues.\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := af.Spec().MCPServers; !slices.Equal(got, []string{"github", "docs"}) {
		t.Errorf("MCPServers %v", got)
	}
	af, err = ParseAgentFile("/a/all.md", []byte("---\ndescription: Everything.\n---\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := af.Spec().MCPServers; got != nil {
		t.Errorf("MCPServers %v without the key", got)
	}
	if _, err := ParseAgentFile("/a/bad.md", []byte("---\ndescription: Bad.\nmcpServers: {a: 1}\n---\n")); err == nil {
		t.Error("a mapping for mcpServers was accepted")
	}
}
