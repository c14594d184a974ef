// Package sqlite is a checkpoint.Saver on an embedded SQLite database (the
// pure-Go modernc.org/sqlite driver, no cgo), the default store for threads.
//
// The database runs in WAL mode with a busy timeout, so readers never wait
// for the writer and several processes may share one file. All writes go
// through one connection, each put in one transaction; reads use a small pool
// of their own. The schema is versioned (PRAGMA user_version) and migrated
// forward on Open.
package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/deepagents-go/deepagents/checkpoint"
	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Options tune a Saver.
type Options struct {
	// SnapshotEvery is the number of steps between snapshots
	// (checkpoint.DefaultSnapshotEvery when 0).
	SnapshotEvery int
	// BusyTimeout is how long a statement waits for another process's
	// lock (5 s when 0).
	BusyTimeout time.Duration
	// Readers is the size of the read pool (4 when 0).
	Readers int
	// Synchronous is SQLite's synchronous setting: "FULL" (the default:
	// a committed put survives a power cut), "NORMAL" (survives a crash of
	// the process, not of the machine) or "OFF" (for throwaway databases).
	Synchronous string
}

// Saver is a checkpoint.Saver on one SQLite file.
type Saver struct {
	w, r  *sql.DB
	every int
	stmts map[string]*sql.Stmt
	tips  tips
}

var _ checkpoint.Saver = (*Saver)(nil)

// A migration is applied in one transaction: its SQL, then its Go step.
type migration struct {
	sql string
	fn  func(ctx context.Context, tx *sql.Tx) error
}

// migrations are applied in order; schema version n means the first n ran.
// Never edit one that has shipped: append a new one.
var migrations = []migration{
	{sql: `CREATE TABLE checkpoints (
		seq      INTEGER PRIMARY KEY AUTOINCREMENT,
		thread   TEXT NOT NULL,
		ns       TEXT NOT NULL,
		id       TEXT NOT NULL,
		title    TEXT NOT NULL DEFAULT '',
		record   BLOB NOT NULL,
		UNIQUE (thread, ns, id)
	);
	CREATE INDEX checkpoints_by_thread ON checkpoints (thread, seq);
	CREATE INDEX checkpoints_by_ns ON checkpoints (thread, ns, seq);
	CREATE TABLE messages (
		thread TEXT NOT NULL,
		ns     TEXT NOT NULL,
		seq    INTEGER NOT NULL,
		data   BLOB NOT NULL,
		UNIQUE (thread, ns, seq)
	);
	CREATE TABLE blobs (
		hash TEXT PRIMARY KEY,
		data BLOB NOT NULL
	);
	CREATE TABLE refs (
		thread TEXT NOT NULL,
		ns     TEXT NOT NULL,
		cp     TEXT NOT NULL,
		hash   TEXT NOT NULL,
		PRIMARY KEY (thread, ns, cp, hash)
	) WITHOUT ROWID;
	CREATE INDEX refs_by_hash ON refs (hash);
	CREATE TABLE writes (
		thread  TEXT NOT NULL,
		ns      TEXT NOT NULL,
		cp      TEXT NOT NULL,
		call_id TEXT NOT NULL,
		kind    TEXT NOT NULL,
		data    BLOB NOT NULL,
		PRIMARY KEY (thread, ns, cp, call_id, kind)
	);
	CREATE TABLE leases (
		thread  TEXT PRIMARY KEY,
		holder  TEXT NOT NULL,
		expires INTEGER NOT NULL
	);`},
	// 2: messages move into chunks (see chunks.go); a put writes one chunk
	// and a snapshot put packs the namespace's recent chunks into one, so a
	// long thread reads back in a few hundred rows instead of one per
	// message.
	{sql: `CREATE TABLE chunks (
		thread   TEXT NOT NULL,
		ns       TEXT NOT NULL,
		seq_from INTEGER NOT NULL,
		seq_to   INTEGER NOT NULL,
		packed   INTEGER NOT NULL DEFAULT 0,
		data     BLOB NOT NULL,
		PRIMARY KEY (thread, ns, seq_from)
	) WITHOUT ROWID;
	CREATE TABLE writes2 (
		thread  TEXT NOT NULL,
		ns      TEXT NOT NULL,
		cp      TEXT NOT NULL,
		call_id TEXT NOT NULL,
		kind    TEXT NOT NULL,
		data    BLOB NOT NULL,
		PRIMARY KEY (thread, ns, cp, call_id, kind)
	) WITHOUT ROWID;
	INSERT INTO writes2 SELECT thread, ns, cp, call_id, kind, data FROM writes;
	DROP TABLE writes;
	ALTER TABLE writes2 RENAME TO writes;
	CREATE TABLE checkpoints2 (
		seq      INTEGER PRIMARY KEY,
		thread   TEXT NOT NULL,
		ns       TEXT NOT NULL,
		id       TEXT NOT NULL,
		title    TEXT NOT NULL DEFAULT '',
		record   BLOB NOT NULL,
		UNIQUE (thread, ns, id)
	);
	INSERT INTO checkpoints2 SELECT seq, thread, ns, id, title, record FROM checkpoints;
	DROP TABLE checkpoints;
	ALTER TABLE checkpoints2 RENAME TO checkpoints;
	CREATE INDEX checkpoints_by_thread ON checkpoints (thread, seq);
	CREATE INDEX checkpoints_by_ns ON checkpoints (thread, ns, seq);`,
		fn: migrateMessagesToChunks},
}

