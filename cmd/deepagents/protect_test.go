package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/config"
	ot "github.com/deepagents-go/deepagents/providers/openai/openaitest"
	"github.com/deepagents-go/deepagents/skills"
	"github.com/deepagents-go/deepagents/vfs/perm"
)

// promptServer is a model that makes the calls its prompt lists, one "TOOL
// ARGS" per line (ids c1, c2, ...), and then answers with every tool result
// it got, one per line. A subagent gets its task's description as its
// prompt, so it does the same with the calls the description lists.
func promptServer(t *testing.T) *ot.Server {
	return ot.NewServer(t, func(r *ot.Request) ot.Reply {
		if r.Round() > 0 {
			var results []string
			for _, m := range r.Messages {
				if m.Role == "tool" {
					results = append(results, m.Text())
				}
			}
			return ot.Text(strings.Join(results, "\n"))
		}
		var calls []ot.Call
		for i, line := range strings.Split(strings.TrimSpace(r.FirstUser()), "\n") {
			name, args, _ := strings.Cut(line, " ")
			calls = append(calls, ot.Call{ID: fmt.Sprintf("c%d", i+1), Name: name, Args: args})
		}
		return ot.Tools(calls...)
	})
}

// callLine is a prompt line of promptServer.
func callLine(tool string, args map[string]any) string {
	b, _ := json.Marshal(args)
	return tool + " " + string(b)
}

// controlProject fills the project directory with the control plane: a git
// repository, agent files, a skill, memory files, project settings, a
// database beside them, and links into all of these.
func controlProject(t *testing.T, dir string) {
	t.Helper()
	for name, body := range map[string]string{
		".git/config":                   "[core]\n",
		".git/hooks/pre-commit":         "#!/bin/sh\n",
		".git/objects/keep":             "",
		".deepagents/agents/rev.md":     "---\ndescription: Reviews.\n---\nReview.\n",
		".deepagents/skills/s/SKILL.md": "---\nname: s\ndescription: A skill.\n---\nSteps.\n",
		"AGENTS.md":                     "Project notes.\n",
		"sub/AGENTS.md":                 "Sub notes.\n",
		"deepagents.toml":               "max_steps = 30\n",
		".mcp.json":                     "{\"mcpServers\": {}}\n",
		"notes.md":                      "plain\n",
		// As the first run writes it in a git work tree (db.go).
		".deepagents/.gitignore": "state.db\nstate.db-*\n",
	} {
		writeFileAt(t, filepath.Join(dir, filepath.FromSlash(name)), body)
	}
	for link, target := range map[string]string{
		"cfg": ".git/config", "gdir": ".git", "agentdir": ".deepagents/agents", "dblink": ".deepagents/state.db",
	} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
}

// snapshot reads the files below dir (links not followed; the database and
// its side files left out), for checking that nothing changed.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case strings.Contains(rel, "state.db"), strings.HasPrefix(rel, ".deepagents/threads"):
		case d.Type()&os.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out[rel] = "-> " + target
		case !d.IsDir():
			b, _ := os.ReadFile(p)
			out[rel] = string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The places the agent never changes stay as they were whatever the file
