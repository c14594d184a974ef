package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/checkpoint/internal/engine"
	"github.com/deepagents-go/deepagents/checkpoint/internal/msgcodec"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// dbtx is what both the pool and a transaction offer.
type dbtx interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// store gives the shared engine its queries, on the pool or in a
// transaction (every write is in one).
type store struct{ q dbtx }

var (
	_ engine.Reader = store{}
	_ engine.Writer = store{}
)

// scanAll returns the single bytea column of every row.
func scanAll(rows pgx.Rows, err error) ([][]byte, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return engine.Bytes(rows)
}

func recordRow(row pgx.Row, thread, ns, id string) ([]byte, error) {
	var raw []byte
	err := row.Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%w: thread %q namespace %q checkpoint %q", checkpoint.ErrNotFound, thread, ns, id)
	}
	return raw, err
}

// Record implements engine.Records.
func (s store) Record(ctx context.Context, thread, ns, id string) ([]byte, error) {
	return recordRow(s.q.QueryRow(ctx, `SELECT record FROM cp_records WHERE thread_id = $1 AND ns = $2 AND id = $3`, thread, ns, id), thread, ns, id)
}

// Latest implements engine.Reader.
func (s store) Latest(ctx context.Context, thread, ns string) ([]byte, error) {
	return recordRow(s.q.QueryRow(ctx, `SELECT record FROM cp_records WHERE thread_id = $1 AND ns = $2 ORDER BY seq DESC LIMIT 1`, thread, ns), thread, ns, "")
}

// Recent implements engine.Records.
func (s store) Recent(ctx context.Context, thread, ns, from string, n int) ([][]byte, error) {
	return scanAll(s.q.Query(ctx, `SELECT record FROM cp_records WHERE thread_id = $1 AND ns = $2
		AND seq <= (SELECT seq FROM cp_records WHERE thread_id = $1 AND ns = $2 AND id = $3)
		ORDER BY seq DESC LIMIT $4`, thread, ns, from, n))
}

// Chunks implements engine.Reader.
func (s store) Chunks(ctx context.Context, thread, ns string, rg checkpoint.Range, add func(msgcodec.Chunk)) error {
	rows, err := s.q.Query(ctx, `SELECT seq_from, seq_to, data FROM cp_chunks WHERE thread_id = $1 AND ns = $2 AND seq_from < $4
		AND seq_from >= COALESCE((SELECT max(seq_from) FROM cp_chunks WHERE thread_id = $1 AND ns = $2 AND seq_from <= $3), $3)
		ORDER BY seq_from`, thread, ns, rg.From, rg.To)
	if err != nil {
		return err
	}
	defer rows.Close()
	return engine.EachChunk(rows, add)
}

// Blobs implements engine.Reader.
func (s store) Blobs(ctx context.Context, hashes []string, out map[string][]byte) error {
	rows, err := s.q.Query(ctx, `SELECT hash, data FROM cp_blobs WHERE hash = ANY($1)`, hashes)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var h string
		var data []byte
		if err := rows.Scan(&h, &data); err != nil {
			return err
		}
		out[h] = data
	}
	return rows.Err()
}

// Writes implements engine.Reader.
func (s store) Writes(ctx context.Context, thread, ns, cp string) ([][]byte, error) {
	return scanAll(s.q.Query(ctx, `SELECT data FROM cp_writes WHERE thread_id = $1 AND ns = $2 AND cp = $3 ORDER BY call_id, kind`, thread, ns, cp))
}

// SeqOf implements engine.Reader.
func (s store) SeqOf(ctx context.Context, thread, id string) (int64, bool, error) {
	var seq *int64
	if err := s.q.QueryRow(ctx, `SELECT min(seq) FROM cp_records WHERE thread_id = $1 AND id = $2`, thread, id).Scan(&seq); err != nil || seq == nil {
		return 0, false, err
	}
	return *seq, true, nil
}

// List implements engine.Reader.
func (s store) List(ctx context.Context, q engine.ListQuery, each func(raw []byte) bool) error {
	var before *int64
	if q.HasBefore {
		before = &q.Before
	}
	var limit *int
	if q.Limit > 0 {
		limit = &q.Limit
	}
	rows, err := s.q.Query(ctx, `SELECT record FROM cp_records
		WHERE thread_id = $1 AND ($2 OR ns = $3) AND ($4::bigint IS NULL OR seq < $4)
		ORDER BY seq DESC LIMIT $5`, q.Thread, q.All, q.NS, before, limit)
	if err != nil {
		return err
	}
	defer rows.Close()
	return engine.EachBytes(rows, each)
}

