package temporal_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"

	deepagents "github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/fstools"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/temporal"
	"github.com/deepagents-go/deepagents/tool"
	"github.com/deepagents-go/deepagents/vfs"
	"github.com/deepagents-go/deepagents/vfs/osfs"
	"github.com/deepagents-go/deepagents/vfs/perm"
)

// searchTree writes 500 files under dir: every seventh holds the needle,
// and a secret directory holds it too.
func searchTree(t *testing.T, dir string) {
	t.Helper()
	for i := range 500 {
		body := fmt.Sprintf("file %d\n", i)
		if i%7 == 0 {
			body += fmt.Sprintf("the needle of %d\n", i)
		}
		p := filepath.Join(dir, "src", fmt.Sprintf("pkg%02d", i%25), fmt.Sprintf("f%03d.go", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "big.txt"), []byte(strings.Repeat(bigText("line", 63)+"\n", 70000)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "secret"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "secret", "key.txt"), []byte("needle hunter2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A grep or glob over a directory of the workers is one files activity,
// which searches on the worker and answers as the tool does in process,
// and so is a page of read_file, even of a file too large for one
// activity; a path the agent's rules deny never shows.
func TestASearchOfADirectoryIsOneActivity(t *testing.T) {
	dir := t.TempDir()
	searchTree(t, dir)
	rules, err := perm.ParseRules([]string{"deny read /secret/**"})
	if err != nil {
		t.Fatal(err)
	}
	calls := []struct{ id, name, args string }{
		{"g1", "grep", `{"pattern":"needle"}`},
		{"g2", "grep", `{"pattern":"needle","output_mode":"content","max_count":40}`},
		{"g3", "grep", `{"pattern":"needle","output_mode":"count","glob":"pkg0*/*.go","path":"/src"}`},
		{"g4", "grep", `{"pattern":"needle","path":"/secret"}`},
		{"l1", "glob", `{"pattern":"**/f00*.go"}`},
		{"l2", "glob", `{"pattern":"*.txt"}`},
		{"r1", "read_file", `{"file_path":"/big.txt","offset":1000,"limit":5}`},
		{"r2", "read_file", `{"file_path":"/big.txt"}`},
		{"r3", "read_file", `{"file_path":"/secret/key.txt"}`},
		{"r4", "read_file", `{"file_path":"/src/pkg00/f000.go"}`},
	}
	for _, c := range calls {
		t.Run(c.id, func(t *testing.T) {
			reg := temporal.NewRegistry()
			reg.Store = openStore(t)
			m := reg.Model("scripted", scripted.New(scripted.Script{"coder": {Steps: []scripted.Step{
				step("", scripted.StepCall{ID: c.id, Name: c.name, Args: json.RawMessage(c.args)}),
				step("found"),
			}}}, scripted.Options{}))
			fs, err := osfs.New(dir)
			if err != nil {
				t.Fatal(err)
			}
			a := mustAgent(t, agent.Config{Name: "coder", Model: m, Tools: fstools.Tools(), Backend: reg.Directory(dir, fs),
				Middleware: []agent.Middleware{deepagents.PermissionsMiddleware(rules)}})
			if err := reg.Agent("coder", a); err != nil {
				t.Fatal(err)
			}
			env := newEnv(t, reg)
			var mu sync.Mutex
			files := 0
			env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
				if info.ActivityType.Name == temporal.FilesActivity {
					mu.Lock()
					files++
					mu.Unlock()
				}
			})
			env.ExecuteWorkflow(temporal.RunAgentWorkflow, temporal.RunInput{Agent: "coder", Thread: "S", Input: "search"})
			if s := summary(t, env); s.Status != agent.StatusOK || s.Text != "found" {
				t.Fatalf("summary %+v", s)
			}
			if files != 1 {
				t.Errorf("%d files activities, want 1", files)
			}
			cp, err := reg.Store.Get(context.Background(), checkpoint.Ref{ThreadID: "S"})
			if err != nil {
				t.Fatal(err)
			}
			var got string
			for _, msg := range cp.State.Messages {
				if msg.ToolCallID == c.id {
					got = msg.Content
				}
			}
			var tl tool.Tool
			for _, x := range fstools.Tools() {
				if x.Spec().Name == c.name {
					tl = x
				}
			}
			want, err := tl.Run(context.Background(), &tool.Env{CallID: c.id, Files: vfs.Track(perm.Wrap(fs, rules))}, json.RawMessage(c.args))
			if err != nil {
				t.Fatal(err)
			}
			if got != want.Content || c.id == "r1" && !strings.Contains(got, "  1001\t") {
				t.Errorf("on Temporal:\n%.600q\nin process:\n%.600q", got, want.Content)
			}
			if strings.Contains(got, "hunter2") || strings.Contains(got, "key.txt") && !strings.Contains(c.args, "key.txt") {
				t.Errorf("a denied path shows: %.300q", got)
			}
		})
	}
}

// A grep over the root of a directory of the workers with skills and
// memory mounted below it (as the worker's middleware mount them) is one
// files activity, and answers as the same search in process.
func TestASearchOverMountsIsOneActivity(t *testing.T) {
	dir := t.TempDir()
	searchTree(t, dir)
	mounts := []vfs.Route{
		{Prefix: "/skills/", Backend: vfs.NewMemory(map[string]vfs.File{"/web/SKILL.md": {Content: "---\nname: web\n---\nthe needle of a skill\n"}}), ReadOnly: true},
		{Prefix: "/memory/", Backend: vfs.NewMemory(map[string]vfs.File{"/AGENTS.md": {Content: "a needle to remember\n"}}), ReadOnly: true},
	}
	mount := agent.Middleware{Name: "mounts", WrapTool: func(ctx context.Context, call *agent.ToolCall, next agent.ToolFunc) (tool.Result, error) {
		return agent.RunMounted(ctx, call, next, mounts...)
	}}
	for _, c := range []struct{ id, name, args string }{
		{"g1", "grep", `{"pattern":"needle"}`},
		{"g2", "grep", `{"pattern":"needle","output_mode":"content","max_count":30}`},
		{"l1", "glob", `{"pattern":"**/*.md"}`},
	} {
		t.Run(c.id, func(t *testing.T) {
			reg := temporal.NewRegistry()
			reg.Store = openStore(t)
			m := reg.Model("scripted", scripted.New(scripted.Script{"coder": {Steps: []scripted.Step{
				step("", scripted.StepCall{ID: c.id, Name: c.name, Args: json.RawMessage(c.args)}),
				step("found"),
			}}}, scripted.Options{}))
			fs, err := osfs.New(dir)
			if err != nil {
				t.Fatal(err)
			}
			a := mustAgent(t, agent.Config{Name: "coder", Model: m, Tools: fstools.Tools(), Backend: reg.Directory(dir, fs),
				Middleware: []agent.Middleware{mount}})
			if err := reg.Agent("coder", a); err != nil {
				t.Fatal(err)
			}
			env := newEnv(t, reg)
			var mu sync.Mutex
			files := 0
			env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
				if info.ActivityType.Name == temporal.FilesActivity {
					mu.Lock()
					files++
					mu.Unlock()
				}
			})
			env.ExecuteWorkflow(temporal.RunAgentWorkflow, temporal.RunInput{Agent: "coder", Thread: "S", Input: "search"})
			s := summary(t, env)
			if s.Status != agent.StatusOK || s.Text != "found" {
				t.Fatalf("summary %+v", s)
			}
			if files != 1 {
				t.Errorf("%d files activities, want 1", files)
			}
			cp, err := reg.Store.Get(context.Background(), checkpoint.Ref{ThreadID: "S"})
			if err != nil {
				t.Fatal(err)
			}
			var got string
			for _, msg := range cp.State.Messages {
				if msg.ToolCallID == c.id {
					got = msg.Content
				}
			}
			var tl tool.Tool
			for _, x := range fstools.Tools() {
				if x.Spec().Name == c.name {
					tl = x
				}
			}
			local, err := vfs.NewComposite(fs, mounts...)
			if err != nil {
				t.Fatal(err)
			}
			want, err := tl.Run(context.Background(), &tool.Env{CallID: c.id, Files: vfs.Track(local)}, json.RawMessage(c.args))
			if err != nil {
				t.Fatal(err)
			}
			if got != want.Content || !strings.Contains(got, "/skills/web/SKILL.md") || !strings.Contains(got, "/memory/AGENTS.md") {
				t.Errorf("on Temporal:\n%.800q\nin process:\n%.800q", got, want.Content)
			}
		})
	}
}
