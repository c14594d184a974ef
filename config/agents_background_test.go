package config

import (
	"strings"
	"testing"
	"time"
)

// An agent file can make its subagent background by default and set the
// caps of its background runs; bad values are errors with their lines.
func TestAgentFileBackground(t *testing.T) {
	a, err := ParseAgentFile("agents/r.md", []byte("---\ndescription: d\nbackground: true\nbackground_max_steps: 7\nbackground_max_tokens: 9000\nbackground_timeout: 2m\n---\nBody\n"))
	if err != nil {
		t.Fatal(err)
	}
	s := a.Spec()
	if !s.Background || s.BackgroundLimits.MaxSteps != 7 || s.BackgroundLimits.MaxTokens != 9000 || s.BackgroundLimits.Timeout != 2*time.Minute {
		t.Errorf("spec %+v", s)
	}
	_, err = ParseAgentFile("agents/r.md", []byte("---\ndescription: d\nbackground: sometimes\nbackground_max_steps: 0\n---\n"))
	if err == nil || !strings.Contains(err.Error(), "agents/r.md:3: background must be true or false") ||
		!strings.Contains(err.Error(), "agents/r.md:4: background_max_steps must be at least 1") {
		t.Errorf("error %v", err)
	}
}
