package sandbox_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/sandbox"
	"github.com/deepagents-go/deepagents/vfs"
)

// protectedList is what the CLI protects in a project: the git directory,
// the agent's own directory (agents, skills, the thread database), the MCP
// configuration, the project settings, every AGENTS.md, a skill folder and
// a trust store kept in the directory.
var protectedList = []string{".git", ".deepagents", ".mcp.json", "deepagents.toml", "**/AGENTS.md", "skills/review", "trusted.json"}

// isProtected is the test's own statement of what protectedList covers,
// written without the package's matcher: a path is protected when it is
// one of these or lies below one.
func isProtected(rel string) bool {
	switch rel {
	case ".mcp.json", "deepagents.toml", "trusted.json", ".git/config", ".git/commondir":
		return true
	}
	if path.Base(rel) == "AGENTS.md" {
		return true
	}
	for _, dir := range []string{".deepagents", "skills/review", ".git/hooks", ".git/info"} {
		if rel == dir || strings.HasPrefix(rel, dir+"/") {
			return true
		}
	}
	return false
}

// snapshot maps every protected path under dir to what it is: a file's
// content, a link's target, "dir".
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if rel == "." || !isProtected(rel) {
			return nil
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out[rel] = "-> " + target
		case d.IsDir():
			out[rel] = "dir"
		default:
			data, _ := os.ReadFile(p)
			out[rel] = string(data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func diff(before, after map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(before)) {
		if a, ok := after[k]; !ok {
			fmt.Fprintf(&b, "  %s: gone\n", k)
		} else if a != before[k] {
			fmt.Fprintf(&b, "  %s: %q -> %q\n", k, before[k], a)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(after)) {
		if _, ok := before[k]; !ok {
			fmt.Fprintf(&b, "  %s: new (%q)\n", k, after[k])
		}
	}
	return b.String()
}

func needGit(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/usr/bin/git"); err != nil {
		t.Skip("git is not installed in /usr/bin, where the sandbox would find it; install Debian's git package")
	}
}

func sh(t *testing.T, dir, command string) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", command)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + sandbox.DefaultPath, "HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1"}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", command, err, out)
	}
}

// project returns a copy of template (made by newTemplate) in a directory
// of its own.
func project(t *testing.T, template string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "project")
	sh(t, "/", "cp -a '"+template+"' '"+dir+"'")
	return dir
}

// newTemplate makes a directory holding every kind of protected path, and
// a git repository with one commit.
func newTemplate(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "template")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sh(t, dir, `git init -q . && git config user.email agent@example.com && git config user.name agent &&
		printf '#!/bin/sh\nexit 0\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit &&
		printf 'main\n' > main.txt && git add main.txt && git commit -qm first &&
		mkdir -p .deepagents/agents sub skills/review &&
		printf 'db' > .deepagents/state.db && printf 'wal' > .deepagents/state.db-wal && printf 'shm' > .deepagents/state.db-shm &&
		printf 'agent' > .deepagents/agents/x.md && printf '{}' > .mcp.json && printf 'model = "m"\n' > deepagents.toml &&
		printf 'top' > AGENTS.md && printf 'nested' > sub/AGENTS.md && printf 'skill' > skills/review/SKILL.md &&
		printf '{"trusted":[]}' > trusted.json && printf 'plain' > sub/plain.txt`)
	return dir
}

// attacks are the ways a command tries to change the protected path P
// (%[1]s below, a file; %[2]s is its parent, %[3]s its top-level
// directory).
var attacks = []struct{ name, command string }{
	{"write", `printf evil > %[1]s`},
	{"append", `printf evil >> %[1]s`},
	{"truncate", `: > %[1]s`},
	{"truncate(1)", `truncate -s 0 %[1]s`},
	{"delete", `rm -f %[1]s`},
	{"rename", `mv %[1]s %[1]s.moved`},
	{"rename onto", `printf evil > evil.tmp && mv -f evil.tmp %[1]s`},
	{"rename of the parent", `mv %[2]s %[2]s.moved && mkdir -p %[2]s && printf evil > %[1]s`},
	{"rename of the top directory", `mv %[3]s %[3]s.moved && mkdir -p %[2]s && printf evil > %[1]s`},
	{"delete of the parent", `rm -rf %[2]s; mkdir -p %[2]s && printf evil > %[1]s`},
	{"overwrite through a symlink", `ln -s "$PWD/%[1]s" via-link && printf evil > via-link`},
	{"overwrite through a relative symlink", `ln -s %[1]s rel-link && printf evil >> rel-link`},
	{"ln -sf", `ln -sf /etc/passwd %[1]s`},
	{"hard link", `ln %[1]s hard-link && printf evil >> hard-link`},
	{"unmount from a new namespace", `unshare -Urm sh -c 'umount -l %[1]s; umount -l %[2]s; printf evil > %[1]s'`},
}