// Begin implements engine.Writer: it takes the put's locks (see lockKey),
// then reads the checkpoint when already stored, its parent and the
// namespace's next message number.
func (s store) Begin(ctx context.Context, st *checkpoint.Step) (stored bool, parent []byte, next int64, err error) {
	for _, q := range []struct {
		sql string
		key int64
	}{
		{"SELECT pg_advisory_xact_lock_shared($1)", lockKey(st.ThreadID, nil)},
		{"SELECT pg_advisory_xact_lock($1)", lockKey(st.ThreadID, &st.NS)},
		{"SELECT pg_advisory_xact_lock_shared($1)", blobLock},
	} {
		if _, err := s.q.Exec(ctx, q.sql, q.key); err != nil {
			return false, nil, 0, err
		}
	}
	rows, err := s.q.Query(ctx, `SELECT id, record FROM cp_records WHERE thread_id = $1 AND ns = $2 AND id = ANY($3)`,
		st.ThreadID, st.NS, []string{st.ID, st.ParentID})
	if err != nil {
		return false, nil, 0, err
	}
	for rows.Next() {
		var id string
		var rec []byte
		if err := rows.Scan(&id, &rec); err != nil {
			rows.Close()
			return false, nil, 0, err
		}
		if id == st.ID {
			stored = true
		} else {
			parent = rec
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil || stored {
		return stored, nil, 0, err
	}
	err = s.q.QueryRow(ctx, `SELECT COALESCE((SELECT seq_to FROM cp_chunks WHERE thread_id = $1 AND ns = $2 ORDER BY seq_from DESC LIMIT 1), 0)`,
		st.ThreadID, st.NS).Scan(&next)
	return false, parent, next, err
}

// Insert implements engine.Writer, in one batch.
func (s store) Insert(ctx context.Context, r *checkpoint.Record, raw []byte, msgs [][]byte, blobs map[string][]byte, refs []string) error {
	batch := &pgx.Batch{}
	batch.Queue(`INSERT INTO cp_records (thread_id, ns, id, title, record) VALUES ($1, $2, $3, $4, $5)`, r.ThreadID, r.NS, r.ID, r.Title, raw)
	if len(msgs) > 0 {
		batch.Queue(`INSERT INTO cp_chunks (thread_id, ns, seq_from, seq_to, packed, data) VALUES ($1, $2, $3, $4, false, $5)`,
			r.ThreadID, r.NS, r.Messages.From, r.Messages.To, msgcodec.AppendChunk(nil, msgs...))
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
	return s.q.SendBatch(ctx, batch).Close()
}

// Unpacked implements engine.Writer.
func (s store) Unpacked(ctx context.Context, thread, ns string) ([]msgcodec.Chunk, error) {
	rows, err := s.q.Query(ctx, `SELECT seq_from, seq_to, packed FROM cp_chunks WHERE thread_id = $1 AND ns = $2 ORDER BY seq_from DESC`, thread, ns)
	if err != nil {
		return nil, err
	}
	tail, err := engine.Unpacked(rows)
	rows.Close()
	if err != nil || len(tail) == 0 {
		return nil, err
	}
	datas := map[int64][]byte{}
	rows, err = s.q.Query(ctx, `SELECT seq_from, data FROM cp_chunks WHERE thread_id = $1 AND ns = $2 AND seq_from >= $3`, thread, ns, tail[0].From)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var from int64
		var data []byte
		if err := rows.Scan(&from, &data); err != nil {
			return nil, err
		}
		datas[from] = data
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for i := range tail {
		tail[i].Data = datas[tail[i].From]
	}
	return tail, nil
}

// WritePacks implements engine.Writer, in one batch.
func (s store) WritePacks(ctx context.Context, thread, ns string, packs []engine.Pack) error {
	batch := &pgx.Batch{}
	for _, p := range packs {
		if p.Chunks == 1 {
			batch.Queue(`UPDATE cp_chunks SET packed = true WHERE thread_id = $1 AND ns = $2 AND seq_from = $3`, thread, ns, p.From)
			continue
		}
		batch.Queue(`DELETE FROM cp_chunks WHERE thread_id = $1 AND ns = $2 AND seq_from >= $3 AND seq_from < $4`, thread, ns, p.From, p.To)
		batch.Queue(`INSERT INTO cp_chunks (thread_id, ns, seq_from, seq_to, packed, data) VALUES ($1, $2, $3, $4, true, $5)`, thread, ns, p.From, p.To, p.Data)
	}
	return s.q.SendBatch(ctx, batch).Close()
}

// Rows implements engine.Writer.
func (s store) Rows(ctx context.Context, thread string, each func(seq int64, raw []byte) error) error {
	rows, err := s.q.Query(ctx, `SELECT seq, record FROM cp_records WHERE thread_id = $1 ORDER BY seq`, thread)
	if err != nil {
		return err
	}
	defer rows.Close()
	return engine.EachRecord(rows, each)
}

// ThreadExists implements engine.Writer.
func (s store) ThreadExists(ctx context.Context, thread string) (bool, error) {
	var taken bool
	err := s.q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM cp_records WHERE thread_id = $1)`, thread).Scan(&taken)
	return taken, err
}

// CopyWrites implements engine.Writer.
func (s store) CopyWrites(ctx context.Context, src, dst, ns, cp string) error {
	_, err := s.q.Exec(ctx, `INSERT INTO cp_writes (thread_id, ns, cp, call_id, kind, data)
		SELECT $1, ns, cp, call_id, kind, data FROM cp_writes WHERE thread_id = $2 AND ns = $3 AND cp = $4`,
		dst, src, ns, cp)
	return err
}

// ApplyPrune implements engine.Writer, in one batch.
func (s store) ApplyPrune(ctx context.Context, thread string, ops []engine.PruneOp) error {
	batch := &pgx.Batch{}
	for _, op := range ops {
		if op.Drop {
			batch.Queue(`DELETE FROM cp_records WHERE thread_id = $1 AND ns = $2 AND id = $3`, thread, op.NS, op.ID)
			batch.Queue(`DELETE FROM cp_refs WHERE thread_id = $1 AND ns = $2 AND cp = $3`, thread, op.NS, op.ID)
			batch.Queue(`DELETE FROM cp_writes WHERE thread_id = $1 AND ns = $2 AND cp = $3`, thread, op.NS, op.ID)
			continue
		}
		if op.Raw != nil {
			batch.Queue(`UPDATE cp_records SET record = $1 WHERE seq = $2`, op.Raw, op.Seq)
		}
		for _, h := range op.Refs {
			batch.Queue(`INSERT INTO cp_refs (thread_id, ns, cp, hash) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`, thread, op.NS, op.ID, h)
		}
	}
	return s.q.SendBatch(ctx, batch).Close()
}

// Namespaces implements engine.Writer.
func (s store) Namespaces(ctx context.Context, thread string) ([]string, error) {
	rows, err := s.q.Query(ctx, `SELECT DISTINCT ns FROM cp_chunks WHERE thread_id = $1`, thread)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return engine.Strings(rows)
}

// Spans implements engine.Writer.
func (s store) Spans(ctx context.Context, thread, ns string) ([]checkpoint.Range, error) {
	rows, err := s.q.Query(ctx, `SELECT seq_from, seq_to FROM cp_chunks WHERE thread_id = $1 AND ns = $2 ORDER BY seq_from`, thread, ns)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return engine.Ranges(rows)
}

// ChunkData implements engine.Writer.
func (s store) ChunkData(ctx context.Context, thread, ns string, from int64) ([]byte, error) {
	var data []byte
	err := s.q.QueryRow(ctx, `SELECT data FROM cp_chunks WHERE thread_id = $1 AND ns = $2 AND seq_from = $3`, thread, ns, from).Scan(&data)
	return data, err
}

// CopyChunk implements engine.Writer.
func (s store) CopyChunk(ctx context.Context, thread, ns string, from int64, dst string) error {
	_, err := s.q.Exec(ctx, `INSERT INTO cp_chunks (thread_id, ns, seq_from, seq_to, packed, data)
		SELECT $1, ns, seq_from, seq_to, packed, data FROM cp_chunks WHERE thread_id = $2 AND ns = $3 AND seq_from = $4`,
		dst, thread, ns, from)
	return err
}

// DeleteChunk implements engine.Writer.
func (s store) DeleteChunk(ctx context.Context, thread, ns string, from int64) error {
	_, err := s.q.Exec(ctx, `DELETE FROM cp_chunks WHERE thread_id = $1 AND ns = $2 AND seq_from = $3`, thread, ns, from)
	return err
}

// InsertChunk implements engine.Writer.
func (s store) InsertChunk(ctx context.Context, thread, ns string, c msgcodec.Chunk, packed bool) error {
	_, err := s.q.Exec(ctx, `INSERT INTO cp_chunks (thread_id, ns, seq_from, seq_to, packed, data) VALUES ($1, $2, $3, $4, $5, $6)`,
		thread, ns, c.From, c.To, packed, c.Data)
	return err
}

// SweepBlobs implements engine.Writer: it removes file contents no
// checkpoint references any more, holding blobLock exclusively.
func (s store) SweepBlobs(ctx context.Context) error {
	if _, err := s.q.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", blobLock); err != nil {
		return err
	}
	_, err := s.q.Exec(ctx, `DELETE FROM cp_blobs b WHERE NOT EXISTS (SELECT 1 FROM cp_refs r WHERE r.hash = b.hash)`)
	return err
}
