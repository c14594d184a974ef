package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/jackc/pgx/v5"
)

// The saver keeps the shared record format of package checkpoint, like the
// in-memory and SQLite savers: one encoded record per checkpoint
// (cp_records), a put's messages as one chunk row keyed by the namespace's
// message numbers (cp_chunks, packed at each snapshot so a long history
// reads back in a few hundred rows), file contents once per hash (cp_blobs)
// with the references of each checkpoint (cp_refs), and pending writes
// (cp_writes).

// blobLock is the advisory lock between writers that reference blobs
// (shared) and the sweep of unreferenced blobs (exclusive), so a blob a
// concurrent put is about to reference is never swept.
const blobLock int64 = 0x6465657061676e74 // "deepagnt"

// maxPack caps the bytes of a pack of chunks.
const maxPack = 1 << 20

// querier is what both the pool and a transaction offer.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// lockKey is the advisory lock of a thread (ns == nil) or of one of its
// namespaces. Puts hold their thread's lock shared and their namespace's
// exclusively, so puts of one namespace (which number its messages) take
// turns; deletes, copies and prunes hold the thread's lock exclusively.
// Every transaction takes thread and namespace locks before blobLock, and
// a copy takes its two threads' locks in key order, so no two wait for each
// other.
func lockKey(thread string, ns *string) int64 {
	h := fnv.New64a()
	h.Write([]byte("deepagents thread\x00" + thread))
	if ns != nil {
		h.Write([]byte("\x00ns\x00" + *ns))
	}
	return int64(h.Sum64())
}

func lockThread(ctx context.Context, tx pgx.Tx, thread string) error {
	_, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", lockKey(thread, nil))
	return err
}

