package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/checkpoint/internal/engine"
	"github.com/deepagents-go/deepagents/checkpoint/internal/msgcodec"
)

// The queries the shared engine runs on records, contents and writes; the
// ones on message chunks are in chunks.go.
var (
	_ engine.Reader = querier{}
	_ engine.Writer = querier{}
)

func (q querier) raw(ctx context.Context, stmt string, args ...any) ([]byte, error) {
	var raw []byte
	err := q.stmt(ctx, stmt).QueryRowContext(ctx, args...).Scan(&raw)
	if errors.Is(err, sql.ErrNoRows) {
		which := "(the latest)"
		if len(args) > 2 {
			which = fmt.Sprintf("%q", args[2])
		}
		return nil, fmt.Errorf("%w: thread %q namespace %q checkpoint %s", checkpoint.ErrNotFound, args[0], args[1], which)
	}
	return raw, err
}

// Record implements engine.Records.
func (q querier) Record(ctx context.Context, thread, ns, id string) ([]byte, error) {
	name := "record"
	if q.read != nil {
		name = "r:record"
	}
	return q.raw(ctx, name, thread, ns, id)
}

// Latest implements engine.Reader.
func (q querier) Latest(ctx context.Context, thread, ns string) ([]byte, error) {
	return q.raw(ctx, "r:latest", thread, ns)
}

// Recent implements engine.Records. The writer reads a put's chain one
// record at a time: it is usually in the tip cache.
func (q querier) Recent(ctx context.Context, thread, ns, from string, n int) ([][]byte, error) {
	if q.read == nil {
		return nil, nil
	}
	rows, err := q.stmt(ctx, "r:recent").QueryContext(ctx, thread, ns, from, n)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return engine.Bytes(rows)
}

// Blobs implements engine.Reader.
func (q querier) Blobs(ctx context.Context, hashes []string, out map[string][]byte) error {
	for _, h := range hashes {
		var data []byte
		err := q.stmt(ctx, "r:blob").QueryRowContext(ctx, h).Scan(&data)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if err == nil {
			out[h] = data
		}
	}
	return nil
}

// Writes implements engine.Reader.
func (q querier) Writes(ctx context.Context, thread, ns, cp string) ([][]byte, error) {
	rows, err := q.stmt(ctx, "r:writes").QueryContext(ctx, thread, ns, cp)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return engine.Bytes(rows)
}

// SeqOf implements engine.Reader.
func (q querier) SeqOf(ctx context.Context, thread, id string) (int64, bool, error) {
	var seq sql.NullInt64
	if err := q.stmt(ctx, "r:seqof").QueryRowContext(ctx, thread, id).Scan(&seq); err != nil {
		return 0, false, err
	}
	return seq.Int64, seq.Valid, nil
}

// List implements engine.Reader.
func (q querier) List(ctx context.Context, lq engine.ListQuery, each func(raw []byte) bool) error {
	// The namespace index (thread, ns, seq) holds the thread-wide order too
	// (seq is the rowid): the newest seqs are picked from it alone and
	// only their records read.
	where := `thread = ?`
	args := []any{lq.Thread}
	if !lq.All {
		where += ` AND ns = ?`
		args = append(args, lq.NS)
	}
	if lq.HasBefore {
		where += ` AND seq < ?`
		args = append(args, lq.Before)
	}
	query := `SELECT record FROM checkpoints WHERE ` + where + ` ORDER BY seq DESC`
	if lq.Limit > 0 {
		query = fmt.Sprintf(`SELECT record FROM checkpoints WHERE seq IN (SELECT seq FROM checkpoints WHERE %s ORDER BY seq DESC LIMIT %d) ORDER BY seq DESC`, where, lq.Limit)
	}
	rows, err := q.tx.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	return engine.EachBytes(rows, each)
}

// Begin implements engine.Writer: the checkpoint when already stored, its
// parent and the next message number come back in one query.
func (q querier) Begin(ctx context.Context, st *checkpoint.Step) (stored bool, parent []byte, next int64, err error) {
	rows, err := q.stmt(ctx, "selfparent").QueryContext(ctx, st.ThreadID, st.NS, st.ID, st.ParentID)
	if err != nil {
		return false, nil, 0, err
	}
	defer rows.Close()
	for rows.Next() {
		var id sql.NullString
		var val any
		if err := rows.Scan(&id, &val); err != nil {
			return false, nil, 0, err
		}
		switch {
		case !id.Valid:
			n, ok := val.(int64)
			if !ok {
				return false, nil, 0, fmt.Errorf("next message number of thread %q namespace %q: unexpected %T", st.ThreadID, st.NS, val)
			}
			next = n
		case id.String == st.ID:
			stored = true
		default:
			parent, _ = val.([]byte)
		}
	}
	return stored, parent, next, rows.Err()
}

