package server

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/deepagents-go/deepagents/checkpoint/sqlite"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
)

// callTimeout bounds every statement of a SQLStore.
const callTimeout = 30 * time.Second

// SQLStore is a Store in SQLite or Postgres. Its tables (server_threads,
// server_runs, server_events) sit beside the checkpoint saver's and are
// created by OpenSQLStore when missing.
type SQLStore struct {
	db *sql.DB
	pg bool

	// SQLite: ckpt is a second connection that checkpoints the WAL when
	// the writer kicks it, walFrames the WAL's length it last saw.
	ckpt        *sql.DB
	kick        chan struct{}
	walFrames   atomic.Int64
	ckptStopped chan struct{}
	// restartFrames is walRestartFrames when the store opened (tests
	// lower it on their own store).
	restartFrames atomic.Int64

	appends   chan appendReq
	inserts   [len(insertSizes)]*sql.Stmt // prepared by prepareInserts
	args      []any                       // the writer's, reused
	closed    chan struct{}               // closed by Close
	stopped   chan struct{}               // closed when the writer has stopped
	closeOnce sync.Once
}

// OpenSQLStore opens the store: kind "sqlite" with a file path, or
// "postgres" with a connection string.
func OpenSQLStore(ctx context.Context, kind, dsn string) (*SQLStore, error) {
	var s SQLStore
	s.restartFrames.Store(walRestartFrames)
	var err error
	switch kind {
	case "sqlite":
		// Opened as the thread database is (its file, usually). The writer
		// never checkpoints the WAL on its own (a checkpoint syncs and
		// copies pages while every stream waits for the next commit): a
		// second connection does it in the background.
		s.db, err = sqlite.OpenDB(dsn, sqlite.DBOptions{BusyTimeout: 10 * time.Second, ManualCheckpoints: true})
		if err == nil {
			// One writer: SQLite serialises writes anyway, and a single
			// connection keeps busy errors away.
			s.db.SetMaxOpenConns(1)
			s.ckpt, err = sqlite.OpenDB(dsn, sqlite.DBOptions{BusyTimeout: 10 * time.Second})
		}
		if err == nil {
			s.ckpt.SetMaxOpenConns(1)
		}
	case "postgres":
		s.db, err = sql.Open("pgx", dsn)
		s.pg = true
	default:
		return nil, fmt.Errorf("server store: unknown database kind %q (sqlite or postgres)", kind)
	}
	if err != nil {
		if s.db != nil {
			s.db.Close()
		}
		return nil, fmt.Errorf("server store: %w", err)
	}
	if err := s.migrate(ctx); err != nil {
		s.closeDBs()
		return nil, fmt.Errorf("server store: creating tables: %w", err)
	}
	if err := s.prepareInserts(ctx); err != nil {
		s.closeDBs()
		return nil, fmt.Errorf("server store: preparing statements: %w", err)
	}
	s.appends, s.closed, s.stopped = make(chan appendReq), make(chan struct{}), make(chan struct{})
	s.kick, s.ckptStopped = make(chan struct{}, 1), make(chan struct{})
	go s.writer()
	if s.ckpt != nil {
		go s.checkpointer()
	} else {
		close(s.ckptStopped)
	}
	return &s, nil
}

func (s *SQLStore) closeDBs() error {
	err := s.db.Close()
	if s.ckpt != nil {
		err = errors.Join(err, s.ckpt.Close())
	}
	return err
}

