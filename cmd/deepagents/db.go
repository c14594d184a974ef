package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/checkpoint/postgres"
	"github.com/deepagents-go/deepagents/checkpoint/sqlite"
	"github.com/deepagents-go/deepagents/config"
)

// Timeouts of the thread database: how long opening a PostgreSQL server may
// take when its URL sets no connect_timeout, how long one of its calls may
// take, and how long an SQLite statement waits for another process's lock.
const (
	dbConnectTimeout = 10 * time.Second
	dbCallTimeout    = 30 * time.Second
	dbBusyTimeout    = 10 * time.Second
)

// usageErr marks a problem with what the user typed or configured (exit
// status 2), as opposed to a failure while running (1).
type usageErr struct{ err error }

func (e usageErr) Error() string { return e.err.Error() }
func (e usageErr) Unwrap() error { return e.err }

// chooseDatabase picks the thread database: --db, else the db key of the
// config files, else the default file (see defaultDatabase).
func chooseDatabase(flagValue string, flagSet bool, cfg *config.Config, cwd, home string) (config.Database, error) {
	if flagSet {
		d, err := config.ParseDatabase(flagValue, cwd)
		if err != nil {
			return d, usageErr{fmt.Errorf("--db: %w", err)}
		}
		return d, nil
	}
	if cfg != nil && cfg.Database != nil {
		return *cfg.Database, nil
	}
	return defaultDatabase(cwd, home)
}

// defaultDatabase is .deepagents/state.db in the project when cwd is one (it
// has a deepagents.toml or a .deepagents directory), else
// ~/.deepagents/state.db.
func defaultDatabase(cwd, home string) (config.Database, error) {
	if isProject(cwd) {
		return config.Database{Kind: config.SQLite, Path: filepath.Join(cwd, filepath.FromSlash(config.DefaultDatabaseFile))}, nil
	}
	if home == "" {
		return config.Database{}, usageErr{errors.New("no home directory for the thread database: give one with --db sqlite:PATH")}
	}
	return config.Database{Kind: config.SQLite, Path: filepath.Join(home, filepath.FromSlash(config.DefaultDatabaseFile))}, nil
}

func isProject(dir string) bool {
	if st, err := os.Stat(filepath.Join(dir, config.ProjectFile)); err == nil && st.Mode().IsRegular() {
		return true
	}
	st, err := os.Stat(filepath.Join(dir, ".deepagents"))
	return err == nil && st.IsDir()
}

// openDatabase opens the thread database. A missing SQLite file is made,
// readable by the user only, with its directory; in a git work tree the
// .deepagents directory gets a .gitignore that keeps it out of commits.
func openDatabase(ctx context.Context, d config.Database) (checkpoint.Saver, error) {
	switch d.Kind {
	case config.SQLite:
		dir := filepath.Dir(d.Path)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("thread database %s: %w", d, err)
		}
		if f, err := os.OpenFile(d.Path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600); err == nil {
			_ = f.Close() // SQLite takes an empty file as a new database
			if filepath.Base(dir) == ".deepagents" {
				ignoreDatabase(dir, filepath.Base(d.Path))
			}
		} else if !errors.Is(err, fs.ErrExist) {
			// SQLite would say only "unable to open database file".
			return nil, fmt.Errorf("thread database %s: cannot make the file: %w", d, err)
		}
		s, err := sqlite.Open(d.Path, sqlite.Options{BusyTimeout: dbBusyTimeout, Synchronous: d.Synchronous})
		if err != nil {
			return nil, fmt.Errorf("thread database %s: %w", d, err)
		}
		return s, nil
	case config.Postgres:
		// Open bounds connecting and each of its calls itself; the URL's
		// connect_timeout, when it has one, replaces dbConnectTimeout.
		s, err := postgres.Open(ctx, d.DSN, postgres.Options{ConnectTimeout: dbConnectTimeout, CallTimeout: dbCallTimeout, ServerClock: true})
		if err != nil {
			return nil, fmt.Errorf("thread database %s: %w", d, err)
		}
		return s, nil
	}
	return nil, fmt.Errorf("thread database: unknown kind %q", d.Kind)
}

// errNoDatabase says that a thread database does not exist yet: an SQLite
// file that is not there, or a PostgreSQL database without the thread
// tables.
var errNoDatabase = errors.New("the thread database does not exist yet")

// openExistingDatabase opens the thread database to read threads: as
// openDatabase does, but it makes nothing. A missing or empty SQLite file
// (an empty one is how a new database starts) or a PostgreSQL database
// without the thread tables is errNoDatabase. Any other file that is not
// a sound thread database is an error naming it, never "no threads".
func openExistingDatabase(ctx context.Context, d config.Database) (checkpoint.Saver, error) {
	switch d.Kind {
	case config.SQLite:
		fi, err := os.Stat(d.Path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errNoDatabase
		}
		if err != nil {
			return nil, fmt.Errorf("thread database %s: %w", d, err)
		}
		if fi.Mode().IsRegular() && fi.Size() == 0 {
			if wal, err := os.Stat(d.Path + "-wal"); err != nil || wal.Size() == 0 {
				return nil, errNoDatabase
			}
			// Emptied with its log still full: Open says so.
		}
		return openDatabase(ctx, d)
	case config.Postgres:
		s, err := postgres.Open(ctx, d.DSN, postgres.Options{ConnectTimeout: dbConnectTimeout, CallTimeout: dbCallTimeout, ServerClock: true, NoCreate: true})
		if errors.Is(err, postgres.ErrNoTables) {
			return nil, errNoDatabase
		}
		if err != nil {
			return nil, fmt.Errorf("thread database %s: %w", d, err)
		}
		return s, nil
	}
	return openDatabase(ctx, d)
}

// noDatabaseText says for messages why d holds no threads yet.
func noDatabaseText(d config.Database) string {
	if d.Kind == config.Postgres {
		return "the database " + d.String() + " has no thread tables yet"
	}
	if fi, err := os.Stat(d.Path); err == nil && fi.Size() == 0 {
		return "the thread database " + d.Path + " is empty"
	}
	return "there is no thread database at " + d.Path + " yet"
}

// ignoreDatabase writes dir/.gitignore for the database files when dir is
// in a git work tree and has no .gitignore, so that a project's
// conversations are not committed by accident.
func ignoreDatabase(dir, name string) {
	if _, err := os.Stat(filepath.Join(filepath.Dir(dir), ".git")); err != nil {
		return
	}
	p := filepath.Join(dir, ".gitignore")
	if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
		return
	}
	_ = os.WriteFile(p, []byte("# deepagents' thread database (conversations, files, tool results)\n"+name+"\n"+name+"-*\n"), 0o644)
}

// newThreadID makes a thread id that sorts by creation time and is safe in
// file names: "20060102-150405-" and 8 random hex digits.
func newThreadID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return time.Now().UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}
