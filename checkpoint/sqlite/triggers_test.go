package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

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

// A database path that is a directory, a named pipe or a link to a device,
// and a write-ahead log or shared-memory file beside it that is not a
// regular file (a directory, a pipe, a link elsewhere), each fails Open at
// once with an error naming that file and what it is, instead of SQLite's
// "unable to open database file" or "disk I/O error"; the link's target is
// left untouched.
func TestOddFilesAreNamed(t *testing.T) {
	type layout func(t *testing.T, path string) (odd string)
	target := func(t *testing.T) string {
		p := filepath.Join(t.TempDir(), "precious")
		if err := os.WriteFile(p, []byte("precious\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	mk := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name, kind string
		make       layout
	}{
		{"database is a directory", "a directory", func(t *testing.T, p string) string { mk(os.Remove(p)); mk(os.Mkdir(p, 0o700)); return p }},
		{"database is a pipe", "a named pipe", func(t *testing.T, p string) string { mk(os.Remove(p)); mk(syscall.Mkfifo(p, 0o600)); return p }},
		{"database links to /dev/zero", "a character device", func(t *testing.T, p string) string { mk(os.Remove(p)); mk(os.Symlink("/dev/zero", p)); return p }},
		{"log is a directory", "a directory", func(t *testing.T, p string) string { mk(os.Mkdir(p+"-wal", 0o700)); return p + "-wal" }},
		{"log is a pipe", "a named pipe", func(t *testing.T, p string) string { mk(syscall.Mkfifo(p+"-wal", 0o600)); return p + "-wal" }},
		{"log links elsewhere", "a symbolic link", func(t *testing.T, p string) string { mk(os.Symlink(target(t), p+"-wal")); return p + "-wal" }},
		{"shared memory is a pipe", "a named pipe", func(t *testing.T, p string) string { mk(syscall.Mkfifo(p+"-shm", 0o600)); return p + "-shm" }},
		{"shared memory links to /dev/zero", "a symbolic link", func(t *testing.T, p string) string { mk(os.Symlink("/dev/zero", p+"-shm")); return p + "-shm" }},
		{"shared memory links elsewhere", "a symbolic link", func(t *testing.T, p string) string { mk(os.Symlink(target(t), p+"-shm")); return p + "-shm" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := threadFile(t)
			odd := c.make(t, path)
			done := make(chan error, 1)
			go func() {
				s, err := Open(path, Options{BusyTimeout: time.Second})
				if err == nil {
					s.Close()
				}
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("Open did not return within 30 s")
			}
			if err == nil || !strings.Contains(err.Error(), odd) || !strings.Contains(err.Error(), c.kind) {
				t.Errorf("error %v, want one naming %s as %s", err, odd, c.kind)
			}
			if l, lerr := os.Readlink(odd); lerr == nil && !strings.HasPrefix(l, "/dev/") {
				if b, _ := os.ReadFile(l); string(b) != "precious\n" {
					t.Errorf("the link's target changed: %q", b)
				}
			}
		})
	}
	// A database reached through a link is fine, its side files beside
	// the file it leads to.
	path := threadFile(t)
	link := filepath.Join(t.TempDir(), "linked.db")
	mk(os.Symlink(path, link))
	s, err := Open(link, Options{})
	if err != nil {
		t.Fatalf("a database through a link: %v", err)
	}
	s.Close()
}

// A record changed in the file to name far more messages than the thread
// holds (a forged or damaged database) is an error naming the file and
// saying the data is damaged; it does not make the saver allocate room for
// the messages it names (a terabyte of them crashed the process).
func TestForgedRecordIsDamageNamingTheFile(t *testing.T) {
	const forge = `UPDATE checkpoints SET record = CAST(json_set(CAST(record AS TEXT), '$.messages.to', 1099511627776) AS BLOB)
		WHERE seq = (SELECT MAX(seq) FROM checkpoints WHERE thread = 't0')`
	for _, c := range []struct {
		name  string
		stmts []string
		says  string
	}{
		{"the record", []string{forge}, "are missing"},
		// A chunk that claims the messages too (in the chunks table, or in
		// a checkpoint's row): reading it again and again made no
		// progress, for ever.
		{"the record and the chunks", []string{forge, `UPDATE msgchunks SET seq_to = 1099511627776 WHERE thread = 't0'`,
			`UPDATE checkpoints SET seq_to = 1099511627776 WHERE thread = 't0' AND msgs IS NOT NULL`}, "which it was recorded to hold"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := threadFile(t)
			plant(t, path, false, c.stmts...)
			s, err := Open(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := s.Get(ctx, checkpoint.Ref{ThreadID: "t0"})
				done <- err
			}()
			select {
			case err = <-done:
			case <-ctx.Done():
				t.Fatal("Get did not return within 30 s")
			}
			var d *damageError
			if !errors.As(err, &d) || !errors.Is(err, checkpoint.ErrDamaged) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), c.says) {
				t.Errorf("error %v (%T), want one naming %s as holding damaged data (%s)", err, err, path, c.says)
			}
		})
	}
}