func (s *SQLStore) migrate(ctx context.Context) error {
	blob := "BLOB"
	if s.pg {
		blob = "BYTEA"
	}
	for _, q := range []string{
		`CREATE TABLE IF NOT EXISTS server_threads (
			thread_id TEXT PRIMARY KEY, created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL,
			metadata TEXT NOT NULL, status TEXT NOT NULL, error TEXT NOT NULL DEFAULT '')`,
		`CREATE TABLE IF NOT EXISTS server_runs (
			run_id TEXT PRIMARY KEY, thread_id TEXT NOT NULL, seq BIGINT NOT NULL, record TEXT NOT NULL)`,
		`CREATE INDEX IF NOT EXISTS server_runs_thread ON server_runs (thread_id, seq)`,
		`CREATE TABLE IF NOT EXISTS server_events (
			run_id TEXT NOT NULL, seq BIGINT NOT NULL, event TEXT NOT NULL, data ` + blob + ` NOT NULL,
			PRIMARY KEY (run_id, seq))`,
	} {
		if _, err := s.exec(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// q rewrites ? placeholders as $n for Postgres.
func (s *SQLStore) q(query string) string {
	if !s.pg {
		return query
	}
	var b strings.Builder
	n := 0
	for _, c := range query {
		if c == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}

func (s *SQLStore) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	return s.db.ExecContext(ctx, s.q(query), args...)
}

func nanos(t time.Time) int64     { return t.UnixNano() }
func fromNanos(n int64) time.Time { return time.Unix(0, n).UTC() }

// CreateThread implements Store.
func (s *SQLStore) CreateThread(ctx context.Context, t ThreadRecord) error {
	meta, err := json.Marshal(orEmpty(t.Metadata))
	if err != nil {
		return err
	}
	res, err := s.exec(ctx, `INSERT INTO server_threads (thread_id, created_at, updated_at, metadata, status, error)
		VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (thread_id) DO NOTHING`,
		t.ID, nanos(t.CreatedAt), nanos(t.UpdatedAt), string(meta), t.Status, t.Error)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrExists
	}
	return nil
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

const threadCols = `thread_id, created_at, updated_at, metadata, status, error`

func scanThread(sc interface{ Scan(...any) error }) (ThreadRecord, error) {
	var t ThreadRecord
	var c, u int64
	var meta string
	if err := sc.Scan(&t.ID, &c, &u, &meta, &t.Status, &t.Error); err != nil {
		return t, err
	}
	t.CreatedAt, t.UpdatedAt = fromNanos(c), fromNanos(u)
	if err := json.Unmarshal([]byte(meta), &t.Metadata); err != nil {
		return t, fmt.Errorf("thread %q: metadata: %w", t.ID, err)
	}
	return t, nil
}

// GetThread implements Store.
func (s *SQLStore) GetThread(ctx context.Context, id string) (ThreadRecord, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	t, err := scanThread(s.db.QueryRowContext(ctx, s.q(`SELECT `+threadCols+` FROM server_threads WHERE thread_id = ?`), id))
	if errors.Is(err, sql.ErrNoRows) {
		return t, ErrNotFound
	}
	return t, err
}

// UpdateThread implements Store.
func (s *SQLStore) UpdateThread(ctx context.Context, t ThreadRecord) error {
	meta, err := json.Marshal(orEmpty(t.Metadata))
	if err != nil {
		return err
	}
	res, err := s.exec(ctx, `UPDATE server_threads SET updated_at = ?, metadata = ?, status = ?, error = ? WHERE thread_id = ?`,
		nanos(t.UpdatedAt), string(meta), t.Status, t.Error, t.ID)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

// DeleteThread implements Store.
func (s *SQLStore) DeleteThread(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, s.q(`DELETE FROM server_threads WHERE thread_id = ?`), id)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM server_events WHERE run_id IN (SELECT run_id FROM server_runs WHERE thread_id = ?)`), id); err != nil {
		return err
	}
	// A fleet's logs of the thread's runs and of the thread.
	if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM server_events WHERE run_id IN (SELECT '`+runInfoLog("")+`' || run_id FROM server_runs WHERE thread_id = ?)`), id); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM server_events WHERE run_id IN (SELECT '`+RunInputLog("")+`' || run_id FROM server_runs WHERE thread_id = ?)`), id); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM server_events WHERE run_id = ?`), ThreadLog(id)); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM server_runs WHERE thread_id = ?`), id); err != nil {
		return err
	}
	return tx.Commit()
}

// SearchThreads filters by status in SQL and by metadata in Go (metadata
// values are arbitrary JSON, compared as JSON); without a metadata filter
// the page is cut and counted in SQL.
func (s *SQLStore) SearchThreads(ctx context.Context, q ThreadQuery) ([]ThreadRecord, int, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	where := ""
	var args []any
	if q.Status != "" {
		where = ` WHERE status = ?`
		args = append(args, q.Status)
	}
	if len(q.Metadata) == 0 {
		return s.searchPage(ctx, q, where, args)
	}
	query := `SELECT ` + threadCols + ` FROM server_threads` + where
	rows, err := s.db.QueryContext(ctx, s.q(query), args...)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var all []ThreadRecord
	for rows.Next() {
		t, err := scanThread(rows)
		if err != nil {
			return nil, 0, err
		}
		if matchThread(t, q) {
			all = append(all, t)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	sortThreads(all, q.SortBy, q.SortOrder)
	return page(all, q.Limit, q.Offset), len(all), nil
}

// searchPage reads one page of threads in SQL, in the order sortThreads
// gives, and counts them all.
func (s *SQLStore) searchPage(ctx context.Context, q ThreadQuery, where string, args []any) ([]ThreadRecord, int, error) {
	var total int
	if err := s.db.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM server_threads`+where), args...).Scan(&total); err != nil {
		return nil, 0, err
	}
	col := "updated_at"
	switch q.SortBy {
	case "created_at", "thread_id":
		col = q.SortBy
	}
	dir := "DESC"
	if q.SortOrder == "asc" {
		dir = "ASC"
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 1 << 30
	}
	query := `SELECT ` + threadCols + ` FROM server_threads` + where + ` ORDER BY ` + col + ` ` + dir + `, thread_id ` + dir + ` LIMIT ? OFFSET ?`
	rows, err := s.db.QueryContext(ctx, s.q(query), append(args, limit, q.Offset)...)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	out := []ThreadRecord{}
	for rows.Next() {
		t, err := scanThread(rows)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, t)
	}
	return out, total, rows.Err()
}

