package config

import (
	"slices"
	"strings"
	"testing"
)

// [protect] allow loosens the Ask places in the user's own file only: a
// project file that tries is refused with its line, and the places the
// agent never changes cannot be named.
func TestProtect(t *testing.T) {
	const user = "home/.deepagents/config.toml"
	for _, tc := range []struct {
		name          string
		user, project string
		want          []string
		err           string
	}{
		{name: "user allows", user: "[protect]\nallow = [\"memory\", \"user-memory\", \"memory\"]\n", want: []string{"memory", "user-memory"}},
		{name: "empty list", user: "protect = { allow = [] }\n", want: []string{}},
		{name: "unset", user: "max_steps = 3\n"},
		{name: "project tries", user: "[protect]\nallow = [\"skills\"]\n", project: "model = \"openai:x\"\n\n[protect]\nallow = [\"agents\"]\n",
			err: "deepagents.toml:3: [protect] can only be set in your own config file (~/.deepagents/config.toml): a project file cannot loosen what protects you from it"},
		{name: "project tries with an empty list", project: "protect = { allow = [] }\n", err: "deepagents.toml:1: [protect] can only be set in your own config file"},
		{name: "never places", user: "[protect]\nallow = [\"git\", \"database\"]\n",
			err: user + `:2: protect.allow names "database", the thread database, which the agent never changes: it cannot be allowed`},
		{name: "misspelt", user: "[protect]\nallow = [\"memroy\"]\n", err: `protect.allow: "memroy" is not a kind of protected place; use "agents", "skills", "memory", "user-memory" or "project-config" (did you mean memory?)`},
		{name: "not a list", user: "[protect]\nallow = \"memory\"\n", err: "protect.allow must be a list of kinds of places"},
		{name: "not strings", user: "[protect]\nallow = [1]\n", err: "protect.allow item 1 must be a string, got an integer"},
		{name: "other key", user: "[protect]\ndeny = []\n", err: `unknown key "protect.deny"`},
		{name: "not a table", user: "protect = true\n", err: "protect must be a table"},
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
			if !slices.Equal(c.ProtectAllow, tc.want) || (c.ProtectAllow == nil) != (tc.want == nil) {
				t.Errorf("allow %#v, want %#v", c.ProtectAllow, tc.want)
			}
		})
	}
}

// The user's rules are kept apart from the project's, which come after.
func TestUserPermissionsKeptApart(t *testing.T) {
	c, err := load([]file{
		{"home/.deepagents/config.toml", []byte("[permissions]\nrules = [\"deny write /etc/**\"]\n"), false},
		{"deepagents.toml", []byte("[permissions]\nrules = [\"allow write /etc/**\"]\n"), true},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.UserPermissions.Strings(); !slices.Equal(got, []string{"deny write /etc/**"}) {
		t.Errorf("user's %v", got)
	}
	if got := c.Permissions.Strings(); !slices.Equal(got, []string{"deny write /etc/**", "allow write /etc/**"}) {
		t.Errorf("all %v", got)
	}
}