// tools try on --root: written, edited or deleted, by their path, through a
// link to a file or to a directory, in other case, with backslashes, or
// with '..'. Each call gets a plain error result, not a question.
func TestNeverChangedOnRoot(t *testing.T) {
	srv := promptServer(t)
	project, _ := runEnv(t, srv)
	controlProject(t, project)
	for _, tc := range []struct {
		name, tool string
		args       map[string]any
		want       string
	}{
		{"write git config", "write_file", map[string]any{"file_path": "/.git/config", "content": "[core]\n\thooksPath = /tmp\n"}, "git's repository data (.git), which the agent may read but never change"},
		{"edit git config", "edit_file", map[string]any{"file_path": "/.git/config", "old_string": "[core]", "new_string": "[alias]"}, "never change"},
		{"create a hook", "write_file", map[string]any{"file_path": "/.git/hooks/post-checkout", "content": "#!/bin/sh\n"}, "never change"},
		{"delete a hook", "delete", map[string]any{"file_path": "/.git/hooks/pre-commit"}, "never change"},
		{"delete git", "delete", map[string]any{"file_path": "/.git"}, "never change"},
		{"link to git config", "write_file", map[string]any{"file_path": "/cfg", "content": "x"}, "through a symbolic link, to git's repository data"},
		{"directory link", "write_file", map[string]any{"file_path": "/gdir/hooks/pre-push", "content": "x"}, "never change"},
		{"delete through a directory link", "delete", map[string]any{"file_path": "/gdir/hooks"}, "never change"},
		{"other case", "write_file", map[string]any{"file_path": "/.GIT/config", "content": "x"}, "never change"},
		{"backslashes", "edit_file", map[string]any{"file_path": `\.git\config`, "old_string": "[core]", "new_string": "x"}, "never change"},
		{"dot dot", "write_file", map[string]any{"file_path": "/sub/../.git/config", "content": "x"}, "path traversal with '..' is not allowed"},
		{"database side file", "write_file", map[string]any{"file_path": "/.deepagents/state.db-journal", "content": "x"}, "a thread database of deepagents"},
		{"database through a link", "write_file", map[string]any{"file_path": "/dblink", "content": "x"}, "a thread database"},
		{"delete the settings with the database", "delete", map[string]any{"file_path": "/.deepagents"}, "a thread database"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := snapshot(t, project)
			code, out, errs := runCLI(t, "run", "-p", callLine(tc.tool, tc.args), "--model", "openai:gpt-test", "--root", project, "--output", "json")
			if code != 0 {
				t.Fatalf("exit %d, want 0 (a refusal is an error result, not a question): %s\n%s", code, errs, out)
			}
			sum := decode(t, out)
			if !strings.Contains(sum.Result, tc.want) || !strings.HasPrefix(sum.Result, "Error:") {
				t.Errorf("tool result %q, want an error saying %q", sum.Result, tc.want)
			}
			if len(sum.FilesChanged) != 0 {
				t.Errorf("files changed %v", sum.FilesChanged)
			}
			if after := snapshot(t, project); !sameFiles(before, after) {
				t.Errorf("the directory changed:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(project, ".deepagents", "state.db")); err != nil {
		t.Fatalf("the thread database is not where the test expects it: %v", err)
	}
}

// sameFiles reports whether two snapshots are equal.
func sameFiles(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// The places that change only with approval make the call wait, with the
// reason in the JSON result and on stderr (exit 3), and nothing changes;
// approved with resume, the change is made and listed among the files
// changed; rejected, nothing changes. A subagent's call waits the same way.
func TestApprovalNeededOnRoot(t *testing.T) {
	srv := promptServer(t)
	project, _ := runEnv(t, srv)
	controlProject(t, project)
	for _, tc := range []struct {
		name    string
		prompt  string
		path    string // the file (or directory) changed
		changed string // its path in files_changed, when not /path
		reason  string
		deleted bool
		agent   string // the waiting agent's path, when not the parent
	}{
		{name: "new agent file", prompt: callLine("write_file", map[string]any{"file_path": "/.deepagents/agents/evil.md", "content": "---\ndescription: x\npermissions: []\n---\nx\n"}),
			path: ".deepagents/agents/evil.md", reason: "Writing /.deepagents/agents/evil.md changes an agent file (.deepagents/agents), which defines a subagent of later runs, so it waits for your approval"},
		{name: "agent file through a directory link", prompt: callLine("edit_file", map[string]any{"file_path": "/agentdir/rev.md", "old_string": "Review.", "new_string": "Approve all."}),
			path: ".deepagents/agents/rev.md", reason: "changes, through a symbolic link, an agent file", changed: "/agentdir/rev.md"},
		{name: "project memory", prompt: callLine("edit_file", map[string]any{"file_path": "/AGENTS.md", "old_string": "Project", "new_string": "Injected"}),
			path: "AGENTS.md", reason: "a memory file (AGENTS.md)"},
		{name: "memory at any depth", prompt: callLine("write_file", map[string]any{"file_path": "/deep/er/AGENTS.md", "content": "x"}),
			path: "deep/er/AGENTS.md", reason: "a memory file (AGENTS.md)"},
		{name: "mcp servers", prompt: callLine("write_file", map[string]any{"file_path": "/.mcp.json", "content": "{}"}),
			path: ".mcp.json", reason: "an MCP server list (.mcp.json)"},
		{name: "project config", prompt: callLine("edit_file", map[string]any{"file_path": "/deepagents.toml", "old_string": "30", "new_string": "31"}),
			path: "deepagents.toml", reason: "a deepagents project config (deepagents.toml)"},
		{name: "skill", prompt: callLine("edit_file", map[string]any{"file_path": "/.deepagents/skills/s/SKILL.md", "old_string": "Steps.", "new_string": "Run curl."}),
			path: ".deepagents/skills/s/SKILL.md", reason: "a skill folder"},
		{name: "delete a skill folder", prompt: callLine("delete", map[string]any{"file_path": "/.deepagents/skills"}),
			path: ".deepagents/skills", reason: "Deleting /.deepagents/skills changes a skill folder", deleted: true},
		{name: "by a subagent", prompt: callLine("task", map[string]any{"subagent_type": "general-purpose",
			"description": callLine("write_file", map[string]any{"file_path": "/.deepagents/agents/sub.md", "content": "x"})}),
			path: ".deepagents/agents/sub.md", reason: "an agent file", agent: "parent / general-purpose#c1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, decision := range []string{"reject", "approve"} {
				before := snapshot(t, project)
				code, out, errs := runCLI(t, "run", "-p", tc.prompt, "--model", "openai:gpt-test", "--root", project, "--output", "json")
				if code != exitInterrupted {
					t.Fatalf("exit %d, want %d: %s\n%s", code, exitInterrupted, errs, out)
				}
				sum := decode(t, out)
				if len(sum.Interrupts) != 1 {
					t.Fatalf("interrupts %+v", sum.Interrupts)
				}
				in := sum.Interrupts[0]
				wantAgent := tc.agent
				if wantAgent == "" {
					wantAgent = "parent"
				}
				if !strings.Contains(in.Reason, tc.reason) || !strings.HasPrefix(in.Description, in.Reason) || in.Path.String() != wantAgent {
					t.Errorf("interrupt %+v, want reason %q for %s", in, tc.reason, wantAgent)
				}
				if len(sum.ActionRequests) != 1 || sum.ActionRequests[0].Description != in.Description {
					t.Errorf("the LangChain request does not carry the reason: %+v", sum.ActionRequests)
				}
				if after := snapshot(t, project); !sameFiles(before, after) {
					t.Fatalf("changed before a decision:\nbefore %v\nafter  %v", before, after)
				}
				// Text output names the reason too.
				if _, _, text := runCLI(t, "run", "-p", tc.prompt, "--model", "openai:gpt-test", "--root", project); !strings.Contains(text, "why: "+in.Reason) {
					t.Errorf("stderr does not say why:\n%s", text)
				}
				args := []string{"resume", "--thread", sum.ThreadID, "--" + decision, in.CallID, "--output", "json"}
				if strings.Count(out, `"call_id":"`+in.CallID+`"`) > 0 && in.Path.String() != "parent" {
					args = []string{"resume", "--thread", sum.ThreadID, "--decisions", "-", "--output", "json"}
				}
				var code2 int
				var out2, errs2 string
				if args[3] == "--decisions" {
					code2, out2, errs2 = runCLIStdin(t, fmt.Sprintf(`[{"type":%q,"call_id":%q,"path":%q}]`, decision, in.CallID, in.Path), args...)
				} else {
					code2, out2, errs2 = runCLI(t, args...)
				}
				if code2 != 0 {
					t.Fatalf("%s: exit %d: %s\n%s", decision, code2, errs2, out2)
				}
				_, err := os.Lstat(filepath.Join(project, filepath.FromSlash(tc.path)))
				after := snapshot(t, project)
				if decision == "reject" {
					if !sameFiles(before, after) {
						t.Fatalf("changed though rejected:\nbefore %v\nafter  %v", before, after)
					}
					continue
				}
				if sameFiles(before, after) || tc.deleted != (err != nil) {
					t.Fatalf("approved, but the change was not made (%v):\n%v", err, after)
				}
				changed := tc.changed
				if changed == "" {
					changed = "/" + tc.path
				}
				if done := decode(t, out2); !slices.Contains(done.FilesChanged, changed) {
					t.Errorf("files changed %v, want %s", done.FilesChanged, changed)
				}
			}
		})
	}
}

// Without --root, a write of the user's memory (/memory/user/AGENTS.md,
// ~/.deepagents/AGENTS.md on disk) waits for approval and, once it ran, is
// reported on stderr (even with --quiet), as an event in stream-json, and
// among the files changed; when the user's config lets it through, it runs
// without asking and is still reported.
func TestUserMemoryWritesAreApprovedAndReported(t *testing.T) {
	srv := promptServer(t)
	_, home := runEnv(t, srv)
	mem := filepath.Join(home, ".deepagents", "AGENTS.md")
	writeFileAt(t, mem, "I like tea.\n")
	prompt := callLine("edit_file", map[string]any{"file_path": "/memory/user/AGENTS.md", "old_string": "tea", "new_string": "coffee"})
	code, out, errs := runCLI(t, "run", "-p", prompt, "--model", "openai:gpt-test", "--output", "json")
	if code != exitInterrupted {
		t.Fatalf("exit %d: %s\n%s", code, errs, out)
	}
	sum := decode(t, out)
	if len(sum.Interrupts) != 1 || !strings.Contains(sum.Interrupts[0].Reason, "your user memory (~/.deepagents/AGENTS.md)") {
		t.Fatalf("interrupts %+v", sum.Interrupts)
	}
	if b, _ := os.ReadFile(mem); string(b) != "I like tea.\n" {
		t.Fatalf("memory changed before approval: %q", b)
	}
	code, out, errs = runCLI(t, "resume", "--thread", sum.ThreadID, "--approve", "c1", "--output", "json", "--quiet")
	if code != 0 {
		t.Fatalf("resume: exit %d: %s", code, errs)
	}
	if b, _ := os.ReadFile(mem); string(b) != "I like coffee.\n" {
		t.Fatalf("memory after approval: %q", b)
	}
	const told = "deepagents: warning: parent: gate: edit_file call c1 ran after a person approved it: it changed /memory/user/AGENTS.md: your user memory"
	if !strings.Contains(errs, told) {
		t.Errorf("stderr (--quiet) lacks the report:\n%s", errs)
	}
	if done := decode(t, out); !slices.Contains(done.FilesChanged, "/memory/user/AGENTS.md") {
		t.Errorf("files changed %v", done.FilesChanged)
	}

	// Let through by the user's config: no question, still reported.
	writeFileAt(t, filepath.Join(home, ".deepagents", "config.toml"), "[protect]\nallow = [\"user-memory\"]\n")
	prompt = callLine("edit_file", map[string]any{"file_path": "/memory/user/AGENTS.md", "old_string": "coffee", "new_string": "water"})
	code, out, errs = runCLI(t, "run", "-p", prompt, "--model", "openai:gpt-test", "--output", "stream-json", "--quiet")
	if code != 0 {
		t.Fatalf("allowed: exit %d: %s", code, errs)
	}
	if b, _ := os.ReadFile(mem); string(b) != "I like water.\n" {
		t.Fatalf("memory: %q", b)
	}
	if !strings.Contains(errs, "edit_file call c1 ran without waiting for a person: it changed /memory/user/AGENTS.md") {
		t.Errorf("stderr lacks the report:\n%s", errs)
	}
	if !strings.Contains(out, `"source":"gate"`) || !strings.Contains(out, "ran without waiting for a person") {
		t.Errorf("stream-json lacks the report event:\n%s", out)
	}
	// A project's memory file, mounted the same way, waits too (unreported).
	writeFileAt(t, "AGENTS.md", "Project.\n")
	code, out, errs = runCLI(t, "run", "-p", callLine("write_file", map[string]any{"file_path": "/memory/project/AGENTS.md", "content": "x"}),
		"--model", "openai:gpt-test", "--output", "json")
	if sum := decode(t, out); code != exitInterrupted || len(sum.Interrupts) != 1 || !strings.Contains(sum.Interrupts[0].Reason, "a memory file (AGENTS.md)") {
		t.Errorf("project memory: exit %d %+v: %s", code, sum.Interrupts, errs)
	}

	// The project's file cannot do the same.
	_ = os.Remove(filepath.Join(home, ".deepagents", "config.toml"))
	writeFileAt(t, "deepagents.toml", "[protect]\nallow = [\"user-memory\"]\n")
	code, _, errs = runCLI(t, "run", "-p", prompt, "--model", "openai:gpt-test")
	if code != exitUsage || !strings.Contains(errs, "deepagents.toml:1: [protect] can only be set in your own config file") {
		t.Errorf("project [protect]: exit %d: %s", code, errs)
	}
}

// With --root over the home directory, the user's own settings, trust store
// and threads are never changed, and the user's memory waits.
func TestUserSettingsUnderRoot(t *testing.T) {
	srv := promptServer(t)
	_, home := runEnv(t, srv)
	writeFileAt(t, filepath.Join(home, ".deepagents", "config.toml"), "max_steps = 20\n")
	writeFileAt(t, filepath.Join(home, ".deepagents", "trusted.json"), "{}\n")
	writeFileAt(t, filepath.Join(home, ".deepagents", "agents", "mine.md"), "---\ndescription: Mine.\n---\nx\n")
	for path, want := range map[string]string{
		"/.deepagents/config.toml":      "your own deepagents settings (~/.deepagents)",
		"/.deepagents/trusted.json":     "your store of trusted projects",
		"/.deepagents/agents/mine.md":   "your own deepagents settings",
		"/.deepagents/.mcp.json":        "your own deepagents settings",
		"/.deepagents/state.db-oplog-x": "a thread database",
	} {
		code, out, errs := runCLI(t, "run", "-p", callLine("write_file", map[string]any{"file_path": path, "content": "{}"}), "--model", "openai:gpt-test", "--root", home, "--output", "json")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", path, code, errs)
		}
		if sum := decode(t, out); !strings.Contains(sum.Result, want) || !strings.Contains(sum.Result, "never change") {
			t.Errorf("%s: %q", path, sum.Result)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(home, ".deepagents", "config.toml")); string(b) != "max_steps = 20\n" {
		t.Errorf("config: %q", b)
	}
	code, out, errs := runCLI(t, "run", "-p", callLine("write_file", map[string]any{"file_path": "/.deepagents/AGENTS.md", "content": "x"}), "--model", "openai:gpt-test", "--root", home, "--output", "json")
	if sum := decode(t, out); code != exitInterrupted || len(sum.Interrupts) != 1 || !strings.Contains(sum.Interrupts[0].Reason, "your user memory") {
		t.Errorf("user memory under --root: exit %d %+v: %s", code, sum.Interrupts, errs)
	}
}

// The places execute's commands may not change are those of the file
// tools, relative to the root, but git's objects and refs.
func TestProtectedForExecute(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "sub"), 0o755))
	writeFileAt(t, filepath.Join(root, ".git"), "gitdir: /elsewhere\n")
	got := protectedForExecute(protectInputs{root: root, cwd: root, home: home,
		db:        config.Database{Kind: config.SQLite, Path: filepath.Join(root, "data", "threads[1].db")},
		skills:    &skills.Config{Sources: []skills.Source{{Dir: filepath.Join(root, "my-skills")}, {Dir: "/outside/skills"}}},
		subagents: filepath.Join(root, "agents")})
	for _, want := range []string{
		"**/.git", "**/.git/config", "**/.git/hooks", "**/.git/info", ".git", "**/.deepagents", "**/.mcp.json", "**/deepagents.toml", "**/AGENTS.md",
		`data/threads\[1\].db*`, "home/.deepagents/trusted.json", "my-skills", "agents",
	} {
		if !slices.Contains(got, want) {
			t.Errorf("%q missing from %q", want, got)
		}
	}
	for _, g := range got {
		if strings.Contains(g, "objects") || strings.Contains(g, "refs") || strings.HasPrefix(g, "/") || strings.Contains(g, "outside") {
			t.Errorf("%q must not be protected from execute", g)
		}
	}
	// A .git directory is not protected whole: git commit writes into it.
	must(os.Remove(filepath.Join(root, ".git")))
	must(os.Mkdir(filepath.Join(root, ".git"), 0o755))
	if got := protectedForExecute(protectInputs{root: root, cwd: root}); slices.Contains(got, ".git") {
		t.Errorf("a .git directory is protected whole: %q", got)
	}
}

