// Package sqlite is a checkpoint.Saver on an embedded SQLite database (the
// pure-Go modernc.org/sqlite driver, no cgo), the default store for threads.
//
// The database runs in WAL mode with a busy timeout, so readers never wait
// for the writer and several processes may share one file. All writes go
// through one held connection, each put or write in one transaction (puts
// and writes that arrive together share one, see group.go); reads use a
// small pool of their own. The schema is versioned (PRAGMA user_version)
// and migrated forward on Open.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/checkpoint/internal/engine"
	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Options tune a Saver. The zero value is ready to use.
type Options struct {
	// SnapshotEvery is the number of steps between snapshots
	// (checkpoint.DefaultSnapshotEvery when 0).
	SnapshotEvery int
	// BusyTimeout is how long a statement waits for another process's
	// lock (5 s when 0).
	BusyTimeout time.Duration
	// Readers is the size of the read pool (4 when 0).
	Readers int
	// Synchronous is SQLite's synchronous setting: "NORMAL" (the default),
	// "FULL" or "OFF". The database runs in WAL mode, where under NORMAL
	// a committed put survives the process being killed, and a power cut
	// or a crash of the operating system may lose the last commits but
	// never damages the file; FULL syncs every commit to disk before it
	// returns, so it survives those too, at the cost of a sync per
	// commit. OFF is for throwaway databases.
	Synchronous string
}

// Saver is a checkpoint.Saver on one SQLite file.
type Saver struct {
	w, r *sql.DB
	// wc is the writer's one connection, held for the saver's life. Its
	// transactions are run by hand (see writeTx) under wmu, so that its
	// prepared statements run as they are, without database/sql's
	// per-transaction copies of them.
	wc    *sql.Conn
	wmu   sync.Mutex
	every int
	stmts map[string]*sql.Stmt
	tips  engine.Tips
	group group // puts and writes waiting for the writer (group.go)
	path  string
	// busy is how long a write waits for another connection's write lock
	// (see lockWait).
	busy time.Duration
}

var _ checkpoint.Saver = (*Saver)(nil)

// FileDSN is the data source name (for database/sql with the
// modernc.org/sqlite driver) that opens the SQLite file at path the way
// deepagents opens its databases: statements wait up to busy for another
// connection's lock, commits follow synchronous ("NORMAL", "FULL" or
// "OFF"), temporary tables stay in memory, and the schema is not trusted
// to run functions with side effects (triggers and views a damaged or
// planted file might hold). The path is escaped, so a "?" or "#" in it
// names the file rather than adding parameters. WAL mode is a property of
// the file, set once by whoever creates it (see Open).
func FileDSN(path string, busy time.Duration, synchronous string) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busy.Milliseconds()))
	q.Add("_pragma", "synchronous("+synchronous+")")
	q.Add("_pragma", "temp_store(MEMORY)")
	q.Add("_pragma", "trusted_schema(0)")
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
}

// execPatiently runs the statement q on db, again and again while SQLite
// answers that the database is locked, for up to wait. Switching a new
// file to WAL mode needs a lock that SQLite does not wait for with the
// busy timeout, so two processes opening a new database at once would
// otherwise see one of them fail.
func execPatiently(db *sql.DB, q string, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for pause := time.Millisecond; ; pause = min(2*pause, 20*time.Millisecond) {
		_, err := db.Exec(q)
		if err == nil || !isBusy(err) || time.Now().Add(pause).After(deadline) {
			return err
		}
		time.Sleep(pause)
	}
}

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
	// 3: a put changes one page less: the thread-wide order of checkpoints
	// is read from the rowid (their seq, which grows with every put) through
	// the namespace index instead of an index of its own, and blobs are
	// keyed by their hash alone (no rowid tree beside the key's index).
	{sql: `DROP INDEX checkpoints_by_thread;
	CREATE TABLE blobs3 (
		hash TEXT PRIMARY KEY,
		data BLOB NOT NULL
	) WITHOUT ROWID;
	INSERT INTO blobs3 SELECT hash, data FROM blobs;
	DROP TABLE blobs;
	ALTER TABLE blobs3 RENAME TO blobs;`},
	// 4: the last journal record each saver's commits hold. Releases with
	// this schema kept puts in a journal file beside the database before
	// committing them, and replayed such files when opening it.
	{sql: `CREATE TABLE oplog (
		gen INTEGER PRIMARY KEY,
		seq INTEGER NOT NULL
	);`},
	// 5: no more journal: every put and write is an ordinary transaction
	// (a journal a crash of an earlier release left is refused before
	// this runs; see refuseJournals).
	{sql: `DROP TABLE oplog;`},
	// 6: one row per step. A put keeps its messages in its checkpoint's
	// row (msgs, numbered [seq_from, seq_to)) instead of a chunk row of
	// their own, until a snapshot packs them into chunks (see chunks.go);
	// rows written before keep 0, 0 and no messages there. The chunks
	// table is renamed so that a process of an earlier release that still
	// has the file open fails on its next put instead of numbering messages
	// without those kept in rows (and losing some). Blobs no longer
	// have an index by hash beside their references: only deleting and
	// pruning, which look at every reference anyway, asked for it.
	{sql: `ALTER TABLE checkpoints ADD COLUMN seq_from INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE checkpoints ADD COLUMN seq_to INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE checkpoints ADD COLUMN msgs BLOB;
	DROP INDEX refs_by_hash;
	ALTER TABLE chunks RENAME TO msgchunks;`},
}

