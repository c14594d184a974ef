package postgres

import (
	"errors"
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
