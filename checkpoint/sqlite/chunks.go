package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"slices"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/checkpoint/internal/engine"
	"github.com/deepagents-go/deepagents/checkpoint/internal/msgcodec"
)

// Messages are stored in chunks: runs of entries of consecutive message
// numbers [seq_from, seq_to) of one namespace (msgcodec.AppendChunk). A put
// keeps its messages as one chunk in its own checkpoint row when they are
// short (one row per step; see maxRowChunk), else in a row of the chunks
// table; a put that writes a snapshot packs the namespace's chunks written
// since the last pack into one row of the chunks table (joining their
// bytes, decoding nothing) and clears them from the checkpoint rows.
// Reading a thread of 10,000 steps then takes about 10,000/SnapshotEvery
// rows instead of 20,000, which is what makes a resume of a long thread
// fast on SQLite, where each row read costs about a microsecond.
//
// Message numbers of a namespace grow with its puts, so the chunks still in
// checkpoint rows are those of its newest checkpoints, after its last
// packed chunk; they are read newest first, down to the first checkpoint
// before the messages wanted. Databases of schema 5 and before keep every
// chunk in the chunks table (their rows have no range), and so do threads
// that were copied or pruned (see spill).

// maxRowChunk is the longest chunk a put keeps in its checkpoint's row.
// The pack that later takes it out leaves that room in the row's page, so
// longer ones go to the chunks table, whose rows a pack deletes whole.
const maxRowChunk = 1024

// rowChunk is one checkpoint row's messages: seq is the row's put order,
// data nil when the row holds none (none appended, kept in the chunks
// table, or packed since).
type rowChunk struct {
	seq      int64
	from, to int64
	data     []byte
}

// rowChunks calls each with the namespace's checkpoint rows, newest first,
// until it returns false.
func (q querier) rowChunks(ctx context.Context, thread, ns string, each func(rowChunk) bool) error {
	name := "rowchunks"
	if q.read != nil {
		name = "r:rowchunks"
	}
	rows, err := q.stmt(ctx, name).QueryContext(ctx, thread, ns)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var c rowChunk
		if err := rows.Scan(&c.seq, &c.from, &c.to, &c.data); err != nil {
			return err
		}
		if !each(c) {
			break
		}
	}
	return rows.Err()
}

// rowsAfter returns the chunks the namespace's checkpoint rows hold past
// message number after, oldest first.
func (q querier) rowsAfter(ctx context.Context, thread, ns string, after int64) ([]rowChunk, error) {
	var out []rowChunk
	err := q.rowChunks(ctx, thread, ns, func(c rowChunk) bool {
		if c.to <= after {
			return false
		}
		if c.data != nil {
			out = append(out, c)
		}
		return true
	})
	slices.Reverse(out)
	return out, err
}

