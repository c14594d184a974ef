package perm_test

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/approve"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/runner"
	"github.com/deepagents-go/deepagents/tool"
	"github.com/deepagents-go/deepagents/vfs"
	"github.com/deepagents-go/deepagents/vfs/osfs"
	"github.com/deepagents-go/deepagents/vfs/perm"
	"github.com/deepagents-go/deepagents/vfs/vfstest"
)

// controlZones are the zones of a project directory as the CLI draws them,
// in small: git's data never, the project's settings and every AGENTS.md
// only with approval.
func controlZones(dir string) []perm.Zone {
	return []perm.Zone{
		{Dir: "/", Glob: "**/.git/**", Level: perm.Never, Group: "git", What: "git's repository data (.git)"},
		{Dir: dir, Glob: ".deepagents/state.db{,-wal,-shm,-journal,-oplog-*}", Level: perm.Never, Group: "database", What: "the thread database"},
		{Dir: "/", Glob: "**/.deepagents/**", Level: perm.Ask, Group: "config", What: "deepagents' project settings (.deepagents)"},
		{Dir: "/", Glob: "**/AGENTS.md", Level: perm.Ask, Group: "memory", What: "a memory file (AGENTS.md)"},
	}
}

// project makes a directory with git's data, an agent file, a database and
// links into them, and returns it with the guarded backend over it.
func project(t *testing.T) (string, vfs.Backend, *perm.Guard) {
	t.Helper()
	dir := t.TempDir()
	for name, body := range map[string]string{
		".git/config": "[core]\n", ".git/hooks/pre-commit.sample": "#!/bin/sh\n", ".deepagents/agents/rev.md": "agent\n",
		".deepagents/state.db": "db", "sub/.git/config": "[core]\n", "mem/AGENTS.md": "notes\n", "notes.txt": "n\n", "docs/a.md": "a\n",
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"gitcfg": ".git/config", "g": ".git", "settings": ".deepagents", "docs/up": "../.git/hooks",
		"memo.txt": "mem/AGENTS.md", "AGENTS.md": "notes.txt", "out": "../elsewhere", "abs": "/etc/passwd",
	} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	g, err := perm.NewGuard(controlZones(dir), []perm.Mount{{Prefix: "/", Host: dir, Links: true}})
	if err != nil {
		t.Fatal(err)
	}
	fs, err := osfs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Close() })
	g.Approved = agent.Approved
	return dir, g.Wrap(fs), g
}

// approvedCtx is the context of a call a person approved. Only the loop
// makes one (agent.Approved), so it is taken from a tool call of a run that
// waited and was approved, without the run's cancellation.
func approvedCtx(t *testing.T) context.Context {
	t.Helper()
	var got context.Context
	grab := tool.MustFunc("grab", "Grab the context.", func(ctx context.Context, _ *tool.Env, _ struct{}) (string, error) {
		got = context.WithoutCancel(ctx)
		return "ok", nil
	})
	m := scripted.New(scripted.Script{"parent": {Steps: []scripted.Step{
		{ToolCalls: []scripted.StepCall{{ID: "c1", Name: "grab", Args: json.RawMessage(`{}`)}}}, {Content: "done"}}}}, scripted.Options{})
	a, err := agent.New(agent.Config{Model: m, Tools: []tool.Tool{grab}, Middleware: []agent.Middleware{approve.Gate(map[string]approve.Policy{"grab": {}})}})
	if err != nil {
		t.Fatal(err)
	}
	saver := checkpoint.NewMemory(0)
	if _, err := a.Invoke(t.Context(), agent.Prompt("go"), runner.Checkpoints(saver, "T")); !errors.Is(err, agent.ErrInterrupted) {
		t.Fatal(err)
	}
	if _, err := a.Invoke(t.Context(), agent.Input{}, runner.Checkpoints(saver, "T"), agent.WithDecisions(agent.Decision{Type: agent.Approve, CallID: "c1"})); err != nil {
		t.Fatal(err)
	}
	if got == nil || !agent.Approved(got) {
		t.Fatal("the approved call's context does not say so")
	}
	return got
}

