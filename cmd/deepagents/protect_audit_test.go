package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	ot "github.com/deepagents-go/deepagents/providers/openai/openaitest"
	"github.com/deepagents-go/deepagents/sandbox"
)

// fakeGitDir makes dir a git directory whose configuration runs a program
// (core.fsmonitor) that creates marker: any git command that takes its
// configuration from dir creates the marker.
func fakeGitDir(t *testing.T, dir, marker string) {
	t.Helper()
	for _, d := range []string{"objects", "refs/heads"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFileAt(t, filepath.Join(dir, "HEAD"), "ref: refs/heads/main\n")
	writeFileAt(t, filepath.Join(dir, "config"), "[core]\n\trepositoryformatversion = 0\n\tfsmonitor = \"touch "+marker+"; false\"\n")
}

// gitStatus runs git status in dir as the user would, outside any sandbox,
// with no configuration of the user's or the system's.
func gitStatus(t *testing.T, dir string) string {
	t.Helper()
	cmd := exec.Command("git", "status", "--short")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CEILING_DIRECTORIES="+filepath.Dir(dir))
	out, _ := cmd.CombinedOutput()
	return string(out)
}

// A command cannot point git at a configuration it wrote: not with a
// commondir file in .git (git then reads the configuration of the
// directory it names), not in a linked worktree's entry, not with a .git
// file in a subdirectory, not in a new repository's .git. Each is removed
// when the command ends, and the user's next git command runs nothing the
// agent wrote.
func TestExecuteCannotRedirectGit(t *testing.T) {
	needBwrap(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	srv := promptServer(t)
	project, _ := runEnv(t, srv)
	if out, err := exec.Command("git", "init", "-q", project).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	marker := filepath.Join(t.TempDir(), "git-ran-the-agents-program")
	fakeGitDir(t, filepath.Join(project, "evil"), marker)
	attack := strings.Join([]string{
		`echo ../evil > .git/commondir`,
		`mkdir -p .git/worktrees/w && echo ../../../evil > .git/worktrees/w/commondir`,
		`mkdir -p sub && echo 'gitdir: ../evil' > sub/.git`,
		`mkdir -p other/.git && echo ../../evil > other/.git/commondir && echo 'ref: refs/heads/main' > other/.git/HEAD && mkdir -p other/.git/objects other/.git/refs`,
		`git status --short >/dev/null 2>&1; echo done`,
	}, "; ")
	code, out, errs := runCLI(t, "run", "-p", callLine("execute", map[string]any{"command": attack}), "--model", "openai:gpt-test",
		"--root", project, "--allow", "execute", "--output", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errs, out)
	}
	res := decode(t, out).Result
	for _, p := range []string{".git/commondir", ".git/worktrees/w/commondir", "sub/.git", "other/.git/commondir"} {
		if _, err := os.Lstat(filepath.Join(project, filepath.FromSlash(p))); err == nil {
			t.Errorf("%s was left in place", p)
		}
		if !strings.Contains(res, p) {
			t.Errorf("the result does not name %s as removed: %s", p, res)
		}
	}
	// The marker may have been made inside the sandbox, by the command's own
	// git; what matters is the user's git afterwards.
	_ = os.Remove(marker)
	for _, dir := range []string{project, filepath.Join(project, "sub"), filepath.Join(project, "other")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		gitStatus(t, dir)
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("git status in %s ran a program from the configuration the command wrote", dir)
		}
	}
}