// SchemaVersion is the schema version this build writes.
var SchemaVersion = len(migrations)

// Open opens (creating if needed) the database at path and migrates it.
func Open(path string, opts Options) (*Saver, error) {
	if path == "" {
		return nil, errors.New("sqlite checkpoint store: no database path given")
	}
	busy := opts.BusyTimeout
	if busy <= 0 {
		busy = 5 * time.Second
	}
	readers := opts.Readers
	if readers <= 0 {
		readers = 4
	}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busy.Milliseconds()))
	syncMode := strings.ToUpper(opts.Synchronous)
	switch syncMode {
	case "":
		syncMode = "FULL"
	case "FULL", "NORMAL", "OFF":
	default:
		return nil, fmt.Errorf("sqlite checkpoint store: synchronous %q is not one of FULL, NORMAL, OFF", opts.Synchronous)
	}
	q.Add("_pragma", "synchronous("+syncMode+")")
	q.Add("_pragma", "foreign_keys(1)")
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
	w, err := sql.Open("sqlite", dsn+"&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	s := &Saver{w: w, every: opts.SnapshotEvery}
	if s.every <= 0 {
		s.every = checkpoint.DefaultSnapshotEvery
	}
	// 4 KiB pages: every commit writes each page it changed to the WAL, so
	// smaller pages make a put cheaper; space is not lost on 2 KB tool
	// results, which packs join into long runs. The page size only takes
	// effect on a new file, so it is set before WAL mode (which is then
	// stored in the file for every connection).
	for _, p := range []string{"PRAGMA page_size = 4096", "PRAGMA journal_mode = WAL"} {
		if _, err := w.Exec(p); err != nil {
			w.Close()
			return nil, fmt.Errorf("open %s: %s: %w", path, p, err)
		}
	}
	if err := s.migrate(context.Background()); err != nil {
		w.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	r, err := sql.Open("sqlite", dsn+"&_pragma=query_only(1)")
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	r.SetMaxOpenConns(readers)
	r.SetMaxIdleConns(readers)
	s.r = r
	if err := s.prepare(); err != nil {
		s.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return s, nil
}

func (s *Saver) migrate(ctx context.Context) error {
	var v int
	if err := s.w.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if v > len(migrations) {
		return fmt.Errorf("the database has schema version %d; this build knows versions up to %d (upgrade deepagents)", v, len(migrations))
	}
	for i := v; i < len(migrations); i++ {
		tx, err := s.w.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, migrations[i].sql); err != nil {
			tx.Rollback()
			return fmt.Errorf("migrate schema to version %d: %w", i+1, err)
		}
		if fn := migrations[i].fn; fn != nil {
			if err := fn(ctx, tx); err != nil {
				tx.Rollback()
				return fmt.Errorf("migrate schema to version %d: %w", i+1, err)
			}
		}
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", i+1)); err != nil {
			tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	}
	return nil
}

// Statements prepared once on the writer and the readers; "r:" ones read.
var statements = map[string]string{
	// A put's checkpoint (when already stored), its parent, and (in a last
	// row with a NULL id) the namespace's next message number, in one query.
	"selfparent": `SELECT id, record FROM checkpoints WHERE thread = ?1 AND ns = ?2 AND id IN (?3, ?4)
		UNION ALL SELECT NULL, COALESCE((SELECT seq_to FROM chunks WHERE thread = ?1 AND ns = ?2 ORDER BY seq_from DESC LIMIT 1), 0)`,
	"record":      `SELECT record FROM checkpoints WHERE thread = ? AND ns = ? AND id = ?`,
	"insertcp":    `INSERT INTO checkpoints (thread, ns, id, title, record) VALUES (?, ?, ?, ?, ?)`,
	"insertchunk": `INSERT INTO chunks (thread, ns, seq_from, seq_to, packed, data) VALUES (?, ?, ?, ?, ?, ?)`,
	"tail":        `SELECT seq_from, seq_to, packed FROM chunks WHERE thread = ? AND ns = ? ORDER BY seq_from DESC`,
	"chunkdata":   `SELECT data FROM chunks WHERE thread = ? AND ns = ? AND seq_from = ?`,
	"insertblob":  `INSERT INTO blobs (hash, data) VALUES (?, ?) ON CONFLICT (hash) DO NOTHING`,
	"insertref":   `INSERT INTO refs (thread, ns, cp, hash) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`,
	"putwrite": `INSERT INTO writes (thread, ns, cp, call_id, kind, data)
		SELECT ?1, ?2, ?3, ?4, ?5, ?6 WHERE EXISTS (SELECT 1 FROM checkpoints WHERE thread = ?1 AND ns = ?2 AND id = ?3)
		ON CONFLICT (thread, ns, cp, call_id, kind) DO UPDATE SET data = excluded.data`,
	"r:record": `SELECT record FROM checkpoints WHERE thread = ? AND ns = ? AND id = ?`,
	// The namespace's ?4 records put at or before checkpoint ?3.
	"r:recent": `SELECT record FROM checkpoints WHERE thread = ?1 AND ns = ?2
		AND seq <= (SELECT seq FROM checkpoints WHERE thread = ?1 AND ns = ?2 AND id = ?3) ORDER BY seq DESC LIMIT ?4`,
	"r:latest": `SELECT record FROM checkpoints WHERE thread = ? AND ns = ? ORDER BY seq DESC LIMIT 1`,
	// The chunks holding [?3, ?4): from the last one starting at or before
	// ?3 (or ?3 itself when none does, so that a gap is seen) to the last
	// one starting before ?4.
	"r:chunks": `SELECT seq_from, seq_to, data FROM chunks WHERE thread = ?1 AND ns = ?2 AND seq_from < ?4 AND seq_from >= COALESCE(
		(SELECT MAX(seq_from) FROM chunks WHERE thread = ?1 AND ns = ?2 AND seq_from <= ?3), ?3) ORDER BY seq_from`,
	"r:blob":   `SELECT data FROM blobs WHERE hash = ?`,
	"r:writes": `SELECT data FROM writes WHERE thread = ? AND ns = ? AND cp = ? ORDER BY call_id, kind`,
	"r:seqof":  `SELECT MIN(seq) FROM checkpoints WHERE thread = ? AND id = ?`,
}

func (s *Saver) prepare() error {
	s.stmts = map[string]*sql.Stmt{}
	for name, q := range statements {
		db := s.w
		if strings.HasPrefix(name, "r:") {
			db = s.r
		}
		st, err := db.Prepare(q)
		if err != nil {
			return fmt.Errorf("prepare %s: %w", name, err)
		}
		s.stmts[name] = st
	}
	return nil
}

// Close closes the database.
func (s *Saver) Close() error {
	for _, st := range s.stmts {
		st.Close()
	}
	var err error
	if s.r != nil {
		err = s.r.Close()
	}
	if e := s.w.Close(); e != nil {
		err = e
	}
	return err
}

// querier is a transaction's view of the prepared statements.
type querier struct {
	tx *sql.Tx
	s  *Saver
}

func (q querier) stmt(ctx context.Context, name string) *sql.Stmt {
	return q.tx.StmtContext(ctx, q.s.stmts[name])
}

func (q querier) loader(thread, ns, prefix string) checkpoint.Loader {
	return func(ctx context.Context, id string) (*checkpoint.Record, error) {
		return q.record(ctx, prefix+"record", thread, ns, id)
	}
}

// recentLoader loads records for checkpoint.Chain: the namespace's every+1
// records put at or before from in one query (a linear history's whole
// chain), then one by one what that missed.
func (q querier) recentLoader(thread, ns, from string, every int) checkpoint.Loader {
	var recent map[string]*checkpoint.Record
	return func(ctx context.Context, id string) (*checkpoint.Record, error) {
		if recent == nil {
			recent = map[string]*checkpoint.Record{}
			rows, err := q.stmt(ctx, "r:recent").QueryContext(ctx, thread, ns, from, every+1)
			if err != nil {
				return nil, err
			}
			for rows.Next() {
				var raw []byte
				if err := rows.Scan(&raw); err != nil {
					rows.Close()
					return nil, err
				}
				r, err := checkpoint.Decode(raw)
				if err != nil {
					rows.Close()
					return nil, err
				}
				recent[r.ID] = r
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return nil, err
			}
		}
		if r := recent[id]; r != nil {
			return r, nil
		}
		return q.record(ctx, "r:record", thread, ns, id)
	}
}

func (q querier) record(ctx context.Context, stmt string, args ...any) (*checkpoint.Record, error) {
	var raw []byte
	err := q.stmt(ctx, stmt).QueryRowContext(ctx, args...).Scan(&raw)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: thread %q namespace %q checkpoint %v", checkpoint.ErrNotFound, args[0], args[1], args[2:])
	}
	if err != nil {
		return nil, err
	}
	return checkpoint.Decode(raw)
}