// Every write, edit and delete of a protected place is refused: Never
// places whatever a person said, Ask places unless the call was approved;
// symbolic links, directory links, case and a link's own name do not get
// around it, and reads stay allowed.
func TestGuardRefusesChangesOfTheControlPlane(t *testing.T) {
	dir, b, _ := project(t)
	yes := approvedCtx(t)
	no := context.Background()
	for _, tc := range []struct {
		name   string
		op     string // write, edit, delete
		path   string
		plain  string // the refusal's words without approval; "" when allowed
		signed string // with approval
	}{
		{"git config", "write", "/.git/config", "git's repository data (.git), which the agent may read but never change", "never change"},
		{"git hook, created", "write", "/.git/hooks/post-commit", "never change", "never change"},
		{"nested repository", "write", "/sub/.git/config", "never change", "never change"},
		{"case", "write", "/.GIT/config", "never change", "never change"},
		{"backslashes", "write", `\.git\config`, "never change", "never change"},
		{"file link", "write", "/gitcfg", "this path leads, through a symbolic link, to git's repository data", "never change"},
		{"directory link", "write", "/g/hooks/pre-commit", "through a symbolic link", "never change"},
		{"link with ..", "write", "/docs/up/pre-push", "through a symbolic link", "never change"},
		{"edit", "edit", "/.git/config", "never change", "never change"},
		{"database", "write", "/.deepagents/state.db-wal", "the thread database", "the thread database"},
		{"agent file", "write", "/.deepagents/agents/rev.md", "needs a person's approval, and this call did not have it", ""},
		{"agent file through a directory link", "edit", "/settings/agents/rev.md", "through a symbolic link", ""},
		{"memory file through a link", "write", "/memo.txt", "a memory file (AGENTS.md)", ""},
		{"a link named AGENTS.md", "write", "/AGENTS.md", "a memory file", ""},
		{"delete git", "delete", "/.git", "never change", "never change"},
		{"delete a directory holding a repository", "delete", "/sub", "never change", "never change"},
		{"delete through a directory link", "delete", "/g/hooks/pre-commit.sample", "never change", "never change"},
		{"delete a directory holding an agent file", "delete", "/.deepagents/agents", "approval", ""},
		{"link leading out", "write", "/out", "cannot tell where this path leads", "cannot tell"},
		{"absolute link", "write", "/abs", "cannot tell where this path leads", "cannot tell"},
		{"plain file", "write", "/docs/b.md", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, run := range []struct {
				ctx  context.Context
				want string
			}{{no, tc.plain}, {yes, tc.signed}} {
				var err error
				switch tc.op {
				case "write":
					err = b.Write(run.ctx, tc.path, "changed")
				case "edit":
					err = vfs.Update(run.ctx, b, tc.path, func(s string) (string, error) { return s + "changed", nil })
				case "delete":
					_, err = b.Delete(run.ctx, tc.path)
				}
				approved := agent.Approved(run.ctx)
				if run.want == "" {
					if err != nil {
						t.Errorf("approved %v: %v", approved, err)
					}
					continue
				}
				var denied *vfs.DeniedError
				if !errors.As(err, &denied) || !strings.Contains(denied.Reason, run.want) || !errors.Is(err, vfs.ErrPermission) {
					t.Errorf("approved %v: error %v, want a refusal saying %q", approved, err, run.want)
				}
			}
		})
	}
	for name, want := range map[string]string{".git/config": "[core]\n", "sub/.git/config": "[core]\n", ".git/hooks/pre-commit.sample": "#!/bin/sh\n", ".deepagents/state.db": "db"} {
		if got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name))); err != nil || string(got) != want {
			t.Errorf("%s: %q %v, want it unchanged", name, got, err)
		}
	}
	for _, name := range []string{".git/hooks/post-commit", ".git/hooks/pre-push"} {
		if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(name))); err == nil {
			t.Errorf("%s was created", name)
		}
	}
	if got, err := b.Read(no, "/.git/config"); err != nil || got != "[core]\n" {
		t.Errorf("reading git's config: %q %v", got, err)
	}
	// Deleting a link removes the link, never what it points to: allowed.
	if _, err := b.Delete(no, "/gitcfg"); err != nil {
		t.Errorf("deleting the link: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".git", "config")); err != nil {
		t.Errorf("git's config went with its link: %v", err)
	}
}

