package sqlite_test

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/checkpoint/sqlite"
)

// pragmas reads the settings a connection of db runs with.
func pragmas(t *testing.T, db *sql.DB) map[string]any {
	t.Helper()
	got := map[string]any{}
	for _, p := range []string{"journal_mode", "synchronous", "busy_timeout", "foreign_keys", "trusted_schema", "temp_store", "page_size"} {
		var v any
		if err := db.QueryRow("PRAGMA " + p).Scan(&v); err != nil {
			t.Fatalf("PRAGMA %s: %v", p, err)
		}
		got[p] = v
	}
	return got
}

// OpenDB opens a new file in WAL mode with the settings every store of
// deepagents shares; the file table and the saver open it the same way.
func TestOpenDBSettings(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := sqlite.OpenDB(path, sqlite.DBOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	got := pragmas(t, db)
	want := map[string]any{"journal_mode": "wal", "synchronous": int64(1), "busy_timeout": int64(5000),
		"foreign_keys": int64(1), "trusted_schema": int64(0), "temp_store": int64(2), "page_size": int64(4096)}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("PRAGMA %s = %v; want %v", k, got[k], v)
		}
	}

	// The file table of the same file runs with the same settings.
	ft, err := sqlite.OpenFiles(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ft.Close()
	if fgot := pragmas(t, sqlite.FileTableDB(ft)); !equalAny(fgot, got) {
		t.Errorf("file table settings %v; want %v", fgot, got)
	}

	// Given the settings the saver runs with, the file table takes them.
	ft2, err := sqlite.OpenFilesWith(path, sqlite.DBOptions{Synchronous: "FULL", BusyTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer ft2.Close()
	if g := pragmas(t, sqlite.FileTableDB(ft2)); g["synchronous"] != int64(2) || g["busy_timeout"] != int64(2000) {
		t.Errorf("file table with FULL, 2 s: synchronous %v, busy_timeout %v", g["synchronous"], g["busy_timeout"])
	}

	if _, err := sqlite.OpenDB(filepath.Join(t.TempDir(), "x.db"), sqlite.DBOptions{Synchronous: "sometimes"}); err == nil {
		t.Error("OpenDB took synchronous=sometimes")
	}
	fdb, err := sqlite.OpenDB(filepath.Join(t.TempDir(), "full.db"), sqlite.DBOptions{Synchronous: "full", BusyTimeout: 1500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer fdb.Close()
	fdb.SetMaxOpenConns(1)
	if g := pragmas(t, fdb); g["synchronous"] != int64(2) || g["busy_timeout"] != int64(1500) {
		t.Errorf("synchronous %v, busy_timeout %v; want 2 (FULL), 1500", g["synchronous"], g["busy_timeout"])
	}
}

// A file holding a trigger is refused by OpenDB, whichever store opens it.
func TestOpenDBRefusesTriggers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := sqlite.OpenDB(path, sqlite.DBOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`CREATE TABLE t (a)`, `CREATE TRIGGER tr AFTER INSERT ON t BEGIN DELETE FROM t; END`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	if db, err := sqlite.OpenDB(path, sqlite.DBOptions{}); err == nil || !strings.Contains(err.Error(), `trigger "tr"`) {
		if db != nil {
			db.Close()
		}
		t.Errorf("OpenDB of a file with a trigger: %v; want an error naming it", err)
	}
	if ft, err := sqlite.OpenFiles(path); err == nil {
		ft.Close()
		t.Error("OpenFiles took a file with a trigger")
	}
}

func equalAny(a, b map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
