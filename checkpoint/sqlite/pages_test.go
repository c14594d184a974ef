package sqlite_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/checkpoint/sqlite"
)

// walFrames puts n agent steps (each followed by its tool result's write,
// as a durable round does) on a fresh database and returns the pages
// written to the write-ahead log: every commit writes each page it changed
// as one frame, so frames per round is the disk work of a round.
func walFrames(t testing.TB, n int) int64 {
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	size := func() int64 {
		fi, err := os.Stat(path + "-wal")
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	// The first put creates the thread's pages; count from the second.
	st, _ := agentStep("frames", 1, 200)
	if err := s.Put(ctx, st); err != nil {
		t.Fatal(err)
	}
	before := size()
	for i := 2; i <= n+1; i++ {
		st, _ := agentStep("frames", i, 200)
		if err := s.Put(ctx, st); err != nil {
			t.Fatal(err)
		}
		w := checkpoint.Write{CallID: st.Messages[0].ToolCalls[0].ID, Result: st.Messages[1]}
		if err := s.PutWrite(ctx, checkpoint.Ref{ThreadID: "frames", ID: st.ID}, w); err != nil {
			t.Fatal(err)
		}
	}
	// A frame is a 24-byte header and a 4 KiB page.
	return (size() - before) / (24 + 4096)
}

// A round (one put and one result write, each its own commit) changes few
// pages: the checkpoint's row (with its messages) and its two index
// entries, and the write, a content and its reference on the rounds that
// write a file, and now and then the pages of a split or of a snapshot's
// pack. The second schema (a third index on checkpoints, blobs with a
// rowid) wrote 8.36 frames per round here, the fifth (a chunk row per put,
// an index of references by content) 7.27, this one 5.90.
func TestFramesPerRound(t *testing.T) {
	const rounds = 100
	frames := walFrames(t, rounds)
	t.Logf("%d WAL frames for %d rounds (%.2f per round)", frames, rounds, float64(frames)/rounds)
	if perRound := float64(frames) / rounds; perRound > 6.2 {
		t.Errorf("%.2f WAL frames per round, want at most 6.2", perRound)
	}
}