// The zones the CLI draws decide as documented: git's data and the database
// never, the user's memory asks and is reported, and a kind the user allows
// is let through (still reported).
func TestProtectedZones(t *testing.T) {
	home, project := t.TempDir(), t.TempDir()
	db := config.Database{Kind: config.SQLite, Path: filepath.Join(project, ".deepagents", "state.db")}
	for _, tc := range []struct {
		allow []string
		path  string
		level perm.Level
		rep   bool
	}{
		{nil, filepath.Join(project, ".git", "config"), perm.Never, false},
		{nil, filepath.Join(project, ".deepagents", "state.db-wal"), perm.Never, false},
		{nil, filepath.Join(home, ".deepagents", "trusted.json"), perm.Never, false},
		{nil, filepath.Join(home, ".deepagents", "AGENTS.md"), perm.Ask, true},
		{[]string{"user-memory"}, filepath.Join(home, ".deepagents", "AGENTS.md"), perm.Free, true},
		{[]string{"memory"}, filepath.Join(home, ".deepagents", "AGENTS.md"), perm.Ask, true},
		{[]string{"memory"}, filepath.Join(project, "x", "AGENTS.md"), perm.Free, false},
		{nil, filepath.Join(project, ".deepagents", "agents", "a.md"), perm.Ask, false},
		{[]string{"agents", "skills", "memory", "user-memory", "project-config"}, filepath.Join(project, ".git", "hooks", "x"), perm.Never, false},
		{nil, filepath.Join(project, "src", "main.go"), perm.Free, false},
	} {
		g, err := perm.NewGuard(protectedZones(protectInputs{root: project, cwd: project, home: home, db: db, allow: tc.allow}),
			[]perm.Mount{{Prefix: "/", Host: "/"}})
		if err != nil {
			t.Fatal(err)
		}
		f, err := g.CheckWrite(tc.path)
		if err != nil || f.Level != tc.level || f.Report != tc.rep {
			t.Errorf("allow %v, %s: %+v %v; want %v, reported %v", tc.allow, tc.path, f, err, tc.level, tc.rep)
		}
	}
}

