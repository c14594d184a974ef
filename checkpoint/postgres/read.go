package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/jackc/pgx/v5"
)

const cpColumns = `thread_id, ns, id, parent_id, step, metadata, status, at, step_usage, usage`

func scanCheckpoint(row pgx.Row) (*checkpoint.Checkpoint, error) {
	var c checkpoint.Checkpoint
	var md map[string]string
	var status, at string
	var su, u []byte
	if err := row.Scan(&c.ThreadID, &c.NS, &c.ID, &c.ParentID, &c.Step, &md, &status, &at, &su, &u); err != nil {
		return nil, err
	}
	if len(md) > 0 {
		c.Metadata = md
	}
	c.Status = checkpoint.Status(status)
	t, err := parseTime(at)
	if err != nil {
		return nil, fmt.Errorf("time of checkpoint %q is corrupt: %w", c.ID, err)
	}
	c.Time = t
	if err := json.Unmarshal(su, &c.StepUsage); err != nil {
		return nil, fmt.Errorf("usage of checkpoint %q is corrupt: %w", c.ID, err)
	}
	if err := json.Unmarshal(u, &c.Usage); err != nil {
		return nil, fmt.Errorf("usage of checkpoint %q is corrupt: %w", c.ID, err)
	}
	return &c, nil
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
		var row pgx.Row
		if ref.ID == "" {
			row = tx.QueryRow(ctx, `SELECT `+cpColumns+` FROM checkpoints WHERE thread_id = $1 AND ns = $2 ORDER BY seq DESC LIMIT 1`, ref.ThreadID, ref.NS)
		} else {
			row = tx.QueryRow(ctx, `SELECT `+cpColumns+` FROM checkpoints WHERE thread_id = $1 AND ns = $2 AND id = $3`, ref.ThreadID, ref.NS, ref.ID)
		}
		c, err := scanCheckpoint(row)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: thread %q namespace %q checkpoint %q", checkpoint.ErrNotFound, ref.ThreadID, ref.NS, ref.ID)
		}
		if err != nil {
			return err
		}
		l, err := loadState(ctx, tx, c.ThreadID, c.NS, c.ID, s.db.opts.SnapshotEvery)
		if err != nil {
			return err
		}
		if c.State, err = materialise(ctx, tx, c.ThreadID, c.NS, l); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT call_id, kind, body FROM writes WHERE thread_id = $1 AND ns = $2 AND checkpoint_id = $3
			ORDER BY call_id, kind`, c.ThreadID, c.NS, c.ID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var callID, kind string
			var body []byte
			if err := rows.Scan(&callID, &kind, &body); err != nil {
				return err
			}
			w, err := checkpoint.DecodeWrite(body)
			if err != nil {
				return fmt.Errorf("write %s/%s of checkpoint %q: %w", callID, kind, c.ID, err)
			}
			w.CallID, w.Kind = callID, kind
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

// List returns a thread's checkpoints newest first, without state, in at
// most two queries whatever the history's length.
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
		var seq *int64
		if err := s.db.pool.QueryRow(ctx, `SELECT min(seq) FROM checkpoints WHERE thread_id = $1 AND id = $2`,
			opts.ThreadID, opts.Before).Scan(&seq); err != nil {
			return nil, s.wrap(ctx, err)
		}
		if seq == nil {
			return nil, fmt.Errorf("%w: checkpoint %q in thread %q", checkpoint.ErrNotFound, opts.Before, opts.ThreadID)
		}
		before = seq
	}
	md := opts.Metadata
	if md == nil {
		md = map[string]string{}
	}
	mdJSON, err := json.Marshal(md)
	if err != nil {
		return nil, err
	}
	var limit *int
	if opts.Limit > 0 {
		limit = &opts.Limit
	}
	rows, err := s.db.pool.Query(ctx, `SELECT `+cpColumns+` FROM checkpoints
		WHERE thread_id = $1 AND ($2 OR ns = $3) AND ($4::bigint IS NULL OR seq < $4) AND metadata @> $5::jsonb
		ORDER BY seq DESC LIMIT $6`, opts.ThreadID, opts.AllNamespaces, opts.NS, before, string(mdJSON), limit)
	if err != nil {
		return nil, s.wrap(ctx, err)
	}
	defer rows.Close()
	var out []checkpoint.Checkpoint
	for rows.Next() {
		c, err := scanCheckpoint(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *c)
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
	rows, err := s.db.pool.Query(ctx, `SELECT DISTINCT ON (thread_id) thread_id, title, at, status, usage, seq,
			count(*) OVER (PARTITION BY thread_id)
		FROM checkpoints WHERE ns = '' ORDER BY thread_id, seq DESC`)
	if err != nil {
		return nil, s.wrap(ctx, err)
	}
	defer rows.Close()
	type info struct {
		checkpoint.ThreadInfo
		seq int64
	}
	var all []info
	for rows.Next() {
		var i info
		var at, status string
		var u []byte
		if err := rows.Scan(&i.ID, &i.Title, &at, &status, &u, &i.seq, &i.Steps); err != nil {
			return nil, err
		}
		i.Status = checkpoint.Status(status)
		if i.Updated, err = parseTime(at); err != nil {
			return nil, fmt.Errorf("time of thread %q is corrupt: %w", i.ID, err)
		}
		var usage llm.Usage
		if err := json.Unmarshal(u, &usage); err != nil {
			return nil, fmt.Errorf("usage of thread %q is corrupt: %w", i.ID, err)
		}
		i.Tokens = usage.Total()
		all = append(all, i)
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap(ctx, err)
	}
	sort.Slice(all, func(a, b int) bool {
		if !all[a].Updated.Equal(all[b].Updated) {
			return all[a].Updated.After(all[b].Updated)
		}
		return all[a].seq > all[b].seq
	})
	if opts.Limit > 0 && len(all) > opts.Limit {
		all = all[:opts.Limit]
	}
	out := make([]checkpoint.ThreadInfo, len(all))
	for i, a := range all {
		out[i] = a.ThreadInfo
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
	var cps, cpBytes, msgs, msgBytes, writes, writeBytes, fileRows, blobRows, blobBytes int64
	err := s.db.pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM checkpoints WHERE $1 OR thread_id = $2),
		(SELECT coalesce(sum(octet_length(coalesce(vals, ''::bytea)) + octet_length(coalesce(snapshot, ''::bytea))), 0) FROM checkpoints WHERE $1 OR thread_id = $2),
		(SELECT count(*) FROM messages WHERE $1 OR thread_id = $2),
		(SELECT coalesce(sum(octet_length(body)), 0) FROM messages WHERE $1 OR thread_id = $2),
		(SELECT count(*) FROM writes WHERE $1 OR thread_id = $2),
		(SELECT coalesce(sum(octet_length(body)), 0) FROM writes WHERE $1 OR thread_id = $2),
		(SELECT count(*) FROM file_changes WHERE $1 OR thread_id = $2) + (SELECT count(*) FROM snapshot_files WHERE $1 OR thread_id = $2),
		(SELECT count(*) FROM blobs b WHERE $1 OR EXISTS (SELECT 1 FROM file_changes f WHERE f.thread_id = $2 AND f.sha = b.sha)
			OR EXISTS (SELECT 1 FROM snapshot_files f WHERE f.thread_id = $2 AND f.sha = b.sha)),
		(SELECT coalesce(sum(octet_length(content)), 0) FROM blobs b WHERE $1 OR EXISTS (SELECT 1 FROM file_changes f WHERE f.thread_id = $2 AND f.sha = b.sha)
			OR EXISTS (SELECT 1 FROM snapshot_files f WHERE f.thread_id = $2 AND f.sha = b.sha))`,
		all, threadID).Scan(&cps, &cpBytes, &msgs, &msgBytes, &writes, &writeBytes, &fileRows, &blobRows, &blobBytes)
	if err != nil {
		return st, s.wrap(ctx, err)
	}
	st.Checkpoints = int(cps)
	st.Messages = int(msgs)
	st.Writes = int(writes)
	st.Blobs = int(blobRows)
	st.Rows = int(cps + msgs + writes + fileRows + blobRows)
	st.Bytes = cpBytes + msgBytes + writeBytes + blobBytes
	return st, nil
}
