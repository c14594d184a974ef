package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/approve"
	"github.com/google/go-cmp/cmp"
)

func TestInterruptOnInConfigFiles(t *testing.T) {
	tests := []struct {
		name string
		toml string
		want map[string]approve.Policy
		err  string
	}{
		{"inline table", "interrupt_on = { write_file = true, edit_file = [\"approve\", \"reject\"], ls = false }\n",
			map[string]approve.Policy{"write_file": {}, "edit_file": {Allowed: []agent.DecisionType{"approve", "reject"}}}, ""},
		{"table", "[interrupt_on]\nwrite_file = [\"Edit\"]\n",
			map[string]approve.Policy{"write_file": {Allowed: []agent.DecisionType{"edit"}}}, ""},
		{"empty", "interrupt_on = {}\n", map[string]approve.Policy{}, ""},
		{"respond is named", "interrupt_on = { ask_user = [\"respond\"], write_file = [\"approve\", \"Respond\"] }\n",
			map[string]approve.Policy{"ask_user": {Allowed: []agent.DecisionType{agent.Respond}},
				"write_file": {Allowed: []agent.DecisionType{agent.Approve, agent.Respond}}}, ""},
		{"not a table", "interrupt_on = \"write_file\"\n", nil,
			`deepagents.toml:1: interrupt_on must be a table of tool names, each true, false or a list of decisions ("approve", "edit", "reject" and "respond"), got a string`},
		{"unknown decision", "[interrupt_on]\nwrite_file = [\"approve\", \"allow\"]\n", nil,
			`deepagents.toml:2: interrupt_on.write_file: "allow" is not a decision; use "approve", "edit", "reject" or "respond"`},
		{"empty list", "[interrupt_on]\n\nwrite_file = []\n", nil,
			`deepagents.toml:3: interrupt_on.write_file: the list of decisions is empty; write true for approve, edit and reject, or false to not ask`},
		{"twice", "interrupt_on = { x = [\"edit\", \"edit\"] }\n", nil, `deepagents.toml:1: interrupt_on.x: decision "edit" is listed twice`},
		{"number", "interrupt_on = { x = 1 }\n", nil, `deepagents.toml:1: interrupt_on.x must be true, false or a list of decisions ("approve", "edit", "reject" and "respond"), got an integer`},
		{"bad item", "interrupt_on = { x = [1] }\n", nil, `deepagents.toml:1: interrupt_on.x: decisions must be strings ("approve", "edit", "reject" or "respond"), got an integer`},
		{"bad tool name", "interrupt_on = { \"a b\" = true }\n", nil, `deepagents.toml:1: interrupt_on: tool name "a b" must be letters, digits, "_" and "-" only`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse("deepagents.toml", []byte(tt.toml))
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("error\n got: %v\nwant: %s", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, c.InterruptOn); diff != "" {
				t.Errorf("InterruptOn (-want +got):\n%s", diff)
			}
		})
	}
}

// The project's interrupt_on adds to the user's: it gates more tools, and
// cannot lift or change a gate of the user's (false or {} lift nothing); a
// file that does not set it keeps the other's. The user's own table is kept
// apart too, as the floor of every agent file.
func TestInterruptOnMerge(t *testing.T) {
	user := file{"home/.deepagents/config.toml", []byte("interrupt_on = { write_file = true, edit_file = true }\n"), false}
	c, err := load([]file{user, {"deepagents.toml", []byte("max_steps = 3\n"), true}})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.InterruptOn) != 2 {
		t.Errorf("the user's interrupt_on was lost: %v", c.InterruptOn)
	}
	for _, project := range []string{
		"interrupt_on = { edit_file = [\"reject\"], ls = true, write_file = false }\n",
		"interrupt_on = {}\n",
	} {
		c, err = load([]file{user, {"deepagents.toml", []byte(project), true}})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]approve.Policy{"write_file": {}, "edit_file": {}}
		if strings.Contains(project, "ls") {
			want["ls"] = approve.Policy{}
		}
		if diff := cmp.Diff(want, c.InterruptOn); diff != "" {
			t.Errorf("%s merged (-want +got):\n%s", project, diff)
		}
		if diff := cmp.Diff(map[string]approve.Policy{"write_file": {}, "edit_file": {}}, c.UserInterruptOn); diff != "" {
			t.Errorf("the user's own (-want +got):\n%s", diff)
		}
	}
	// Without a user table, the project's is the whole.
	c, err = load([]file{{"deepagents.toml", []byte("interrupt_on = { ls = true }\n"), true}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]approve.Policy{"ls": {}}, c.InterruptOn); diff != "" || c.UserInterruptOn != nil {
		t.Errorf("project only (-want +got):\n%s; user's %v", diff, c.UserInterruptOn)
	}
}