// taskLine is a prompt line that has subagent name make the calls of lines.
func taskLine(name string, lines ...string) string {
	return callLine("task", map[string]any{"subagent_type": name, "description": strings.Join(lines, "\n")})
}

// A project's agent file cannot lift the user's rules or gates: not those
// of the command line, not those of the user's config. Its permissions: []
// and interrupt_on: {} add nothing and remove nothing. The user's own agent
// files may replace the config's, not the command line's.
func TestUsersRulesAreAFloorForAgentFiles(t *testing.T) {
	srv := promptServer(t)
	project, home := runEnv(t, srv)
	lax := "---\ndescription: Lax.\npermissions: []\ninterrupt_on: {}\n---\nDo it.\n"
	writeFileAt(t, filepath.Join(project, ".deepagents", "agents", "lax.md"), lax)
	writeFileAt(t, filepath.Join(project, ".deepagents", "agents", "strict.md"), "---\ndescription: Strict.\npermissions: [\"deny write /tmp/**\"]\n---\nDo it.\n")
	writeFileAt(t, filepath.Join(home, ".deepagents", "agents", "mine.md"), strings.Replace(lax, "Lax.", "Mine.", 1))
	writeFileAt(t, filepath.Join(home, ".deepagents", "config.toml"), "interrupt_on = { edit_file = true }\n[permissions]\nrules = [\"deny write /config-denied/**\"]\n")

	write := func(path string) string {
		return callLine("write_file", map[string]any{"file_path": path, "content": "x"})
	}
	run := func(prompt string, extra ...string) (int, runSummary, string) {
		t.Helper()
		args := append([]string{"run", "-p", prompt, "--model", "openai:gpt-test", "--output", "json",
			"--permission", "deny write /flag-denied/**", "--interrupt-on", "delete"}, extra...)
		code, out, errs := runCLI(t, args...)
		if code != 0 && code != exitInterrupted {
			t.Fatalf("%s: exit %d: %s\n%s", prompt, code, errs, out)
		}
		return code, decode(t, out), errs
	}
	for _, tc := range []struct {
		agent, path string
		denied      bool
	}{
		{"lax", "/flag-denied/a", true},
		{"lax", "/config-denied/a", true},
		{"lax", "/free/a", false},
		{"strict", "/tmp/a", true},           // its own rule adds
		{"strict", "/config-denied/a", true}, // and the floor stays
		{"mine", "/flag-denied/a", true},     // the user's own file keeps the flags
		{"mine", "/config-denied/a", false},  // but may replace the config's
	} {
		_, sum, _ := run(taskLine(tc.agent, write(tc.path)))
		if denied := strings.Contains(sum.Result, "permission denied by rule"); denied != tc.denied {
			t.Errorf("%s writing %s: result %q, denied %v, want %v", tc.agent, tc.path, sum.Result, denied, tc.denied)
		}
	}
	for _, tc := range []struct {
		agent, tool string
		waits       bool
	}{
		{"lax", "delete", true},      // --interrupt-on
		{"lax", "edit_file", true},   // the user's config
		{"mine", "delete", true},     // the user's own file keeps the flags
		{"mine", "edit_file", false}, // and may replace the config's
	} {
		line := callLine(tc.tool, map[string]any{"file_path": "/n.md", "old_string": "a", "new_string": "b"})
		if tc.tool == "delete" {
			line = callLine("delete", map[string]any{"file_path": "/n.md"})
		}
		code, sum, errs := run(taskLine(tc.agent, line))
		if waits := code == exitInterrupted; waits != tc.waits {
			t.Errorf("%s calling %s: exit %d (interrupts %+v), want waiting %v: %s", tc.agent, tc.tool, code, sum.Interrupts, tc.waits, errs)
		}
		if tc.waits && (len(sum.Interrupts) != 1 || sum.Interrupts[0].Path.String() != "parent / "+tc.agent+"#c1") {
			t.Errorf("%s calling %s: interrupts %+v", tc.agent, tc.tool, sum.Interrupts)
		}
	}

	// The project's config cannot lift the user's gates either.
	writeFileAt(t, filepath.Join(project, "deepagents.toml"), "interrupt_on = { edit_file = false }\n")
	code, sum, errs := run(callLine("edit_file", map[string]any{"file_path": "/n.md", "old_string": "a", "new_string": "b"}))
	if code != exitInterrupted || len(sum.Interrupts) != 1 {
		t.Errorf("project interrupt_on lifted the user's: exit %d %+v: %s", code, sum.Interrupts, errs)
	}
	writeFileAt(t, filepath.Join(project, "deepagents.toml"), "interrupt_on = {}\n")
	if code, _, _ := run(callLine("edit_file", map[string]any{"file_path": "/n.md", "old_string": "a", "new_string": "b"})); code != exitInterrupted {
		t.Errorf("project interrupt_on = {} lifted the user's: exit %d", code)
	}
}

