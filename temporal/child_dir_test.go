package temporal_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/checkpoint/sqlite"
	"github.com/deepagents-go/deepagents/fstools"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/runner"
	"github.com/deepagents-go/deepagents/subagent"
	"github.com/deepagents-go/deepagents/temporal"
	"github.com/deepagents-go/deepagents/tool"
	"github.com/deepagents-go/deepagents/vfs"
	"github.com/deepagents-go/deepagents/vfs/osfs"
)

// A task call whose view of its agent's directory (a directory of the
// workers) a middleware wrapped: in a composite with nothing mounted, seen
// through, the child works on the directory itself and the parent counts
// what it changed; in a composite with a route, or a layer (which does not
// say what it is over), it is refused with an error that says why, before
// anything of the directory is read for the child (no copy of it is taken
// in workflow code) and without a child workflow.
func TestSubagentOnAWrappedDirectoryIsSeenThroughOrRefused(t *testing.T) {
	for _, c := range []struct {
		name    string
		wrap    func(t *testing.T, dir vfs.Backend) vfs.Backend
		refused bool
	}{
		{"composite", func(t *testing.T, dir vfs.Backend) vfs.Backend {
			return mustComposite(t, dir)
		}, false},
		{"unlayered composite", func(t *testing.T, dir vfs.Backend) vfs.Backend {
			return mustComposite(t, dir).Unlayered()
		}, false},
		{"composite with a route", func(t *testing.T, dir vfs.Backend) vfs.Backend {
			return mustComposite(t, dir, vfs.Route{Prefix: "/notes/", Backend: vfs.NewMemory(nil)})
		}, true},
		{"layer", func(t *testing.T, dir vfs.Backend) vfs.Backend {
			return vfs.NewLayer(dir)
		}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "seed.txt"), []byte("seed"), 0o644); err != nil {
				t.Fatal(err)
			}
			reg := temporal.NewRegistry()
			store := openStore(t)
			reg.Store = store
			m := reg.Model("scripted", scripted.New(scripted.Script{
				"coder": {Steps: []scripted.Step{
					step("", tc("task", `{"description":"write","subagent_type":"general-purpose"}`)),
					step("delegated"),
				}},
				"general-purpose": {Steps: []scripted.Step{
					step("", tc("write_file", `{"file_path":"/child.txt","content":"from the child"}`)),
					step("wrote"),
				}},
			}, scripted.Options{}))
			fs, err := osfs.New(dir)
			if err != nil {
				t.Fatal(err)
			}
			tools := fstools.Tools()
			task, err := subagent.NewTask(subagent.Config{Model: m, BaseTools: tools, Subagents: []subagent.Spec{subagent.GeneralPurpose()}})
			if err != nil {
				t.Fatal(err)
			}
			wrap := agent.Middleware{Name: "wrap", WrapTool: func(ctx context.Context, call *agent.ToolCall, next agent.ToolFunc) (tool.Result, error) {
				if call.Env == nil || call.Tool != task {
					return next(ctx, call)
				}
				env := *call.Env
				env.Files = c.wrap(t, env.Files)
				wrapped := *call
				wrapped.Env = &env
				return next(ctx, &wrapped)
			}}
			a := mustAgent(t, agent.Config{Name: "coder", Model: m, Tools: append(tools, task), Backend: reg.Directory(dir, fs),
				Middleware: []agent.Middleware{wrap}})
			if err := reg.Agent("coder", a); err != nil {
				t.Fatal(err)
			}
			env := newEnv(t, reg)
			children := 0
			env.SetOnChildWorkflowStartedListener(func(*workflow.Info, workflow.Context, converter.EncodedValues) { children++ })
			env.ExecuteWorkflow(temporal.RunAgentWorkflow, temporal.RunInput{Agent: "coder", Thread: "S", Input: "delegate"})
			s := summary(t, env)
			if s.Status != agent.StatusOK || len(s.Children) != 1 {
				t.Fatalf("summary %+v", s)
			}
			b, err := os.ReadFile(filepath.Join(dir, "child.txt"))
			if !c.refused {
				if children != 1 || s.Children[0].Status != agent.StatusOK || string(b) != "from the child" || !slices.Contains(s.Changed, "/child.txt") {
					t.Errorf("%d child workflows, summary %+v, child.txt on disk %q %v", children, s, b, err)
				}
				return
			}
			if children != 0 || s.Children[0].Status != agent.StatusError || err == nil {
				t.Errorf("%d child workflows, summary %+v, child.txt on disk %q", children, s, b)
			}
			cp, err := store.Get(t.Context(), checkpoint.Ref{ThreadID: "S"})
			if err != nil {
				t.Fatal(err)
			}
			said := false
			for _, msg := range cp.State.Messages {
				said = said || strings.Contains(msg.Content, "cannot run as a child workflow: the files it sees include the directory "+dir)
			}
			if !said {
				t.Errorf("no tool result says why the subagent was refused: %s", mustJSON(t, cp.State.Messages))
			}
		})
	}
}

