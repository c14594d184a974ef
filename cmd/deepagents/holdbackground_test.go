package main

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/config"
	"github.com/deepagents-go/deepagents/subagent"
)

// A project's agent file may lower the background caps in force, not raise
// them; the user's own agent files may set any.
func TestProjectAgentFileCannotRaiseBackgroundCaps(t *testing.T) {
	home := t.TempDir()
	raise := subagent.BackgroundLimits{MaxSteps: 500, MaxTokens: 9_000_000, Timeout: 5 * time.Hour}
	files := []config.AgentFile{
		{Path: filepath.Join("proj", ".deepagents", "agents", "a.md")},
		{Path: filepath.Join("proj", ".deepagents", "agents", "b.md")},
		{Path: filepath.Join(home, ".deepagents", "agents", "c.md")},
	}
	specs := []subagent.Spec{
		{Name: "a", BackgroundLimits: raise},
		{Name: "b", BackgroundLimits: subagent.BackgroundLimits{MaxSteps: 5, MaxTokens: 1000, Timeout: time.Minute}},
		{Name: "c", BackgroundLimits: raise},
	}
	user := subagent.BackgroundLimits{MaxSteps: 20}
	holdBackground(specs, files, home, user)
	if got := specs[0].BackgroundLimits; got != (subagent.BackgroundLimits{}) {
		t.Errorf("a project file raised the caps: %+v", got)
	}
	if got, want := specs[1].BackgroundLimits, (subagent.BackgroundLimits{MaxSteps: 5, MaxTokens: 1000, Timeout: time.Minute}); got != want {
		t.Errorf("a project file's lower caps: %+v, want %+v", got, want)
	}
	if got := specs[2].BackgroundLimits; got != raise {
		t.Errorf("the user's own file's caps: %+v, want %+v", got, raise)
	}
}