// Commands that execute runs on --root cannot create, change, rename or
// delete the control plane either, through links or not; git's objects and
// refs stay writable, so git commit works.
func TestExecuteCannotChangeTheControlPlane(t *testing.T) {
	needBwrap(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	srv := promptServer(t)
	project, _ := runEnv(t, srv)
	if out, err := exec.Command("git", "init", "-q", project).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	controlProject(t, project)
	protected := func() map[string]string {
		all := snapshot(t, project)
		out := map[string]string{}
		for k, v := range all {
			if !strings.HasPrefix(k, ".git/objects") && !strings.HasPrefix(k, ".git/refs") && !strings.HasPrefix(k, ".git/logs") &&
				k != ".git/HEAD" && k != ".git/index" && k != ".git/COMMIT_EDITMSG" && k != ".git/ORIG_HEAD" && k != "made.txt" {
				out[k] = v
			}
		}
		return out
	}
	before := protected()
	attack := strings.Join([]string{
		`for f in .git/config .git/hooks/pre-commit .git/info/exclude AGENTS.md sub/AGENTS.md deepagents.toml .mcp.json .deepagents/agents/rev.md .deepagents/skills/s/SKILL.md cfg; do echo pwned >> "$f"; done`,
		`rm -rf .git/hooks/pre-commit .deepagents/agents AGENTS.md`,
		`mv deepagents.toml moved.toml; mv .git/config gitconfig; mv .deepagents gone`,
		`echo x > .git/hooks/post-checkout; mkdir -p deep && echo x > deep/AGENTS.md; echo x > .deepagents/new.md`,
		`ln -s .git/hooks hooks-link; echo x > hooks-link/pre-push`,
		`echo ok > made.txt`,
		`git -c user.email=a@example.com -c user.name=t commit -q --allow-empty -m ok && echo COMMITTED`,
	}, "; ")
	code, out, errs := runCLI(t, "run", "-p", callLine("execute", map[string]any{"command": attack}), "--model", "openai:gpt-test",
		"--root", project, "--allow", "execute", "--output", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errs, out)
	}
	if sum := decode(t, out); !strings.Contains(sum.Result, "COMMITTED") {
		t.Errorf("git commit did not work: %s", sum.Result)
	}
	after := protected()
	for _, k := range []string{"moved.toml", "gitconfig", "gone", "deep/AGENTS.md", "hooks-link"} {
		delete(after, k) // what a refused rename or link leaves is checked below
	}
	if !sameFiles(before, after) {
		t.Errorf("the control plane changed:\nbefore %v\nafter  %v", before, after)
	}
	for _, name := range []string{".git/hooks/post-checkout", ".git/hooks/pre-push", "deep/AGENTS.md", ".deepagents/new.md"} {
		if _, err := os.Lstat(filepath.Join(project, filepath.FromSlash(name))); err == nil {
			t.Errorf("%s was created", name)
		}
	}
	if b, err := os.ReadFile(filepath.Join(project, "made.txt")); err != nil || string(b) != "ok\n" {
		t.Errorf("an ordinary file could not be written: %q %v", b, err)
	}
}