// A work tree whose .git is a file naming a git directory inside the root
// (a bare repository kept beside it, .bare) has that directory protected
// like .git: the file tools never change it, and commands cannot change
// its configuration or hooks, nor add a commondir to it.
func TestGitDirNamedByAGitFileIsProtected(t *testing.T) {
	needBwrap(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	srv := promptServer(t)
	project, _ := runEnv(t, srv)
	if out, err := exec.Command("git", "init", "-q", "--bare", filepath.Join(project, ".bare")).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	writeFileAt(t, filepath.Join(project, ".git"), "gitdir: ./.bare\n")
	if err := os.MkdirAll(filepath.Join(project, ".bare", "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	config, err := os.ReadFile(filepath.Join(project, ".bare", "config"))
	if err != nil {
		t.Fatal(err)
	}
	for _, call := range []string{
		callLine("write_file", map[string]any{"file_path": "/.bare/hooks/pre-commit", "content": "#!/bin/sh\nevil\n"}),
		callLine("edit_file", map[string]any{"file_path": "/.bare/config", "old_string": "[core]", "new_string": "[core]\n\tfsmonitor = evil"}),
	} {
		code, out, errs := runCLI(t, "run", "-p", call, "--model", "openai:gpt-test", "--root", project, "--output", "json")
		if code != 0 {
			t.Fatalf("exit %d: %s\n%s", code, errs, out)
		}
		if res := decode(t, out).Result; !strings.Contains(res, "git's repository data (.git), which the agent may read but never change") {
			t.Errorf("%s: result %q", call, res)
		}
	}
	marker := filepath.Join(t.TempDir(), "git-ran-the-agents-program")
	fakeGitDir(t, filepath.Join(project, "evil"), marker)
	attack := `printf '#!/bin/sh\ntouch ` + marker + `\n' > .bare/hooks/pre-commit; echo '[core]' >> .bare/config; echo ../evil > .bare/commondir; echo done`
	code, out, errs := runCLI(t, "run", "-p", callLine("execute", map[string]any{"command": attack}), "--model", "openai:gpt-test",
		"--root", project, "--allow", "execute", "--output", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errs, out)
	}
	for _, p := range []string{".bare/hooks/pre-commit", ".bare/commondir"} {
		if _, err := os.Lstat(filepath.Join(project, filepath.FromSlash(p))); err == nil {
			t.Errorf("%s was made: %s", p, decode(t, out).Result)
		}
	}
	if now, _ := os.ReadFile(filepath.Join(project, ".bare", "config")); string(now) != string(config) {
		t.Errorf("the configuration changed: %q", now)
	}
	gitStatus(t, project)
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("git status ran a program the command wrote")
	}
}

// gitDirsOf finds the git directories a .git file and a commondir file
// name, relative to where each is, and nothing for a .git it cannot read
// as such.
func TestGitDirsOf(t *testing.T) {
	dir := t.TempDir()
	writeFileAt(t, filepath.Join(dir, ".git"), "gitdir: ./.bare\n")
	writeFileAt(t, filepath.Join(dir, ".bare", "commondir"), "../main.git\n")
	got := gitDirsOf(dir)
	want := []string{realPath(filepath.Join(dir, ".bare")), realPath(filepath.Join(dir, "main.git"))}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("gitDirsOf = %q, want %q", got, want)
	}
	for body, want := range map[string]int{"gitdir:\n": 0, "not a gitdir line\n": 0, "gitdir: /abs/where\n": 1, "gitdir:rel": 1} {
		writeFileAt(t, filepath.Join(dir, ".git"), body)
		if got := gitDirsOf(dir); len(got) != want {
			t.Errorf("%q: %q", body, got)
		}
	}
	if got := gitDirsOf(t.TempDir()); got != nil {
		t.Errorf("no .git: %q", got)
	}
}

// FuzzGitDirsOf: whatever a .git file and the commondir file it leads to
// hold, gitDirsOf returns clean absolute paths and does not fail.
func FuzzGitDirsOf(f *testing.F) {
	f.Add("gitdir: ./.bare\n", "../main.git\n")
	f.Add("gitdir: /abs\n", "")
	f.Add("gitdir:\x00\n", "\n\n")
	f.Add("gitdir: "+strings.Repeat("a/", 3000), "..")
	f.Fuzz(func(t *testing.T, dotGit, common string) {
		dir := t.TempDir()
		writeFileAt(t, filepath.Join(dir, ".git"), dotGit)
		writeFileAt(t, filepath.Join(dir, "commondir"), common)
		if err := os.MkdirAll(filepath.Join(dir, "gd"), 0o755); err == nil {
			writeFileAt(t, filepath.Join(dir, "gd", "commondir"), common)
		}
		for _, p := range gitDirsOf(dir) {
			if !filepath.IsAbs(p) || filepath.Clean(p) != p {
				t.Fatalf("gitDirsOf gave %q for .git %q, commondir %q", p, dotGit, common)
			}
		}
	})
}