// Put stores a step in one transaction. A checkpoint id already stored in
// the thread's namespace is left as it is.
func (s *Saver) Put(ctx context.Context, st checkpoint.Step) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	if err := checkpoint.ValidateStep(&st); err != nil {
		return err
	}
	every := s.db.opts.SnapshotEvery
	return s.txWrap(ctx, func(ctx context.Context, tx pgx.Tx) error {
		for _, q := range []struct {
			sql string
			key int64
		}{
			{"SELECT pg_advisory_xact_lock_shared($1)", lockKey(st.ThreadID, nil)},
			{"SELECT pg_advisory_xact_lock($1)", lockKey(st.ThreadID, &st.NS)},
			{"SELECT pg_advisory_xact_lock_shared($1)", blobLock},
		} {
			if _, err := tx.Exec(ctx, q.sql, q.key); err != nil {
				return err
			}
		}
		rows, err := tx.Query(ctx, `SELECT id, record FROM cp_records WHERE thread_id = $1 AND ns = $2 AND id = ANY($3)`,
			st.ThreadID, st.NS, []string{st.ID, st.ParentID})
		if err != nil {
			return err
		}
		var raw []byte
		stored := false
		for rows.Next() {
			var id string
			var rec []byte
			if err := rows.Scan(&id, &rec); err != nil {
				rows.Close()
				return err
			}
			if id == st.ID {
				stored = true
			} else {
				raw = rec
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if stored {
			return nil // a put is idempotent
		}
		var parent *checkpoint.Record
		var view *checkpoint.View
		if st.ParentID != "" {
			if raw == nil {
				return fmt.Errorf("%w: parent checkpoint %q of %q in thread %q", checkpoint.ErrNotFound, st.ParentID, st.ID, st.ThreadID)
			}
			if parent, err = checkpoint.Decode(raw); err != nil {
				return fmt.Errorf("parent of %q: %w", st.ID, err)
			}
			if checkpoint.NeedsView(parent, every) {
				chain, err := checkpoint.Chain(ctx, parent, recentLoader(tx, st.ThreadID, st.NS, parent.ID, every))
				if err != nil {
					return err
				}
				v := checkpoint.ViewOf(chain)
				view = &v
			}
		}
		var next int64
		if err := tx.QueryRow(ctx, `SELECT COALESCE((SELECT seq_to FROM cp_chunks WHERE thread_id = $1 AND ns = $2 ORDER BY seq_from DESC LIMIT 1), 0)`,
			st.ThreadID, st.NS).Scan(&next); err != nil {
			return err
		}
		b, err := checkpoint.Build(&st, parent, view, next, every)
		if err != nil {
			return err
		}
		if err := insert(ctx, tx, b.Record, b.Messages, b.Blobs, b.Record.DeltaRefs()); err != nil {
			return err
		}
		if b.Record.Snapshot != nil {
			return pack(ctx, tx, st.ThreadID, st.NS)
		}
		return nil
	})
}

// insert stores a record with its messages (one chunk), contents and the
// references given (see checkpoint.Record.DeltaRefs).
func insert(ctx context.Context, tx pgx.Tx, r *checkpoint.Record, msgs [][]byte, blobs map[string][]byte, refs []string) error {
	raw, err := checkpoint.Encode(r)
	if err != nil {
		return err
	}
	batch := &pgx.Batch{}
	batch.Queue(`INSERT INTO cp_records (thread_id, ns, id, title, record) VALUES ($1, $2, $3, $4, $5)`, r.ThreadID, r.NS, r.ID, r.Title, raw)
	if len(msgs) > 0 {
		batch.Queue(`INSERT INTO cp_chunks (thread_id, ns, seq_from, seq_to, packed, data) VALUES ($1, $2, $3, $4, false, $5)`,
			r.ThreadID, r.NS, r.Messages.From, r.Messages.To, checkpoint.AppendChunk(nil, msgs...))
	}
	// In hash order, so that two puts sharing contents cannot deadlock.
	for _, h := range slices.Sorted(func(yield func(string) bool) {
		for h := range blobs {
			if !yield(h) {
				return
			}
		}
	}) {
		batch.Queue(`INSERT INTO cp_blobs (hash, data) VALUES ($1, $2) ON CONFLICT (hash) DO NOTHING`, h, blobs[h])
	}
	for _, h := range refs {
		batch.Queue(`INSERT INTO cp_refs (thread_id, ns, cp, hash) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`, r.ThreadID, r.NS, r.ID, h)
	}
	return tx.SendBatch(ctx, batch).Close()
}

// recentLoader loads records of (thread, ns) for checkpoint.Chain: the
// namespace's every+1 records put at or before from in one query (a linear
// history's whole chain), then one by one for what that missed.
func recentLoader(q querier, thread, ns, from string, every int) checkpoint.Loader {
	var recent map[string]*checkpoint.Record
	return func(ctx context.Context, id string) (*checkpoint.Record, error) {
		if recent == nil {
			recent = map[string]*checkpoint.Record{}
			rows, err := q.Query(ctx, `SELECT record FROM cp_records WHERE thread_id = $1 AND ns = $2
				AND seq <= (SELECT seq FROM cp_records WHERE thread_id = $1 AND ns = $2 AND id = $3)
				ORDER BY seq DESC LIMIT $4`, thread, ns, from, every+1)
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
		var raw []byte
		err := q.QueryRow(ctx, `SELECT record FROM cp_records WHERE thread_id = $1 AND ns = $2 AND id = $3`, thread, ns, id).Scan(&raw)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, fmt.Errorf("%w: checkpoint %q", checkpoint.ErrNotFound, id)
		}
		if err != nil {
			return nil, err
		}
		return checkpoint.Decode(raw)
	}
}

// pack joins the namespace's unpacked chunks (its last ones: message
// numbers only grow, and a pack takes all unpacked chunks) into packs of
// consecutive numbers; a run of one chunk is only marked packed.
func pack(ctx context.Context, tx pgx.Tx, thread, ns string) error {
	rows, err := tx.Query(ctx, `SELECT seq_from, seq_to, packed FROM cp_chunks WHERE thread_id = $1 AND ns = $2 ORDER BY seq_from DESC`, thread, ns)
	if err != nil {
		return err
	}
	type chunk struct{ from, to int64 }
	var tail []chunk
	for rows.Next() {
		var c chunk
		var packed bool
		if err := rows.Scan(&c.from, &c.to, &packed); err != nil {
			rows.Close()
			return err
		}
		if packed {
			break
		}
		tail = append(tail, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if len(tail) == 0 {
		return nil
	}
	slices.Reverse(tail)
	datas := map[int64][]byte{}
	rows, err = tx.Query(ctx, `SELECT seq_from, data FROM cp_chunks WHERE thread_id = $1 AND ns = $2 AND seq_from >= $3`, thread, ns, tail[0].from)
	if err != nil {
		return err
	}
	for rows.Next() {
		var from int64
		var data []byte
		if err := rows.Scan(&from, &data); err != nil {
			rows.Close()
			return err
		}
		datas[from] = data
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	var runs [][]chunk
	size := 0
	for _, c := range tail {
		n := len(runs)
		if n == 0 || runs[n-1][len(runs[n-1])-1].to != c.from || size+len(datas[c.from]) > maxPack {
			runs = append(runs, nil)
			n++
			size = 0
		}
		runs[n-1] = append(runs[n-1], c)
		size += len(datas[c.from])
	}
	batch := &pgx.Batch{}
	for _, run := range runs {
		from, to := run[0].from, run[len(run)-1].to
		if len(run) == 1 {
			batch.Queue(`UPDATE cp_chunks SET packed = true WHERE thread_id = $1 AND ns = $2 AND seq_from = $3`, thread, ns, from)
			continue
		}
		var data []byte
		for _, c := range run {
			data = append(data, datas[c.from]...)
		}
		batch.Queue(`DELETE FROM cp_chunks WHERE thread_id = $1 AND ns = $2 AND seq_from >= $3 AND seq_from < $4`, thread, ns, from, to)
		batch.Queue(`INSERT INTO cp_chunks (thread_id, ns, seq_from, seq_to, packed, data) VALUES ($1, $2, $3, $4, true, $5)`, thread, ns, from, to, data)
	}
	return tx.SendBatch(ctx, batch).Close()
}

// PutWrite stores one finished call's result for the checkpoint at ref,
// replacing an earlier write of the same call id and kind.
func (s *Saver) PutWrite(ctx context.Context, ref checkpoint.Ref, w checkpoint.Write) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	if err := checkpoint.ValidateWrite(ref, &w); err != nil {
		return err
	}
	kind := w.Kind
	if kind == "" {
		kind = checkpoint.KindResult
	}
	body, err := checkpoint.EncodeWrite(w)
	if err != nil {
		return fmt.Errorf("%w: write: %v", checkpoint.ErrInvalid, err)
	}
	ctx, cancel := s.db.call(ctx)
	defer cancel()
	tag, err := s.db.pool.Exec(ctx, `INSERT INTO cp_writes (thread_id, ns, cp, call_id, kind, data)
		SELECT $1, $2, $3, $4, $5, $6
		WHERE EXISTS (SELECT 1 FROM cp_records WHERE thread_id = $1 AND ns = $2 AND id = $3)
		ON CONFLICT (thread_id, ns, cp, call_id, kind) DO UPDATE SET data = excluded.data`,
		ref.ThreadID, ref.NS, ref.ID, w.CallID, kind, body)
	if err != nil {
		return s.wrap(ctx, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: checkpoint %q in thread %q", checkpoint.ErrNotFound, ref.ID, ref.ThreadID)
	}
	return nil
}

// Get returns the checkpoint at ref (the latest of its namespace when ref.ID
// is empty) with its full state and pending writes, read in one
// repeatable-read transaction so a concurrent put cannot tear it.
func (s *Saver) Get(ctx context.Context, ref checkpoint.Ref) (*checkpoint.Checkpoint, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	if err := checkpoint.ValidateRef(ref, false); err != nil {
		return nil, err
	}
	var out *checkpoint.Checkpoint
	ctx, cancel := s.db.call(ctx)
	defer cancel()
	err := pgx.BeginTxFunc(ctx, s.db.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var raw []byte
		var err error
		if ref.ID == "" {
			err = tx.QueryRow(ctx, `SELECT record FROM cp_records WHERE thread_id = $1 AND ns = $2 ORDER BY seq DESC LIMIT 1`, ref.ThreadID, ref.NS).Scan(&raw)
		} else {
			err = tx.QueryRow(ctx, `SELECT record FROM cp_records WHERE thread_id = $1 AND ns = $2 AND id = $3`, ref.ThreadID, ref.NS, ref.ID).Scan(&raw)
		}
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: thread %q namespace %q checkpoint %q", checkpoint.ErrNotFound, ref.ThreadID, ref.NS, ref.ID)
		}
		if err != nil {
			return err
		}
		rec, err := checkpoint.Decode(raw)
		if err != nil {
			return err
		}
		chain, err := checkpoint.Chain(ctx, rec, recentLoader(tx, ref.ThreadID, ref.NS, rec.ID, s.db.opts.SnapshotEvery))
		if err != nil {
			return err
		}
		v := checkpoint.ViewOf(chain)
		msgs, err := messages(ctx, tx, ref.ThreadID, ref.NS, v.Messages)
		if err != nil {
			return fmt.Errorf("checkpoint %q: %w", rec.ID, err)
		}
		blobs := map[string][]byte{}
		var hashes []string
		for _, f := range v.Files {
			hashes = append(hashes, f.Hash)
		}
		if len(hashes) > 0 {
			rows, err := tx.Query(ctx, `SELECT hash, data FROM cp_blobs WHERE hash = ANY($1)`, hashes)
			if err != nil {
				return err
			}
			for rows.Next() {
				var h string
				var data []byte
				if err := rows.Scan(&h, &data); err != nil {
					rows.Close()
					return err
				}
				blobs[h] = data
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
		}
		c, err := checkpoint.AssembleMessages(rec, v, msgs, blobs)
		if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT data FROM cp_writes WHERE thread_id = $1 AND ns = $2 AND cp = $3 ORDER BY call_id, kind`, ref.ThreadID, ref.NS, rec.ID)
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
				return fmt.Errorf("a write of checkpoint %q: %w", rec.ID, err)
			}
			c.Pending = append(c.Pending, w)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		out = c
		return nil
	})
	if err != nil {
		return nil, s.wrap(ctx, err)
	}
	return out, nil
}

// messages reads and decodes the messages of ranges from their chunks.
func messages(ctx context.Context, q querier, thread, ns string, ranges []checkpoint.Range) ([]llm.Message, error) {
	var chunks []checkpoint.Chunk
	for _, rg := range ranges {
		if rg.Len() <= 0 {
			continue
		}
		rows, err := q.Query(ctx, `SELECT seq_from, seq_to, data FROM cp_chunks WHERE thread_id = $1 AND ns = $2 AND seq_from < $4
			AND seq_from >= COALESCE((SELECT max(seq_from) FROM cp_chunks WHERE thread_id = $1 AND ns = $2 AND seq_from <= $3), $3)
			ORDER BY seq_from`, thread, ns, rg.From, rg.To)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var c checkpoint.Chunk
			if err := rows.Scan(&c.From, &c.To, &c.Data); err != nil {
				rows.Close()
				return nil, err
			}
			if n := len(chunks); n > 0 && chunks[n-1].From == c.From {
				continue // two ranges share the chunk
			}
			chunks = append(chunks, c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return checkpoint.Messages(ranges, chunks)
}

// List returns a thread's checkpoints newest first, without state.
func (s *Saver) List(ctx context.Context, opts checkpoint.ListOptions) ([]checkpoint.Checkpoint, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	if err := checkpoint.ValidateThreadID(opts.ThreadID); err != nil {
		return nil, err
	}
	if opts.Limit < 0 {
		return nil, fmt.Errorf("%w: limit %d is negative", checkpoint.ErrInvalid, opts.Limit)
	}
	ctx, cancel := s.db.call(ctx)
	defer cancel()
	var before *int64
	if opts.Before != "" {
		if err := s.db.pool.QueryRow(ctx, `SELECT min(seq) FROM cp_records WHERE thread_id = $1 AND id = $2`,
			opts.ThreadID, opts.Before).Scan(&before); err != nil {
			return nil, s.wrap(ctx, err)
		}
		if before == nil {
			return nil, fmt.Errorf("%w: checkpoint %q in thread %q", checkpoint.ErrNotFound, opts.Before, opts.ThreadID)
		}
	}
	var limit *int
	if opts.Limit > 0 && len(opts.Metadata) == 0 {
		limit = &opts.Limit
	}
	rows, err := s.db.pool.Query(ctx, `SELECT record FROM cp_records
		WHERE thread_id = $1 AND ($2 OR ns = $3) AND ($4::bigint IS NULL OR seq < $4)
		ORDER BY seq DESC LIMIT $5`, opts.ThreadID, opts.AllNamespaces, opts.NS, before, limit)
	if err != nil {
		return nil, s.wrap(ctx, err)
	}
	defer rows.Close()
	var out []checkpoint.Checkpoint
	for rows.Next() {
		var raw []byte
		if err := rows.Scan(&raw); err != nil {
			return nil, err
		}
		r, err := checkpoint.Decode(raw)
		if err != nil {
			return nil, err
		}
		if !checkpoint.MatchMetadata(r.Metadata, opts.Metadata) {
			continue
		}
		out = append(out, *checkpoint.Header(r))
		if opts.Limit > 0 && len(out) >= opts.Limit {
			break
		}
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap(ctx, err)
	}
	return out, nil
}

// Threads lists threads, most recently updated first, summarised from their
// top-level namespace.
func (s *Saver) Threads(ctx context.Context, opts checkpoint.ThreadsOptions) ([]checkpoint.ThreadInfo, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	ctx, cancel := s.db.call(ctx)
	defer cancel()
	rows, err := s.db.pool.Query(ctx, `SELECT c.thread_id, c.record,
			(SELECT count(*) FROM cp_records x WHERE x.thread_id = c.thread_id AND x.ns = ''),
			COALESCE((SELECT t.title FROM cp_records t WHERE t.thread_id = c.thread_id AND t.ns = '' AND t.title <> '' ORDER BY t.seq LIMIT 1), '')
		FROM cp_records c
		WHERE c.seq IN (SELECT max(seq) FROM cp_records WHERE ns = '' GROUP BY thread_id)`)
	if err != nil {
		return nil, s.wrap(ctx, err)
	}
	defer rows.Close()
	var out []checkpoint.ThreadInfo
	for rows.Next() {
		var info checkpoint.ThreadInfo
		var raw []byte
		var steps int64
		if err := rows.Scan(&info.ID, &raw, &steps, &info.Title); err != nil {
			return nil, err
		}
		r, err := checkpoint.Decode(raw)
		if err != nil {
			return nil, err
		}
		info.Steps = int(steps)
		info.Updated, info.Status = r.Time, r.Status
		info.Tokens = r.Usage.Total()
		out = append(out, info)
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap(ctx, err)
	}
	checkpoint.SortThreads(out)
	if opts.Limit > 0 && len(out) > opts.Limit {
		out = out[:opts.Limit]
	}
	return out, nil
}

// Stats counts stored rows and payload bytes for one thread, or for all
// threads when threadID is "".
func (s *Saver) Stats(ctx context.Context, threadID string) (checkpoint.Stats, error) {
	var st checkpoint.Stats
	if err := s.check(ctx); err != nil {
		return st, err
	}
	ctx, cancel := s.db.call(ctx)
	defer cancel()
	all := threadID == ""
	var cps, cpBytes, chunks, msgs, msgBytes, writes, writeBytes, blobs, blobBytes int64
	err := s.db.pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM cp_records WHERE $1 OR thread_id = $2),
		(SELECT coalesce(sum(octet_length(record)), 0) FROM cp_records WHERE $1 OR thread_id = $2),
		(SELECT count(*) FROM cp_chunks WHERE $1 OR thread_id = $2),
		(SELECT coalesce(sum(seq_to - seq_from), 0) FROM cp_chunks WHERE $1 OR thread_id = $2),
		(SELECT coalesce(sum(octet_length(data)), 0) FROM cp_chunks WHERE $1 OR thread_id = $2),
		(SELECT count(*) FROM cp_writes WHERE $1 OR thread_id = $2),
		(SELECT coalesce(sum(octet_length(data)), 0) FROM cp_writes WHERE $1 OR thread_id = $2),
		(SELECT count(*) FROM cp_blobs b WHERE $1 OR EXISTS (SELECT 1 FROM cp_refs r WHERE r.thread_id = $2 AND r.hash = b.hash)),
		(SELECT coalesce(sum(octet_length(data)), 0) FROM cp_blobs b WHERE $1 OR EXISTS (SELECT 1 FROM cp_refs r WHERE r.thread_id = $2 AND r.hash = b.hash))`,
		all, threadID).Scan(&cps, &cpBytes, &chunks, &msgs, &msgBytes, &writes, &writeBytes, &blobs, &blobBytes)
	if err != nil {
		return st, s.wrap(ctx, err)
	}
	st.Checkpoints = int(cps)
	st.Messages = int(msgs)
	st.Writes = int(writes)
	st.Blobs = int(blobs)
	st.Rows = int(cps + chunks + writes + blobs)
	st.Bytes = cpBytes + msgBytes + writeBytes + blobBytes
	return st, nil
}

// sweepBlobs removes file contents no checkpoint references any more.
func sweepBlobs(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", blobLock); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `DELETE FROM cp_blobs b WHERE NOT EXISTS (SELECT 1 FROM cp_refs r WHERE r.hash = b.hash)`)
	return err
}

// DeleteThread removes a thread, its writes, its lease and the file
// contents only it used.
func (s *Saver) DeleteThread(ctx context.Context, threadID string) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	if err := checkpoint.ValidateThreadID(threadID); err != nil {
		return err
	}
	return s.txWrap(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if err := lockThread(ctx, tx, threadID); err != nil {
			return err
		}
		for _, table := range []string{"cp_writes", "cp_chunks", "cp_refs", "cp_records", "leases"} {
			if _, err := tx.Exec(ctx, "DELETE FROM "+table+" WHERE thread_id = $1", threadID); err != nil {
				return err
			}
		}
		return sweepBlobs(ctx, tx)
	})
}

type row struct {
	seq int64
	rec *checkpoint.Record
}

// all returns a thread's records in put order.
func all(ctx context.Context, tx pgx.Tx, thread string) ([]row, error) {
	rows, err := tx.Query(ctx, `SELECT seq, record FROM cp_records WHERE thread_id = $1 ORDER BY seq`, thread)
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

// CopyThread forks src into the new thread dst (see checkpoint.Saver).
func (s *Saver) CopyThread(ctx context.Context, src checkpoint.Ref, dst string) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	if err := checkpoint.ValidateRef(src, false); err != nil {
		return err
	}
	if err := checkpoint.ValidateThreadID(dst); err != nil {
		return err
	}
	if dst == src.ThreadID {
		return fmt.Errorf("%w: thread %q", checkpoint.ErrThreadExists, dst)
	}
	return s.txWrap(ctx, func(ctx context.Context, tx pgx.Tx) error {
		// Two copies onto one new thread: the second waits here and then
		// sees the first's checkpoints.
		dk, sk := lockKey(dst, nil), lockKey(src.ThreadID, nil)
		locks := []struct {
			sql string
			key int64
		}{{"SELECT pg_advisory_xact_lock($1)", dk}, {"SELECT pg_advisory_xact_lock_shared($1)", sk}}
		if sk < dk {
			locks[0], locks[1] = locks[1], locks[0]
		}
		locks = append(locks, struct {
			sql string
			key int64
		}{"SELECT pg_advisory_xact_lock_shared($1)", blobLock})
		for _, l := range locks {
			if _, err := tx.Exec(ctx, l.sql, l.key); err != nil {
				return err
			}
		}
		rows, err := all(ctx, tx, src.ThreadID)
		if err != nil {
			return err
		}
		keep, err := checkpoint.PlanCopy(recsOf(rows), src)
		if err != nil {
			return err
		}
		var taken bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM cp_records WHERE thread_id = $1)`, dst).Scan(&taken); err != nil {
			return err
		}
		if taken {
			return fmt.Errorf("%w: thread %q", checkpoint.ErrThreadExists, dst)
		}
		need := map[string][]checkpoint.Range{}
		for i, r := range rows {
			if !keep[i] {
				continue
			}
			rec := *r.rec
			rec.ThreadID = dst
			if err := insert(ctx, tx, &rec, nil, nil, rec.Refs()); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO cp_writes (thread_id, ns, cp, call_id, kind, data)
				SELECT $1, ns, cp, call_id, kind, data FROM cp_writes WHERE thread_id = $2 AND ns = $3 AND cp = $4`,
				dst, src.ThreadID, rec.NS, rec.ID); err != nil {
				return err
			}
			need[rec.NS] = append(need[rec.NS], rec.Messages)
			if rec.Snapshot != nil {
				need[rec.NS] = append(need[rec.NS], rec.Snapshot.Messages...)
			}
		}
		for ns, rgs := range need {
			if err := keepMessages(ctx, tx, src.ThreadID, ns, checkpoint.MergeRanges(rgs), dst); err != nil {
				return err
			}
		}
		return nil
	})
}

