package sqlite

import (
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/checkpoint"
)

type codedErr int

func (e codedErr) Error() string { return fmt.Sprintf("sqlite error %d", int(e)) }
func (e codedErr) Code() int     { return int(e) }

func TestUnavailableMarksStoreFailures(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{codedErr(5), true},        // SQLITE_BUSY
		{codedErr(5 | 2<<8), true}, // SQLITE_BUSY_SNAPSHOT, an extended code
		{codedErr(6), true},        // SQLITE_LOCKED
		{codedErr(13), true},       // SQLITE_FULL
		{fmt.Errorf("write: %w", syscall.ENOSPC), true},
		{codedErr(19), false}, // SQLITE_CONSTRAINT: the operation's fault
		{codedErr(1), false},
		{checkpoint.ErrNotFound, false},
		{errors.New("anything else"), false},
	} {
		got := unavailable(c.err)
		if errors.Is(got, checkpoint.ErrUnavailable) != c.want || !errors.Is(got, c.err) {
			t.Errorf("unavailable(%v) = %v; want marked %v, keeping the cause", c.err, got, c.want)
		}
	}
	if unavailable(nil) != nil {
		t.Error("nil is marked")
	}
}

// A database another process keeps locked past the busy timeout fails a
// put as unavailable, so that the run tries it again instead of failing.
func TestPutOnALockedDatabaseIsUnavailable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(path, Options{BusyTimeout: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	other, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	err = s.Put(t.Context(), checkpoint.Step{ThreadID: "T", ID: "c1", Time: time.Now()})
	if !errors.Is(err, checkpoint.ErrUnavailable) {
		t.Fatalf("put on a locked database: %v; want checkpoint.ErrUnavailable", err)
	}
	if _, err := conn.ExecContext(t.Context(), "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(t.Context(), checkpoint.Step{ThreadID: "T", ID: "c1", Time: time.Now()}); err != nil {
		t.Fatalf("the same put once the lock is gone: %v", err)
	}
}
