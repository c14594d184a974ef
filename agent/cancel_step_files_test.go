package agent_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/runner"
	"github.com/deepagents-go/deepagents/tool"
)

// A run cut while a step's calls run keeps the file changes of the calls
// that finished, as it keeps their results: the state it ends with holds
// what its history says was done. The call that was cut off leaves none.
func TestCutStepKeepsTheFilesOfFinishedCalls(t *testing.T) {
	for _, durable := range []bool{false, true} {
		name := "in memory"
		if durable {
			name = "durable"
		}
		t.Run(name, func(t *testing.T) {
			inBubble(t, func(t *testing.T) {
				started, returned := make(chan struct{}), make(chan struct{})
				var once sync.Once
				stuck := tool.MustFunc("stuck", "Write a file, then wait until cancelled (the first time).", func(ctx context.Context, env *tool.Env, _ struct{}) (string, error) {
					if err := env.Files.Write(ctx, "/partial.md", "half"); err != nil {
						return "", err
					}
					first := false
					once.Do(func() { first = true; close(started) })
					if !first {
						return "wrote /partial.md", nil
					}
					defer close(returned)
					<-ctx.Done()
					return "", ctx.Err()
				})
				m := scripted.New(scripted.Script{"parent": steps(
					scripted.Step{ToolCalls: []scripted.StepCall{call("stuck", `{}`), call("write", `{"path":"/done.md","content":"d"}`)}},
					scripted.Step{Content: "all done"},
				)}, scripted.Options{})
				a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{stuck, writeTool}})
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				var opts []agent.RunOption
				store := checkpoint.NewMemory(0)
				if durable {
					opts = append(opts, runner.Checkpoints(store, "T"))
				}
				res, err := agent.Drain(a.Run(ctx, agent.Prompt("go"), opts...), func(ev agent.Event) {
					if ev.Type == agent.ToolEnd && ev.Tool.Name == "write" {
						<-started
						cancel()
						// The cut call ends (with the cancellation's error)
						// before the run sees the cancellation: it must not
						// count as finished work. Wait lets every other goroutine
						// of the bubble go as far as it can, so the cut call's end
						// has reached the run before the run goes on.
						<-returned
						synctest.Wait()
					}
				})
				if !errors.Is(err, agent.ErrCancelled) || res.Status != agent.StatusCancelled {
					t.Fatalf("run: %v %v", res.Status, err)
				}
				if f, ok := res.State.Files["/done.md"]; !ok || f.Content != "d" {
					t.Errorf("files %v: the finished call's /done.md is missing", res.State.Files)
				}
				if _, ok := res.State.Files["/partial.md"]; ok {
					t.Error("the cut call's /partial.md is kept")
				}
				if !slices.Equal(res.Changed, []string{"/done.md"}) {
					t.Errorf("changed %v, want [/done.md]", res.Changed)
				}
				if !durable {
					return
				}
				// The resume ends with the files of a run never cut.
				res, err = a.Invoke(t.Context(), agent.Input{}, runner.Checkpoints(store, "T"))
				if err != nil || res.Status != agent.StatusOK || res.State.Files["/done.md"].Content != "d" || res.State.Files["/partial.md"].Content != "half" {
					t.Fatalf("resume: %v %v, files %v", res.Status, err, res.State.Files)
				}
			})
		})
	}
}