// mergeChunks merges two lists of chunks sorted by From.
func mergeChunks(a, b []msgcodec.Chunk) []msgcodec.Chunk {
	if len(b) == 0 {
		return a
	}
	out := make([]msgcodec.Chunk, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if a[0].From <= b[0].From {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	return append(append(out, a...), b...)
}

func chunksOf(rows []rowChunk) []msgcodec.Chunk {
	out := make([]msgcodec.Chunk, len(rows))
	for i, c := range rows {
		out[i] = msgcodec.Chunk{From: c.from, To: c.to, Data: c.data}
	}
	return out
}

// Chunks implements engine.Reader: the chunks table's chunks of rg, and,
// when they leave some of it out, the checkpoint rows' chunks.
func (q querier) Chunks(ctx context.Context, thread, ns string, rg checkpoint.Range, add func(msgcodec.Chunk)) error {
	rows, err := q.stmt(ctx, "r:chunks").QueryContext(ctx, thread, ns, rg.From, rg.To)
	if err != nil {
		return err
	}
	var table []msgcodec.Chunk
	err = engine.EachChunk(rows, func(c msgcodec.Chunk) { table = append(table, c) })
	rows.Close()
	if err != nil {
		return err
	}
	// The first message of rg that no chunk of the table holds.
	gap := rg.From
	for _, c := range table {
		if c.From > gap {
			break
		}
		gap = max(gap, c.To)
	}
	var inRows []rowChunk
	if gap < rg.To {
		if inRows, err = q.rowsAfter(ctx, thread, ns, gap); err != nil {
			return err
		}
	}
	for _, c := range mergeChunks(table, chunksOf(inRows)) {
		if c.From < rg.To {
			add(c)
		}
	}
	return nil
}

// packedEnd returns the end of the namespace's last packed chunk (0 when
// it has none): every message before it is packed.
func (q querier) packedEnd(ctx context.Context, thread, ns string) (int64, error) {
	var end int64
	err := q.stmt(ctx, "packedend").QueryRowContext(ctx, thread, ns).Scan(&end)
	return end, err
}

// Unpacked implements engine.Writer: the chunks after the namespace's last
// packed one, in the chunks table and in checkpoint rows.
func (q querier) Unpacked(ctx context.Context, thread, ns string) ([]msgcodec.Chunk, error) {
	tail, err := q.unpackedTable(ctx, thread, ns)
	if err != nil {
		return nil, err
	}
	end, err := q.packedEnd(ctx, thread, ns)
	if err != nil {
		return nil, err
	}
	rows, err := q.rowsAfter(ctx, thread, ns, end)
	if err != nil {
		return nil, err
	}
	return mergeChunks(tail, chunksOf(rows)), nil
}

// unpackedTable returns the chunks table's chunks of the namespace after
// its last packed one, oldest first, with their data.
func (q querier) unpackedTable(ctx context.Context, thread, ns string) ([]msgcodec.Chunk, error) {
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

// WritePacks implements engine.Writer. Checkpoint rows whose messages a
// pack takes are cleared; a single chunk still in a checkpoint row moves
// to the chunks table, packed.
func (q querier) WritePacks(ctx context.Context, thread, ns string, packs []engine.Pack) error {
	if len(packs) == 0 {
		return nil
	}
	rows, err := q.rowsAfter(ctx, thread, ns, packs[0].From)
	if err != nil {
		return err
	}
	for _, p := range packs {
		var in []rowChunk
		for _, c := range rows {
			if p.From <= c.from && c.to <= p.To {
				in = append(in, c)
			}
		}
		if len(in) > 0 {
			data := p.Data
			if p.Chunks == 1 {
				data = in[0].data
			}
			if _, err := q.execSQL(ctx, `DELETE FROM msgchunks WHERE thread = ? AND ns = ? AND seq_from >= ? AND seq_from < ?`, thread, ns, p.From, p.To); err != nil {
				return err
			}
			// The rows of the pack, in one statement: from its oldest row
			// on, through the namespace's index.
			if _, err := q.execNamed(ctx, "clearmsgs", thread, ns, in[0].seq, p.From, p.To); err != nil {
				return err
			}
			if _, err := q.execNamed(ctx, "insertchunk", thread, ns, p.From, p.To, 1, data); err != nil {
				return err
			}
			continue
		}
		if p.Chunks == 1 {
			if _, err := q.execSQL(ctx, `UPDATE msgchunks SET packed = 1 WHERE thread = ? AND ns = ? AND seq_from = ?`, thread, ns, p.From); err != nil {
				return err
			}
			continue
		}
		if _, err := q.execSQL(ctx, `DELETE FROM msgchunks WHERE thread = ? AND ns = ? AND seq_from >= ? AND seq_from < ?`, thread, ns, p.From, p.To); err != nil {
			return err
		}
		if _, err := q.execNamed(ctx, "insertchunk", thread, ns, p.From, p.To, 1, p.Data); err != nil {
			return err
		}
	}
	return nil
}

// spill moves the messages the thread's checkpoint rows hold into the
// chunks table, unpacked, as schema 5 kept them: copying and pruning a
// thread then work on the chunks table alone.
func (q querier) spill(ctx context.Context, thread string) error {
	if _, err := q.execSQL(ctx, `INSERT INTO msgchunks (thread, ns, seq_from, seq_to, packed, data)
		SELECT thread, ns, seq_from, seq_to, 0, msgs FROM checkpoints WHERE thread = ? AND msgs IS NOT NULL`, thread); err != nil {
		return err
	}
	_, err := q.execSQL(ctx, `UPDATE checkpoints SET msgs = NULL WHERE thread = ? AND msgs IS NOT NULL`, thread)
	return err
}

// Namespaces implements engine.Writer.
func (q querier) Namespaces(ctx context.Context, thread string) ([]string, error) {
	rows, err := q.tx.QueryContext(ctx, `SELECT DISTINCT ns FROM msgchunks WHERE thread = ?`, thread)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return engine.Strings(rows)
}

// Spans implements engine.Writer.
func (q querier) Spans(ctx context.Context, thread, ns string) ([]checkpoint.Range, error) {
	rows, err := q.tx.QueryContext(ctx, `SELECT seq_from, seq_to FROM msgchunks WHERE thread = ? AND ns = ? ORDER BY seq_from`, thread, ns)
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
	_, err := q.execSQL(ctx, `INSERT INTO msgchunks (thread, ns, seq_from, seq_to, packed, data)
		SELECT ?, ns, seq_from, seq_to, packed, data FROM msgchunks WHERE thread = ? AND ns = ? AND seq_from = ?`,
		dst, thread, ns, from)
	return err
}

// DeleteChunk implements engine.Writer.
func (q querier) DeleteChunk(ctx context.Context, thread, ns string, from int64) error {
	_, err := q.execSQL(ctx, `DELETE FROM msgchunks WHERE thread = ? AND ns = ? AND seq_from = ?`, thread, ns, from)
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