func (s *Saver) writeTx(ctx context.Context, fn func(q querier) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(querier{tx, s}); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

func (s *Saver) readTx(ctx context.Context, fn func(q querier) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer tx.Rollback()
	return fn(querier{tx, s})
}

// Put implements checkpoint.Saver.
func (s *Saver) Put(ctx context.Context, st checkpoint.Step) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkpoint.ValidateStep(&st); err != nil {
		return err
	}
	var put *tip
	err := s.writeTx(ctx, func(q querier) error {
		rows, err := q.stmt(ctx, "selfparent").QueryContext(ctx, st.ThreadID, st.NS, st.ID, st.ParentID)
		if err != nil {
			return err
		}
		var raw []byte
		var next int64
		stored := false
		for rows.Next() {
			var id sql.NullString
			var val any
			if err := rows.Scan(&id, &val); err != nil {
				rows.Close()
				return err
			}
			switch {
			case !id.Valid:
				n, ok := val.(int64)
				if !ok {
					rows.Close()
					return fmt.Errorf("next message number of thread %q namespace %q: unexpected %T", st.ThreadID, st.NS, val)
				}
				next = n
			case id.String == st.ID:
				stored = true
			default:
				raw, _ = val.([]byte)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if stored {
			return nil // already stored: a put is idempotent
		}
		var parent *checkpoint.Record
		var pchain []*checkpoint.Record // the parent's chain when the cache knows it
		var view *checkpoint.View
		if st.ParentID != "" {
			if raw == nil {
				return fmt.Errorf("parent of %q: %w: thread %q namespace %q checkpoint %q", st.ID, checkpoint.ErrNotFound, st.ThreadID, st.NS, st.ParentID)
			}
			if t := s.tips.get(st.ThreadID, st.NS); t != nil && t.rec.ID == st.ParentID && bytes.Equal(t.raw, raw) {
				parent, pchain = t.rec, t.chain
			} else if parent, err = checkpoint.Decode(raw); err != nil {
				return fmt.Errorf("parent of %q: %w", st.ID, err)
			}
			if checkpoint.NeedsView(parent, s.every) {
				if pchain == nil {
					if pchain, err = checkpoint.Chain(ctx, parent, q.loader(st.ThreadID, st.NS, "")); err != nil {
						return err
					}
				}
				v := checkpoint.ViewOf(pchain)
				view = &v
			}
		}
		b, err := checkpoint.Build(&st, parent, view, next, s.every)
		if err != nil {
			return err
		}
		newRaw, err := q.insert(ctx, b.Record, b.Messages, b.Blobs, b.Record.DeltaRefs())
		if err != nil {
			return err
		}
		put = &tip{raw: newRaw, rec: b.Record}
		switch {
		case b.Record.Snapshot != nil:
			put.chain = []*checkpoint.Record{b.Record}
		case pchain != nil:
			put.chain = append([]*checkpoint.Record{b.Record}, pchain...)
		}
		if b.Record.Snapshot != nil {
			return q.pack(ctx, st.ThreadID, st.NS)
		}
		return nil
	})
	if err == nil && put != nil {
		s.tips.set(st.ThreadID, st.NS, put)
	}
	return err
}

// insert stores a record with its messages, contents and the references
// given (see checkpoint.Record.DeltaRefs), and returns the record's stored
// bytes.
func (q querier) insert(ctx context.Context, r *checkpoint.Record, msgs [][]byte, blobs map[string][]byte, refs []string) ([]byte, error) {
	raw, err := checkpoint.Encode(r)
	if err != nil {
		return nil, err
	}
	if _, err := q.stmt(ctx, "insertcp").ExecContext(ctx, r.ThreadID, r.NS, r.ID, r.Title, raw); err != nil {
		return nil, err
	}
	if len(msgs) > 0 {
		if _, err := q.stmt(ctx, "insertchunk").ExecContext(ctx, r.ThreadID, r.NS, r.Messages.From, r.Messages.To, 0, checkpoint.AppendChunk(nil, msgs...)); err != nil {
			return nil, err
		}
	}
	for h, c := range blobs {
		if _, err := q.stmt(ctx, "insertblob").ExecContext(ctx, h, c); err != nil {
			return nil, err
		}
	}
	for _, h := range refs {
		if _, err := q.stmt(ctx, "insertref").ExecContext(ctx, r.ThreadID, r.NS, r.ID, h); err != nil {
			return nil, err
		}
	}
	return raw, nil
}

// PutWrite implements checkpoint.Saver.
func (s *Saver) PutWrite(ctx context.Context, ref checkpoint.Ref, w checkpoint.Write) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkpoint.ValidateWrite(ref, &w); err != nil {
		return err
	}
	if w.Kind == "" {
		w.Kind = checkpoint.KindResult
	}
	data, err := checkpoint.EncodeWrite(w)
	if err != nil {
		return err
	}
	// One statement is its own transaction: no BEGIN and COMMIT to send.
	res, err := s.stmts["putwrite"].ExecContext(ctx, ref.ThreadID, ref.NS, ref.ID, w.CallID, w.Kind, data)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return fmt.Errorf("%w: checkpoint %q in thread %q", checkpoint.ErrNotFound, ref.ID, ref.ThreadID)
	}
	return nil
}