// tables are the checkpoint tables the current schema has; Open checks
// that they are all there.
var tables = []string{"checkpoints", "msgchunks", "blobs", "refs", "writes", "leases"}

// SchemaVersion is the schema version this build writes.
var SchemaVersion = len(migrations)

// Open opens (creating if needed) the database at path and migrates it.
// An empty file is a new database. Open reads no file but the database and
// SQLite's own beside it (-wal, -shm): it refuses a database with a journal
// an earlier release left beside it (see refuseJournals), and a file that
// is damaged or not a thread database fails with an error naming it.
func Open(path string, opts Options) (*Saver, error) {
	if path == "" {
		return nil, errors.New("sqlite checkpoint store: no database path given")
	}
	// SQLite says only "unable to open database file" when the directory
	// is missing or not one.
	if dir := filepath.Dir(path); dir != "" {
		if st, err := os.Stat(dir); err != nil {
			return nil, fmt.Errorf("sqlite checkpoint store %s: its directory: %w", path, err)
		} else if !st.IsDir() {
			return nil, fmt.Errorf("sqlite checkpoint store %s: %s is not a directory", path, dir)
		}
	}
	if err := refuseJournals(path); err != nil {
		return nil, err
	}
	if err := checkFiles(path); err != nil {
		return nil, err
	}
	if err := checkNotEmptied(path); err != nil {
		return nil, err
	}
	busy := opts.BusyTimeout
	if busy <= 0 {
		busy = 5 * time.Second
	}
	readers := opts.Readers
	if readers <= 0 {
		readers = 4
	}
	if _, err := synchronous(opts.Synchronous); err != nil {
		return nil, fmt.Errorf("sqlite checkpoint store: synchronous %q is not one of NORMAL, FULL, OFF", opts.Synchronous)
	}
	s := &Saver{every: opts.SnapshotEvery, path: path, busy: busy}
	if s.every <= 0 {
		s.every = checkpoint.DefaultSnapshotEvery
	}
	dbo := DBOptions{BusyTimeout: busy, Synchronous: opts.Synchronous}
	w, err := OpenDB(path, dbo)
	if err != nil {
		return nil, s.openErr(err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	s.w = w
	fail := func(err error) (*Saver, error) {
		s.Close()
		return nil, s.openErr(err)
	}
	if err := s.migrate(context.Background()); err != nil {
		return fail(err)
	}
	if err := s.checkTables(context.Background()); err != nil {
		return fail(err)
	}
	if s.wc, err = w.Conn(context.Background()); err != nil {
		return fail(err)
	}
	// The writer waits for the write lock in lockWait, not in SQLite's
	// busy handler. A write-ahead log that grew past what SQLite's
	// checkpoints keep it to (a long reader held them back) is cut back
	// to that size at the next checkpoint instead of staying large.
	for _, p := range []string{"PRAGMA busy_timeout = 0",
		fmt.Sprintf("PRAGMA journal_size_limit = %d", walPages*walFrame)} {
		if _, err := s.wc.ExecContext(context.Background(), p); err != nil {
			return fail(err)
		}
	}
	dbo.ReadOnly = true
	r, err := OpenDB(path, dbo)
	if err != nil {
		return fail(err)
	}
	r.SetMaxOpenConns(readers)
	r.SetMaxIdleConns(readers)
	s.r = r
	if err := s.prepare(); err != nil {
		return fail(err)
	}
	return s, nil
}

// openErr is the error of an Open that failed with err: it names the file,
// and says so when the file is damaged or not an SQLite database.
func (s *Saver) openErr(err error) error {
	err = s.damaged(err)
	var d *damageError
	if errors.As(err, &d) {
		return err
	}
	return fmt.Errorf("open %s: %w", s.path, err)
}

func (s *Saver) migrate(ctx context.Context) error {
	// The version and the tables are read in one statement, so from one
	// snapshot: another process migrating the file at the same time
	// cannot be caught between its tables and its version.
	var v int
	var hasTables bool
	if err := s.w.QueryRowContext(ctx, `SELECT (SELECT user_version FROM pragma_user_version()),
		EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'checkpoints')`).Scan(&v, &hasTables); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if v > len(migrations) {
		return fmt.Errorf("the database has schema version %d; this build knows versions up to %d (upgrade deepagents)", v, len(migrations))
	}
	if v == 0 {
		// A new database, or one that has other tables (the server's, or
		// an application's): the thread tables must not be there yet.
		// When they are, the version was lost, and the tables would be
		// made again over them.
		if hasTables {
			return &damageError{path: s.path, why: "has the thread tables but no schema version: it was changed by something other than deepagents"}
		}
	}
	for i := v; i < len(migrations); i++ {
		tx, err := s.w.BeginTx(ctx, nil) // BEGIN IMMEDIATE: the write lock
		if err != nil {
			return err
		}
		// Another process opening the file at the same time may have
		// migrated it while this one waited for the lock: what it did is
		// not done twice.
		var now int
		if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&now); err != nil {
			tx.Rollback()
			return fmt.Errorf("read schema version: %w", err)
		}
		if now > i {
			tx.Rollback()
			if now > len(migrations) {
				return fmt.Errorf("the database has schema version %d; this build knows versions up to %d (upgrade deepagents)", now, len(migrations))
			}
			i = now - 1
			continue
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
	// row with a NULL id) the namespace's next message number, in one
	// query: past the last chunk and the last checkpoint's messages.
	"selfparent": `SELECT id, record FROM checkpoints WHERE thread = ?1 AND ns = ?2 AND id IN (?3, ?4)
		UNION ALL SELECT NULL, MAX(COALESCE((SELECT seq_to FROM msgchunks WHERE thread = ?1 AND ns = ?2 ORDER BY seq_from DESC LIMIT 1), 0),
			COALESCE((SELECT seq_to FROM checkpoints WHERE thread = ?1 AND ns = ?2 ORDER BY seq DESC LIMIT 1), 0))`,
	"record":   `SELECT record FROM checkpoints WHERE thread = ? AND ns = ? AND id = ?`,
	"insertcp": `INSERT INTO checkpoints (thread, ns, id, title, record, seq_from, seq_to, msgs) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (thread, ns, id) DO NOTHING`,
	// insertcp that also returns the data version (see querier.era).
	"insertcpera": `INSERT INTO checkpoints (thread, ns, id, title, record, seq_from, seq_to, msgs) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (thread, ns, id) DO NOTHING
		RETURNING (SELECT data_version FROM pragma_data_version())`,
	// The namespace's checkpoints, newest first, with the messages those
	// not yet packed hold (see chunks.go).
	"rowchunks":   `SELECT seq, seq_from, seq_to, msgs FROM checkpoints WHERE thread = ? AND ns = ? ORDER BY seq DESC`,
	"r:rowchunks": `SELECT seq, seq_from, seq_to, msgs FROM checkpoints WHERE thread = ? AND ns = ? ORDER BY seq DESC`,
	// Changes only when another connection commits (see querier.era).
	"dataversion": `PRAGMA data_version`,
	"insertchunk": `INSERT INTO msgchunks (thread, ns, seq_from, seq_to, packed, data) VALUES (?, ?, ?, ?, ?, ?)`,
	"clearmsgs": `UPDATE checkpoints SET msgs = NULL WHERE thread = ? AND ns = ? AND seq >= ? AND msgs IS NOT NULL
		AND seq_from >= ? AND seq_to <= ?`,
	"packedend":  `SELECT COALESCE((SELECT seq_to FROM msgchunks WHERE thread = ? AND ns = ? AND packed ORDER BY seq_from DESC LIMIT 1), 0)`,
	"tail":       `SELECT seq_from, seq_to, packed FROM msgchunks WHERE thread = ? AND ns = ? ORDER BY seq_from DESC`,
	"chunkdata":  `SELECT data FROM msgchunks WHERE thread = ? AND ns = ? AND seq_from = ?`,
	"taildata":   `SELECT seq_from, data FROM msgchunks WHERE thread = ? AND ns = ? AND seq_from >= ? ORDER BY seq_from`,
	"insertblob": `INSERT INTO blobs (hash, data) VALUES (?, ?) ON CONFLICT (hash) DO NOTHING`,
	"insertref":  `INSERT INTO refs (thread, ns, cp, hash) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`,
	"putwrite": `INSERT INTO writes (thread, ns, cp, call_id, kind, data)
		SELECT ?1, ?2, ?3, ?4, ?5, ?6 WHERE EXISTS (SELECT 1 FROM checkpoints WHERE thread = ?1 AND ns = ?2 AND id = ?3)
		ON CONFLICT (thread, ns, cp, call_id, kind) DO UPDATE SET data = excluded.data`,
	// putwrite for a checkpoint known to be stored (see PutWrite).
	"putwriteto": `INSERT INTO writes (thread, ns, cp, call_id, kind, data) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (thread, ns, cp, call_id, kind) DO UPDATE SET data = excluded.data`,
	"threadexists": `SELECT EXISTS (SELECT 1 FROM checkpoints WHERE thread = ?)`,
	"leaseget":     `SELECT holder, expires FROM leases WHERE thread = ?`,
	"leaseput": `INSERT INTO leases (thread, holder, expires) VALUES (?, ?, ?)
		ON CONFLICT (thread) DO UPDATE SET holder = excluded.holder, expires = excluded.expires`,
	"leaserenew": `UPDATE leases SET expires = ? WHERE thread = ? AND holder = ?`,
	"leasedel":   `DELETE FROM leases WHERE thread = ? AND holder = ?`,
	"begin":      `BEGIN IMMEDIATE`,
	"commit":     `COMMIT`,
	"rollback":   `ROLLBACK`,
	"r:record":   `SELECT record FROM checkpoints WHERE thread = ? AND ns = ? AND id = ?`,
	// The namespace's ?4 records put at or before checkpoint ?3.
	"r:recent": `SELECT record FROM checkpoints WHERE thread = ?1 AND ns = ?2
		AND seq <= (SELECT seq FROM checkpoints WHERE thread = ?1 AND ns = ?2 AND id = ?3) ORDER BY seq DESC LIMIT ?4`,
	"r:latest": `SELECT record FROM checkpoints WHERE thread = ? AND ns = ? ORDER BY seq DESC LIMIT 1`,
	// The chunks holding [?3, ?4): from the last one starting at or before
	// ?3 (or ?3 itself when none does, so that a gap is seen) to the last
	// one starting before ?4.
	"r:chunks": `SELECT seq_from, seq_to, data FROM msgchunks WHERE thread = ?1 AND ns = ?2 AND seq_from < ?4 AND seq_from >= COALESCE(
		(SELECT MAX(seq_from) FROM msgchunks WHERE thread = ?1 AND ns = ?2 AND seq_from <= ?3), ?3) ORDER BY seq_from`,
	"r:blob":   `SELECT data FROM blobs WHERE hash = ?`,
	"r:writes": `SELECT data FROM writes WHERE thread = ? AND ns = ? AND cp = ? ORDER BY call_id, kind`,
	"r:seqof":  `SELECT MIN(seq) FROM checkpoints WHERE thread = ? AND id = ?`,
}

func (s *Saver) prepare() error {
	s.stmts = map[string]*sql.Stmt{}
	for name, q := range statements {
		var st *sql.Stmt
		var err error
		if strings.HasPrefix(name, "r:") {
			st, err = s.r.Prepare(q)
		} else {
			st, err = s.wc.PrepareContext(context.Background(), q)
		}
		if err != nil {
			return fmt.Errorf("prepare %s: %w", name, err)
		}
		s.stmts[name] = st
	}
	return nil
}

// walPages is how many pages the write-ahead log holds before SQLite
// copies them into the database file (its default wal_autocheckpoint; a
// smaller log costs more CPU per put, as pages written again and again are
// copied more often); walFrame is the size of one page in the log (a
// 4 KiB page and its header).
const (
	walPages = 1000
	walFrame = 4096 + 24
)

// Close closes the database. It first copies the write-ahead log into the
// database file and empties it, so that a closed store is one file of its
// data; when another connection is still reading, the log is left for
// SQLite to copy later.
func (s *Saver) Close() error {
	if s.wc != nil {
		s.wmu.Lock()
		s.wc.ExecContext(context.Background(), "PRAGMA wal_checkpoint(TRUNCATE)")
		s.wmu.Unlock()
	}
	for _, st := range s.stmts {
		st.Close()
	}
	var err error
	if s.r != nil {
		err = s.r.Close()
	}
	if s.wc != nil {
		s.wmu.Lock()
		s.wc.Close()
		s.wmu.Unlock()
	}
	if e := s.w.Close(); e != nil {
		err = e
	}
	return err
}

// querier is a transaction's view of the prepared statements; it gives the
// shared engine its queries (store.go, chunks.go). read marks a
// transaction on the read pool, whose statements are the "r:" ones.
type querier struct {
	tx   execer
	s    *Saver
	read *sql.Tx // the read transaction, or nil for the writer
}

// execNamed runs the writer's prepared statement name.
func (q querier) execNamed(ctx context.Context, name string, args ...any) (sql.Result, error) {
	return q.stmt(ctx, name).ExecContext(ctx, args...)
}

// execSQL runs a writing statement given as SQL text.
func (q querier) execSQL(ctx context.Context, text string, args ...any) (sql.Result, error) {
	return q.tx.ExecContext(ctx, text, args...)
}

// execer is a read transaction or the writer's connection.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func (q querier) stmt(ctx context.Context, name string) *sql.Stmt {
	if q.read != nil {
		return q.read.StmtContext(ctx, q.s.stmts[name])
	}
	return q.s.stmts[name] // prepared on the writer's connection
}

// writeTx runs fn in a write transaction on the writer's connection:
// BEGIN IMMEDIATE (the write lock at once, waiting up to the busy timeout
// for another process), then COMMIT, or ROLLBACK when fn fails.
func (s *Saver) writeTx(ctx context.Context, fn func(q querier) error) error {
	return s.writeTxThen(ctx, fn, nil)
}

// writeTxThen is writeTx that calls then (when not nil) once the
// transaction has committed, still holding the writer: what it records
// about the store (the tips) is then ordered with every other write of
// this saver, which forgets tips inside its own transactions.
func (s *Saver) writeTxThen(ctx context.Context, fn func(q querier) error, then func()) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	// BEGIN and COMMIT are not interrupted by ctx: an interrupted one may
	// still have taken effect, and a transaction left open on the held
	// connection would swallow the next one.
	if err := s.lockWait(func() error {
		_, err := s.stmts["begin"].ExecContext(still(ctx))
		return err
	}); err != nil {
		s.rollback()
		return s.damaged(err)
	}
	if err := fn(querier{tx: s.wc, s: s}); err != nil {
		s.rollback()
		return s.damaged(err)
	}
	if _, err := s.stmts["commit"].ExecContext(still(ctx)); err != nil {
		s.rollback()
		return s.damaged(err)
	}
	if then != nil {
		then()
	}
	return nil
}

// execAlone runs one prepared statement of the writer as a transaction of
// its own (no BEGIN and COMMIT to send), not interrupted once started.
func (s *Saver) execAlone(ctx context.Context, name string, args ...any) (sql.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	var res sql.Result
	err := s.lockWait(func() error {
		var err error
		res, err = s.stmts[name].ExecContext(still(ctx), args...)
		return err
	})
	return res, s.damaged(err)
}

// lockWait runs f, a statement of the writer that takes SQLite's write
// lock (a BEGIN IMMEDIATE, or a write that is its own transaction), again
// every few milliseconds while another connection holds the lock, for up
// to the busy timeout. A statement refused for the lock did nothing, so
// running it again is safe. SQLite's own busy handler sleeps ever longer
// between tries (up to 100 ms): with several processes writing to one
// file, a waiter then keeps losing the lock to writers that hold it only
// briefly, and a run can stall for a second between two steps.
func (s *Saver) lockWait(f func() error) error {
	deadline := time.Now().Add(s.busy)
	for pause := time.Millisecond; ; pause = min(2*pause, 4*time.Millisecond) {
		err := f()
		if err == nil || !isBusy(err) {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waiting %v for the database's write lock: %w", s.busy, err)
		}
		time.Sleep(pause/2 + rand.N(pause)) // jittered, so that waiters spread
	}
}

// rollback ends the writer's transaction, if one is still open.
func (s *Saver) rollback() {
	s.stmts["rollback"].ExecContext(context.Background())
}

// era is the writer connection's data version, read in a write transaction.
// SQLite changes it only when another connection (another process, or
// another Saver on the same file) commits, never for this connection's own
// commits, so while it stays the same the tips this saver recorded are still
// what is stored, and a put continuing from one skips reading its parent.
// A put in a transaction of its own reads it with its insert instead (see
// runOne and querier.InsertEra), one statement less.
func (q querier) era(ctx context.Context) (int64, error) {
	var v int64
	if err := q.stmt(ctx, "dataversion").QueryRowContext(ctx).Scan(&v); err != nil {
		return 0, err
	}
	return v, nil
}

// readTx runs fn in a read transaction on the read pool, which sees what
// is committed.
func (s *Saver) readTx(ctx context.Context, fn func(q querier) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return s.damaged(err)
	}
	defer tx.Rollback()
	return s.damaged(fn(querier{tx: tx, s: s, read: tx}))
}

