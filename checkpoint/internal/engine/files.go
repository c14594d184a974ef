package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/deepagents-go/deepagents/vfs"
	"github.com/deepagents-go/deepagents/vfs/store"
)

// FilesSchema is the file table both SQL savers keep beside their
// checkpoint tables (see package vfs/store): blob is the dialect's bytes
// type, tail what follows the table's definition. Paths are stored as
// bytes, so ranges and order are byte order whatever the database's
// collation.
func FilesSchema(blob, tail string) string {
	return `CREATE TABLE IF NOT EXISTS deepagents_files (
	ns       TEXT    NOT NULL,
	path     ` + blob + ` NOT NULL,
	content  ` + blob + ` NOT NULL,
	created  BIGINT  NOT NULL,
	modified BIGINT  NOT NULL,
	PRIMARY KEY (ns, path)
)` + tail
}

// FileDB is what the file table needs of a driver. Queries are written
// with ? placeholders; a dialect that numbers them ($1) rewrites them.
type FileDB interface {
	// Query runs q and calls each with its rows, closing them after.
	Query(ctx context.Context, q string, args []any, each func(Rows) error) error
	// Exec runs q and returns the number of rows it changed.
	Exec(ctx context.Context, q string, args ...any) (int64, error)
	// Change runs fn in one write transaction that changes of namespace ns
	// take in turn, with a FileDB bound to it and the context its
	// statements run under (the transaction's, bounded as a whole).
	Change(ctx context.Context, ns string, fn func(context.Context, FileDB) error) error
}

// FileTable is a store.Table on a FileDB: the one implementation of the
// SQL savers' file tables.
type FileTable struct{ DB FileDB }

var _ store.Table = FileTable{}

// below returns the condition (after "ns = ?") and arguments selecting dir
// and every path under it; strict leaves dir itself out.
func below(dir string, strict bool) (string, []any) {
	if dir == "/" {
		return "", nil
	}
	// Paths under dir sort between dir+"/" and dir+"0" ('0' follows '/').
	lo, hi := []byte(dir+"/"), []byte(dir+"0")
	if strict {
		return " AND path >= ? AND path < ?", []any{lo, hi}
	}
	return " AND (path = ? OR (path >= ? AND path < ?))", []any{[]byte(dir), lo, hi}
}

func getFile(ctx context.Context, db FileDB, ns, path string) (vfs.File, bool, error) {
	var (
		size              int64
		content           []byte
		created, modified int64
		found             bool
	)
	err := db.Query(ctx, `SELECT length(content), CASE WHEN length(content) <= ? THEN content END, created, modified
		 FROM deepagents_files WHERE ns = ? AND path = ?`, []any{int64(store.MaxFileSize), ns, []byte(path)}, func(rows Rows) error {
		if !rows.Next() {
			return rows.Err()
		}
		found = true
		return rows.Scan(&size, &content, &created, &modified)
	})
	if err != nil || !found {
		return vfs.File{}, false, err
	}
	if size > store.MaxFileSize {
		return vfs.File{}, false, fmt.Errorf("the stored file %s is %d bytes, over the limit of %d", path, size, store.MaxFileSize)
	}
	return vfs.File{Content: string(content), CreatedAt: time.Unix(0, created), ModifiedAt: time.Unix(0, modified)}, true, nil
}

// Get implements store.Table.
func (t FileTable) Get(ctx context.Context, ns, path string) (vfs.File, bool, error) {
	return getFile(ctx, t.DB, ns, path)
}

// Rows implements store.Table.
func (t FileTable) Rows(ctx context.Context, ns, dir string) ([]store.Row, error) {
	where, args := below(dir, false)
	var out []store.Row
	err := t.DB.Query(ctx, `SELECT path, length(content), created, modified FROM deepagents_files WHERE ns = ?`+where+` ORDER BY path`,
		append([]any{ns}, args...), func(rows Rows) error {
			var (
				p                 []byte
				size              int64
				created, modified int64
			)
			for rows.Next() {
				if err := rows.Scan(&p, &size, &created, &modified); err != nil {
					return err
				}
				out = append(out, store.Row{Path: string(p), Size: size, CreatedAt: time.Unix(0, created), ModifiedAt: time.Unix(0, modified)})
			}
			return rows.Err()
		})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Change implements store.Table: fn runs in one write transaction.
func (t FileTable) Change(ctx context.Context, ns string, fn func(tx store.Tx) error) error {
	return t.DB.Change(ctx, ns, func(ctx context.Context, db FileDB) error {
		return fn(&fileTx{ctx: ctx, db: db, ns: ns})
	})
}

type fileTx struct {
	ctx context.Context
	db  FileDB
	ns  string
}

func (x *fileTx) Get(path string) (vfs.File, bool, error) { return getFile(x.ctx, x.db, x.ns, path) }

func (x *fileTx) Below(dir string) (bool, error) {
	where, args := below(dir, true)
	var found bool
	err := x.db.Query(x.ctx, `SELECT 1 FROM deepagents_files WHERE ns = ?`+where+` LIMIT 1`, append([]any{x.ns}, args...), func(rows Rows) error {
		found = rows.Next()
		return rows.Err()
	})
	return found && err == nil, err
}

func (x *fileTx) Put(path string, f vfs.File) error {
	_, err := x.db.Exec(x.ctx,
		`INSERT INTO deepagents_files (ns, path, content, created, modified) VALUES (?, ?, ?, ?, ?)
		 ON CONFLICT (ns, path) DO UPDATE SET content = excluded.content, created = excluded.created, modified = excluded.modified`,
		x.ns, []byte(path), []byte(f.Content), f.CreatedAt.UnixNano(), f.ModifiedAt.UnixNano())
	return err
}

func (x *fileTx) Delete(dir string) (int, error) {
	where, args := below(dir, false)
	n, err := x.db.Exec(x.ctx, `DELETE FROM deepagents_files WHERE ns = ?`+where, append([]any{x.ns}, args...)...)
	return int(n), err
}

// Numbered rewrites the ? placeholders of q as $1, $2, … for a dialect
// that numbers them. q holds no ? of its own (in a string or a name).
func Numbered(q string) string {
	var b []byte
	n := 0
	for i := 0; i < len(q); i++ {
		if q[i] == '?' {
			n++
			b = fmt.Appendf(b, "$%d", n)
			continue
		}
		b = append(b, q[i])
	}
	return string(b)
}