// PutRun implements Store.
func (s *SQLStore) PutRun(ctx context.Context, r RunRecord) error {
	rec, err := json.Marshal(storedRun{Run: r.Run, Error: r.Error})
	if err != nil {
		return err
	}
	_, err = s.exec(ctx, `INSERT INTO server_runs (run_id, thread_id, seq, record)
		VALUES (?, ?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM server_runs), ?)
		ON CONFLICT (run_id) DO UPDATE SET record = excluded.record`, r.RunID, r.ThreadID, string(rec))
	return err
}

// storedRun is a run as saved: the API's fields and the error.
type storedRun struct {
	Run
	Error string `json:"error,omitempty"`
}

func (s *SQLStore) scanRun(sc interface{ Scan(...any) error }) (RunRecord, error) {
	var r RunRecord
	var rec string
	if err := sc.Scan(&r.Seq, &rec); err != nil {
		return r, err
	}
	var sr storedRun
	if err := json.Unmarshal([]byte(rec), &sr); err != nil {
		return r, fmt.Errorf("a stored run: %w", err)
	}
	r.Run = sr.Run
	r.Error = sr.Error
	return r, nil
}

// GetRun implements Store.
func (s *SQLStore) GetRun(ctx context.Context, threadID, runID string) (RunRecord, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	r, err := s.scanRun(s.db.QueryRowContext(ctx, s.q(`SELECT seq, record FROM server_runs WHERE run_id = ? AND thread_id = ?`), runID, threadID))
	if errors.Is(err, sql.ErrNoRows) {
		return r, ErrNotFound
	}
	return r, err
}