func TestInterruptOnInAgentFiles(t *testing.T) {
	tests := []struct {
		name  string
		front string
		want  map[string]approve.Policy
		err   string
	}{
		{"absent inherits", "", nil, ""},
		{"flow mapping", "interrupt_on: {write_file: true, edit_file: [approve, reject], ls: false}\n",
			map[string]approve.Policy{"write_file": {}, "edit_file": {Allowed: []agent.DecisionType{"approve", "reject"}}}, ""},
		{"block mapping", "interrupt_on:\n  write_file:\n    - edit\n", map[string]approve.Policy{"write_file": {Allowed: []agent.DecisionType{"edit"}}}, ""},
		{"none", "interrupt_on: {}\n", map[string]approve.Policy{}, ""},
		{"respond", "interrupt_on: {ask_user: [respond]}\n", map[string]approve.Policy{"ask_user": {Allowed: []agent.DecisionType{agent.Respond}}}, ""},
		{"a list", "interrupt_on: [write_file]\n", nil,
			`a.md:3: interrupt_on must be a mapping of tool names, each true, false or a list of decisions ("approve", "edit", "reject" and "respond"), got a list`},
		{"bad decision", "interrupt_on:\n  write_file: [approve, maybe]\n", nil,
			`a.md:4: interrupt_on.write_file: "maybe" is not a decision; use "approve", "edit", "reject" or "respond"`},
		{"string value", "interrupt_on: {write_file: yes}\n", nil,
			`a.md:3: interrupt_on.write_file must be true, false or a list of decisions ("approve", "edit", "reject" and "respond"), got the string "yes"`},
		{"number item", "interrupt_on: {write_file: [1]}\n", nil,
			`a.md:3: interrupt_on.write_file: decisions must be "approve", "edit", "reject" or "respond", got the integer 1`},
		{"twice", "interrupt_on:\n  w: true\n  w: false\n", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := ParseAgentFile("a.md", []byte("---\ndescription: d\n"+tt.front+"---\n"))
			if tt.name == "twice" {
				// YAML itself refuses a key written twice.
				if err == nil || !strings.Contains(err.Error(), `"w"`) {
					t.Fatalf("duplicate tool accepted: %v", err)
				}
				return
			}
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("error\n got: %v\nwant: %s", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, a.InterruptOn); diff != "" {
				t.Errorf("InterruptOn (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, a.Spec().InterruptOn); diff != "" {
				t.Errorf("Spec().InterruptOn (-want +got):\n%s", diff)
			}
			if tt.want == nil && a.Spec().InterruptOn != nil {
				t.Error("an agent file without interrupt_on must inherit (nil)")
			}
		})
	}
}

func TestParseInterruptOnFlag(t *testing.T) {
	got, err := ParseInterruptOnFlag(" write_file, edit_file,,")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]approve.Policy{"write_file": {}, "edit_file": {}}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for in, want := range map[string]string{
		"":             "no tool names given",
		" , ":          "no tool names given",
		"write file":   `"write file" is not a tool name`,
		"ls;write_fil": `"ls;write_fil" is not a tool name`,
	} {
		if _, err := ParseInterruptOnFlag(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", in, err, want)
		}
	}
}