// Put implements checkpoint.Saver.
func (s *Saver) Put(ctx context.Context, st checkpoint.Step) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkpoint.ValidateStep(&st); err != nil {
		return err
	}
	return s.commit(&op{ctx: ctx, put: true, ns: [2]string{st.ThreadID, st.NS}, run: func(ctx context.Context, q querier, era int64) (func(), error) {
		put, err := engine.Put(ctx, q, &st, s.every, &s.tips, era)
		if err != nil || put == nil {
			return nil, err
		}
		return func() { s.tips.Set(st.ThreadID, st.NS, put) }, nil
	}})
}

// PutWrite implements checkpoint.Saver.
func (s *Saver) PutWrite(ctx context.Context, ref checkpoint.Ref, w checkpoint.Write) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	kind, data, err := engine.WriteRow(ref, w)
	if err != nil {
		return err
	}
	args := []any{ref.ThreadID, ref.NS, ref.ID, w.CallID, kind, data}
	check := func(res sql.Result, err error) error {
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return engine.NotStored(ref)
		}
		return nil
	}
	return s.commit(&op{ctx: ctx,
		run: func(ctx context.Context, q querier, era int64) (func(), error) {
			name := "putwrite"
			if s.tips.Get(ref.ThreadID, ref.NS).Is(ref.ID, era) {
				// The checkpoint is the namespace's last put, in this
				// era: no need to look it up.
				name = "putwriteto"
			}
			return nil, check(q.execNamed(ctx, name, args...))
		},
		// Alone, the statement is its own transaction: no BEGIN and
		// COMMIT to send.
		alone: func(ctx context.Context) error {
			s.wmu.Lock()
			defer s.wmu.Unlock()
			var res sql.Result
			err := s.lockWait(func() error {
				var err error
				res, err = s.stmts["putwrite"].ExecContext(ctx, args...)
				return err
			})
			return s.damaged(check(res, err))
		},
	})
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
		var err error
		out, err = engine.Get(ctx, q, ref, s.every)
		return err
	})
	return out, err
}