// Get implements checkpoint.Saver.
func (s *Saver) Get(ctx context.Context, ref checkpoint.Ref) (*checkpoint.Checkpoint, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := checkpoint.ValidateRef(ref, false); err != nil {
		return nil, err
	}
	var out *checkpoint.Checkpoint
	err := s.readTx(ctx, func(q querier) error {
		var rec *checkpoint.Record
		var err error
		if ref.ID == "" {
			rec, err = q.record(ctx, "r:latest", ref.ThreadID, ref.NS)
		} else {
			rec, err = q.record(ctx, "r:record", ref.ThreadID, ref.NS, ref.ID)
		}
		if err != nil {
			return err
		}
		chain, err := checkpoint.Chain(ctx, rec, q.recentLoader(ref.ThreadID, ref.NS, rec.ID, s.every))
		if err != nil {
			return err
		}
		v := checkpoint.ViewOf(chain)
		msgs, err := q.messages(ctx, ref.ThreadID, ref.NS, v.Messages)
		if err != nil {
			return fmt.Errorf("checkpoint %q: %w", rec.ID, err)
		}
		blobs := map[string][]byte{}
		for _, f := range v.Files {
			if _, ok := blobs[f.Hash]; ok {
				continue
			}
			var data []byte
			err := q.stmt(ctx, "r:blob").QueryRowContext(ctx, f.Hash).Scan(&data)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return err
			}
			if err == nil {
				blobs[f.Hash] = data
			}
		}
		c, err := checkpoint.AssembleMessages(rec, v, msgs, blobs)
		if err != nil {
			return err
		}
		rows, err := q.stmt(ctx, "r:writes").QueryContext(ctx, ref.ThreadID, ref.NS, rec.ID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var data []byte
			if err := rows.Scan(&data); err != nil {
				return err
			}
			w, err := checkpoint.DecodeWrite(data)
			if err != nil {
				return err
			}
			c.Pending = append(c.Pending, w)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		out = c
		return nil
	})
	return out, err
}

