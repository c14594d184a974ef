package postgres

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/checkpoint/checkpointtest"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/vfs"
)

// The saver must satisfy the checkpoint interface.
var _ checkpoint.Saver = (*Saver)(nil)

// TestConformance runs the checkpoint suite against the real server, each
// case in a schema of its own.
func TestConformance(t *testing.T) {
	checkpointtest.Run(t, func(t *testing.T) checkpoint.Saver { return openTest(t, Options{}) })
}

// TestConformanceFrequentSnapshots runs the suite with a snapshot every 3
// steps, so rebuilding from snapshots, snapshots after branches and pruning
// across snapshots are exercised in every case, not only in long histories.
func TestConformanceFrequentSnapshots(t *testing.T) {
	checkpointtest.Run(t, func(t *testing.T) checkpoint.Saver { return openTest(t, Options{SnapshotEvery: 3}) })
}

// TestConcurrentSamePut puts the same step from several goroutines at once:
// every put succeeds and the checkpoint is stored once.
func TestConcurrentSamePut(t *testing.T) {
	s := openTest(t, Options{})
	st := checkpoint.Step{ThreadID: "th", ID: "one", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}},
		Files: vfs.Delta{{Path: "/a", File: &vfs.File{Content: "a"}}}}
	const n = 8
	errs := make(chan error, n)
	for range n {
		go func() { errs <- s.Put(t.Context(), st) }()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Errorf("put: %v", err)
		}
	}
	stats, err := s.Stats(t.Context(), "th")
	if err != nil {
		t.Fatal(err)
	}
	if stats.Checkpoints != 1 || stats.Messages != 1 || stats.Blobs != 1 {
		t.Errorf("stats = %+v, want one checkpoint, message and blob", stats)
	}
}

// TestConcurrentCopiesOntoOneThread forks one thread onto the same new
// thread from several goroutines: one copy wins and the others are told
// the thread exists.
func TestConcurrentCopiesOntoOneThread(t *testing.T) {
	s := openTest(t, Options{})
	if err := s.Put(t.Context(), checkpoint.Step{ThreadID: "src", ID: "one"}); err != nil {
		t.Fatal(err)
	}
	const n = 6
	errs := make(chan error, n)
	for range n {
		go func() { errs <- s.CopyThread(t.Context(), checkpoint.Ref{ThreadID: "src"}, "dst") }()
	}
	won := 0
	for range n {
		err := <-errs
		switch {
		case err == nil:
			won++
		case !errors.Is(err, checkpoint.ErrThreadExists):
			t.Errorf("copy: %v, want nil or ErrThreadExists", err)
		}
	}
	if won != 1 {
		t.Errorf("%d copies succeeded, want 1", won)
	}
}

// TestConcurrentPutsPrunesCopiesAndDeletes runs puts in three namespaces of
// one thread (sharing a file content) while the thread is pruned, copied
// both ways and copies are deleted: the locks are always taken in one order,
// so nothing fails with a deadlock and every put lands.
func TestConcurrentPutsPrunesCopiesAndDeletes(t *testing.T) {
	s := openTest(t, Options{SnapshotEvery: 4})
	ctx := t.Context()
	if err := s.Put(ctx, checkpoint.Step{ThreadID: "other", ID: "o1", Files: vfs.Delta{{Path: "/shared", File: &vfs.File{Content: "same"}}}}); err != nil {
		t.Fatal(err)
	}
	step := func(ns string, i int) checkpoint.Step {
		id, prev := fmt.Sprintf("%s-%d", ns, i), ""
		if i > 0 {
			prev = fmt.Sprintf("%s-%d", ns, i-1)
		}
		return checkpoint.Step{ThreadID: "th", NS: ns, ID: id, ParentID: prev, Step: i,
			Messages: []llm.Message{{Role: llm.RoleUser, Content: id}},
			Files:    vfs.Delta{{Path: "/shared", File: &vfs.File{Content: "same"}}}}
	}
	// Each namespace's first step is in before the copies start, so that
	// copying onto "th" always finds it taken.
	for _, ns := range []string{"", "a", "b"} {
		if err := s.Put(ctx, step(ns, 0)); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for _, ns := range []string{"", "a", "b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 1; i < 20; i++ {
				if err := s.Put(ctx, step(ns, i)); err != nil {
					errs <- fmt.Errorf("put %s: %w", step(ns, i).ID, err)
					return
				}
			}
		}()
	}
	for i := range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.Prune(ctx, "th", checkpoint.PruneOptions{KeepLast: 5}); err != nil {
				errs <- fmt.Errorf("prune: %w", err)
			}
			dst := fmt.Sprint("copy", i)
			if err := s.CopyThread(ctx, checkpoint.Ref{ThreadID: "th"}, dst); err != nil && !errors.Is(err, checkpoint.ErrNotFound) {
				errs <- fmt.Errorf("copy: %w", err)
			}
			if err := s.CopyThread(ctx, checkpoint.Ref{ThreadID: "other"}, "th"); !errors.Is(err, checkpoint.ErrThreadExists) {
				errs <- fmt.Errorf("copy onto the busy thread: %v, want ErrThreadExists", err)
			}
			if err := s.DeleteThread(ctx, dst); err != nil {
				errs <- fmt.Errorf("delete: %w", err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, ns := range []string{"", "a", "b"} {
		c, err := s.Get(ctx, checkpoint.Ref{ThreadID: "th", NS: ns})
		if err != nil {
			t.Fatal(err)
		}
		if len(c.State.Messages) != 20 || c.State.Files["/shared"].Content != "same" {
			t.Errorf("namespace %q: %d messages, files %v", ns, len(c.State.Messages), c.State.Files)
		}
	}
}
