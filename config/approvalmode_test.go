package config

import (
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/approve"
)

// approval_mode is read from the user's file; a project file may only set
// manual, and the later file wins.
func TestApprovalMode(t *testing.T) {
	const user = "home/.deepagents/config.toml"
	for _, tc := range []struct {
		name          string
		user, project string
		want          approve.Mode
		err           string
	}{
		{name: "unset", user: "max_steps = 3\n", want: ""},
		{name: "user sets auto", user: "approval_mode = \"auto\"\n", want: approve.Auto},
		{name: "user's spelling", user: "approval_mode = \"Accept_Edits\"\n", want: approve.AcceptEdits},
		{name: "project tightens", user: "approval_mode = \"yolo\"\n", project: "approval_mode = \"manual\"\n", want: approve.Manual},
		{name: "project loosens", user: "approval_mode = \"manual\"\n", project: "model = \"openai:x\"\napproval_mode = \"yolo\"\n",
			err: `deepagents.toml:2: approval_mode "yolo" can only be set in your own config file (~/.deepagents/config.toml) or with --approval-mode`},
		{name: "unknown", user: "approval_mode = \"careful\"\n", err: user + `:1: approval mode "careful" is not one of manual, accept-edits, auto, yolo`},
		{name: "not a string", user: "approval_mode = 1\n", err: "approval_mode must be a string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var files []file
			if tc.user != "" {
				files = append(files, file{user, []byte(tc.user), false})
			}
			if tc.project != "" {
				files = append(files, file{"deepagents.toml", []byte(tc.project), true})
			}
			c, err := load(files)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.ApprovalMode != tc.want {
				t.Errorf("mode %q, want %q", c.ApprovalMode, tc.want)
			}
		})
	}
}