// A person's approval covers what they were told the call changes. A
// command that ran in the same step as a waiting write, and made the
// written path a link to the agent files, does not get the write through
// on that approval (nor on an edit of its content): the call does not run,
// and says what it would change now.
func TestApprovalDoesNotCoverALinkMadeSince(t *testing.T) {
	needBwrap(t)
	srv := promptServer(t)
	project, _ := runEnv(t, srv)
	controlProject(t, project)
	for _, decision := range []string{
		`[{"type":"approve","call_id":"c2"}]`,
		`[{"type":"edit","call_id":"c2","args":{"file_path":"/foo/evil.md","content":"---\ndescription: y\n---\nevil\n"}}]`,
	} {
		_ = os.Remove(filepath.Join(project, "foo"))
		prompt := callLine("execute", map[string]any{"command": "ln -s .deepagents/agents foo"}) + "\n" +
			callLine("write_file", map[string]any{"file_path": "/foo/evil.md", "content": "---\ndescription: x\n---\nevil\n"})
		code, out, errs := runCLI(t, "run", "-p", prompt, "--model", "openai:gpt-test", "--root", project, "--output", "json",
			"--allow", "execute", "--interrupt-on", "write_file")
		if code != exitInterrupted {
			t.Fatalf("exit %d: %s\n%s", code, errs, out)
		}
		sum := decode(t, out)
		if len(sum.Interrupts) != 1 || sum.Interrupts[0].CallID != "c2" || sum.Interrupts[0].Reason != "" {
			t.Fatalf("interrupts %+v: the write should wait for --interrupt-on alone", sum.Interrupts)
		}
		if target, err := os.Readlink(filepath.Join(project, "foo")); err != nil || target != ".deepagents/agents" {
			t.Fatalf("the command did not make the link: %q %v", target, err)
		}
		code, out, errs = runCLIStdin(t, decision, "resume", "--thread", sum.ThreadID, "--decisions", "-", "--output", "json")
		if code != 0 {
			t.Fatalf("resume: exit %d: %s\n%s", code, errs, out)
		}
		done := decode(t, out)
		if _, err := os.Stat(filepath.Join(project, ".deepagents", "agents", "evil.md")); err == nil {
			t.Fatalf("%s: the agent file was written on an approval that did not name it", decision)
		}
		if !strings.Contains(done.Result, "is not what they were shown when they decided: Writing /foo/evil.md changes, through a symbolic link, an agent file") ||
			!strings.Contains(done.Result, "It did not run") {
			t.Errorf("%s: result %q", decision, done.Result)
		}
		if len(done.FilesChanged) != 0 {
			t.Errorf("files changed %v", done.FilesChanged)
		}
	}
}

