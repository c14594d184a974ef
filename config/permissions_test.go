package config

import (
	"slices"
	"strings"
	"testing"
)

func TestPermissionsTOML(t *testing.T) {
	c, err := Parse("deepagents.toml", []byte("model = \"openai:gpt-4o\"\n[permissions]\nrules = [\"deny write /etc/**\", \"allow  READ docs/*.md\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Permissions.Strings(), []string{"deny write /etc/**", "allow read /docs/*.md"}; !slices.Equal(got, want) {
		t.Errorf("rules = %v, want %v", got, want)
	}
	for _, c := range []struct{ src, want string }{
		{"permissions = [\"deny write /x\"]", "deepagents.toml:1: permissions must be a table"},
		{"[permissions]\nrules = \"deny write /x\"", "deepagents.toml:2: permissions.rules must be a list"},
		{"[permissions]\nrule = []", `deepagents.toml:2: unknown key "permissions.rule"`},
		{"[permissions]\nrules = [\"deny write /x\", 3]", "deepagents.toml:2: permissions.rules item 2 must be a string"},
		{"[permissions]\nrules = [\"forbid write /x\"]", `deepagents.toml:2: permission rule "forbid write /x": it starts with "forbid"`},
	} {
		_, err := Parse("deepagents.toml", []byte(c.src))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q) = %v; want an error containing %q", c.src, err, c.want)
		}
	}
}

// The user's rules are checked first: a project file cannot lift them.
func TestPermissionsMergeUserFirst(t *testing.T) {
	user, err := Parse("user.toml", []byte("[permissions]\nrules = [\"deny all /secrets/**\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	project, err := Parse("deepagents.toml", []byte("[permissions]\nrules = [\"allow all /**\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	c := &Config{}
	c.Merge(user)
	c.Merge(project)
	if got, want := c.Permissions.Strings(), []string{"deny all /secrets/**", "allow all /**"}; !slices.Equal(got, want) {
		t.Errorf("merged rules = %v, want %v", got, want)
	}
	if got := user.Permissions.Strings(); len(got) != 1 {
		t.Errorf("merging changed the user's rules: %v", got)
	}
	none := &Config{}
	none.Merge(user)
	none.Merge(&Config{})
	if len(none.Permissions) != 1 {
		t.Errorf("a file without [permissions] changed the rules: %v", none.Permissions)
	}
}

func TestPermissionsAgentFile(t *testing.T) {
	a, err := ParseAgentFile("r.md", []byte("---\ndescription: Reads.\npermissions: [\"deny write /**\", \"deny read /secrets/**\"]\n---\nRead only.\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := a.Spec().Permissions.Strings(), []string{"deny write /**", "deny read /secrets/**"}; !slices.Equal(got, want) {
		t.Errorf("spec rules = %v, want %v", got, want)
	}
	b, err := ParseAgentFile("b.md", []byte("---\ndescription: All.\npermissions: []\n---\n"))
	if err != nil || b.Spec().Permissions == nil || len(b.Spec().Permissions) != 0 {
		t.Errorf("permissions: [] = %v, %v; want an empty, non-nil list", b.Spec().Permissions, err)
	}
	c, _ := ParseAgentFile("c.md", []byte("---\ndescription: Inherits.\n---\n"))
	if c.Spec().Permissions != nil {
		t.Errorf("no permissions key gave %v; want nil (inherit)", c.Spec().Permissions)
	}
	for _, tc := range []struct{ src, want string }{
		{"---\ndescription: d\npermissions: deny write /x\n---\n", "r.md:3: permissions must be a list"},
		{"---\ndescription: d\npermissions:\n  - deny write /x\n  - nope\n---\n", `r.md:5: permission rule "nope"`},
		{"---\ndescription: d\nmode: fork\npermissions: []\n---\n", `r.md:4: permissions cannot be set for mode "fork"`},
	} {
		_, err := ParseAgentFile("r.md", []byte(tc.src))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseAgentFile(%q) = %v; want %q", tc.src, err, tc.want)
		}
	}
}
