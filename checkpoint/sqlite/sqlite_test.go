package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/checkpoint/checkpointtest"
	"github.com/deepagents-go/deepagents/checkpoint/sqlite"
	"github.com/deepagents-go/deepagents/llm"
)

func open(t testing.TB, opts sqlite.Options) *sqlite.Saver {
	t.Helper()
	s, err := sqlite.Open(filepath.Join(t.TempDir(), "state.db"), opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	checkpointtest.Run(t, func(t *testing.T) checkpoint.Saver { return open(t, sqlite.Options{}) })
}

func TestConformanceSnapshotEvery3(t *testing.T) {
	checkpointtest.Run(t, func(t *testing.T) checkpoint.Saver { return open(t, sqlite.Options{SnapshotEvery: 3}) })
}

// Two savers on one file stand for two processes: a thread one holds is
// refused to the other, and what one puts the other reads.
func TestTwoProcessesShareOneFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	a, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	if _, err := a.Acquire(ctx, "th", "pid-1", t0, time.Minute); err != nil {
		t.Fatal(err)
	}
	_, err = b.Acquire(ctx, "th", "pid-2", t0.Add(time.Second), time.Minute)
	var le *checkpoint.LeasedError
	if !errors.As(err, &le) || le.Holder != "pid-1" {
		t.Fatalf("second process: %v", err)
	}
	if err := a.Put(ctx, checkpoint.Step{ThreadID: "th", ID: "c1", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}); err != nil {
		t.Fatal(err)
	}
	// a's put is committed as it returns: b reads it at once.
	if c, err := b.Get(ctx, checkpoint.Ref{ThreadID: "th"}); err != nil || len(c.State.Messages) != 1 || c.State.Messages[0].Content != "hi" {
		t.Fatalf("other process reads %+v, %v", c, err)
	}
	// The file is in WAL mode with 4 KiB pages, for any connection.
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var mode string
	var page int
	if err := raw.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal mode = %q, %v; want wal", mode, err)
	}
	if err := raw.QueryRow(`PRAGMA page_size`).Scan(&page); err != nil || page != 4096 {
		t.Errorf("page size = %d, %v; want 4096", page, err)
	}
	// The holder died: after expiry the other process takes over.
	if _, err := b.Acquire(ctx, "th", "pid-2", t0.Add(2*time.Minute), time.Minute); err != nil {
		t.Errorf("takeover after expiry: %v", err)
	}
}

