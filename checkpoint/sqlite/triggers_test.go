package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm"
)

// plant runs stmts on the database at path with a plain connection, as
// anything that can write the file could; keep leaves the connection open
// (its write-ahead log not folded into the file) until the test ends.
func plant(t *testing.T, path string, keep bool, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=wal_autocheckpoint(0)")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if keep {
		t.Cleanup(func() { db.Close() })
		return
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// copyFile copies a file, as an attacker would place it.
func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// SQL kept in the database file never runs: a trigger (or a view) planted
// in the thread database, in the file itself or in a write-ahead log put
// beside an idle database, makes Open fail naming the file and the trigger,
// before any write could fire it; once dropped, the database opens.
func TestPlantedTriggerIsRefused(t *testing.T) {
	ctx := context.Background()
	const pwn = `CREATE TABLE pwn (x);
		CREATE TRIGGER t_pwn AFTER INSERT ON checkpoints BEGIN INSERT INTO pwn VALUES (new.thread); END`
	step := checkpoint.Step{ThreadID: "t9", ID: "c1", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}
	fired := func(path string) int {
		db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var n int
		if err := db.QueryRow(`SELECT COUNT(*) FROM pwn`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	check := func(t *testing.T, path, what string) {
		t.Helper()
		s, err := Open(path, Options{})
		if err == nil {
			s.Put(ctx, step)
			s.Close()
			t.Fatalf("opened a database with a planted trigger; it fired %d times", fired(path))
		}
		var d *damageError
		if !errors.As(err, &d) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), what) {
			t.Errorf("error %v (%T), want one naming %s and %s", err, err, path, what)
		}
	}

	t.Run("in the file", func(t *testing.T) {
		path := threadFile(t)
		plant(t, path, false, pwn, `CREATE VIEW v_pwn AS SELECT 1`)
		check(t, path, `trigger "t_pwn", view "v_pwn"`)
		plant(t, path, false, `DROP TRIGGER t_pwn`, `DROP VIEW v_pwn`)
		s, err := Open(path, Options{})
		if err != nil {
			t.Fatalf("the database with the trigger dropped: %v", err)
		}
		if err := s.Put(ctx, step); err != nil {
			t.Fatal(err)
		}
		s.Close()
		if n := fired(path); n != 0 {
			t.Errorf("the trigger fired %d times", n)
		}
	})

	t.Run("in a forged write-ahead log", func(t *testing.T) {
		path := threadFile(t)
		other := path + ".copy"
		copyFile(t, path, other)
		plant(t, other, true, pwn)
		if st, err := os.Stat(other + "-wal"); err != nil || st.Size() == 0 {
			t.Fatalf("no log to forge: %v", err)
		}
		copyFile(t, other+"-wal", path+"-wal")
		check(t, path, `trigger "t_pwn"`)
	})
}
