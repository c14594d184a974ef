package sqlite

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/checkpoint"
)

// With the journal, a lease joins the open transaction (one commit for a
// run's lease, work and release), a release commits at once, and a refused
// lease leaves no transaction holding the write lock.
func TestJournaledLeases(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	s := openLong(t, path)
	defer s.Close()
	other, err := Open(path, Options{CommitDelay: -1, BusyTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	now := time.Now()

	if _, err := s.Acquire(ctx, "th", "a", now, time.Minute); err != nil {
		t.Fatal(err)
	}
	if !s.open {
		t.Fatal("the lease did not join a journaled transaction")
	}
	putMsg(t, s, "c1", "", "one")
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	var le *checkpoint.LeasedError
	if _, err := other.Acquire(ctx, "th", "b", now, time.Minute); !errors.As(err, &le) || le.Holder != "a" {
		t.Fatalf("other process, thread held: %v", err)
	}
	putMsg(t, s, "c2", "c1", "two")
	if err := s.Release(ctx, "th", "a"); err != nil {
		t.Fatal(err)
	}
	if s.open {
		t.Error("release left the journaled transaction open")
	}
	// Released and committed: the other process takes the thread, and
	// sees the run's work.
	if _, err := other.Acquire(ctx, "th", "b", now, time.Minute); err != nil {
		t.Fatalf("other process after the release: %v", err)
	}
	if got := messages(t, other); got != "one,two" {
		t.Errorf("other process reads %q", got)
	}

	// Refused, with no transaction open before: none is left open, so
	// the other process can still write.
	_, err = s.Acquire(ctx, "th", "a", now, time.Minute)
	if _, ok := err.(*checkpoint.LeasedError); !ok {
		t.Fatalf("lease held by the other process: %v (%T), want *checkpoint.LeasedError", err, err)
	}
	if s.open {
		t.Error("a refused lease left a transaction open")
	}
	if _, err := other.Acquire(ctx, "th3", "b", now, time.Minute); err != nil {
		t.Errorf("other process after a refused lease: %v", err)
	}

	// Refused inside an open transaction: the transaction and its work
	// stay.
	putMsg(t, s, "d1", "", "kept")
	txn := s.txn
	if _, err := s.Acquire(ctx, "th", "a", now, time.Minute); !errors.As(err, &le) {
		t.Fatalf("second refusal: %v", err)
	}
	if !s.open || s.txn != txn {
		t.Error("a refused lease ended the open transaction")
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
}