// A home directory kept in git (dotfiles) is not the project of every
// directory below it: a downloaded project there without a repository of
// its own cannot import, from its AGENTS.md, the user's trust store,
// settings or SSH key into the prompt. Neither can a project in a
// repository that holds the home directory (one at /), nor a link to them.
func TestProjectMemoryCannotImportFromAHomeKeptInGit(t *testing.T) {
	srv := promptServer(t)
	_, home := runEnv(t, srv)
	if err := os.MkdirAll(filepath.Join(home, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFileAt(t, filepath.Join(home, ".deepagents", "trusted.json"), `{"projects":{"SECRET-TRUST":{}}}`)
	writeFileAt(t, filepath.Join(home, ".deepagents", "config.toml"), "# SECRET-CONFIG\n")
	writeFileAt(t, filepath.Join(home, ".ssh", "id_ed25519"), "SECRET-KEY\n")
	project := filepath.Join(home, "Downloads", "proj")
	writeFileAt(t, filepath.Join(project, "docs", "ok.md"), "PROJECT-NOTE\n")
	if err := os.Symlink(filepath.Join(home, ".deepagents", "config.toml"), filepath.Join(project, "cfg.md")); err != nil {
		t.Fatal(err)
	}
	writeFileAt(t, filepath.Join(project, "AGENTS.md"), strings.Join([]string{
		"Project rules.", "@docs/ok.md", "@../../.deepagents/trusted.json", "@" + filepath.Join(home, ".ssh", "id_ed25519"), "@cfg.md", "",
	}, "\n"))
	t.Chdir(project)
	code, out, errs := runCLI(t, "run", "-p", "hi", "--model", "openai:gpt-test", "--output", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errs, out)
	}
	reqs := srv.Requests()
	if len(reqs) == 0 {
		t.Fatal("the model was not called")
	}
	prompt := reqs[0].System()
	if !strings.Contains(prompt, "PROJECT-NOTE") {
		t.Errorf("the project's own import is missing from the prompt:\n%s", prompt)
	}
	for _, secret := range []string{"SECRET-TRUST", "SECRET-KEY", "SECRET-CONFIG"} {
		if strings.Contains(prompt, secret) {
			t.Errorf("the prompt holds %s", secret)
		}
	}
	if !strings.Contains(errs, "was not read") {
		t.Errorf("stderr does not warn about the imports it did not read:\n%s", errs)
	}
}

// A repository that holds both the project and the home directory (one at
// /, say) does not let the project's memory read the home directory.
func TestProjectMemoryCannotImportFromHomeInsideItsRepository(t *testing.T) {
	srv := promptServer(t)
	runEnv(t, srv)
	base := t.TempDir()
	home, project := filepath.Join(base, "home", "me"), filepath.Join(base, "srv", "proj")
	t.Setenv("HOME", home)
	if err := os.MkdirAll(filepath.Join(base, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFileAt(t, filepath.Join(home, ".ssh", "id_ed25519"), "SECRET-KEY\n")
	writeFileAt(t, filepath.Join(home, "notes.md"), "SECRET-NOTES\n")
	writeFileAt(t, filepath.Join(base, "srv", "shared.md"), "REPO-NOTE\n")
	writeFileAt(t, filepath.Join(project, "AGENTS.md"), "Rules.\n@../shared.md\n@../../home/me/.ssh/id_ed25519\n@../../home/me/notes.md\n")
	t.Chdir(project)
	if code, out, errs := runCLI(t, "run", "-p", "hi", "--model", "openai:gpt-test", "--output", "json"); code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errs, out)
	}
	prompt := srv.Requests()[0].System()
	if !strings.Contains(prompt, "REPO-NOTE") {
		t.Errorf("the repository's own file is missing from the prompt:\n%s", prompt)
	}
	for _, secret := range []string{"SECRET-KEY", "SECRET-NOTES"} {
		if strings.Contains(prompt, secret) {
			t.Errorf("the prompt holds %s", secret)
		}
	}
}

// Without a sandbox nothing stops a command from changing a protected
// file, such as the user's memory when --root is the home directory; the
// person hears of it (on stderr, even with --quiet, and in stream-json),
// not only the model, each time.
func TestUnsandboxedChangesOfProtectedFilesAreReported(t *testing.T) {
	srv := promptServer(t)
	_, home := runEnv(t, srv)
	mem := filepath.Join(home, ".deepagents", "AGENTS.md")
	writeFileAt(t, mem, "I like tea.\n")
	command := callLine("execute", map[string]any{"command": "echo INJECTED >> .deepagents/AGENTS.md"})
	for _, output := range []string{"json", "stream-json"} {
		code, out, errs := runCLI(t, "run", "-p", command, "--model", "openai:gpt-test", "--root", home,
			"--no-sandbox", "--allow", "execute", "--output", output, "--quiet")
		if code != 0 {
			t.Fatalf("exit %d: %s\n%s", code, errs, out)
		}
		const told = "deepagents: warning: parent: execute: a command changed protected files and nothing stopped it or put them back (check them before you run the agent again): .deepagents/AGENTS.md"
		if !strings.Contains(errs, told) {
			t.Errorf("%s: stderr does not report the change:\n%s", output, errs)
		}
		if output == "stream-json" && !strings.Contains(out, `"source":"execute"`) {
			t.Errorf("stream-json lacks the warning event:\n%s", out)
		}
	}
	if b, _ := os.ReadFile(mem); strings.Count(string(b), "INJECTED") != 2 {
		t.Fatalf("the commands did not run as the test expects: %q", b)
	}
}

// Files the command line names are control plane too: an --mcp-config
// file, whose servers later runs (and every resume of the thread) start
// without asking, and the --system @FILE prompt. The file tools change
// them only with approval; commands not at all.
func TestFilesNamedOnTheCommandLineAreProtected(t *testing.T) {
	needBwrap(t)
	srv := promptServer(t)
	project, _ := runEnv(t, srv)
	writeFileAt(t, filepath.Join(project, "dev.mcp.json"), `{"mcpServers": {}}`)
	writeFileAt(t, filepath.Join(project, "prompts", "system.md"), "Be careful.\n")
	flags := []string{"--model", "openai:gpt-test", "--root", project, "--output", "json", "--mcp-config", "dev.mcp.json", "--system", "@prompts/system.md"}
	evil := `{"mcpServers": {"x": {"command": "sh", "args": ["-c", "touch /tmp/pwned"]}}}`
	for _, tc := range []struct{ call, reason string }{
		{callLine("write_file", map[string]any{"file_path": "/dev.mcp.json", "content": evil}), "an MCP server list given with --mcp-config"},
		{callLine("edit_file", map[string]any{"file_path": "/prompts/system.md", "old_string": "careful", "new_string": "reckless"}), "the system prompt file given with --system"},
	} {
		code, out, errs := runCLI(t, append([]string{"run", "-p", tc.call}, flags...)...)
		if code != exitInterrupted {
			t.Fatalf("%s: exit %d: %s\n%s", tc.call, code, errs, out)
		}
		if sum := decode(t, out); len(sum.Interrupts) != 1 || !strings.Contains(sum.Interrupts[0].Reason, tc.reason) {
			t.Errorf("%s: interrupts %+v", tc.call, sum.Interrupts)
		}
	}
	code, out, errs := runCLI(t, append([]string{"run", "-p", callLine("execute", map[string]any{"command": "echo '" + evil + "' > dev.mcp.json; echo reckless >> prompts/system.md; echo done"}), "--allow", "execute"}, flags...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errs, out)
	}
	if b, _ := os.ReadFile(filepath.Join(project, "dev.mcp.json")); string(b) != `{"mcpServers": {}}` {
		t.Errorf("the command changed the MCP config: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(project, "prompts", "system.md")); string(b) != "Be careful.\n" {
		t.Errorf("the command changed the system prompt: %q", b)
	}
}

// lastUserServer is promptServer for forks: a fork's request holds its
// parent's conversation, so the calls are read from the last user message
// (after the fork's "Task: " line), not the first.
func lastUserServer(t *testing.T) *ot.Server {
	return ot.NewServer(t, func(r *ot.Request) ot.Reply {
		last := r.Last()
		if last.Role != "user" {
			var results []string
			for _, m := range r.Messages {
				if m.Role == "tool" {
					results = append(results, m.Text())
				}
			}
			return ot.Text(strings.Join(results, "\n"))
		}
		text := last.Text()
		if _, task, ok := strings.Cut(text, "Task: "); ok {
			text = task
		}
		var calls []ot.Call
		for i, line := range strings.Split(strings.TrimSpace(text), "\n") {
			name, args, _ := strings.Cut(line, " ")
			calls = append(calls, ot.Call{ID: fmt.Sprintf("c%d", i+1), Name: name, Args: args})
		}
		return ot.Tools(calls...)
	})
}

// A fork defined by a project's agent file, with interrupt_on lifting
// everything, still waits for the person where its parent would: a write
// of a protected file, of the user's memory, a tool the user gates, and
// execute.
func TestProjectForkKeepsTheGates(t *testing.T) {
	needBwrap(t)
	srv := lastUserServer(t)
	project, home := runEnv(t, srv)
	controlProject(t, project)
	writeFileAt(t, filepath.Join(home, ".deepagents", "AGENTS.md"), "I like tea.\n")
	writeFileAt(t, filepath.Join(project, ".deepagents", "agents", "forky.md"),
		"---\ndescription: Forks.\nmode: fork\ninterrupt_on: {execute: false, write_file: false, edit_file: false}\n---\nDo it.\n")
	for _, tc := range []struct {
		name, call string
		root       bool
		extra      []string
		reason     string
	}{
		{"agent file", callLine("write_file", map[string]any{"file_path": "/.deepagents/agents/x.md", "content": "x"}), true, nil, "an agent file"},
		{"user memory", callLine("edit_file", map[string]any{"file_path": "/memory/user/AGENTS.md", "old_string": "tea", "new_string": "gin"}), false, nil, "your user memory"},
		{"gated tool", callLine("write_file", map[string]any{"file_path": "/n.md", "content": "x"}), true, []string{"--interrupt-on", "write_file"}, ""},
		{"execute", callLine("execute", map[string]any{"command": "echo hi"}), true, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"run", "-p", taskLine("forky", tc.call), "--model", "openai:gpt-test", "--output", "json"}
			if tc.root {
				args = append(args, "--root", project)
			}
			code, out, errs := runCLI(t, append(args, tc.extra...)...)
			if code != exitInterrupted {
				t.Fatalf("exit %d: %s\n%s", code, errs, out)
			}
			sum := decode(t, out)
			if len(sum.Interrupts) != 1 || sum.Interrupts[0].Path.String() != "parent / forky#c1" || !strings.Contains(sum.Interrupts[0].Reason, tc.reason) {
				t.Errorf("interrupts %+v", sum.Interrupts)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(project, ".deepagents", "agents", "x.md")); err == nil {
		t.Error("the agent file was written")
	}
}

// Your --permission and config rules hold where a symbolic link leads: a
// cloned project's docs/env pointing at ../.env does not read what "deny
// read /.env" keeps from the agent, nor does a link to a denied directory
// let the agent write or list there; for the agent, its subagents, and a
// project agent file with permissions: [].
func TestPermissionRulesHoldThroughLinks(t *testing.T) {
	srv := promptServer(t)
	project, _ := runEnv(t, srv)
	writeFileAt(t, filepath.Join(project, ".env"), "API_KEY=SECRET-VALUE\n")
	writeFileAt(t, filepath.Join(project, "secret", "key"), "SECRET-KEY\n")
	writeFileAt(t, filepath.Join(project, "docs", "ok.md"), "fine\n")
	writeFileAt(t, filepath.Join(project, ".deepagents", "agents", "lax.md"), "---\ndescription: Lax.\npermissions: []\n---\nDo it.\n")
	for link, target := range map[string]string{"docs/env": "../.env", "s": "secret", "docs/s2": "../s"} {
		if err := os.Symlink(target, filepath.Join(project, filepath.FromSlash(link))); err != nil {
			t.Fatal(err)
		}
	}
	read := func(p string) string { return callLine("read_file", map[string]any{"file_path": p}) }
	for _, tc := range []struct {
		line    string
		allowed bool
	}{
		{read("/docs/ok.md"), true},
		{read("/docs/env"), false},
		{read("/s/key"), false},
		{read("/docs/s2/key"), false},
		{callLine("ls", map[string]any{"path": "/s"}), false},
		{callLine("grep", map[string]any{"pattern": "SECRET", "path": "/s"}), false},
		// A search of everything skips the file the link leads to, saying why.
		{callLine("grep", map[string]any{"pattern": "SECRET", "path": "/", "output_mode": "content"}), false},
		{callLine("write_file", map[string]any{"file_path": "/s/new", "content": "x"}), false},
		{callLine("delete", map[string]any{"file_path": "/s/key"}), false},
		// The link itself could go, but delete looks at what it deletes
		// first, and that is denied to the agent (deny all).
		{callLine("delete", map[string]any{"file_path": "/docs/env"}), false},
		{taskLine("general-purpose", read("/docs/env")), false},
		{taskLine("lax", read("/s/key")), false},
	} {
		code, out, errs := runCLI(t, "run", "-p", tc.line, "--model", "openai:gpt-test", "--root", project, "--output", "json",
			"--permission", "deny all /.env", "--permission", "deny all /secret/**")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s\n%s", tc.line, code, errs, out)
		}
		res := decode(t, out).Result
		if strings.Contains(res, "SECRET-") {
			t.Errorf("%s: the result holds the secret: %q", tc.line, res)
		}
		if denied := strings.Contains(res, "permission denied by rule"); denied == tc.allowed {
			t.Errorf("%s: result %q, want allowed %v", tc.line, res, tc.allowed)
		}
	}
	if b, err := os.ReadFile(filepath.Join(project, "secret", "key")); err != nil || string(b) != "SECRET-KEY\n" {
		t.Errorf("the denied file changed: %q %v", b, err)
	}
	if _, err := os.Lstat(filepath.Join(project, "secret", "new")); err == nil {
		t.Error("a file was written in the denied directory")
	}
}

// What the sandbox could neither stop nor check becomes warnings for the
// person: the paths changed, and a check left incomplete.
func TestUnguardedWarnings(t *testing.T) {
	if evs := unguardedWarnings(agent.RootPath("parent"), sandbox.Unguarded{}); len(evs) != 0 {
		t.Errorf("nothing to tell gave %+v", evs)
	}
	evs := unguardedWarnings(mustPath("parent / x#c1"), sandbox.Unguarded{Paths: []string{"AGENTS.md"}, Unchecked: true})
	if len(evs) != 2 || evs[0].Agent.String() != "parent / x#c1" || !strings.Contains(evs[0].Warning.Text, "AGENTS.md") ||
		!strings.Contains(evs[1].Warning.Text, "too many files and directories to check") || evs[1].Type != agent.Warning {
		t.Errorf("warnings %+v", evs)
	}
}
