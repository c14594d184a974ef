package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/deepagents-go/deepagents/checkpoint/internal/engine"
	"github.com/deepagents-go/deepagents/vfs/store"
)

// FileTable is a store.Table in a SQLite database, usually the checkpoint
// database itself: files that outlive a thread (see package vfs/store). It
// keeps them in its own table, deepagents_files, created when missing; the
// checkpoint tables are not touched. The table and its queries are the
// ones the postgres saver's file table has too.
type FileTable struct {
	engine.FileTable
	db  *sql.DB
	own bool
}

var _ store.Table = (*FileTable)(nil)

// OpenFiles opens the file table of the database at path (creating the
// file and the table if needed), on a connection of its own: it can share
// the file with a Saver of this package. Close it when done.
func OpenFiles(path string) (*FileTable, error) { return OpenFilesWith(path, DBOptions{}) }

// OpenFilesWith is OpenFiles with the database settings o, so that the file
// table runs with those the thread saver of the same file was given.
func OpenFilesWith(path string, o DBOptions) (*FileTable, error) {
	if path == "" {
		return nil, errors.New("sqlite file store: no database path given")
	}
	db, err := OpenDB(path, o)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	// One connection: writes take the database's lock in turn, and reads
	// never wait on a half-done write of this process.
	db.SetMaxOpenConns(1)
	t, err := NewFileTable(context.Background(), db)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	t.own = true
	return t, nil
}

// NewFileTable returns the file table of db, creating it when missing. db
// should open write transactions with BEGIN IMMEDIATE (as OpenDB's do), so
// that two writers never deadlock upgrading their locks.
func NewFileTable(ctx context.Context, db *sql.DB) (*FileTable, error) {
	if _, err := db.ExecContext(ctx, engine.FilesSchema("BLOB", " WITHOUT ROWID")); err != nil {
		return nil, fmt.Errorf("create the file store table: %w", err)
	}
	return &FileTable{FileTable: engine.FileTable{DB: fileDB{db}}, db: db}, nil
}

// Close closes the database when OpenFiles opened it.
func (t *FileTable) Close() error {
	if t.own {
		return t.db.Close()
	}
	return nil
}

// sqlQuerier is what a pool and a transaction of database/sql share.
type sqlQuerier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// fileDB is engine.FileDB on database/sql: on the pool, or (tx set) in a
// transaction.
type fileDB struct{ q sqlQuerier }

func (d fileDB) Query(ctx context.Context, q string, args []any, each func(engine.Rows) error) error {
	rows, err := d.q.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	return each(rows)
}

func (d fileDB) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	res, err := d.q.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// Change runs fn in one BEGIN IMMEDIATE transaction: SQLite's write lock
// makes every change of the file take its turn.
func (d fileDB) Change(ctx context.Context, _ string, fn func(context.Context, engine.FileDB) error) error {
	db, ok := d.q.(*sql.DB)
	if !ok {
		return errors.New("sqlite file store: a change inside a change")
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(ctx, fileDB{tx}); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}