// List implements checkpoint.Saver.
func (s *Saver) List(ctx context.Context, opts checkpoint.ListOptions) ([]checkpoint.Checkpoint, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := checkpoint.CheckListOptions(opts); err != nil {
		return nil, err
	}
	var out []checkpoint.Checkpoint
	err := s.readTx(ctx, func(q querier) error {
		var err error
		out, err = engine.List(ctx, q, opts)
		return err
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
	return s.writeTx(ctx, func(q querier) error {
		s.tips.Forget(threadID)
		for _, table := range []string{"checkpoints", "msgchunks", "refs", "writes", "leases"} {
			if _, err := q.tx.ExecContext(ctx, `DELETE FROM `+table+` WHERE thread = ?`, threadID); err != nil {
				return err
			}
		}
		return q.SweepBlobs(ctx)
	})
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
	return s.writeTx(ctx, func(q querier) error {
		s.tips.Forget(dst)
		if err := q.spill(ctx, src.ThreadID); err != nil {
			return err
		}
		return engine.CopyThread(ctx, q, src, dst)
	})
}

// Prune implements checkpoint.Saver.
func (s *Saver) Prune(ctx context.Context, threadID string, opts checkpoint.PruneOptions) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkpoint.CheckPruneOptions(threadID, opts); err != nil {
		return err
	}
	return s.writeTx(ctx, func(q querier) error {
		s.tips.Forget(threadID)
		if err := q.spill(ctx, threadID); err != nil {
			return err
		}
		return engine.Prune(ctx, q, threadID, opts)
	})
}
