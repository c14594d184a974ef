package sqlite

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/deepagents-go/deepagents/checkpoint"
)

// SQLite's primary result codes of failures that say nothing of the
// operation itself, only that the database could not take it now.
const (
	sqliteBusy   = 5  // SQLITE_BUSY: a lock wait that timed out
	sqliteLocked = 6  // SQLITE_LOCKED: a conflict within one connection's shared cache
	sqliteFull   = 13 // SQLITE_FULL: the disk is full
)

// isBusy says whether err is SQLite's "database is locked" (the busy
// timeout ran out waiting for another connection).
func isBusy(err error) bool { return sqliteCode(err) == sqliteBusy }

// sqliteCode is the primary result code of an SQLite error (0 for other
// errors).
func sqliteCode(err error) int {
	var e interface{ Code() int }
	if err == nil || !errors.As(err, &e) {
		return 0
	}
	return e.Code() & 0xff
}

// unavailable marks err with checkpoint.ErrUnavailable when the store, not
// the operation, failed: the database stayed locked by another process
// past the busy timeout, or the disk is full. The caller may try the same
// operation again later.
func unavailable(err error) error {
	if err == nil || errors.Is(err, checkpoint.ErrUnavailable) {
		return err
	}
	switch sqliteCode(err) {
	case sqliteBusy, sqliteLocked, sqliteFull:
		return fmt.Errorf("%w: %w", checkpoint.ErrUnavailable, err)
	}
	if errors.Is(err, syscall.ENOSPC) {
		return fmt.Errorf("%w: %w", checkpoint.ErrUnavailable, err)
	}
	return err
}
