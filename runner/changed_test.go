package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/checkpoint/sqlite"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/runner"
	"github.com/deepagents-go/deepagents/tool"
	"github.com/deepagents-go/deepagents/vfs/osfs"
)

// longRun runs, on an OS directory and saved in saver under thread "long",
// a run of n steps that each write one file, and returns its state as read
// back.
func longRun(tb testing.TB, saver checkpoint.Saver, n int) *agent.RunState {
	tb.Helper()
	ctx := context.Background()
	ss := make([]scripted.Step, 0, n+1)
	for i := range n {
		ss = append(ss, scripted.Step{ToolCalls: []scripted.StepCall{{ID: fmt.Sprintf("w%d", i), Name: "write",
			Args: json.RawMessage(fmt.Sprintf(`{"path":"/f%04d.md","content":"step %d"}`, i, i))}}})
	}
	ss = append(ss, scripted.Step{Content: "done"})
	m := scripted.New(scripted.Script{"parent": steps(ss...)}, scripted.Options{})
	a, err := agent.New(agent.Config{Model: m, Tools: []tool.Tool{writeTool}, MaxSteps: n + 1})
	if err != nil {
		tb.Fatal(err)
	}
	fs, err := osfs.New(tb.TempDir(), osfs.NoSweep(), osfs.NoSync())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { fs.Close() })
	in := agent.Prompt("go")
	in.Backend = fs
	if res, err := a.Invoke(ctx, in, runner.Checkpoints(saver, "long")); err != nil || res.Status != agent.StatusOK {
		tb.Fatalf("the long run: %v", err)
	}
	rs, err := runner.LoadRunState(ctx, saver, "long", agent.RootPath("parent"), false)
	if err != nil {
		tb.Fatal(err)
	}
	return rs
}

func openSQLite(tb testing.TB) *sqlite.Saver {
	tb.Helper()
	s, err := sqlite.Open(filepath.Join(tb.TempDir(), "cp.db"), sqlite.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// BenchmarkChangedByFinishedSteps reads back the paths a run of 100 and of
// 400 steps changed: the cost should grow with the number of steps, not
// with its square.
func BenchmarkChangedByFinishedSteps(b *testing.B) {
	for _, kind := range []string{"memory", "sqlite"} {
		for _, n := range []int{100, 400} {
			b.Run(fmt.Sprintf("%s/steps=%d", kind, n), func(b *testing.B) {
				var saver checkpoint.Saver = checkpoint.NewMemory(0)
				if kind == "sqlite" {
					saver = openSQLite(b)
				}
				rs := longRun(b, saver, n)
				ctx := context.Background()
				for b.Loop() {
					got, err := runner.ChangedByFinishedSteps(ctx, saver, rs)
					if err != nil || len(got) != n {
						b.Fatalf("%d paths, %v", len(got), err)
					}
				}
			})
		}
	}
}

// getCounter counts the checkpoints read whole (Get) from the saver it
// wraps; it hides any other method of that saver.
type getCounter struct {
	checkpoint.Saver
	gets atomic.Int32
}

func (c *getCounter) Get(ctx context.Context, ref checkpoint.Ref) (*checkpoint.Checkpoint, error) {
	c.gets.Add(1)
	return c.Saver.Get(ctx, ref)
}

// pendingCounter is a getCounter that passes PendingWrites on, or says it
// is unsupported when unsupported is set.
type pendingCounter struct {
	*getCounter
	unsupported bool
}

func (c pendingCounter) PendingWrites(ctx context.Context, thread, ns string) (map[string][]checkpoint.Write, error) {
	if c.unsupported {
		return nil, fmt.Errorf("wrapped: %w", errors.ErrUnsupported)
	}
	return c.Saver.(checkpoint.PendingReader).PendingWrites(ctx, thread, ns)
}

// TestChangedByFinishedStepsReadsOnlyWrites: with a saver that reads a
// namespace's pending writes alone (checkpoint.PendingReader), the paths a
// run's finished steps changed are read without reading any checkpoint
// whole, and they are the ones read checkpoint by checkpoint with Get (a
// saver without it, or one that says it is unsupported).
func TestChangedByFinishedStepsReadsOnlyWrites(t *testing.T) {
	const n = 30
	for _, kind := range []string{"memory", "sqlite"} {
		t.Run(kind, func(t *testing.T) {
			ctx := t.Context()
			var saver checkpoint.Saver = checkpoint.NewMemory(0)
			if kind == "sqlite" {
				saver = openSQLite(t)
			}
			rs := longRun(t, saver, n)
			var want []string
			for i := range n {
				want = append(want, fmt.Sprintf("/f%04d.md", i))
			}
			whole := &getCounter{Saver: saver}
			got, err := runner.ChangedByFinishedSteps(ctx, whole, rs)
			if err != nil || !slices.Equal(got, want) || whole.gets.Load() < n {
				t.Fatalf("read with Get: %v, %v (%d checkpoints read)", got, err, whole.gets.Load())
			}
			unsupported := pendingCounter{getCounter: &getCounter{Saver: saver}, unsupported: true}
			got, err = runner.ChangedByFinishedSteps(ctx, unsupported, rs)
			if err != nil || !slices.Equal(got, want) || unsupported.gets.Load() < n {
				t.Fatalf("read past an unsupported PendingWrites: %v, %v (%d checkpoints read)", got, err, unsupported.gets.Load())
			}
			writes := pendingCounter{getCounter: &getCounter{Saver: saver}}
			got, err = runner.ChangedByFinishedSteps(ctx, writes, rs)
			if err != nil || !slices.Equal(got, want) || writes.gets.Load() != 0 {
				t.Fatalf("read with PendingWrites: %v, %v (%d checkpoints read whole)", got, err, writes.gets.Load())
			}
		})
	}
}

// TestChangedByFinishedStepsGrowsLinearly: reading back what the finished
// steps of a run of 400 steps changed costs about four times what it costs
// for 100 steps, not sixteen: counted in allocations, which, unlike time,
// do not depend on the machine. (Reading each step's checkpoint whole cost
// 13.8 times as much.)
func TestChangedByFinishedStepsGrowsLinearly(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 500 steps")
	}
	allocs := map[int]float64{}
	for _, n := range []int{100, 400} {
		saver := checkpoint.NewMemory(0)
		rs := longRun(t, saver, n)
		allocs[n] = testing.AllocsPerRun(3, func() {
			if got, err := runner.ChangedByFinishedSteps(t.Context(), saver, rs); err != nil || len(got) != n {
				t.Fatalf("%d paths, %v", len(got), err)
			}
		})
	}
	if ratio := allocs[400] / allocs[100]; ratio > 5 {
		t.Errorf("400 steps cost %.0f allocations, 100 steps %.0f: %.1f times as many, want at most 5", allocs[400], allocs[100], ratio)
	}
}
