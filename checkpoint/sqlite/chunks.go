package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/checkpoint/internal/engine"
	"github.com/deepagents-go/deepagents/checkpoint/internal/msgcodec"
)

// Messages are stored in chunks: rows holding the entries of consecutive
// message numbers [seq_from, seq_to) of one namespace (msgcodec.AppendChunk).
// A put writes its messages as one chunk; a put that writes a snapshot also
// packs the namespace's chunks written since the last pack into one row
// (joining their bytes, decoding nothing). Reading a thread of 10,000 steps
// then takes about 10,000/SnapshotEvery rows instead of 20,000, which is
// what makes a resume of a long thread fast on SQLite, where each row read
// costs about a microsecond.

// Chunks implements engine.Reader.
func (q querier) Chunks(ctx context.Context, thread, ns string, rg checkpoint.Range, add func(msgcodec.Chunk)) error {
	rows, err := q.stmt(ctx, "r:chunks").QueryContext(ctx, thread, ns, rg.From, rg.To)
	if err != nil {
		return err
	}
	defer rows.Close()
	return engine.EachChunk(rows, add)
}

// Unpacked implements engine.Writer.
func (q querier) Unpacked(ctx context.Context, thread, ns string) ([]msgcodec.Chunk, error) {
	rows, err := q.stmt(ctx, "tail").QueryContext(ctx, thread, ns)
	if err != nil {
		return nil, err
	}
	tail, err := engine.Unpacked(rows)
	rows.Close()
	if err != nil {
		return nil, err
	}
	if len(tail) == 0 {
		return nil, nil
	}
	// The data of all of them in one query, in the same order.
	rows, err = q.stmt(ctx, "taildata").QueryContext(ctx, thread, ns, tail[0].From)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	i := 0
	for rows.Next() {
		var from int64
		var data []byte
		if err := rows.Scan(&from, &data); err != nil {
			return nil, err
		}
		if i >= len(tail) || tail[i].From != from {
			return nil, fmt.Errorf("message chunks of thread %q namespace %q changed while packing them", thread, ns)
		}
		tail[i].Data = data
		i++
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if i != len(tail) {
		return nil, fmt.Errorf("message chunks of thread %q namespace %q changed while packing them", thread, ns)
	}
	return tail, nil
}

// WritePacks implements engine.Writer.
func (q querier) WritePacks(ctx context.Context, thread, ns string, packs []engine.Pack) error {
	for _, p := range packs {
		if p.Chunks == 1 {
			if _, err := q.execSQL(ctx, `UPDATE chunks SET packed = 1 WHERE thread = ? AND ns = ? AND seq_from = ?`, thread, ns, p.From); err != nil {
				return err
			}
			continue
		}
		if _, err := q.execSQL(ctx, `DELETE FROM chunks WHERE thread = ? AND ns = ? AND seq_from >= ? AND seq_from < ?`, thread, ns, p.From, p.To); err != nil {
			return err
		}
		if _, err := q.execNamed(ctx, "insertchunk", thread, ns, p.From, p.To, 1, p.Data); err != nil {
			return err
		}
	}
	return nil
}

// Namespaces implements engine.Writer.
func (q querier) Namespaces(ctx context.Context, thread string) ([]string, error) {
	rows, err := q.tx.QueryContext(ctx, `SELECT DISTINCT ns FROM chunks WHERE thread = ?`, thread)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return engine.Strings(rows)
}

// Spans implements engine.Writer.
func (q querier) Spans(ctx context.Context, thread, ns string) ([]checkpoint.Range, error) {
	rows, err := q.tx.QueryContext(ctx, `SELECT seq_from, seq_to FROM chunks WHERE thread = ? AND ns = ? ORDER BY seq_from`, thread, ns)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return engine.Ranges(rows)
}

// ChunkData implements engine.Writer.
func (q querier) ChunkData(ctx context.Context, thread, ns string, from int64) ([]byte, error) {
	var data []byte
	err := q.stmt(ctx, "chunkdata").QueryRowContext(ctx, thread, ns, from).Scan(&data)
	return data, err
}

// CopyChunk implements engine.Writer.
func (q querier) CopyChunk(ctx context.Context, thread, ns string, from int64, dst string) error {
	_, err := q.execSQL(ctx, `INSERT INTO chunks (thread, ns, seq_from, seq_to, packed, data)
		SELECT ?, ns, seq_from, seq_to, packed, data FROM chunks WHERE thread = ? AND ns = ? AND seq_from = ?`,
		dst, thread, ns, from)
	return err
}

// DeleteChunk implements engine.Writer.
func (q querier) DeleteChunk(ctx context.Context, thread, ns string, from int64) error {
	_, err := q.execSQL(ctx, `DELETE FROM chunks WHERE thread = ? AND ns = ? AND seq_from = ?`, thread, ns, from)
	return err
}

// InsertChunk implements engine.Writer.
func (q querier) InsertChunk(ctx context.Context, thread, ns string, c msgcodec.Chunk, packed bool) error {
	p := 0
	if packed {
		p = 1
	}
	_, err := q.execNamed(ctx, "insertchunk", thread, ns, c.From, c.To, p, c.Data)
	return err
}

// migrateMessagesToChunks moves the rows of the first schema's messages
// table (one JSON message each) into packed chunks and drops the table.
func migrateMessagesToChunks(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, `SELECT thread, ns, seq, data FROM messages ORDER BY thread, ns, seq`)
	if err != nil {
		return err
	}
	type pending struct {
		thread, ns string
		from, to   int64
		data       []byte
	}
	var out []pending
	for rows.Next() {
		var thread, ns string
		var seq int64
		var data []byte
		if err := rows.Scan(&thread, &ns, &seq, &data); err != nil {
			rows.Close()
			return err
		}
		n := len(out)
		if n == 0 || out[n-1].thread != thread || out[n-1].ns != ns || out[n-1].to != seq || len(out[n-1].data) > engine.MaxPack {
			out = append(out, pending{thread: thread, ns: ns, from: seq, to: seq})
			n++
		}
		out[n-1].data = msgcodec.AppendChunk(out[n-1].data, data)
		out[n-1].to = seq + 1
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, p := range out {
		if _, err := tx.ExecContext(ctx, `INSERT INTO chunks (thread, ns, seq_from, seq_to, packed, data) VALUES (?, ?, ?, ?, 1, ?)`,
			p.thread, p.ns, p.from, p.to, p.data); err != nil {
			return err
		}
	}
	_, err = tx.ExecContext(ctx, `DROP TABLE messages`)
	return err
}