// CheckCall makes a call wait only for an Ask place, with the reason; it
// lets a Never place through to the backend (no approval could lift it) and
// reports the places that ask for it.
func TestGuardCheckCall(t *testing.T) {
	dir, _, _ := project(t)
	zones := append([]perm.Zone{{Dir: dir, Glob: "mem/AGENTS.md", Level: perm.Free, Group: "user-memory", What: "your user memory", Report: true}}, controlZones(dir)...)
	g, err := perm.NewGuard(zones, []perm.Mount{{Prefix: "/", Host: dir, Links: true}, {Prefix: "/memories", Host: ""}})
	if err != nil {
		t.Fatal(err)
	}
	target := func(args json.RawMessage) (string, bool, bool) {
		var in struct {
			Path string `json:"file_path"`
			Del  bool   `json:"del"`
		}
		return in.Path, in.Del, json.Unmarshal(args, &in) == nil && in.Path != ""
	}
	for _, tc := range []struct {
		args string
		want perm.Verdict
	}{
		{`{"file_path":"/.deepagents/agents/new.md"}`, perm.Verdict{Wait: true, Changes: "/.deepagents/agents/new.md",
			Reason: "Writing /.deepagents/agents/new.md changes deepagents' project settings (.deepagents), so it waits for your approval"}},
		{`{"file_path":"/settings/x","del":true}`, perm.Verdict{Wait: true, Changes: "/settings/x",
			Reason: "Deleting /settings/x changes, through a symbolic link, deepagents' project settings (.deepagents), so it waits for your approval"}},
		{`{"file_path":"/.git/config"}`, perm.Verdict{}},
		{`{"file_path":"/mem/AGENTS.md"}`, perm.Verdict{Report: "it changed /mem/AGENTS.md: your user memory", Changes: "/mem/AGENTS.md"}},
		{`{"file_path":"/memo.txt"}`, perm.Verdict{Report: "it changed /memo.txt, which leads through a symbolic link to your user memory", Changes: "/memo.txt"}},
		{`{"file_path":"/memories/.deepagents/x"}`, perm.Verdict{}},
		{`{"file_path":"/notes.txt"}`, perm.Verdict{}},
		{`{"file_path":"/../x"}`, perm.Verdict{}},
		{`not json`, perm.Verdict{}},
	} {
		if got := g.CheckCall(target, json.RawMessage(tc.args)); got != tc.want {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.args, got, tc.want)
		}
	}
}

// The middleware guards the files a call finally gets, mounts included: a
// memory file mounted from outside the directory waits for approval, and
// is refused to a call that was not approved.
func TestGuardMiddlewareSeesMountedFiles(t *testing.T) {
	home := t.TempDir()
	user := filepath.Join(home, ".deepagents", "AGENTS.md")
	if err := os.MkdirAll(filepath.Dir(user), 0o755); err != nil {
		t.Fatal(err)
	}
	g, err := perm.NewGuard([]perm.Zone{{Dir: home, Glob: ".deepagents/AGENTS.md", Level: perm.Ask, What: "your user memory", Report: true}},
		[]perm.Mount{{Prefix: "/memory/user/AGENTS.md", Host: user}})
	if err != nil {
		t.Fatal(err)
	}
	g.Approved = agent.Approved
	if f, err := g.CheckWrite("/memory/user/AGENTS.md"); err != nil || f.Level != perm.Ask || !f.Report || f.What != "your user memory" {
		t.Fatalf("user memory: %+v %v", f, err)
	}
	if f, _ := g.CheckWrite("/memory/user/other"); f.Level != perm.Free {
		t.Errorf("a path beside the mount: %+v", f)
	}
	// A mount of the memory file, as the memory middleware makes one.
	disk := diskFile{path: user}
	mount := agent.Middleware{Name: "mount", WrapTool: func(ctx context.Context, call *agent.ToolCall, next agent.ToolFunc) (tool.Result, error) {
		return agent.RunMounted(ctx, call, next, vfs.Route{Prefix: "/memory/user/", Backend: disk})
	}}
	write := tool.MustFunc("write", "Write a file.", func(ctx context.Context, env *tool.Env, in struct {
		Path string `json:"path"`
	}) (string, error) {
		return "wrote", env.Files.Write(ctx, in.Path, "remember this")
	})
	for _, order := range [][]agent.Middleware{{deepagents.GuardMiddleware(g), mount}, {mount, deepagents.GuardMiddleware(g)}} {
		_ = os.Remove(user)
		m := scripted.New(scripted.Script{"parent": {Steps: []scripted.Step{
			{ToolCalls: []scripted.StepCall{{ID: "c1", Name: "write", Args: json.RawMessage(`{"path":"/memory/user/AGENTS.md"}`)}}}, {Content: "done"}}}}, scripted.Options{})
		a, err := agent.New(agent.Config{Model: m, Tools: []tool.Tool{write}, Middleware: order})
		if err != nil {
			t.Fatal(err)
		}
		res, err := a.Invoke(t.Context(), agent.Prompt("go"))
		if err != nil {
			t.Fatal(err)
		}
		if out := res.State.Messages[2].Content; !strings.Contains(out, "your user memory: changing it needs a person's approval") {
			t.Errorf("%s: unapproved write answered %q", order[0].Name, out)
		}
		if _, err := os.Stat(user); err == nil {
			t.Errorf("%s: the unapproved write reached the disk", order[0].Name)
		}
	}
}

