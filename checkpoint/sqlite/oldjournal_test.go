package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/internal/testkit"
	"github.com/deepagents-go/deepagents/llm"
)

// forgeOldJournal writes, beside the database at dbPath, an old-format
// journal holding sqlText (testkit.OldJournal) and returns its path.
func forgeOldJournal(t testing.TB, dbPath, sqlText string) string {
	t.Helper()
	path := dbPath + testkit.OldJournalSuffix
	if err := os.WriteFile(path, testkit.OldJournal(sqlText, false), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// A journal forged beside the thread database (as an agent's write_file
// or a sandboxed command could plant it) is never run: opening the
// database fails, naming the file, before the file is read; no database is
// attached and no row changes.
func TestForgedJournalIsNeverRun(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(context.Background(), checkpoint.Step{ThreadID: "th", ID: "c1",
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "hello"}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	pwned := filepath.Join(dir, "pwned.db")
	journal := forgeOldJournal(t, path, testkit.AttackSQL(pwned))

	s, err = Open(path, Options{})
	if err == nil {
		s.Close()
		t.Error("the database opened with a forged journal beside it")
	} else if !strings.Contains(err.Error(), journal) || !strings.Contains(err.Error(), "delete") {
		t.Errorf("the error does not name the journal and say how to recover: %v", err)
	}
	if _, err := os.Stat(pwned); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the forged journal's ATTACH made %s (%v)", pwned, err)
	}
	if n := testkit.CheckpointRows(t, path); n != 1 {
		t.Errorf("%d checkpoints after the open, want the 1 stored before", n)
	}
}

// copyDir copies the files of dir (testdata) into a new temporary one.
func copyDir(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, e.Name()), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// testdata/journal_v1 is what the first release with a journal left when
// it was killed: a database of schema 4 (with table oplog) and a journal
// of two puts and a write, none committed. Opening it fails, naming the
// journal and how to recover, and changes nothing; once the journal is
// deleted the database opens, migrated: table oplog is gone, and the
// steps the journal held are lost (a resume does them again). A journal
// cut off while being made (its name ends in ".new") is refused too.
func TestEarlierReleasesJournalIsRefused(t *testing.T) {
	dir := copyDir(t, filepath.Join("testdata", "journal_v1"))
	path := filepath.Join(dir, "state.db")
	journal := path + "-oplog-7d3912f3dd4edb08"
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(path, Options{})
	if err == nil {
		t.Fatal("opened beside an earlier release's journal")
	}
	for _, want := range []string{journal, "earlier deepagents release", "delete it to open the database", "resuming their thread does them again"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error lacks %q: %v", want, err)
		}
	}
	if after, err := os.ReadFile(path); err != nil || string(after) != string(before) {
		t.Errorf("the refused open changed the database (%v)", err)
	}
	var v int
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`PRAGMA user_version`).Scan(&v); err != nil || v != 4 {
		t.Errorf("the fixture's schema: %d %v, want 4", v, err)
	}
	db.Close()

	if err := os.Rename(journal, path+"-oplog-7d3912f3dd4edb08.new"); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path, Options{}); err == nil || !strings.Contains(err.Error(), "-oplog-7d3912f3dd4edb08.new") {
		t.Errorf("a journal being made: %v", err)
	}
	if err := os.Remove(path + "-oplog-7d3912f3dd4edb08.new"); err != nil {
		t.Fatal(err)
	}
	s := openT(t, path)
	if err := s.r.QueryRow(`PRAGMA user_version`).Scan(&v); err != nil || v != SchemaVersion {
		t.Errorf("schema %d %v, want %d", v, err, SchemaVersion)
	}
	var n int
	if err := s.r.QueryRow(`SELECT COUNT(*) FROM sqlite_schema WHERE name = 'oplog'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("table oplog is still there (%d, %v)", n, err)
	}
	if _, err := s.Get(context.Background(), checkpoint.Ref{ThreadID: "th"}); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("the uncommitted steps of the deleted journal: %v, want not found", err)
	}
	putMsg(t, s, "c1", "", "again")
	if got := messages(t, s); got != "again" {
		t.Errorf("after a new put: %q", got)
	}
}