func TestParseDatabase(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	tests := []struct {
		spec, dir string
		want      Database
		err       string
	}{
		{"sqlite:/tmp/x.db", "/work", Database{Kind: SQLite, Path: "/tmp/x.db"}, ""},
		{"sqlite:state.db", "/work", Database{Kind: SQLite, Path: "/work/state.db"}, ""},
		{"SQLite:~/t.db", "", Database{Kind: SQLite, Path: filepath.Join(home, "t.db")}, ""},
		{" postgres://u:pw@h:5432/db?sslmode=disable ", "", Database{Kind: Postgres, DSN: "postgres://u:pw@h:5432/db?sslmode=disable"}, ""},
		{"postgresql:///db?host=/run/pg", "", Database{Kind: Postgres, DSN: "postgresql:///db?host=/run/pg"}, ""},
		{"", "", Database{}, `no database given; write "sqlite:PATH" or "postgres://USER@HOST/DB"`},
		{"sqlite:", "", Database{}, `"sqlite:" names no file: write "sqlite:PATH"`},
		{"sqlite:///x.db", "", Database{}, `"sqlite:///x.db": write an SQLite database as "sqlite:PATH" (for example sqlite:.deepagents/state.db), without "//"`},
		{"state.db", "", Database{}, `"state.db" is not a database: write "sqlite:PATH" or "postgres://USER@HOST/DB" (for this file: "sqlite:state.db")`},
		{"mysql://h/db", "", Database{}, `"mysql://h/db" is not a database: write "sqlite:PATH" or "postgres://USER@HOST/DB" (for this file: "sqlite:mysql://h/db")`},
		{"postgres:h/db", "", Database{}, `postgres:h/db: write a PostgreSQL database as a URL, "postgres://USER@HOST:PORT/DB"`},
		{"postgres://u:secret@h:port/db", "", Database{}, `is not a valid PostgreSQL URL`},
		{"sqlite:a\nb", "", Database{}, "one line"},
		{"sqlite:state.db?synchronous=full", "/work", Database{Kind: SQLite, Path: "/work/state.db", Synchronous: "FULL"}, ""},
		{"sqlite:state.db?synchronous=Normal", "/work", Database{Kind: SQLite, Path: "/work/state.db", Synchronous: "NORMAL"}, ""},
		{"sqlite:state.db?synchronous=off", "", Database{}, `synchronous=off is not accepted: an SQLite database takes one parameter, synchronous=normal (the default) or synchronous=full`},
		{"sqlite:state.db?synchronous=", "", Database{}, `synchronous= is not accepted`},
		{"sqlite:state.db?mode=ro", "", Database{}, `unknown parameter "mode"`},
		{"sqlite:state.db?synchronous=full&synchronous=full", "", Database{}, `synchronous is given twice`},
		{"sqlite:what?.db", "", Database{}, `unknown parameter ".db": an SQLite database takes one parameter, synchronous=normal (the default) or synchronous=full; a "?" starts the parameters, so a file name cannot have one`},
	}
	for _, tt := range tests {
		got, err := ParseDatabase(tt.spec, tt.dir)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: error %v, want %q", tt.spec, err, tt.err)
			}
			if err != nil && strings.Contains(err.Error(), "secret") {
				t.Errorf("%q: the error shows the password: %v", tt.spec, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%q: got %+v, %v; want %+v", tt.spec, got, err, tt.want)
		}
	}
	if got := (Database{Kind: Postgres, DSN: "postgres://me:hunter2@db.example/x"}).String(); got != "postgres://me:xxxxx@db.example/x" {
		t.Errorf("String = %q", got)
	}
	if got := (Database{Kind: SQLite, Path: "/a/s.db", Synchronous: "FULL"}).String(); got != "sqlite:/a/s.db?synchronous=full" {
		t.Errorf("String = %q", got)
	}
}

// db in a file is relative to the file; a PostgreSQL db in a project file
// is a setting to trust, since every conversation would go there.
func TestDatabaseInConfigFiles(t *testing.T) {
	root := t.TempDir()
	home, project := filepath.Join(root, "home"), filepath.Join(root, "project")
	writeFiles(t, root, map[string]string{
		"home/.deepagents/config.toml": "db = \"sqlite:threads.db\"\n",
		"project/deepagents.toml":      "max_steps = 2\n",
	})
	c, err := Load(project, home)
	if err != nil {
		t.Fatal(err)
	}
	if c.Database == nil || c.Database.Path != filepath.Join(home, ".deepagents", "threads.db") {
		t.Fatalf("user db = %+v", c.Database)
	}
	if err := os.WriteFile(filepath.Join(project, "deepagents.toml"), []byte("\ndb = \"postgres://me:pw@db.example/x\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err = Load(project, home)
	if err != nil {
		t.Fatal(err)
	}
	if c.Database == nil || c.Database.Kind != Postgres {
		t.Fatalf("project db = %+v", c.Database)
	}
	err = c.CheckTrust(TrustStore{}, false)
	want := `:2: db = "postgres://me:xxxxx@db.example/x" stores every conversation of this project (messages, files, tool results) in the database at postgres://me:xxxxx@db.example/x`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("an untrusted project db was accepted or not explained: %v", err)
	}
	if c2, err := Parse("p.toml", []byte("db = 3\n")); err == nil || !strings.Contains(err.Error(), "p.toml:1: db must be a string, got an integer") {
		t.Errorf("db = 3: %v %v", c2, err)
	}
	if _, err := Parse("p.toml", []byte("db = \"x.db\"\n")); err == nil || !strings.Contains(err.Error(), `p.toml:1: db: "x.db" is not a database`) {
		t.Errorf("db = x.db: %v", err)
	}
}