// diskFile is a backend of one file on disk, at "/AGENTS.md".
type diskFile struct{ path string }

func (d diskFile) Stat(context.Context, string) (vfs.Entry, error) {
	return vfs.Entry{}, vfs.ErrNotFound
}
func (d diskFile) Read(context.Context, string) (string, error) {
	b, err := os.ReadFile(d.path)
	return string(b), err
}
func (d diskFile) Write(_ context.Context, _, content string) error {
	return os.WriteFile(d.path, []byte(content), 0o644)
}
func (d diskFile) Delete(context.Context, string) (int, error)       { return 0, vfs.ErrPermission }
func (d diskFile) List(context.Context, string) ([]vfs.Entry, error) { return nil, nil }
func (d diskFile) Walk(context.Context, string) iter.Seq2[vfs.Entry, error] {
	return func(func(vfs.Entry, error) bool) {}
}

// A guarded directory whose protected places the suite never touches is
// a conforming backend.
func TestGuardConformance(t *testing.T) {
	vfstest.Run(t, func(t *testing.T, files map[string]string) vfs.Backend {
		dir := t.TempDir()
		for p, c := range files {
			full := filepath.Join(dir, filepath.FromSlash(p[1:]))
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		f, err := osfs.New(dir, osfs.NoSync(), osfs.NoSweep())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		g, err := perm.NewGuard(controlZones(dir), []perm.Mount{{Prefix: "/", Host: dir, Links: true}})
		if err != nil {
			t.Fatal(err)
		}
		return g.Wrap(f)
	})
}

// Zones compare names as a case-insensitive disk does, by Unicode's case
// folding rather than ASCII's: "ſ" (long s) and "K" (the Kelvin sign) name
// the same file as "s" and "k" on such a disk, so they reach the zone.
func TestGuardFoldsCaseAsADiskWould(t *testing.T) {
	dir := t.TempDir()
	g, err := perm.NewGuard([]perm.Zone{
		{Dir: "/", Glob: "**/.mcp.json", Level: perm.Ask, What: "an MCP server list"},
		{Dir: "/", Glob: "**/.deepagents/skills/**", Level: perm.Ask, What: "a skill folder"},
		{Dir: "/", Glob: "**/.git/**", Level: perm.Never, What: "git's data"},
	}, []perm.Mount{{Prefix: "/", Host: dir, Links: true}})
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{
		"/.mcp.j\u017Fon":                 "an MCP server list",
		"/.MCP.JSON":                      "an MCP server list",
		"/.deepagents/s\u212Aills/x.md":   "a skill folder",
		"/.deepagents/\u017F\u212Aills/x": "a skill folder",
		"/.GIT/config":                    "git's data",
		"/.mcp.jsonx":                     "",
	} {
		f, err := g.CheckWrite(p)
		if err != nil || f.What != want {
			t.Errorf("%s: %+v %v, want %q", p, f, err, want)
		}
	}
}

// GuardMiddleware gives a guard without an Approved function the agent's,
// so that a library user who builds a guard and mounts it this way keeps
// the approvals a person gives (a guard without one refuses every change
// to an Ask place); a function the caller set is kept.
func TestGuardMiddlewareTakesTheAgentsApprovals(t *testing.T) {
	g, err := perm.NewGuard([]perm.Zone{{Dir: "/", Glob: "**/AGENTS.md", Level: perm.Ask, What: "a memory file"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	deepagents.GuardMiddleware(g)
	if g.Approved == nil {
		t.Fatal("the guard has no way to see approvals")
	}
	if g.Approved(t.Context()) {
		t.Error("a call nobody approved counts as approved")
	}
	mine := func(context.Context) bool { return true }
	g2, _ := perm.NewGuard(nil, nil)
	g2.Approved = mine
	deepagents.GuardMiddleware(g2)
	if !g2.Approved(t.Context()) {
		t.Error("the caller's Approved function was replaced")
	}
}
