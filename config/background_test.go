package config

import (
	"strings"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/subagent"
)

// The [background] table sets the caps of background subagent runs; a
// project file may lower them but not raise them; bad values are errors
// with their lines.
func TestBackgroundTable(t *testing.T) {
	const up, pp = "home/.deepagents/config.toml", "project/deepagents.toml"
	c, err := load([]file{
		{up, []byte("[background]\nmax_running = 2\nmax_steps = 30\n"), false},
		{pp, []byte("[background]\nmax_running = 8\nmax_steps = 10\nmax_tokens = 300000\ntimeout = \"5m\"\n"), true},
	})
	if err != nil {
		t.Fatal(err)
	}
	// max_running 8 and max_tokens 300000 would raise the user's and the
	// default caps: ignored. max_steps 10 and 5m lower them.
	want := subagent.BackgroundLimits{MaxRunning: 2, MaxSteps: 10, Timeout: 5 * time.Minute}
	if c.Background != want {
		t.Errorf("background %+v, want %+v", c.Background, want)
	}
	_, err = Parse("deepagents.toml", []byte("[background]\nmax_running = 0\ntimeout = 30\nmax_time = 1\n"))
	for _, want := range []string{"deepagents.toml:2: background.max_running must be at least 1", `deepagents.toml:3: background.timeout must be a duration like "90s"`,
		`deepagents.toml:4: unknown key "background.max_time"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
}

// [background] max_cost caps each background run's cost; a project file
// may lower the user's cap, or set one where the user set none, but not
// raise it.
func TestBackgroundMaxCost(t *testing.T) {
	const up, pp = "home/.deepagents/config.toml", "project/deepagents.toml"
	for _, tc := range []struct {
		user, project string
		want          float64
	}{
		{"max_cost = 1.0\n", "max_cost = 5\n", 1},
		{"max_cost = 1.0\n", "max_cost = 0.25\n", 0.25},
		{"max_steps = 3\n", "max_cost = 2\n", 2},
	} {
		c, err := load([]file{{up, []byte("[background]\n" + tc.user), false}, {pp, []byte("[background]\n" + tc.project), true}})
		if err != nil {
			t.Fatal(err)
		}
		if c.Background.MaxCost != tc.want {
			t.Errorf("user %q, project %q: max_cost %v, want %v", tc.user, tc.project, c.Background.MaxCost, tc.want)
		}
	}
	if _, err := Parse("deepagents.toml", []byte("[background]\nmax_cost = -1\n")); err == nil || !strings.Contains(err.Error(), "max_cost must be more than 0") {
		t.Errorf("error %v", err)
	}
}
