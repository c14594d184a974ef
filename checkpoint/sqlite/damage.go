package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/internal/safefile"
)

// journalSuffix names the journals of earlier releases: the database's
// path, this, and 16 hex digits (a name ending in ".new" while one was
// being made).
const journalSuffix = "-oplog-"

// refuseJournals fails when a file named like an earlier release's journal
// lies beside the database at path. Those releases kept each put in such a
// file until it was committed and, on opening the database, ran the SQL
// the file held; so whoever could write a file beside the database (an
// agent's write_file, a command it ran) could make them run SQL of its
// choosing. This release never opens such a file: it only lists the
// directory's names, and will not open the database beside one, since
// the file may hold steps a crash of that release did not commit.
func refuseJournals(path string) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	d, err := os.Open(dir)
	if err != nil {
		return nil // Open then fails on the directory, saying why
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	var found []string
	for _, n := range names {
		if strings.HasPrefix(n, base+journalSuffix) {
			found = append(found, n)
		}
	}
	if len(found) == 0 {
		return nil
	}
	slices.Sort(found)
	more := ""
	if len(found) > 1 {
		more = fmt.Sprintf(" (and %d more such files: %s)", len(found)-1, strings.Join(found[1:], ", "))
	}
	return fmt.Errorf("the database %s has beside it %s%s, a journal file of an earlier deepagents release: left by a crash of that release, or written there by something else. This release never reads such files, and does not open the database while one is there: delete it to open the database. It holds at most the last steps before that crash (about 20 ms of work), and resuming their thread does them again",
		path, filepath.Join(dir, found[0]), more)
}

// checkNotEmptied fails when the database file is empty but its
// write-ahead log is not: the file was cut short, and SQLite would take it
// for a new database and throw the log away with what it holds.
func checkNotEmptied(path string) error {
	fi, err := os.Stat(path)
	if err != nil || fi.Size() > 0 {
		return nil
	}
	wal := path + "-wal"
	wi, err := os.Stat(wal)
	if err != nil || wi.Size() == 0 {
		return nil
	}
	return &damageError{path: path, why: fmt.Sprintf("is empty, but its write-ahead log %s holds %d bytes: the file was cut short", wal, wi.Size())}
}

// SQLite's primary result codes of a file that is not a sound database.
const (
	sqliteCorrupt = 11 // SQLITE_CORRUPT: the database disk image is malformed
	sqliteNotADB  = 26 // SQLITE_NOTADB: the file is not a database
)

// damageError says that the database file is damaged or is not a thread
// database, naming the file: it is never taken for an empty database.
type damageError struct {
	path, why string
	err       error // SQLite's error, when it said so
}

func (e *damageError) Error() string {
	return fmt.Sprintf("the database %s %s; restore it from a backup, or move it aside (with any %s-wal and %s-shm beside it) to start a new one", e.path, e.why, filepath.Base(e.path), filepath.Base(e.path))
}

func (e *damageError) Unwrap() error { return e.err }

// damaged returns err marked as a damageError when SQLite found the file
// damaged or not a database; other errors come back as they are.
func (s *Saver) damaged(err error) error {
	var d *damageError
	if err == nil || errors.As(err, &d) {
		return err
	}
	switch sqliteCode(err) {
	case sqliteCorrupt, sqliteNotADB:
		return &damageError{path: s.path, why: fmt.Sprintf("is damaged or is not an SQLite database (%v)", err), err: err}
	}
	if errors.Is(err, checkpoint.ErrDamaged) {
		// Rows SQLite reads fine, but that no saver writes: changed by
		// something else.
		return &damageError{path: s.path, why: fmt.Sprintf("holds damaged thread data (%v)", err), err: err}
	}
	return err
}

// checkTables fails, naming the file, when a table of the schema is
// missing: a damaged database, or one changed by something else, whose
// queries would otherwise fail one by one.
func (s *Saver) checkTables(ctx context.Context) error {
	rows, err := s.w.QueryContext(ctx, `SELECT name FROM sqlite_schema WHERE type = 'table'`)
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return err
		}
		have[n] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	var missing []string
	for _, t := range tables {
		if !have[t] {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		return &damageError{path: s.path, why: fmt.Sprintf("lacks the thread tables %s: it was changed by something other than deepagents", strings.Join(missing, ", "))}
	}
	return nil
}

// maxForeignNames caps the names a refusal of foreign schema objects lists.
const maxForeignNames = 5

// RefuseTriggers fails, naming the file at path, when the database's schema
// holds a trigger or a view. deepagents makes neither; a trigger is SQL the
// database file carries that SQLite runs on every write the program makes
// (trusted_schema off limits the functions it may call, not the rows it
// may change), so whoever could write the file once would act on every
// later write. db is an open connection pool to that file.
func RefuseTriggers(ctx context.Context, db *sql.DB, path string) error {
	rows, err := db.QueryContext(ctx, `SELECT type, name FROM sqlite_schema WHERE type IN ('trigger', 'view') ORDER BY type, name`)
	if err != nil {
		return err
	}
	defer rows.Close()
	var found []string
	n := 0
	for rows.Next() {
		var typ, name string
		if err := rows.Scan(&typ, &name); err != nil {
			return err
		}
		if n++; n <= maxForeignNames {
			found = append(found, fmt.Sprintf("%s %q", typ, name))
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	if n > maxForeignNames {
		found = append(found, fmt.Sprintf("and %d more", n-maxForeignNames))
	}
	return &damageError{path: path, why: fmt.Sprintf("holds %s, which deepagents never makes: something else changed the file, "+
		"and SQL kept in it would run on every write; deepagents does not open it until they are removed (sqlite3 %s 'DROP TRIGGER name' or 'DROP VIEW name' for each) or the file is replaced",
		strings.Join(found, ", "), path)}
}

// checkFiles fails, naming the file, when the database at path is not a
// regular file (it may be a symbolic link to one), or when its write-ahead
// log or shared-memory file is there but is not a regular file: SQLite
// would say only "unable to open database file" or "disk I/O error", or
// wait forever on a named pipe.
func checkFiles(path string) error {
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return &damageError{path: path, why: "is " + safefile.Kind(fi.Mode()) + ", not a database file"}
	}
	// SQLite keeps the side files beside the file a link leads to.
	real := path
	if r, err := filepath.EvalSymlinks(path); err == nil {
		real = r
	}
	for _, side := range []string{"-wal", "-shm"} {
		p := real + side
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode().IsRegular() {
			continue
		}
		return &sideFileError{path: path, side: p, kind: safefile.Kind(fi.Mode())}
	}
	return nil
}

// sideFileError is a write-ahead log or shared-memory file beside the
// database that SQLite did not make.
type sideFileError struct{ path, side, kind string }

func (e *sideFileError) Error() string {
	return fmt.Sprintf("the database %s has beside it %s, which is %s, not a file SQLite made; deepagents does not open the database with it there: move it aside (no thread data is in it)", e.path, e.side, e.kind)
}
