package config

import (
	"slices"
	"strings"
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
	for doc, want := range map[string]string{
		"mcpServers: {a: 1}":      "/a/bad.md:3: mcpServers must be a list of MCP server names, got a mapping",
		"mcpServers: [ok, 'a b']": `/a/bad.md:3: mcpServers: "a b" is not a server name`,
		"mcpServers: [[x]]":       "/a/bad.md:3: mcpServers items must be server names",
	} {
		_, err := ParseAgentFile("/a/bad.md", []byte("---\ndescription: Bad.\n"+doc+"\n---\n"))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", doc, err, want)
		}
	}
	af, err = ParseAgentFile("/a/one.md", []byte("---\ndescription: One.\nmcpServers: github, my.docs\n---\n"))
	if err != nil || !slices.Equal(af.MCPServers, []string{"github", "my.docs"}) {
		t.Errorf("comma-separated: %v %v", af.MCPServers, err)
	}
}
