package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm"
)

// threadFile writes a closed database of a few threads with enough
// messages to span many pages, and returns its path.
func threadFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 60 {
		parent := ""
		if i >= 3 {
			parent = fmt.Sprint("c", i-3)
		}
		if err := s.Put(ctx, checkpoint.Step{ThreadID: fmt.Sprint("t", i%3), ID: fmt.Sprint("c", i), ParentID: parent,
			Messages: []llm.Message{{Role: llm.RoleUser, Content: fmt.Sprint(i, strings.Repeat(" words", 300))}}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + "-wal"); err == nil {
		t.Fatal("the closed database left its write-ahead log")
	}
	return path
}

// A database file cut short, with a garbage header, or not SQLite at all
// fails to open with an error naming it and saying it is damaged; the file
// is left as it was (no new schema over it).
func TestDamagedFileIsAnErrorNamingIt(t *testing.T) {
	good, err := os.ReadFile(threadFile(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		data []byte
	}{
		{"cut to half", good[:len(good)/2]},
		{"cut to 100 bytes", good[:100]},
		{"cut to 1 page", good[:4096]},
		{"header overwritten", append([]byte("garbage garbage garbage garbage!"), good[32:]...)},
		{"not SQLite", []byte("a plain text file, not a database\n")},
		{"zeros", make([]byte, 8192)},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.db")
			if err := os.WriteFile(path, c.data, 0o600); err != nil {
				t.Fatal(err)
			}
			s, err := Open(path, Options{})
			if err == nil {
				s.Close()
				t.Fatal("opened")
			}
			var d *damageError
			if !errors.As(err, &d) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "damaged") {
				t.Errorf("error %v (%T), want one naming %s as damaged", err, err, path)
			}
			if after, err := os.ReadFile(path); err != nil || !bytes.Equal(after, c.data) {
				t.Errorf("the failed open changed the file (%v)", err)
			}
		})
	}
}

// An empty file is a new database (deepagents makes one so before SQLite
// writes the schema); but an empty file whose write-ahead log holds pages
// was cut short, and is refused with the log kept (SQLite would take the
// file for a new database and delete the log).
func TestEmptyFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "new.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s := openT(t, path)
	putMsg(t, s, "c1", "", "one")
	// A crash leaves the log beside the file; the file is then emptied.
	src := filepath.Join(dir, "crashed.db")
	w, err := sql.Open("sqlite", "file:"+src+"?_pragma=journal_mode(WAL)&_pragma=wal_autocheckpoint(0)")
	if err != nil {
		t.Fatal(err)
	}
	w.SetMaxOpenConns(1)
	if _, err := w.Exec(`CREATE TABLE t (a); INSERT INTO t VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	wal, err := os.ReadFile(src + "-wal")
	w.Close()
	if err != nil || len(wal) == 0 {
		t.Fatalf("no log to copy: %v", err)
	}
	cut := filepath.Join(dir, "cut.db")
	if err := os.WriteFile(cut, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cut+"-wal", wal, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Open(cut, Options{})
	if err == nil || !strings.Contains(err.Error(), cut+"-wal") || !strings.Contains(err.Error(), "cut short") {
		t.Errorf("an emptied file with its log: %v", err)
	}
	if after, err := os.ReadFile(cut + "-wal"); err != nil || !bytes.Equal(after, wal) {
		t.Errorf("the log was not kept as it was (%v)", err)
	}
}

// A database whose thread tables were changed by something else (one
// dropped; the schema version reset while the tables stay) is refused,
// naming the file, instead of failing query by query or getting new
// tables over the old.
func TestChangedSchemaIsAnError(t *testing.T) {
	for _, c := range []struct{ name, change, want string }{
		{"a table dropped", `DROP TABLE msgchunks`, "lacks the thread tables msgchunks"},
		{"version reset", `PRAGMA user_version = 0`, "has the thread tables but no schema version"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := threadFile(t)
			db, err := sql.Open("sqlite", path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec(c.change); err != nil {
				t.Fatal(err)
			}
			db.Close()
			s, err := Open(path, Options{})
			if err == nil {
				s.Close()
				t.Fatal("opened")
			}
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one naming %s and saying %q", err, path, c.want)
			}
		})
	}
}

// Damage SQLite finds only when it reads the pages (the header and schema
// intact: Open does not read the whole file) is an error naming the file
// on every read, never an empty answer.
func TestDamageFoundLaterNamesTheFile(t *testing.T) {
	path := threadFile(t)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Zero every page after the first two.
	clear(data[2*4096:])
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	s := openT(t, path)
	ctx := context.Background()
	_, err = s.Threads(ctx, checkpoint.ThreadsOptions{})
	var d *damageError
	if !errors.As(err, &d) || !strings.Contains(err.Error(), path) {
		t.Errorf("listing threads: %v, want an error naming %s as damaged", err, path)
	}
	_, err = s.Get(ctx, checkpoint.Ref{ThreadID: "t1"})
	if !errors.As(err, &d) || !strings.Contains(err.Error(), path) {
		t.Errorf("reading a thread: %v, want an error naming %s as damaged", err, path)
	}
}
