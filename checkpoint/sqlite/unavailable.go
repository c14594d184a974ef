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
	sqliteLocked = 6  // SQLITE_LOCKED: a conflict within one connection's shared cache
	sqliteFull   = 13 // SQLITE_FULL: the disk is full
)

// unavailable marks err with checkpoint.ErrUnavailable when the store, not
// the operation, failed: the database stayed locked by another process
// past the busy timeout, or the disk is full (for the database or the
// journal). The caller may try the same operation again later.
func unavailable(err error) error {
	if err == nil || errors.Is(err, checkpoint.ErrUnavailable) {
		return err
	}
	var e interface{ Code() int }
	if errors.As(err, &e) {
		switch e.Code() & 0xff {
		case sqliteBusy, sqliteLocked, sqliteFull:
			return fmt.Errorf("%w: %w", checkpoint.ErrUnavailable, err)
		}
	}
	if errors.Is(err, syscall.ENOSPC) {
		return fmt.Errorf("%w: %w", checkpoint.ErrUnavailable, err)
	}
	return err
}