// ListRuns implements Store.
func (s *SQLStore) ListRuns(ctx context.Context, threadID string, limit, offset int) ([]RunRecord, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if limit <= 0 {
		limit = 1 << 30
	}
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT seq, record FROM server_runs WHERE thread_id = ? ORDER BY seq DESC LIMIT ? OFFSET ?`), threadID, limit, offset)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []RunRecord
	for rows.Next() {
		r, err := s.scanRun(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// appendReq is one AppendEvents call waiting for the writer.
type appendReq struct {
	runID string
	evs   []StoredEvent
	done  chan error
}

// maxBatch caps the events the writer commits in one transaction.
const maxBatch = 2000

// AppendEvents stores events and returns once they are committed. Calls
// from concurrent runs are committed together (a group commit), so that
// many streams do not queue behind one transaction each.
func (s *SQLStore) AppendEvents(ctx context.Context, runID string, evs []StoredEvent) error {
	req := appendReq{runID: runID, evs: evs, done: make(chan error, 1)}
	select {
	case s.appends <- req:
	case <-s.closed:
		return errors.New("server store: closed")
	case <-ctx.Done():
		return ctx.Err()
	}
	return <-req.done
}

// writer commits queued appends, as many as are waiting in one transaction.
func (s *SQLStore) writer() {
	defer close(s.stopped)
	gap := time.NewTimer(0)
	defer gap.Stop()
	var last time.Time // when the last commit started
	var batch []appendReq
	for {
		select {
		case r := <-s.appends:
			batch = append(batch, r)
		case <-s.closed:
			return
		}
		n := len(batch[0].evs)
		// A commit has a fixed cost (two WAL writes, locks, a statement
		// each): under a steady trickle of appends, commits closer together
		// than commitGap would cost more CPU than the delay they save.
		if wait := commitGap - time.Since(last); wait > 0 {
			gap.Reset(wait)
		collect:
			for n < maxBatch {
				select {
				case r := <-s.appends:
					batch = append(batch, r)
					n += len(r.evs)
				case <-gap.C:
					break collect
				case <-s.closed:
					break collect
				}
			}
		}
	more:
		for n < maxBatch {
			select {
			case r := <-s.appends:
				batch = append(batch, r)
				n += len(r.evs)
			default:
				break more
			}
		}
		last = time.Now()
		err := s.commit(batch)
		for _, r := range batch {
			r.done <- err
		}
		clear(batch)
		batch = batch[:0]
		if s.ckpt != nil {
			s.afterCommit()
		}
	}
}

// commitGap is the least time from one commit's start to the next's.
const commitGap = 2 * time.Millisecond

// insertSizes are the row counts of the prepared INSERT statements, largest
// first: a batch is split into as few statements of these sizes as fit.
var insertSizes = [...]int{128, 32, 8, 1}

// prepareInserts prepares the event INSERT statements, one per size of
// insertSizes, so that commits do not parse SQL.
func (s *SQLStore) prepareInserts(ctx context.Context) error {
	for i, n := range insertSizes {
		// A retried append may repeat an event: the first one stays.
		// SQLite's OR IGNORE also spares each statement a journal of its
		// own (it can no longer fail halfway through its rows).
		values := strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?), ", n), ", ")
		q := `INSERT OR IGNORE INTO server_events (run_id, seq, event, data) VALUES ` + values
		if s.pg {
			q = `INSERT INTO server_events (run_id, seq, event, data) VALUES ` + values + ` ON CONFLICT (run_id, seq) DO NOTHING`
		}
		st, err := s.db.PrepareContext(ctx, s.q(q))
		if err != nil {
			return err
		}
		s.inserts[i] = st
	}
	return nil
}

func (s *SQLStore) commit(batch []appendReq) error {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	args := s.args[:0]
	for _, r := range batch {
		for _, e := range r.evs {
			args = append(args, r.runID, e.Seq, e.Event, e.Data)
		}
	}
	all := args
	defer func() {
		clear(all) // let the events' data go
		s.args = all[:0]
		if cap(all) > 8*maxBatch {
			s.args = nil // one run's long backlog: do not keep its room
		}
	}()
	if len(args) == 0 {
		return nil
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for i, n := range insertSizes {
		var st *sql.Stmt
		for len(args) >= 4*n {
			if st == nil {
				st = tx.StmtContext(ctx, s.inserts[i])
			}
			if _, err := st.ExecContext(ctx, args[:4*n]...); err != nil {
				return err
			}
			args = args[4*n:]
		}
	}
	return tx.Commit()
}

// Events implements Store.
func (s *SQLStore) Events(ctx context.Context, runID string, after int64) ([]StoredEvent, error) {
	return s.EventsPage(ctx, runID, after, -1)
}

// EventsPage implements EventPager (limit < 0: all).
func (s *SQLStore) EventsPage(ctx context.Context, runID string, after int64, limit int) ([]StoredEvent, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	q, args := `SELECT seq, event, data FROM server_events WHERE run_id = ? AND seq > ? ORDER BY seq`, []any{runID, after}
	if limit >= 0 {
		q, args = q+` LIMIT ?`, append(args, limit)
	}
	rows, err := s.db.QueryContext(ctx, s.q(q), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []StoredEvent
	for rows.Next() {
		var e StoredEvent
		if err := rows.Scan(&e.Seq, &e.Event, &e.Data); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// Checkpoint pacing of an SQLite store's WAL (variables for tests).
var (
	// ckptPause is the least time between two background checkpoints: each
	// syncs the WAL and the database file, so fewer and larger ones cost
	// less.
	ckptPause = 50 * time.Millisecond
	// walRestartFrames is the WAL length (in pages) past which the writer
	// finishes a checkpoint itself, so that the WAL starts over instead of
	// growing while commits never pause (8000 pages of 4 KiB: 32 MiB).
	walRestartFrames int64 = 8000
)

// afterCommit wakes the checkpointer and, when the WAL has grown long,
// checkpoints what the background checkpoints left: with every frame
// copied, the next transaction starts the WAL from its beginning. It does
// so at most once per background checkpoint (which sets walFrames again),
// so that other writers of the file (a checkpoint saver) cannot make it
// sync after every commit.
func (s *SQLStore) afterCommit() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
	if s.walFrames.Load() < s.restartFrames.Load() {
		return
	}
	s.walFrames.Store(0)
	_, _ = walCheckpoint(s.db)
}

// walCheckpoint runs a passive checkpoint (it never waits for the writer) and
// returns the WAL's length in pages.
func walCheckpoint(db *sql.DB) (log int64, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	var busy, done int64
	err = db.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &log, &done)
	if err == nil && busy != 0 {
		err = errors.New("checkpoint busy")
	}
	return log, err
}

// checkpointer copies the WAL into the database after commits, at most
// once per ckptPause, on its own connection, while the writer goes on.
func (s *SQLStore) checkpointer() {
	defer close(s.ckptStopped)
	pause := time.NewTimer(0)
	defer pause.Stop()
	for {
		select {
		case <-s.kick:
		case <-s.closed:
			return
		}
		if log, err := walCheckpoint(s.ckpt); err == nil {
			s.walFrames.Store(log)
		}
		pause.Reset(ckptPause)
		select {
		case <-pause.C:
		case <-s.closed:
			return
		}
	}
}

// Close stops the writer and closes the database.
func (s *SQLStore) Close() error {
	s.closeOnce.Do(func() { close(s.closed) })
	<-s.stopped
	<-s.ckptStopped
	return s.closeDBs()
}

// unfinishedRuns lists the runs stored pending or running. The records are
// JSON: the text match narrows them down, the decoded status decides (a
// run's metadata may hold the same text).
func (s *SQLStore) unfinishedRuns(ctx context.Context) ([]RunRecord, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT seq, record FROM server_runs WHERE record LIKE ? OR record LIKE ? ORDER BY seq`),
		`%"status":"`+runPending+`"%`, `%"status":"`+runRunning+`"%`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []RunRecord
	for rows.Next() {
		r, err := s.scanRun(rows)
		if err != nil {
			return nil, err
		}
		if r.Status == runPending || r.Status == runRunning {
			out = append(out, r)
		}
	}
	return out, rows.Err()
}

// lastEvent returns a run's last stored event.
func (s *SQLStore) lastEvent(ctx context.Context, runID string) (StoredEvent, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	var e StoredEvent
	err := s.db.QueryRowContext(ctx, s.q(`SELECT seq, event, data FROM server_events WHERE run_id = ? ORDER BY seq DESC LIMIT 1`), runID).Scan(&e.Seq, &e.Event, &e.Data)
	if errors.Is(err, sql.ErrNoRows) {
		return StoredEvent{}, false, nil
	}
	return e, err == nil, err
}