// Prune drops history of a thread. Each surviving checkpoint whose parent
// is dropped becomes a snapshot, so every survivor keeps its state.
func (s *Saver) Prune(ctx context.Context, threadID string, opts checkpoint.PruneOptions) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	if err := checkpoint.ValidateThreadID(threadID); err != nil {
		return err
	}
	if opts.KeepLast < 0 {
		return fmt.Errorf("%w: keep-last %d is negative", checkpoint.ErrInvalid, opts.KeepLast)
	}
	if opts.KeepLast == 0 && opts.Before == "" {
		return nil
	}
	return s.txWrap(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if err := lockThread(ctx, tx, threadID); err != nil {
			return err
		}
		rows, err := all(ctx, tx, threadID)
		if err != nil {
			return err
		}
		plan, err := checkpoint.PlanPrune(ctx, recsOf(rows), opts)
		if err != nil {
			return fmt.Errorf("prune thread %q: %w", threadID, err)
		}
		batch := &pgx.Batch{}
		for i, r := range rows {
			if plan.Drop[i] {
				batch.Queue(`DELETE FROM cp_records WHERE thread_id = $1 AND ns = $2 AND id = $3`, threadID, r.rec.NS, r.rec.ID)
				batch.Queue(`DELETE FROM cp_refs WHERE thread_id = $1 AND ns = $2 AND cp = $3`, threadID, r.rec.NS, r.rec.ID)
				batch.Queue(`DELETE FROM cp_writes WHERE thread_id = $1 AND ns = $2 AND cp = $3`, threadID, r.rec.NS, r.rec.ID)
				continue
			}
			kept := r.rec
			if nr := plan.Rewrite[i]; nr != nil {
				raw, err := checkpoint.Encode(nr)
				if err != nil {
					return err
				}
				batch.Queue(`UPDATE cp_records SET record = $1 WHERE seq = $2`, raw, r.seq)
				kept = nr
			}
			// Puts store only a record's own references; the records that
			// brought a survivor's files in may be going, so it now refers
			// to all of them itself.
			for _, h := range kept.Refs() {
				batch.Queue(`INSERT INTO cp_refs (thread_id, ns, cp, hash) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`, threadID, kept.NS, kept.ID, h)
			}
		}
		if err := tx.SendBatch(ctx, batch).Close(); err != nil {
			return err
		}
		nsRows, err := tx.Query(ctx, `SELECT DISTINCT ns FROM cp_chunks WHERE thread_id = $1`, threadID)
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
		if err := nsRows.Err(); err != nil {
			return err
		}
		for _, ns := range nss {
			if err := keepMessages(ctx, tx, threadID, ns, plan.Keep[ns], ""); err != nil {
				return err
			}
		}
		return sweepBlobs(ctx, tx)
	})
}