// List implements checkpoint.Saver.
func (s *Saver) List(ctx context.Context, opts checkpoint.ListOptions) ([]checkpoint.Checkpoint, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := checkpoint.ValidateThreadID(opts.ThreadID); err != nil {
		return nil, err
	}
	var out []checkpoint.Checkpoint
	err := s.readTx(ctx, func(q querier) error {
		query := `SELECT record FROM checkpoints WHERE thread = ?`
		args := []any{opts.ThreadID}
		if !opts.AllNamespaces {
			query += ` AND ns = ?`
			args = append(args, opts.NS)
		}
		if opts.Before != "" {
			var seq sql.NullInt64
			if err := q.stmt(ctx, "r:seqof").QueryRowContext(ctx, opts.ThreadID, opts.Before).Scan(&seq); err != nil {
				return err
			}
			if !seq.Valid {
				return fmt.Errorf("%w: checkpoint %q in thread %q", checkpoint.ErrNotFound, opts.Before, opts.ThreadID)
			}
			query += ` AND seq < ?`
			args = append(args, seq.Int64)
		}
		query += ` ORDER BY seq DESC`
		if opts.Limit > 0 && len(opts.Metadata) == 0 {
			query += fmt.Sprintf(` LIMIT %d`, opts.Limit)
		}
		rows, err := q.tx.QueryContext(ctx, query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var raw []byte
			if err := rows.Scan(&raw); err != nil {
				return err
			}
			r, err := checkpoint.Decode(raw)
			if err != nil {
				return err
			}
			if !checkpoint.MatchMetadata(r.Metadata, opts.Metadata) {
				continue
			}
			out = append(out, *checkpoint.Header(r))
			if opts.Limit > 0 && len(out) >= opts.Limit {
				break
			}
		}
		return rows.Err()
	})
	return out, err
}