// protectedFiles are the files attacks aim at, one of each kind.
var protectedFiles = []string{
	".git/config", ".git/hooks/pre-commit", ".git/info/exclude",
	".deepagents/state.db", ".deepagents/state.db-wal", ".deepagents/state.db-shm", ".deepagents/agents/x.md",
	".mcp.json", "deepagents.toml", "AGENTS.md", "sub/AGENTS.md", "skills/review/SKILL.md", "trusted.json",
}

// Every attack on every protected file fails in the sandbox: the protected
// paths are the same after the command. The same command run without
// protected paths does change them, which shows each attack works.
func TestProtectedExisting(t *testing.T) {
	needGit(t)
	guarded := sandboxed(t, sandbox.Options{Protected: protectedList})
	// The controls run unsandboxed: quicker, and the commands stay in
	// the directory.
	open := unsandboxed(t, sandbox.Options{})
	template := newTemplate(t)
	for _, p := range protectedFiles {
		parent, top := path.Dir(p), strings.Split(p, "/")[0]
		for _, a := range attacks {
			if (a.name == "rename of the parent" || a.name == "delete of the parent") && parent == "." ||
				a.name == "rename of the top directory" && (top == p || top == parent) {
				continue
			}
			t.Run(p+"/"+a.name, func(t *testing.T) {
				command := fmt.Sprintf(a.command, p, parent, top)
				dir := project(t, template)
				before := snapshot(t, dir)
				res := run(t, guarded, dir, command, 20*time.Second)
				if d := diff(before, snapshot(t, dir)); d != "" {
					t.Fatalf("%q changed protected paths (exit %d, output %q, notice %q):\n%s", command, res.ExitCode, res.Output, res.Notice, d)
				}
				// Control: without protection the attack works.
				dir = project(t, template)
				res = run(t, open, dir, command, 20*time.Second)
				if diff(before, snapshot(t, dir)) == "" {
					t.Fatalf("control: without protected paths %q changed nothing, so the test proves nothing (exit %d, output %q)", command, res.ExitCode, res.Output)
				}
			})
		}
	}
}

// A symbolic link in the directory that points at a protected file,
// made before the command, leads to the read-only mount.
func TestProtectedThroughExistingLink(t *testing.T) {
	r := sandboxed(t, sandbox.Options{Protected: protectedList})
	needGit(t)
	dir := project(t, newTemplate(t))
	sh(t, dir, "ln -s .git/config cfg && ln -s sub to-sub && ln -s ../AGENTS.md sub/up")
	before := snapshot(t, dir)
	for _, command := range []string{"printf evil > cfg", "printf evil >> to-sub/AGENTS.md", "printf evil > sub/up", "rm -f to-sub/AGENTS.md"} {
		res := run(t, r, dir, command, 10*time.Second)
		if d := diff(before, snapshot(t, dir)); d != "" {
			t.Fatalf("%q changed protected paths (exit %d, output %q):\n%s", command, res.ExitCode, res.Output, d)
		}
		if res.ExitCode == 0 {
			t.Errorf("%q succeeded: %q", command, res.Output)
		}
	} // The descriptors the mounts were made from do not reach the command
	// (through /proc/self/fd one could reopen the file writable).
	res := run(t, r, dir, `for f in /proc/$$/fd/*; do readlink "$f"; done`, 10*time.Second)
	if strings.Contains(res.Output, dir) {
		t.Errorf("the command holds descriptors of the directory: %q", res.Output)
	}
}

