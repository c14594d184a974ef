package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/deepagents-go/deepagents/checkpoint/internal/engine"
	vstore "github.com/deepagents-go/deepagents/vfs/store"
)

// FileTable is a vstore.Table in a PostgreSQL database, usually the
// checkpoint database: files that outlive a thread (see package vfs/store).
// They live in their own table, deepagents_files, created when missing;
// the checkpoint tables are not touched. The table and its queries are the
// ones the sqlite saver's file table has too.
type FileTable struct {
	engine.FileTable
	pool    *pgxpool.Pool
	own     bool
	timeout time.Duration
}

// OpenFiles connects to the server at dsn and opens its file table, with
// the connect and call timeouts and the schema of opts (the other fields
// are not used). Close it when done.
func OpenFiles(ctx context.Context, dsn string, opts Options) (*FileTable, error) {
	opts = opts.withDefaults()
	pool, cfg, err := newPool(ctx, dsn, opts, "postgres file store")
	if err != nil {
		return nil, err
	}
	if opts.Schema != "" {
		cctx, cancel := context.WithTimeout(ctx, opts.CallTimeout)
		_, err := pool.Exec(cctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{opts.Schema}.Sanitize())
		cancel()
		if err != nil {
			pool.Close()
			return nil, fmt.Errorf("postgres file store: cannot create schema %s on %s:%d: %w", opts.Schema, cfg.ConnConfig.Host, cfg.ConnConfig.Port, err)
		}
	}
	t, err := NewFileTable(ctx, pool, opts.CallTimeout)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("%w (server %s:%d)", err, cfg.ConnConfig.Host, cfg.ConnConfig.Port)
	}
	t.own = true
	return t, nil
}

// NewFileTable returns the file table on pool, creating it when missing.
// Every call is bounded by timeout (DefaultCallTimeout when 0).
func NewFileTable(ctx context.Context, pool *pgxpool.Pool, timeout time.Duration) (*FileTable, error) {
	if timeout <= 0 {
		timeout = DefaultCallTimeout
	}
	t := &FileTable{pool: pool, timeout: timeout}
	cctx, cancel := t.call(ctx)
	defer cancel()
	// Two openers creating the table at once can both miss it and collide
	// on the catalog: serialise them.
	err := pgx.BeginFunc(cctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(cctx, "SELECT pg_advisory_xact_lock($1)", filesLockKey("deepagents files schema", "")); err != nil {
			return err
		}
		_, err := tx.Exec(cctx, engine.FilesSchema("bytea", ""))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres file store: creating the table: %w", err)
	}
	t.FileTable = engine.FileTable{DB: pgFileDB{q: pool, timeout: timeout}}
	return t, nil
}

// Close closes the pool when OpenFiles opened it.
func (t *FileTable) Close() error {
	if t.own {
		t.pool.Close()
	}
	return nil
}

func (t *FileTable) call(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, t.timeout)
}

func filesLockKey(what, ns string) int64 {
	h := fnv.New64a()
	h.Write([]byte(what + "\x00" + ns))
	return int64(h.Sum64())
}

// pgQuerier is what a pool and a transaction of pgx share.
type pgQuerier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// pgFileDB is engine.FileDB on pgx: on the pool, each call bounded by
// timeout, or (in a change) in a transaction.
type pgFileDB struct {
	q       pgQuerier
	timeout time.Duration
	inTx    bool
}

func (d pgFileDB) call(ctx context.Context) (context.Context, context.CancelFunc) {
	if d.inTx {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, d.timeout)
}

func (d pgFileDB) Query(ctx context.Context, q string, args []any, each func(engine.Rows) error) error {
	ctx, cancel := d.call(ctx)
	defer cancel()
	rows, err := d.q.Query(ctx, engine.Numbered(q), args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	return each(rows)
}

func (d pgFileDB) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	ctx, cancel := d.call(ctx)
	defer cancel()
	tag, err := d.q.Exec(ctx, engine.Numbered(q), args...)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

// Change runs fn in one transaction holding an advisory lock on the
// namespace, so changes of one namespace (from any process) take turns;
// the timeout bounds the whole transaction.
func (d pgFileDB) Change(ctx context.Context, ns string, fn func(context.Context, engine.FileDB) error) error {
	pool, ok := d.q.(*pgxpool.Pool)
	if !ok {
		return errors.New("postgres file store: a change inside a change")
	}
	ctx, cancel := d.call(ctx)
	defer cancel()
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", filesLockKey("deepagents files", ns)); err != nil {
			return err
		}
		return fn(ctx, pgFileDB{q: tx, inTx: true})
	})
}

var _ vstore.Table = (*FileTable)(nil)
