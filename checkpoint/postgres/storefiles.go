package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/deepagents-go/deepagents/vfs"
	vstore "github.com/deepagents-go/deepagents/vfs/store"
)

// FileTable is a vstore.Table in a PostgreSQL database, usually the
// checkpoint database: files that outlive a thread (see package vfs/store).
// They live in their own table, deepagents_files, created when missing;
// the checkpoint tables are not touched. Paths are stored as bytes, so
// ranges and order are byte order whatever the database's collation.
type FileTable struct {
	pool    *pgxpool.Pool
	own     bool
	timeout time.Duration
}

const pgFilesSchema = `CREATE TABLE IF NOT EXISTS deepagents_files (
	ns       text   NOT NULL,
	path     bytea  NOT NULL,
	content  bytea  NOT NULL,
	created  bigint NOT NULL,
	modified bigint NOT NULL,
	PRIMARY KEY (ns, path)
)`

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
		_, err := tx.Exec(cctx, pgFilesSchema)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres file store: creating the table: %w", err)
	}
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

// pgBelow returns the condition (after "ns = $1") selecting dir and every
// path under it, numbering arguments from $2; strict leaves dir out.
func pgBelow(dir string, strict bool) (string, []any) {
	if dir == "/" {
		return "", nil
	}
	// Paths under dir sort between dir+"/" and dir+"0" ('0' follows '/').
	lo, hi := []byte(dir+"/"), []byte(dir+"0")
	if strict {
		return " AND path >= $2 AND path < $3", []any{lo, hi}
	}
	return " AND (path = $2 OR (path >= $3 AND path < $4))", []any{[]byte(dir), lo, hi}
}

type pgQuerier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func pgGet(ctx context.Context, q pgQuerier, ns, path string) (vfs.File, bool, error) {
	var (
		size              int64
		content           []byte
		created, modified int64
	)
	err := q.QueryRow(ctx,
		`SELECT length(content), CASE WHEN length(content) <= $3 THEN content END, created, modified
		 FROM deepagents_files WHERE ns = $1 AND path = $2`, ns, []byte(path), vstore.MaxFileSize).
		Scan(&size, &content, &created, &modified)
	if errors.Is(err, pgx.ErrNoRows) {
		return vfs.File{}, false, nil
	}
	if err != nil {
		return vfs.File{}, false, err
	}
	if size > vstore.MaxFileSize {
		return vfs.File{}, false, fmt.Errorf("the stored file %s is %d bytes, over the limit of %d", path, size, vstore.MaxFileSize)
	}
	return vfs.File{Content: string(content), CreatedAt: time.Unix(0, created), ModifiedAt: time.Unix(0, modified)}, true, nil
}

// Get implements vstore.Table.
func (t *FileTable) Get(ctx context.Context, ns, path string) (vfs.File, bool, error) {
	ctx, cancel := t.call(ctx)
	defer cancel()
	return pgGet(ctx, t.pool, ns, path)
}

// Rows implements vstore.Table.
func (t *FileTable) Rows(ctx context.Context, ns, dir string) ([]vstore.Row, error) {
	ctx, cancel := t.call(ctx)
	defer cancel()
	where, args := pgBelow(dir, false)
	rows, err := t.pool.Query(ctx,
		`SELECT path, length(content), created, modified FROM deepagents_files WHERE ns = $1`+where+` ORDER BY path`,
		append([]any{ns}, args...)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []vstore.Row
	for rows.Next() {
		var (
			p                 []byte
			size              int64
			created, modified int64
		)
		if err := rows.Scan(&p, &size, &created, &modified); err != nil {
			return nil, err
		}
		out = append(out, vstore.Row{Path: string(p), Size: size, CreatedAt: time.Unix(0, created), ModifiedAt: time.Unix(0, modified)})
	}
	return out, rows.Err()
}

// Change implements vstore.Table: fn runs in one transaction holding an
// advisory lock on the namespace, so changes of one namespace (from any
// process) take turns.
func (t *FileTable) Change(ctx context.Context, ns string, fn func(tx vstore.Tx) error) error {
	ctx, cancel := t.call(ctx)
	defer cancel()
	return pgx.BeginFunc(ctx, t.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", filesLockKey("deepagents files", ns)); err != nil {
			return err
		}
		return fn(&pgFileTx{ctx: ctx, tx: tx, ns: ns})
	})
}

type pgFileTx struct {
	ctx context.Context
	tx  pgx.Tx
	ns  string
}

func (x *pgFileTx) Get(path string) (vfs.File, bool, error) { return pgGet(x.ctx, x.tx, x.ns, path) }

func (x *pgFileTx) Below(dir string) (bool, error) {
	where, args := pgBelow(dir, true)
	var one int
	err := x.tx.QueryRow(x.ctx, `SELECT 1 FROM deepagents_files WHERE ns = $1`+where+` LIMIT 1`,
		append([]any{x.ns}, args...)...).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

func (x *pgFileTx) Put(path string, f vfs.File) error {
	_, err := x.tx.Exec(x.ctx,
		`INSERT INTO deepagents_files (ns, path, content, created, modified) VALUES ($1, $2, $3, $4, $5)
		 ON CONFLICT (ns, path) DO UPDATE SET content = excluded.content, created = excluded.created, modified = excluded.modified`,
		x.ns, []byte(path), []byte(f.Content), f.CreatedAt.UnixNano(), f.ModifiedAt.UnixNano())
	return err
}

func (x *pgFileTx) Delete(dir string) (int, error) {
	where, args := pgBelow(dir, false)
	tag, err := x.tx.Exec(x.ctx, `DELETE FROM deepagents_files WHERE ns = $1`+where, append([]any{x.ns}, args...)...)
	if err != nil {
		return 0, err
	}
	return int(tag.RowsAffected()), nil
}

var _ vstore.Table = (*FileTable)(nil)