// DeleteThread implements checkpoint.Saver.
func (s *Saver) DeleteThread(ctx context.Context, threadID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkpoint.ValidateThreadID(threadID); err != nil {
		return err
	}
	defer s.tips.forget(threadID)
	return s.writeTx(ctx, func(q querier) error {
		for _, table := range []string{"checkpoints", "chunks", "refs", "writes", "leases"} {
			if _, err := q.tx.ExecContext(ctx, `DELETE FROM `+table+` WHERE thread = ?`, threadID); err != nil {
				return err
			}
		}
		return gcBlobs(ctx, q)
	})
}

func gcBlobs(ctx context.Context, q querier) error {
	_, err := q.tx.ExecContext(ctx, `DELETE FROM blobs WHERE NOT EXISTS (SELECT 1 FROM refs WHERE refs.hash = blobs.hash)`)
	return err
}

type row struct {
	seq int64
	rec *checkpoint.Record
}

func (q querier) all(ctx context.Context, thread string) ([]row, error) {
	rows, err := q.tx.QueryContext(ctx, `SELECT seq, record FROM checkpoints WHERE thread = ? ORDER BY seq`, thread)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []row
	for rows.Next() {
		var r row
		var raw []byte
		if err := rows.Scan(&r.seq, &raw); err != nil {
			return nil, err
		}
		if r.rec, err = checkpoint.Decode(raw); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

func recsOf(rows []row) []*checkpoint.Record {
	out := make([]*checkpoint.Record, len(rows))
	for i, r := range rows {
		out[i] = r.rec
	}
	return out
}

// CopyThread implements checkpoint.Saver.
func (s *Saver) CopyThread(ctx context.Context, src checkpoint.Ref, dst string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkpoint.ValidateRef(src, false); err != nil {
		return err
	}
	if err := checkpoint.ValidateThreadID(dst); err != nil {
		return err
	}
	defer s.tips.forget(dst)
	return s.writeTx(ctx, func(q querier) error {
		rows, err := q.all(ctx, src.ThreadID)
		if err != nil {
			return err
		}
		keep, err := checkpoint.PlanCopy(recsOf(rows), src)
		if err != nil {
			return err
		}
		var n int
		if err := q.tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM checkpoints WHERE thread = ?`, dst).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return fmt.Errorf("%w: %q", checkpoint.ErrThreadExists, dst)
		}
		need := map[string][]checkpoint.Range{}
		for i, r := range rows {
			if !keep[i] {
				continue
			}
			rec := *r.rec
			rec.ThreadID = dst
			if _, err := q.insert(ctx, &rec, nil, nil, rec.Refs()); err != nil {
				return err
			}
			if _, err := q.tx.ExecContext(ctx, `INSERT INTO writes (thread, ns, cp, call_id, kind, data)
				SELECT ?, ns, cp, call_id, kind, data FROM writes WHERE thread = ? AND ns = ? AND cp = ?`,
				dst, src.ThreadID, rec.NS, rec.ID); err != nil {
				return err
			}
			need[rec.NS] = append(need[rec.NS], rec.Messages)
			if rec.Snapshot != nil {
				need[rec.NS] = append(need[rec.NS], rec.Snapshot.Messages...)
			}
		}
		for ns, rgs := range need {
			if err := q.keepMessages(ctx, src.ThreadID, ns, checkpoint.MergeRanges(rgs), dst); err != nil {
				return err
			}
		}
		return nil
	})
}

// Prune implements checkpoint.Saver.
func (s *Saver) Prune(ctx context.Context, threadID string, opts checkpoint.PruneOptions) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkpoint.ValidateThreadID(threadID); err != nil {
		return err
	}
	defer s.tips.forget(threadID)
	return s.writeTx(ctx, func(q querier) error {
		rows, err := q.all(ctx, threadID)
		if err != nil {
			return err
		}
		plan, err := checkpoint.PlanPrune(ctx, recsOf(rows), opts)
		if err != nil {
			return fmt.Errorf("prune thread %q: %w", threadID, err)
		}
		for i, r := range rows {
			if plan.Drop[i] {
				for _, table := range []string{"checkpoints", "refs", "writes"} {
					col := "cp"
					if table == "checkpoints" {
						col = "id"
					}
					if _, err := q.tx.ExecContext(ctx, `DELETE FROM `+table+` WHERE thread = ? AND ns = ? AND `+col+` = ?`, threadID, r.rec.NS, r.rec.ID); err != nil {
						return err
					}
				}
				continue
			}
			kept := r.rec
			if nr := plan.Rewrite[i]; nr != nil {
				raw, err := checkpoint.Encode(nr)
				if err != nil {
					return err
				}
				if _, err := q.tx.ExecContext(ctx, `UPDATE checkpoints SET record = ? WHERE seq = ?`, raw, r.seq); err != nil {
					return err
				}
				kept = nr
			}
			// Puts store only a record's own references; the records that
			// brought a survivor's files in may be going, so it now
			// refers to all of them itself.
			for _, h := range kept.Refs() {
				if _, err := q.stmt(ctx, "insertref").ExecContext(ctx, threadID, kept.NS, kept.ID, h); err != nil {
					return err
				}
			}
		}
		// Drop the messages no survivor reaches.
		nsRows, err := q.tx.QueryContext(ctx, `SELECT DISTINCT ns FROM chunks WHERE thread = ?`, threadID)
		if err != nil {
			return err
		}
		var nss []string
		for nsRows.Next() {
			var ns string
			if err := nsRows.Scan(&ns); err != nil {
				nsRows.Close()
				return err
			}
			nss = append(nss, ns)
		}
		nsRows.Close()
		for _, ns := range nss {
			if err := q.keepMessages(ctx, threadID, ns, plan.Keep[ns], ""); err != nil {
				return err
			}
		}
		return gcBlobs(ctx, q)
	})
}
