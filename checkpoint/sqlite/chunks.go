package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm"
)

// Messages are stored in chunks: rows holding the entries of consecutive
// message numbers [seq_from, seq_to) of one namespace (checkpoint.AppendChunk).
// A put writes its messages as one chunk; a put that writes a snapshot also
// packs the namespace's chunks written since the last pack into one row
// (joining their bytes, decoding nothing). Reading a thread of 10,000 steps
// then takes about 10,000/SnapshotEvery rows instead of 20,000, which is
// what makes a resume of a long thread fast on SQLite, where each row read
// costs about a microsecond.

// maxPack caps the bytes of a pack; a longer run of chunks makes several.
const maxPack = 1 << 20

// messages reads and decodes the messages of ranges.
func (q querier) messages(ctx context.Context, thread, ns string, ranges []checkpoint.Range) ([]llm.Message, error) {
	var chunks []checkpoint.Chunk
	for _, rg := range ranges {
		if rg.Len() <= 0 {
			continue
		}
		rows, err := q.stmt(ctx, "r:chunks").QueryContext(ctx, thread, ns, rg.From, rg.To)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var c checkpoint.Chunk
			if err := rows.Scan(&c.From, &c.To, &c.Data); err != nil {
				rows.Close()
				return nil, err
			}
			// Ranges of a view are sorted and disjoint, but two may share
			// a chunk: read it once.
			if n := len(chunks); n > 0 && chunks[n-1].From == c.From {
				continue
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

// pack joins the namespace's unpacked chunks into packs: each run of chunks
// with consecutive numbers becomes one row (or several of at most maxPack
// bytes). A run of one chunk is only marked packed. Message numbers only
// grow and every pack takes all of the unpacked chunks, so those are the
// namespace's last chunks, after its last packed one.
func (q querier) pack(ctx context.Context, thread, ns string) error {
	rows, err := q.stmt(ctx, "tail").QueryContext(ctx, thread, ns)
	if err != nil {
		return err
	}
	type chunk struct {
		from, to int64
		data     []byte
	}
	var tail []chunk // newest first
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
	var runs [][]chunk
	size := 0
	for i := len(tail) - 1; i >= 0; i-- {
		c := tail[i]
		if err := q.stmt(ctx, "chunkdata").QueryRowContext(ctx, thread, ns, c.from).Scan(&c.data); err != nil {
			return err
		}
		n := len(runs)
		if n == 0 || runs[n-1][len(runs[n-1])-1].to != c.from || size+len(c.data) > maxPack {
			runs = append(runs, nil)
			n++
			size = 0
		}
		runs[n-1] = append(runs[n-1], c)
		size += len(c.data)
	}
	for _, run := range runs {
		from, to := run[0].from, run[len(run)-1].to
		if len(run) == 1 {
			if _, err := q.tx.ExecContext(ctx, `UPDATE chunks SET packed = 1 WHERE thread = ? AND ns = ? AND seq_from = ?`, thread, ns, from); err != nil {
				return err
			}
			continue
		}
		var data []byte
		for _, c := range run {
			data = append(data, c.data...)
		}
		if _, err := q.tx.ExecContext(ctx, `DELETE FROM chunks WHERE thread = ? AND ns = ? AND seq_from >= ? AND seq_from < ?`, thread, ns, from, to); err != nil {
			return err
		}
		if _, err := q.stmt(ctx, "insertchunk").ExecContext(ctx, thread, ns, from, to, 1, data); err != nil {
			return err
		}
	}
	return nil
}

// keepMessages rewrites the chunks of (thread, ns) so that they hold only the
// messages of keep (merged ranges): chunks outside it are deleted, chunks
// partly inside are cut. With dst set, the kept messages are copied to
// thread dst instead and the source is left alone.
func (q querier) keepMessages(ctx context.Context, thread, ns string, keep []checkpoint.Range, dst string) error {
	rows, err := q.tx.QueryContext(ctx, `SELECT seq_from, seq_to FROM chunks WHERE thread = ? AND ns = ? ORDER BY seq_from`, thread, ns)
	if err != nil {
		return err
	}
	type span struct{ from, to int64 }
	var all []span
	for rows.Next() {
		var sp span
		if err := rows.Scan(&sp.from, &sp.to); err != nil {
			rows.Close()
			return err
		}
		all = append(all, sp)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, sp := range all {
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
			if _, err := q.tx.ExecContext(ctx, `INSERT INTO chunks (thread, ns, seq_from, seq_to, packed, data)
				SELECT ?, ns, seq_from, seq_to, packed, data FROM chunks WHERE thread = ? AND ns = ? AND seq_from = ?`,
				dst, thread, ns, sp.from); err != nil {
				return err
			}
		case whole:
		case !some && dst == "":
			if _, err := q.tx.ExecContext(ctx, `DELETE FROM chunks WHERE thread = ? AND ns = ? AND seq_from = ?`, thread, ns, sp.from); err != nil {
				return err
			}
		case !some:
		default:
			var data []byte
			if err := q.tx.QueryRowContext(ctx, `SELECT data FROM chunks WHERE thread = ? AND ns = ? AND seq_from = ?`, thread, ns, sp.from).Scan(&data); err != nil {
				return err
			}
			parts, err := checkpoint.TrimChunk(checkpoint.Chunk{From: sp.from, Data: data}, keep)
			if err != nil {
				return fmt.Errorf("message chunk from %d: %w", sp.from, err)
			}
			to := thread
			if dst != "" {
				to = dst
			} else if _, err := q.tx.ExecContext(ctx, `DELETE FROM chunks WHERE thread = ? AND ns = ? AND seq_from = ?`, thread, ns, sp.from); err != nil {
				return err
			}
			for _, p := range parts {
				n, err := checkpoint.ChunkEntries(p.Data)
				if err != nil {
					return err
				}
				if _, err := q.stmt(ctx, "insertchunk").ExecContext(ctx, to, ns, p.From, p.From+int64(len(n)), 1, p.Data); err != nil {
					return err
				}
			}
		}
	}
	return nil
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
		if n == 0 || out[n-1].thread != thread || out[n-1].ns != ns || out[n-1].to != seq || len(out[n-1].data) > maxPack {
			out = append(out, pending{thread: thread, ns: ns, from: seq, to: seq})
			n++
		}
		out[n-1].data = checkpoint.AppendChunk(out[n-1].data, data)
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