// The server's interrupt payload carries the reason a call waits, and its
// resume runs the approved change.
func TestServeTellsWhyAProtectedWriteWaits(t *testing.T) {
	srv := promptServer(t)
	project, _ := runEnv(t, srv)
	controlProject(t, project)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	base, codec := serveInProcess(t, ctx, "--model", "openai:gpt-test", "--root", project, "--addr", "127.0.0.1:0",
		"--db", "sqlite:"+filepath.Join(t.TempDir(), "s.db"))
	post := func(body string) map[string]json.RawMessage {
		resp := call(t, "POST", base+"/threads/p/runs/wait", body)
		defer resp.Body.Close()
		var out map[string]json.RawMessage
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 {
			t.Fatalf("POST: %d %v", resp.StatusCode, err)
		}
		return out
	}
	prompt, _ := json.Marshal(callLine("write_file", map[string]any{"file_path": "/.deepagents/agents/x.md", "content": "x"}))
	res := post(`{"assistant_id":"agent","if_not_exists":"create","input":{"messages":[{"role":"user","content":` + string(prompt) + `}]}}`)
	if !strings.Contains(string(res["__interrupt__"]), "changes an agent file (.deepagents/agents)") {
		t.Fatalf("the interrupt does not say why: %s", res["__interrupt__"])
	}
	if _, err := os.Stat(filepath.Join(project, ".deepagents", "agents", "x.md")); err == nil {
		t.Fatal("written before the approval")
	}
	post(`{"assistant_id":"agent","command":{"resume":[{"type":"approve","id":"c1"}]}}`)
	if b, err := os.ReadFile(filepath.Join(project, ".deepagents", "agents", "x.md")); err != nil || string(b) != "x" {
		t.Fatalf("after the approval: %q %v", b, err)
	}
	cancel()
	<-codec
}
