// Package postgres is a checkpoint saver on PostgreSQL, for deployments
// where several processes or machines share threads. It stores the shared
// record format of package checkpoint, as the embedded SQLite saver does:
// each step's record and its new messages appended, a snapshot by reference
// every Options.SnapshotEvery steps, file contents stored once per content
// hash, and leases that let one run at a time hold a thread while an
// expired lease can be taken over.
package postgres

import (
	"context"
	"sync/atomic"
)

// Saver stores checkpoints in a PostgreSQL database through a connection
// pool. It is safe for concurrent use. Close it to release the pool.
type Saver struct {
	db     *db
	closed atomic.Bool
}

// Open connects to the database at dsn (a pgx connection string: URL or
// key=value), checks that it answers within the connect timeout (see
// Options.ConnectTimeout) and creates or upgrades the saver's tables. Tables
// already up to date are only read, so a role that may only read them can
// open them; with Options.NoCreate a database without them is left as it is
// and Open fails with ErrNoTables.
func Open(ctx context.Context, dsn string, opts Options) (*Saver, error) {
	d, err := openDB(ctx, dsn, opts)
	if err != nil {
		return nil, err
	}
	return &Saver{db: d}, nil
}

// Close releases the pool's connections. Calls after Close fail.
func (s *Saver) Close() error {
	if s.closed.CompareAndSwap(false, true) {
		s.db.pool.Close()
	}
	return nil
}