// Insert implements engine.Writer.
func (q querier) Insert(ctx context.Context, r *checkpoint.Record, raw []byte, msgs [][]byte, blobs map[string][]byte, refs []string) error {
	chunk, inRow := stepChunk(msgs)
	res, err := q.execNamed(ctx, "insertcp", r.ThreadID, r.NS, r.ID, r.Title, raw, r.Messages.From, r.Messages.To, inRow)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return engine.ErrStored
	}
	return q.insertRest(ctx, r, chunk, blobs, refs)
}

// InsertEra implements engine.EraInserter: the checkpoint's insert
// returns the connection's data version (see querier.era).
func (q querier) InsertEra(ctx context.Context, r *checkpoint.Record, raw []byte, msgs [][]byte, blobs map[string][]byte, refs []string) (int64, error) {
	var era int64
	chunk, inRow := stepChunk(msgs)
	err := q.stmt(ctx, "insertcpera").QueryRowContext(ctx, r.ThreadID, r.NS, r.ID, r.Title, raw, r.Messages.From, r.Messages.To, inRow).Scan(&era)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, engine.ErrStored
	}
	if err != nil {
		return 0, err
	}
	return era, q.insertRest(ctx, r, chunk, blobs, refs)
}

// stepChunk returns the chunk of a put's messages, and what its
// checkpoint's row holds of them: the chunk when it is short (see
// maxRowChunk), else NULL (the chunk then has a row of the chunks table).
func stepChunk(msgs [][]byte) (chunk []byte, inRow any) {
	if len(msgs) == 0 {
		return nil, nil
	}
	chunk = msgcodec.AppendChunk(nil, msgs...)
	if len(chunk) <= maxRowChunk {
		return nil, chunk
	}
	return chunk, nil
}

// insertRest stores what comes with a checkpoint's row: its messages'
// chunk when the row does not hold it, file contents and references.
func (q querier) insertRest(ctx context.Context, r *checkpoint.Record, chunk []byte, blobs map[string][]byte, refs []string) error {
	if chunk != nil {
		if _, err := q.execNamed(ctx, "insertchunk", r.ThreadID, r.NS, r.Messages.From, r.Messages.To, 0, chunk); err != nil {
			return err
		}
	}
	for h, c := range blobs {
		if _, err := q.execNamed(ctx, "insertblob", h, c); err != nil {
			return err
		}
	}
	for _, h := range refs {
		if _, err := q.execNamed(ctx, "insertref", r.ThreadID, r.NS, r.ID, h); err != nil {
			return err
		}
	}
	return nil
}

// Rows implements engine.Writer.
func (q querier) Rows(ctx context.Context, thread string, each func(seq int64, raw []byte) error) error {
	rows, err := q.tx.QueryContext(ctx, `SELECT seq, record FROM checkpoints WHERE thread = ? ORDER BY seq`, thread)
	if err != nil {
		return err
	}
	defer rows.Close()
	return engine.EachRecord(rows, each)
}

// ThreadExists implements engine.Writer.
func (q querier) ThreadExists(ctx context.Context, thread string) (bool, error) {
	var n int
	err := q.stmt(ctx, "threadexists").QueryRowContext(ctx, thread).Scan(&n)
	return n > 0, err
}

// CopyWrites implements engine.Writer.
func (q querier) CopyWrites(ctx context.Context, src, dst, ns, cp string) error {
	_, err := q.execSQL(ctx, `INSERT INTO writes (thread, ns, cp, call_id, kind, data)
		SELECT ?, ns, cp, call_id, kind, data FROM writes WHERE thread = ? AND ns = ? AND cp = ?`,
		dst, src, ns, cp)
	return err
}

// ApplyPrune implements engine.Writer.
func (q querier) ApplyPrune(ctx context.Context, thread string, ops []engine.PruneOp) error {
	for _, op := range ops {
		if op.Drop {
			for _, table := range []string{"checkpoints", "refs", "writes"} {
				col := "cp"
				if table == "checkpoints" {
					col = "id"
				}
				if _, err := q.execSQL(ctx, `DELETE FROM `+table+` WHERE thread = ? AND ns = ? AND `+col+` = ?`, thread, op.NS, op.ID); err != nil {
					return err
				}
			}
			continue
		}
		if op.Raw != nil {
			if _, err := q.execSQL(ctx, `UPDATE checkpoints SET record = ? WHERE seq = ?`, op.Raw, op.Seq); err != nil {
				return err
			}
		}
		for _, h := range op.Refs {
			if _, err := q.execNamed(ctx, "insertref", thread, op.NS, op.ID, h); err != nil {
				return err
			}
		}
	}
	return nil
}

// SweepBlobs implements engine.Writer.
func (q querier) SweepBlobs(ctx context.Context) error {
	_, err := q.execSQL(ctx, `DELETE FROM blobs WHERE hash NOT IN (SELECT hash FROM refs)`)
	return err
}