// keepMessages rewrites the chunks of (thread, ns) to hold only the
// messages of keep (merged ranges): chunks outside it are deleted, chunks
// partly inside are cut. With dst set, the kept messages are copied to
// thread dst instead and the source is left alone.
func keepMessages(ctx context.Context, tx pgx.Tx, thread, ns string, keep []checkpoint.Range, dst string) error {
	rows, err := tx.Query(ctx, `SELECT seq_from, seq_to FROM cp_chunks WHERE thread_id = $1 AND ns = $2 ORDER BY seq_from`, thread, ns)
	if err != nil {
		return err
	}
	type span struct{ from, to int64 }
	var spans []span
	for rows.Next() {
		var sp span
		if err := rows.Scan(&sp.from, &sp.to); err != nil {
			rows.Close()
			return err
		}
		spans = append(spans, sp)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, sp := range spans {
		whole, some := false, false
		for _, r := range keep {
			if r.From <= sp.from && sp.to <= r.To {
				whole = true
			}
			if r.From < sp.to && sp.from < r.To {
				some = true
			}
		}
		switch {
		case whole && dst != "":
			if _, err := tx.Exec(ctx, `INSERT INTO cp_chunks (thread_id, ns, seq_from, seq_to, packed, data)
				SELECT $1, ns, seq_from, seq_to, packed, data FROM cp_chunks WHERE thread_id = $2 AND ns = $3 AND seq_from = $4`,
				dst, thread, ns, sp.from); err != nil {
				return err
			}
		case whole:
		case !some && dst == "":
			if _, err := tx.Exec(ctx, `DELETE FROM cp_chunks WHERE thread_id = $1 AND ns = $2 AND seq_from = $3`, thread, ns, sp.from); err != nil {
				return err
			}
		case !some:
		default:
			var data []byte
			if err := tx.QueryRow(ctx, `SELECT data FROM cp_chunks WHERE thread_id = $1 AND ns = $2 AND seq_from = $3`, thread, ns, sp.from).Scan(&data); err != nil {
				return err
			}
			parts, err := checkpoint.TrimChunk(checkpoint.Chunk{From: sp.from, Data: data}, keep)
			if err != nil {
				return fmt.Errorf("message chunk from %d: %w", sp.from, err)
			}
			to := thread
			if dst != "" {
				to = dst
			} else if _, err := tx.Exec(ctx, `DELETE FROM cp_chunks WHERE thread_id = $1 AND ns = $2 AND seq_from = $3`, thread, ns, sp.from); err != nil {
				return err
			}
			for _, p := range parts {
				entries, err := checkpoint.ChunkEntries(p.Data)
				if err != nil {
					return err
				}
				if _, err := tx.Exec(ctx, `INSERT INTO cp_chunks (thread_id, ns, seq_from, seq_to, packed, data) VALUES ($1, $2, $3, $4, true, $5)`,
					to, ns, p.From, p.From+int64(len(entries)), p.Data); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
