package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// DBOptions say how OpenDB opens a file. The zero value is what every
// store of deepagents uses unless told otherwise.
type DBOptions struct {
	// BusyTimeout is how long a statement waits for another connection's
	// lock (5 s when 0).
	BusyTimeout time.Duration
	// Synchronous is SQLite's synchronous setting: "NORMAL" (when ""),
	// "FULL" or "OFF" (see Options.Synchronous).
	Synchronous string
	// ReadOnly opens a pool of readers (query_only) beside a writer OpenDB
	// opened on the same file: it sets nothing up in the file.
	ReadOnly bool
	// ManualCheckpoints turns off SQLite's own checkpoints of the WAL
	// (wal_autocheckpoint 0), for a writer whose WAL another connection
	// checkpoints in the background (the server's event store).
	ManualCheckpoints bool
}

// OpenDB opens the SQLite file at path (creating it when missing) the one
// way deepagents opens its databases: the thread saver, the server's event
// store and the file table all go through it, so they share one file with
// the same settings. The file is in WAL mode with 4 KiB pages; every
// connection waits BusyTimeout for another's lock, commits as Synchronous
// says, enforces foreign keys, keeps temporary tables in memory and does not
// trust the schema to run functions with side effects; transactions of a
// writer begin IMMEDIATE, so two writers never deadlock upgrading their
// locks. A
// file holding triggers or views is refused (see RefuseTriggers). Each store
// creates and migrates its own tables.
func OpenDB(path string, o DBOptions) (*sql.DB, error) {
	busy := o.BusyTimeout
	if busy <= 0 {
		busy = 5 * time.Second
	}
	syncMode, err := synchronous(o.Synchronous)
	if err != nil {
		return nil, err
	}
	dsn := FileDSN(path, busy, syncMode) + "&_pragma=foreign_keys(1)"
	if o.ReadOnly {
		dsn += "&_pragma=query_only(1)"
	} else {
		dsn += "&_txlock=immediate"
	}
	if o.ManualCheckpoints {
		dsn += "&_pragma=wal_autocheckpoint(0)"
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	if o.ReadOnly {
		return db, nil
	}
	// 4 KiB pages: every commit writes each page it changed to the WAL, so
	// smaller pages make a put cheaper. The page size only takes effect on
	// a new file, so it is set before WAL mode (which is then stored in the
	// file for every connection).
	for _, p := range []string{"PRAGMA page_size = 4096", "PRAGMA journal_mode = WAL"} {
		if err := execPatiently(db, p, busy); err != nil {
			db.Close()
			return nil, err
		}
	}
	if err := RefuseTriggers(context.Background(), db, path); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// synchronous checks a synchronous setting and spells it as SQLite does.
func synchronous(s string) (string, error) {
	switch m := strings.ToUpper(s); m {
	case "":
		return "NORMAL", nil
	case "FULL", "NORMAL", "OFF":
		return m, nil
	}
	return "", fmt.Errorf("sqlite: synchronous %q is not one of NORMAL, FULL, OFF", s)
}