func mustComposite(t *testing.T, fallback vfs.Backend, routes ...vfs.Route) *vfs.Composite {
	t.Helper()
	c, err := vfs.NewComposite(fallback, routes...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A subagent on a directory of the workers that continues as new carries
// the paths its earlier runs changed there: its last run, which only runs
// a command, ends with an outcome that names the file an earlier run
// wrote, as one that never continued would.
func TestAChildOnADirectoryCarriesItsChangesAcrossContinuing(t *testing.T) {
	newCase := func(t *testing.T, dir string) *temporal.Registry {
		if err := os.WriteFile(filepath.Join(dir, "seed.txt"), []byte("seed"), 0o644); err != nil {
			t.Fatal(err)
		}
		reg := temporal.NewRegistry()
		reg.Store = openStore(t)
		reg.ContinueAfter = 1000
		m := reg.Model("scripted", scripted.New(scripted.Script{
			"coder": {Steps: []scripted.Step{
				step("", tc("task", `{"description":"copy the seed","subagent_type":"general-purpose"}`)),
				step("delegated"),
			}},
			"general-purpose": {Steps: []scripted.Step{
				step("", tc("write_file", `{"file_path":"/child.txt","content":"from the child"}`)),
				step("", tc("execute", `{"command":"cp seed.txt copy.txt"}`)),
				step("copied"),
			}},
		}, scripted.Options{}))
		fs, err := osfs.New(dir)
		if err != nil {
			t.Fatal(err)
		}
		tools := append(fstools.Tools(), fstools.Execute(fstools.ExecuteOptions{}))
		task, err := subagent.NewTask(subagent.Config{Model: m, BaseTools: tools, Subagents: []subagent.Spec{subagent.GeneralPurpose()}})
		if err != nil {
			t.Fatal(err)
		}
		a := mustAgent(t, agent.Config{Name: "coder", Model: m, Tools: append(tools, task), Backend: reg.Directory(dir, fs.WithRunner(shellIn{dir}))})
		if err := reg.Agent("coder", a); err != nil {
			t.Fatal(err)
		}
		return reg
	}
	// The parent's run, to learn its child's input.
	dir := t.TempDir()
	env := newEnv(t, newCase(t, dir))
	var starts childStarts
	env.SetOnChildWorkflowStartedListener(func(info *workflow.Info, _ workflow.Context, args converter.EncodedValues) {
		starts.listen(t, info, args)
	})
	env.ExecuteWorkflow(temporal.RunAgentWorkflow, temporal.RunInput{Agent: "coder", Thread: "S", Input: "delegate"})
	if s := summary(t, env); s.Status != agent.StatusOK || len(starts.inputs) != 1 || starts.inputs[0].Root != dir {
		t.Fatalf("summary %+v, child inputs %+v", s, starts.inputs)
	}
	in := starts.inputs[0]

	// The child alone, on a fresh directory and store, its history long.
	in.Root = t.TempDir()
	reg := newCase(t, in.Root)
	if _, err := reg.Store.(*sqlite.Saver).Acquire(t.Context(), "S", in.Holder, start, runner.DefaultLeaseTTL); err != nil {
		t.Fatal(err)
	}
	cur, continued := in, 0
	var out temporal.SubagentOutcome
	for {
		env := newEnv(t, reg)
		env.SetCurrentHistoryLength(1000)
		env.ExecuteWorkflow(temporal.RunSubagentWorkflow, cur)
		var can *workflow.ContinueAsNewError
		if err := env.GetWorkflowError(); errors.As(err, &can) {
			if err := temporal.DataConverter().FromPayloads(can.Input, &cur); err != nil {
				t.Fatal(err)
			}
			if continued++; continued > 5 {
				t.Fatal("the child never ends")
			}
			if continued == 2 && (len(cur.Done) != 1 || cur.Done[0].Path != "/child.txt" || cur.Done[0].File == nil || cur.Done[0].File.Content != "") {
				t.Errorf("after its write, the child continues with done %s, want the path alone", mustJSON(t, cur.Done))
			}
			continue
		} else if err != nil {
			t.Fatal(err)
		}
		if err := env.GetWorkflowResult(&out); err != nil {
			t.Fatal(err)
		}
		break
	}
	var paths []string
	for _, c := range out.Files {
		paths = append(paths, c.Path)
	}
	if continued < 2 || out.Result.Status != agent.StatusOK || !slices.Equal(paths, []string{"/child.txt"}) {
		t.Errorf("continued %d times; outcome %s", continued, mustJSON(t, out))
	}
	if b, err := os.ReadFile(filepath.Join(in.Root, "copy.txt")); err != nil || string(b) != "seed" {
		t.Errorf("copy.txt on disk: %q %v", b, err)
	}
}
