package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/deepagents-go/deepagents/vfs"
	"github.com/deepagents-go/deepagents/vfs/store"
)

// FileTable is a store.Table in a SQLite database, usually the checkpoint
// database itself: files that outlive a thread (see package vfs/store). It
// keeps them in its own table, deepagents_files, created when missing; the
// checkpoint tables are not touched.
type FileTable struct {
	db  *sql.DB
	own bool
}

const filesSchema = `CREATE TABLE IF NOT EXISTS deepagents_files (
	ns       TEXT    NOT NULL,
	path     BLOB    NOT NULL,
	content  BLOB    NOT NULL,
	created  INTEGER NOT NULL,
	modified INTEGER NOT NULL,
	PRIMARY KEY (ns, path)
) WITHOUT ROWID`

// OpenFiles opens the file table of the database at path (creating the
// file and the table if needed), on a connection of its own: it can share
// the file with a Saver of this package. Close it when done.
func OpenFiles(path string) (*FileTable, error) {
	if path == "" {
		return nil, errors.New("sqlite file store: no database path given")
	}
	db, err := OpenDB(path, DBOptions{})
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
// should open write transactions with BEGIN IMMEDIATE (the _txlock=immediate
// connection parameter), as OpenFiles does, so that two writers never
// deadlock upgrading their locks.
func NewFileTable(ctx context.Context, db *sql.DB) (*FileTable, error) {
	if _, err := db.ExecContext(ctx, filesSchema); err != nil {
		return nil, fmt.Errorf("create the file store table: %w", err)
	}
	return &FileTable{db: db}, nil
}

// Close closes the database when OpenFiles opened it.
func (t *FileTable) Close() error {
	if t.own {
		return t.db.Close()
	}
	return nil
}

// below returns the WHERE clause (after "ns = ?") and arguments selecting
// dir and every path under it; strict leaves dir itself out.
func below(dir string, strict bool) (string, []any) {
	if dir == "/" {
		return "", nil
	}
	// Paths under dir sort between dir+"/" and dir+"0" ('0' follows '/').
	rng := " AND (path >= ? AND path < ?)"
	args := []any{[]byte(dir + "/"), []byte(dir + "0")}
	if strict {
		return rng, args
	}
	return " AND (path = ? OR (path >= ? AND path < ?))", append([]any{[]byte(dir)}, args...)
}

type sqlQuerier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

func getFile(ctx context.Context, q sqlQuerier, ns, path string) (vfs.File, bool, error) {
	var (
		size              int64
		content           []byte
		created, modified int64
	)
	err := q.QueryRowContext(ctx,
		`SELECT length(content), CASE WHEN length(content) <= ? THEN content END, created, modified
		 FROM deepagents_files WHERE ns = ? AND path = ?`, store.MaxFileSize, ns, []byte(path)).
		Scan(&size, &content, &created, &modified)
	if errors.Is(err, sql.ErrNoRows) {
		return vfs.File{}, false, nil
	}
	if err != nil {
		return vfs.File{}, false, err
	}
	if size > store.MaxFileSize {
		return vfs.File{}, false, fmt.Errorf("the stored file %s is %d bytes, over the limit of %d", path, size, store.MaxFileSize)
	}
	return vfs.File{Content: string(content), CreatedAt: time.Unix(0, created), ModifiedAt: time.Unix(0, modified)}, true, nil
}

// Get implements store.Table.
func (t *FileTable) Get(ctx context.Context, ns, path string) (vfs.File, bool, error) {
	return getFile(ctx, t.db, ns, path)
}

// Rows implements store.Table.
func (t *FileTable) Rows(ctx context.Context, ns, dir string) ([]store.Row, error) {
	where, args := below(dir, false)
	rows, err := t.db.QueryContext(ctx,
		`SELECT path, length(content), created, modified FROM deepagents_files WHERE ns = ?`+where+` ORDER BY path`,
		append([]any{ns}, args...)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Row
	for rows.Next() {
		var (
			p                 []byte
			size              int64
			created, modified int64
		)
		if err := rows.Scan(&p, &size, &created, &modified); err != nil {
			return nil, err
		}
		out = append(out, store.Row{Path: string(p), Size: size, CreatedAt: time.Unix(0, created), ModifiedAt: time.Unix(0, modified)})
	}
	return out, rows.Err()
}

// Change implements store.Table: fn runs in one write transaction.
func (t *FileTable) Change(ctx context.Context, ns string, fn func(tx store.Tx) error) error {
	tx, err := t.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(&fileTx{ctx: ctx, tx: tx, ns: ns}); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

type fileTx struct {
	ctx context.Context
	tx  *sql.Tx
	ns  string
}

func (x *fileTx) Get(path string) (vfs.File, bool, error) { return getFile(x.ctx, x.tx, x.ns, path) }

func (x *fileTx) Below(dir string) (bool, error) {
	where, args := below(dir, true)
	var one int
	err := x.tx.QueryRowContext(x.ctx, `SELECT 1 FROM deepagents_files WHERE ns = ?`+where+` LIMIT 1`,
		append([]any{x.ns}, args...)...).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

func (x *fileTx) Put(path string, f vfs.File) error {
	_, err := x.tx.ExecContext(x.ctx,
		`INSERT INTO deepagents_files (ns, path, content, created, modified) VALUES (?, ?, ?, ?, ?)
		 ON CONFLICT (ns, path) DO UPDATE SET content = excluded.content, created = excluded.created, modified = excluded.modified`,
		x.ns, []byte(path), []byte(f.Content), f.CreatedAt.UnixNano(), f.ModifiedAt.UnixNano())
	return err
}

func (x *fileTx) Delete(dir string) (int, error) {
	where, args := below(dir, false)
	res, err := x.tx.ExecContext(x.ctx, `DELETE FROM deepagents_files WHERE ns = ?`+where, append([]any{x.ns}, args...)...)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

var _ store.Table = (*FileTable)(nil)