func TestOpenRefuses(t *testing.T) {
	dir := t.TempDir()
	if _, err := sqlite.Open("", sqlite.Options{}); err == nil || !strings.Contains(err.Error(), "no database path") {
		t.Errorf("empty path: %v", err)
	}
	if _, err := sqlite.Open(filepath.Join(dir, "x.db"), sqlite.Options{Synchronous: "sometimes"}); err == nil || !strings.Contains(err.Error(), "NORMAL, FULL, OFF") {
		t.Errorf("bad synchronous: %v", err)
	}
	if _, err := sqlite.Open(filepath.Join(dir, "missing", "x.db"), sqlite.Options{}); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "its directory") {
		t.Errorf("missing directory: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "missing")); err == nil {
		t.Error("opening made the missing directory")
	}
	file := filepath.Join(dir, "plain")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := sqlite.Open(filepath.Join(file, "x.db"), sqlite.Options{}); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("a file for a directory: %v", err)
	}
	// A database from a newer build is refused, not damaged.
	path := filepath.Join(dir, "newer.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`PRAGMA user_version = 99`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := sqlite.Open(path, sqlite.Options{}); err == nil || !strings.Contains(err.Error(), "schema version 99") {
		t.Errorf("newer schema: %v", err)
	}
	// Reopening migrates nothing twice and keeps the data.
	p2 := filepath.Join(dir, "again.db")
	s, err := sqlite.Open(p2, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(context.Background(), checkpoint.Step{ThreadID: "t", ID: "a"}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = sqlite.Open(p2, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Get(context.Background(), checkpoint.Ref{ThreadID: "t", ID: "a"}); err != nil {
		t.Errorf("after reopening: %v", err)
	}
}

// A saver remembers the last record it put in a namespace so the next put
// need not decode it; what another process does to the thread meanwhile
// (delete it and put different steps under the same ids, or prune it) must
// still be seen.
func TestPutSeesOtherProcessesChanges(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	a, err := sqlite.Open(path, sqlite.Options{SnapshotEvery: 6})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := sqlite.Open(path, sqlite.Options{SnapshotEvery: 6})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	thread := "th"
	put := func(s *sqlite.Saver, id, parent string, tokens int) {
		t.Helper()
		if err := s.Put(ctx, checkpoint.Step{ThreadID: thread, ID: id, ParentID: parent, Usage: llm.Usage{InputTokens: tokens},
			Messages: []llm.Message{{Role: llm.RoleUser, Content: id}}}); err != nil {
			t.Fatal(err)
		}
	}
	put(a, "c1", "", 10)
	if err := b.DeleteThread(ctx, "th"); err != nil {
		t.Fatal(err)
	}
	put(b, "c1", "", 100)
	put(a, "c2", "c1", 1)
	c, err := a.Get(ctx, checkpoint.Ref{ThreadID: "th"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Usage.InputTokens != 101 {
		t.Errorf("usage after the other process replaced c1: %d, want 101", c.Usage.InputTokens)
	}

	// On a thread a alone wrote, a knows the whole chain; b's prune turns
	// c4 into a snapshot and drops c1..c3, which a's next snapshot (c7, the
	// sixth step after c1) must not miss.
	thread = "th2"
	put(a, "c1", "", 100)
	for i := 2; i <= 5; i++ {
		put(a, fmt.Sprint("c", i), fmt.Sprint("c", i-1), 1)
	}
	if err := b.Prune(ctx, thread, checkpoint.PruneOptions{KeepLast: 2}); err != nil {
		t.Fatal(err)
	}
	put(a, "c6", "c5", 1)
	put(a, "c7", "c6", 1)
	c, err = a.Get(ctx, checkpoint.Ref{ThreadID: thread})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range c.State.Messages {
		got = append(got, m.Content)
	}
	if want := []string{"c1", "c2", "c3", "c4", "c5", "c6", "c7"}; strings.Join(got, ",") != strings.Join(want, ",") || c.Usage.InputTokens != 106 {
		t.Errorf("after a prune by the other process: messages %q, usage %d; want %q, 106", got, c.Usage.InputTokens, want)
	}
}

// A put continuing from the saver's last record skips reading the
// namespace; one whose id is already stored must still change nothing.
func TestPutAfterTipOfStoredIDChangesNothing(t *testing.T) {
	s := open(t, sqlite.Options{})
	defer s.Close()
	ctx := context.Background()
	put := func(id, parent, text string) {
		t.Helper()
		if err := s.Put(ctx, checkpoint.Step{ThreadID: "th", ID: id, ParentID: parent,
			Messages: []llm.Message{{Role: llm.RoleUser, Content: text}}}); err != nil {
			t.Fatal(err)
		}
	}
	put("x", "", "first x")
	put("y", "x", "y")
	put("x", "y", "second x") // x is stored: a no-op
	put("z", "y", "z")
	c, err := s.Get(ctx, checkpoint.Ref{ThreadID: "th", ID: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if c.ParentID != "" || len(c.State.Messages) != 1 || c.State.Messages[0].Content != "first x" {
		t.Errorf("x after a second put: parent %q, messages %+v", c.ParentID, c.State.Messages)
	}
	c, err = s.Get(ctx, checkpoint.Ref{ThreadID: "th"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range c.State.Messages {
		got = append(got, m.Content)
	}
	if c.ID != "z" || strings.Join(got, ",") != "first x,y,z" {
		t.Errorf("latest %q with messages %q, want z with first x,y,z", c.ID, got)
	}
}

// A checkpoint that is not there is named in the error as it was asked for.
func TestNotFoundNamesTheCheckpoint(t *testing.T) {
	s := open(t, sqlite.Options{})
	defer s.Close()
	ctx := context.Background()
	if err := s.Put(ctx, checkpoint.Step{ThreadID: "th", ID: "a"}); err != nil {
		t.Fatal(err)
	}
	for ref, want := range map[checkpoint.Ref]string{
		{ThreadID: "th", ID: "nope"}:         `thread "th" namespace "" checkpoint "nope"`,
		{ThreadID: "th", NS: "kid", ID: "a"}: `thread "th" namespace "kid" checkpoint "a"`,
	} {
		_, err := s.Get(ctx, ref)
		if !errors.Is(err, checkpoint.ErrNotFound) || !strings.Contains(err.Error(), want) {
			t.Errorf("get %+v: %v; want ErrNotFound saying %s", ref, err, want)
		}
	}
}

// FileDSN opens the file named, whatever its name holds ("?", "#", "%"),
// with the settings asked for, and a schema that may not run functions
// with side effects.
func TestFileDSN(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a?b#c%20d.db")
	db, err := sql.Open("sqlite", sqlite.FileDSN(path, 1500*time.Millisecond, "FULL"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	var busy, sync, trusted int
	for q, v := range map[string]*int{"PRAGMA busy_timeout": &busy, "PRAGMA synchronous": &sync, "PRAGMA trusted_schema": &trusted} {
		if err := db.QueryRow(q).Scan(v); err != nil {
			t.Fatal(err)
		}
	}
	if busy != 1500 || sync != 2 || trusted != 0 {
		t.Errorf("busy_timeout %d, synchronous %d, trusted_schema %d; want 1500, 2 (FULL), 0", busy, sync, trusted)
	}
	if _, err := db.Exec(`CREATE TABLE t (a)`); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("the file named was not made: %v", err)
	}
}