// A protected path that is a symbolic link (AGENTS.md pointing at a file
// of the directory) cannot be a mount point: its target is read-only, and
// the link, if the command removes or replaces it, is made again.
func TestProtectedLink(t *testing.T) {
	r := sandboxed(t, sandbox.Options{Protected: []string{"**/AGENTS.md", ".git"}})
	open := unsandboxed(t, sandbox.Options{})
	template := filepath.Join(t.TempDir(), "template")
	if err := os.MkdirAll(filepath.Join(template, "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	sh(t, template, `printf guide > docs/guide.md && ln -s docs/guide.md AGENTS.md && mkdir -p real.git/hooks && printf cfg > real.git/config && ln -s real.git .git`)
	state := func(dir string) string {
		link, _ := os.Readlink(filepath.Join(dir, "AGENTS.md"))
		guide, _ := os.ReadFile(filepath.Join(dir, "docs/guide.md"))
		gitLink, _ := os.Readlink(filepath.Join(dir, ".git"))
		cfg, _ := os.ReadFile(filepath.Join(dir, "real.git/config"))
		_, err := os.Lstat(filepath.Join(dir, "real.git/hooks/pre-commit"))
		return fmt.Sprintf("AGENTS.md -> %s (%s), .git -> %s, config %s, hook %v", link, guide, gitLink, cfg, err == nil)
	}
	want := state(template)
	for _, command := range []string{
		"printf evil > AGENTS.md",
		"printf evil >> docs/guide.md",
		"rm AGENTS.md && printf evil > AGENTS.md",
		"ln -sf /etc/passwd AGENTS.md",
		"mv AGENTS.md x && ln -s x AGENTS.md",
		"rm .git && mkdir -p .git/hooks && printf evil > .git/config",
		"printf evil > .git/config",
		"printf evil > .git/hooks/pre-commit",
	} {
		t.Run(command, func(t *testing.T) {
			dir := project(t, template)
			res := run(t, r, dir, command, 10*time.Second)
			if got := state(dir); got != want {
				t.Fatalf("%q: %s, want %s (exit %d, output %q, notice %q)", command, got, want, res.ExitCode, res.Output, res.Notice)
			}
			dir = project(t, template)
			run(t, open, dir, command, 10*time.Second)
			if state(dir) == want {
				t.Fatalf("control: without protection %q changed nothing", command)
			}
		})
	}
}

// creations are the ways a command makes a protected path that does not
// exist yet (%[1]s, in the directory %[2]s).
var creations = []struct{ name, command string }{
	{"write", `mkdir -p %[2]s && printf evil > %[1]s`},
	{"symlink", `mkdir -p %[2]s && ln -s /etc/passwd %[1]s`},
	{"dangling symlink", `mkdir -p %[2]s && ln -sf nowhere %[1]s`},
	{"rename in", `printf evil > made.tmp && mkdir -p %[2]s && mv made.tmp %[1]s`},
	{"directory", `mkdir -p %[1]s/inner && printf evil > %[1]s/inner/f`},
	{"unwritable directory", `mkdir -p %[1]s && printf evil > %[1]s/f && chmod 500 %[1]s`},
}

// Protected paths that do not exist before the command cannot be mounted:
// what the command creates there is removed when it ends, and the result
// says so. Each is made missing first (with its parent for some).
func TestProtectedCreated(t *testing.T) {
	needGit(t)
	guarded := sandboxed(t, sandbox.Options{Protected: protectedList})
	// The controls run unsandboxed: quicker, and the commands stay in
	// the directory.
	open := unsandboxed(t, sandbox.Options{})
	template := newTemplate(t)
	for _, tc := range []struct{ path, remove, named string }{
		{".git/hooks/pre-commit", ".git/hooks", ".git/hooks"},
		{".git/info/exclude", ".git/info", ".git/info"},
		{".git/config", ".git/config", ".git/config"},
		{".git/commondir", "", ".git/commondir"},
		{".deepagents/agents/x.md", ".deepagents", ".deepagents"},
		{".deepagents/state.db-wal", ".deepagents", ".deepagents"},
		{".mcp.json", ".mcp.json", ".mcp.json"},
		{"deepagents.toml", "deepagents.toml", "deepagents.toml"},
		{"AGENTS.md", "AGENTS.md", "AGENTS.md"},
		{"sub/AGENTS.md", "sub/AGENTS.md", "sub/AGENTS.md"},
		{"new/deeper/AGENTS.md", "", "new/deeper/AGENTS.md"},
		{"skills/review", "skills/review", "skills/review"},
		{"trusted.json", "trusted.json", "trusted.json"},
	} {
		for _, c := range creations {
			t.Run(tc.path+"/"+c.name, func(t *testing.T) {
				command := fmt.Sprintf(c.command, tc.path, path.Dir(tc.path))
				dir := project(t, template)
				if tc.remove != "" {
					sh(t, dir, "rm -rf "+tc.remove)
				}
				before := snapshot(t, dir)
				res := run(t, guarded, dir, command, 20*time.Second)
				if d := diff(before, snapshot(t, dir)); d != "" {
					t.Fatalf("%q left protected paths (exit %d, output %q, notice %q):\n%s", command, res.ExitCode, res.Output, res.Notice, d)
				}
				if !strings.Contains(res.Notice, "removed") || !strings.Contains(res.Notice, tc.named) {
					t.Errorf("the notice does not name what was removed: %q", res.Notice)
				}
				// Control: without protected paths the path is made.
				dir = project(t, template)
				if tc.remove != "" {
					sh(t, dir, "rm -rf "+tc.remove)
				}
				res = run(t, open, dir, command, 20*time.Second)
				if diff(before, snapshot(t, dir)) == "" {
					t.Fatalf("control: without protected paths %q made nothing (exit %d, output %q)", command, res.ExitCode, res.Output)
				}
				sh(t, dir, "chmod -R u+w .") // so that the test's cleanup can remove it
			})
		}
	}
}

// A command running as the user can take read or search permission away
// from a directory (chmod 111, 000, 600; the root itself included) to hide
// what it made there from the listing after it. The check gives the
// permissions back, finds what was made and removes it, even from a
// directory the command made unwritable, and the notice says so. As root no
// permission hides anything from the check, so this runs as an ordinary
// user (CI runs the sandbox's tests again as user nobody).
func TestProtectedHiddenByPermissions(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("as root no permission hides a directory from the check; CI runs this test again as user nobody")
	}
	needGit(t)
	guarded := sandboxed(t, sandbox.Options{Protected: protectedList})
	template := newTemplate(t)
	for _, tc := range []struct {
		command, made string
		hidden        bool // not merely unwritable
	}{
		{`mkdir -p h && printf evil > h/AGENTS.md && chmod 111 h`, "h/AGENTS.md", true},
		{`mkdir -p h && printf evil > h/AGENTS.md && chmod 000 h`, "h/AGENTS.md", true},
		{`mkdir -p h && printf evil > h/AGENTS.md && chmod 600 h`, "h/AGENTS.md", true},
		{`mkdir -p h/i && printf evil > h/i/AGENTS.md && chmod 000 h/i && chmod 100 h`, "h/i/AGENTS.md", true},
		{`printf evil > .git/commondir && chmod 000 .git`, ".git/commondir", true},
		{`printf '{}' > .mcp.json && chmod 111 .`, ".mcp.json", true},
		{`printf '{}' > .mcp.json && chmod 000 .`, ".mcp.json", true},
		{`printf '{}' > .mcp.json && chmod 555 .`, ".mcp.json", false},
	} {
		t.Run(tc.command, func(t *testing.T) {
			dir := project(t, template)
			sh(t, dir, "rm -f .mcp.json")
			res := run(t, guarded, dir, tc.command, 20*time.Second)
			sh(t, "/", "chmod -R u+rwx '"+dir+"'")
			if _, err := os.Lstat(filepath.Join(dir, tc.made)); err == nil {
				t.Fatalf("%s was left in place (notice %q)", tc.made, res.Notice)
			}
			if !strings.Contains(res.Notice, tc.made) || tc.hidden != strings.Contains(res.Notice, "it was given back") {
				t.Errorf("the notice does not say what was hidden and removed: %q", res.Notice)
			}
		})
	}
}

// git works through the sandbox on a repository made by git init: add,
// commit (with the existing pre-commit hook running), branch, log; while
// its configuration and hooks stay read-only.
func TestProtectedGitCommit(t *testing.T) {
	needGit(t)
	r := sandboxed(t, sandbox.Options{Protected: protectedList})
	dir := project(t, newTemplate(t))
	res := run(t, r, dir, `printf 'change\n' >> main.txt && printf 'new\n' > new.txt && git add -A && git commit -qm second &&
		git checkout -qb topic && printf 'more\n' >> new.txt && git commit -qam third && git log --format=%s && git status --short`, 30*time.Second)
	if res.ExitCode != 0 || res.Output != "third\nsecond\nfirst\n" || res.Notice != "" {
		t.Fatalf("git in the sandbox: exit %d, output %q, notice %q", res.ExitCode, res.Output, res.Notice)
	}
	// The host sees the commits.
	cmd := exec.Command("git", "log", "--format=%s", "topic")
	cmd.Dir = dir
	if out, err := cmd.Output(); err != nil || string(out) != "third\nsecond\nfirst\n" {
		t.Fatalf("git log on the host: %q, %v", out, err)
	}
	// The configuration cannot be changed through git either.
	before := snapshot(t, dir)
	res = run(t, r, dir, `git config core.hooksPath /tmp; git config core.fsmonitor 'touch /tmp/pwned'; printf '#!/bin/sh\n' > .git/hooks/post-commit`, 10*time.Second)
	if d := diff(before, snapshot(t, dir)); d != "" {
		t.Fatalf("git config changed protected paths (output %q):\n%s", res.Output, d)
	}
	// A repository without hooks: the hooks a command adds are removed, and
	// commits still work.
	sh(t, dir, "rm -rf .git/hooks")
	res = run(t, r, dir, `mkdir -p .git/hooks && printf '#!/bin/sh\necho HOOK-RAN\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit`, 10*time.Second)
	if exists(filepath.Join(dir, ".git/hooks")) || !strings.Contains(res.Notice, ".git/hooks") {
		t.Fatalf("the hooks a command made are still there (notice %q)", res.Notice)
	}
	res = run(t, r, dir, `printf x > y.txt && git add y.txt && git commit -qm fourth && git log -1 --format=%s`, 10*time.Second)
	if res.ExitCode != 0 || res.Output != "fourth\n" || strings.Contains(res.Output, "HOOK-RAN") {
		t.Fatalf("commit after the hooks were removed: exit %d, output %q", res.ExitCode, res.Output)
	}
}

// git init in the sandbox, where there was no repository, makes one whose
// configuration, hooks and info are removed at the end; what git needs to
// commit stays.
func TestProtectedGitInit(t *testing.T) {
	needGit(t)
	r := sandboxed(t, sandbox.Options{Protected: protectedList})
	dir := t.TempDir()
	res := run(t, r, dir, `git init -q . && git config user.name x`, 10*time.Second)
	for _, p := range []string{".git/config", ".git/hooks", ".git/info"} {
		if exists(filepath.Join(dir, p)) {
			t.Errorf("%s made by git init in the sandbox is still there (notice %q)", p, res.Notice)
		}
	}
	if !exists(filepath.Join(dir, ".git/HEAD")) {
		t.Errorf("git init's HEAD was removed too")
	}
	res = run(t, r, dir, `printf x > f && git add f && git -c user.name=a -c user.email=a@b commit -qm one && git log --format=%s`, 10*time.Second)
	if res.ExitCode != 0 || res.Output != "one\n" {
		t.Errorf("commit in the repository made in the sandbox: exit %d, %q", res.ExitCode, res.Output)
	}
}

// A file the host process holds open for writing, made while the command
// runs at a protected path (the thread database's journal, when its
// directory is not protected whole), is the host's and stays; what the
// command made next to it goes.
func TestProtectedHostFilesStay(t *testing.T) {
	r := sandboxed(t, sandbox.Options{Protected: []string{"db/state.db*"}})
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "db"), 0o755); err != nil {
		t.Fatal(err)
	}
	type result struct {
		res vfs.ExecResult
		err error
	}
	started := startBarrier(t, filepath.Join(dir, "started"))
	done := make(chan result, 1)
	go func() {
		res, err := r.Run(context.Background(), dir, vfs.ExecRequest{
			Command: `printf evil > db/state.db-wal; echo > started; while [ ! -e go ]; do sleep 0.01; done`, Timeout: 20 * time.Second})
		done <- result{res, err}
	}()
	started()
	journal, err := os.OpenFile(filepath.Join(dir, "db", "state.db-journal"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer journal.Close()
	if _, err := journal.WriteString("host"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	got := <-done
	if got.err != nil {
		t.Fatal(got.err)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "db", "state.db-journal")); err != nil || string(data) != "host" {
		t.Errorf("the host's journal: %q, %v", data, err)
	}
	if exists(filepath.Join(dir, "db", "state.db-wal")) || !strings.Contains(got.res.Notice, "db/state.db-wal") {
		t.Errorf("the command's db/state.db-wal is still there (notice %q)", got.res.Notice)
	}
	if strings.Contains(got.res.Notice, "journal") {
		t.Errorf("the notice names the host's journal: %q", got.res.Notice)
	}
}

// Without a sandbox nothing can be mounted: what a command creates at a
// protected path is still removed, and what it changed in place is
// reported, as the runner's description warns.
func TestProtectedUnsandboxed(t *testing.T) {
	needGit(t)
	var unguarded []string // what Options.Unguarded is told
	tell := func(u sandbox.Unguarded) { unguarded = append(unguarded, u.Paths...) }
	r := unsandboxed(t, sandbox.Options{Protected: protectedList, Unguarded: tell})
	if d := r.Describe(); !strings.Contains(d, "protected paths are NOT enforced") {
		t.Errorf("Describe does not warn: %q", d)
	}
	dir := project(t, newTemplate(t))
	res := run(t, r, dir, `printf '{}' > sub/.mcp.json; mkdir -p new && printf evil > new/AGENTS.md && printf evil > .deepagents/agents/y.md && ln -s /etc/passwd .mcp.json.x && printf x >> .git/config && rm trusted.json`, 10*time.Second)
	for _, p := range []string{"new/AGENTS.md", ".deepagents/agents/y.md"} {
		if exists(filepath.Join(dir, p)) || !strings.Contains(res.Notice, p) {
			t.Errorf("%s made without a sandbox is still there (notice %q)", p, res.Notice)
		}
	}
	for _, want := range []string{"changed .git/config", "deleted trusted.json", "without a sandbox"} {
		if !strings.Contains(res.Notice, want) {
			t.Errorf("the notice does not say %q: %q", want, res.Notice)
		}
	}
	if !exists(filepath.Join(dir, "sub/.mcp.json")) || !exists(filepath.Join(dir, ".mcp.json.x")) {
		t.Error("paths that are not protected were removed")
	}
	// The person is told what nothing put back, not what was removed.
	if !slices.Equal(unguarded, []string{".git/config", "trusted.json"}) {
		t.Errorf("Unguarded was told %q, want the changed and deleted paths", unguarded)
	}
	// In the sandbox nothing goes unguarded.
	unguarded = nil
	guarded := sandboxed(t, sandbox.Options{Protected: protectedList, Unguarded: tell})
	run(t, guarded, dir, `printf x >> .git/config; rm -f AGENTS.md; printf evil > new2.md && mkdir -p n && mv new2.md n/AGENTS.md`, 10*time.Second)
	if unguarded != nil {
		t.Errorf("Unguarded was told %q in the sandbox", unguarded)
	}
}

// The listing that finds protected paths is bounded: a directory too large
// to list gets no commands (fails closed), and a command that makes it too
// large to check gets a warning, after which commands are refused.
func TestProtectedScanLimit(t *testing.T) {
	var told sandbox.Unguarded // what the person hears
	r := sandboxed(t, sandbox.Options{Protected: []string{"**/AGENTS.md"}, MaxScanEntries: 50, Unguarded: func(u sandbox.Unguarded) { told = u }})
	dir := t.TempDir()
	res := run(t, r, dir, `i=0; while [ $i -lt 300 ]; do : > f$i; i=$((i+1)); done; printf evil > AGENTS.md`, 20*time.Second)
	if !strings.Contains(res.Notice, "too many to check") {
		t.Errorf("no warning after the command made the directory too large: %q", res.Notice)
	}
	if !told.Unchecked {
		t.Errorf("Unguarded was not told that the check was incomplete: %+v", told)
	}
	_, err := r.Run(context.Background(), dir, vfs.ExecRequest{Command: "true"})
	if !errors.Is(err, sandbox.ErrTooManyEntries) {
		t.Fatalf("a command in a directory too large to check: %v, want ErrTooManyEntries", err)
	}
	// Patterns bound where the listing goes: the same directory is fine
	// when only a path at the top is protected.
	r = sandboxed(t, sandbox.Options{Protected: []string{"sub/AGENTS.md"}, MaxScanEntries: 50})
	if res := run(t, r, dir, "true", 10*time.Second); res.ExitCode != 0 {
		t.Fatalf("exit %d", res.ExitCode)
	}
}

// More protected paths than the sandbox can mount: commands are refused.
func TestProtectedTooManyMounts(t *testing.T) {
	r := sandboxed(t, sandbox.Options{Protected: []string{"**/AGENTS.md"}})
	dir := t.TempDir()
	sh(t, dir, `i=0; while [ $i -lt 300 ]; do mkdir d$i && : > d$i/AGENTS.md; i=$((i+1)); done`)
	if _, err := r.Run(context.Background(), dir, vfs.ExecRequest{Command: "true"}); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("600 mounts: %v, want a refusal", err)
	}
}

func TestProtectedBadEntries(t *testing.T) {
	for _, e := range []string{"", "/etc/passwd", "../x", "a/../../x", ".", "a/[", "a\x00b"} {
		if _, err := sandbox.New(context.Background(), sandbox.Options{Unsandboxed: true, Protected: []string{e}}); err == nil {
			t.Errorf("the protected entry %q was accepted", e)
		}
	}
}
