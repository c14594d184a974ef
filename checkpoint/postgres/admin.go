package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/jackc/pgx/v5"
)

// check refuses calls on a closed saver or with a finished context.
func (s *Saver) check(ctx context.Context) error {
	if s.closed.Load() {
		return errClosed
	}
	return ctx.Err()
}

// wrap makes an error of a call whose context ended report that end, so
// callers can match context.Canceled and context.DeadlineExceeded.
func (s *Saver) wrap(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w: %v", cerr, err)
	}
	return err
}

func (s *Saver) txWrap(ctx context.Context, f func(ctx context.Context, tx pgx.Tx) error) error {
	err := s.db.tx(ctx, f)
	if err != nil && ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		return fmt.Errorf("%w: %v", ctx.Err(), err)
	}
	return err
}

// sweepBlobs removes file contents no checkpoint references any more.
func sweepBlobs(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", blobLock); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `DELETE FROM blobs b
		WHERE NOT EXISTS (SELECT 1 FROM file_changes f WHERE f.sha = b.sha)
		AND NOT EXISTS (SELECT 1 FROM snapshot_files f WHERE f.sha = b.sha)`)
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
		for _, table := range []string{"writes", "messages", "file_changes", "snapshot_files", "checkpoints", "leases"} {
			if _, err := tx.Exec(ctx, "DELETE FROM "+table+" WHERE thread_id = $1", threadID); err != nil {
				return err
			}
		}
		return sweepBlobs(ctx, tx)
	})
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
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock_shared($1)", blobLock); err != nil {
			return err
		}
		// Two copies onto one new thread: the second waits here and then
		// sees the first's checkpoints.
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtext('deepagents copy onto ' || $1))", dst); err != nil {
			return err
		}
		var taken bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM checkpoints WHERE thread_id = $1)`, dst).Scan(&taken); err != nil {
			return err
		}
		if taken {
			return fmt.Errorf("%w: thread %q", checkpoint.ErrThreadExists, dst)
		}
		// The checkpoints to copy: with src.ID empty the whole thread;
		// otherwise src's ancestors (itself included) in its namespace, and
		// every checkpoint of the other namespaces put up to it.
		if src.ID == "" {
			tag, err := tx.Exec(ctx, `CREATE TEMP TABLE copy_set ON COMMIT DROP AS
				SELECT ns, id FROM checkpoints WHERE thread_id = $1`, src.ThreadID)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 0 {
				return fmt.Errorf("%w: thread %q", checkpoint.ErrNotFound, src.ThreadID)
			}
		} else {
			var seq int64
			err := tx.QueryRow(ctx, `SELECT seq FROM checkpoints WHERE thread_id = $1 AND ns = $2 AND id = $3`,
				src.ThreadID, src.NS, src.ID).Scan(&seq)
			if errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("%w: thread %q namespace %q checkpoint %q", checkpoint.ErrNotFound, src.ThreadID, src.NS, src.ID)
			}
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `CREATE TEMP TABLE copy_set ON COMMIT DROP AS
				WITH RECURSIVE walk AS (
					SELECT ns, id, parent_id FROM checkpoints WHERE thread_id = $1 AND ns = $2 AND id = $3
					UNION
					SELECT c.ns, c.id, c.parent_id FROM checkpoints c JOIN walk w
						ON c.thread_id = $1 AND c.ns = w.ns AND c.id = w.parent_id
				)
				SELECT ns, id FROM walk
				UNION
				SELECT ns, id FROM checkpoints WHERE thread_id = $1 AND ns <> $2 AND seq <= $4`,
				src.ThreadID, src.NS, src.ID, seq); err != nil {
				return err
			}
		}
		stmts := []string{
			`INSERT INTO checkpoints (thread_id, ns, id, parent_id, step, depth, metadata, status, at, step_usage, usage, title, vals, snapshot, snap_base)
				SELECT $2, c.ns, c.id, c.parent_id, c.step, c.depth, c.metadata, c.status, c.at, c.step_usage, c.usage, c.title, c.vals, c.snapshot, c.snap_base
				FROM checkpoints c JOIN copy_set k ON c.ns = k.ns AND c.id = k.id WHERE c.thread_id = $1 ORDER BY c.seq`,
			`INSERT INTO messages (thread_id, ns, checkpoint_id, idx, body)
				SELECT $2, m.ns, m.checkpoint_id, m.idx, m.body FROM messages m JOIN copy_set k ON m.ns = k.ns AND m.checkpoint_id = k.id WHERE m.thread_id = $1`,
			`INSERT INTO file_changes (thread_id, ns, checkpoint_id, idx, path, sha, created_at, modified_at)
				SELECT $2, f.ns, f.checkpoint_id, f.idx, f.path, f.sha, f.created_at, f.modified_at FROM file_changes f JOIN copy_set k ON f.ns = k.ns AND f.checkpoint_id = k.id WHERE f.thread_id = $1`,
			`INSERT INTO snapshot_files (thread_id, ns, checkpoint_id, path, sha, created_at, modified_at)
				SELECT $2, f.ns, f.checkpoint_id, f.path, f.sha, f.created_at, f.modified_at FROM snapshot_files f JOIN copy_set k ON f.ns = k.ns AND f.checkpoint_id = k.id WHERE f.thread_id = $1`,
			`INSERT INTO writes (thread_id, ns, checkpoint_id, call_id, kind, body)
				SELECT $2, w.ns, w.checkpoint_id, w.call_id, w.kind, w.body FROM writes w JOIN copy_set k ON w.ns = k.ns AND w.checkpoint_id = k.id WHERE w.thread_id = $1`,
		}
		for _, q := range stmts {
			if _, err := tx.Exec(ctx, q, src.ThreadID, dst); err != nil {
				return err
			}
		}
		return nil
	})
}

// Prune drops history of a thread. Each surviving checkpoint whose parent
// is dropped first becomes a full snapshot, holding every message of its
// history itself, so every survivor keeps its state.
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
		before := int64(-1)
		if opts.Before != "" {
			var seq *int64
			if err := tx.QueryRow(ctx, `SELECT min(seq) FROM checkpoints WHERE thread_id = $1 AND id = $2`, threadID, opts.Before).Scan(&seq); err != nil {
				return err
			}
			if seq == nil {
				return fmt.Errorf("%w: checkpoint %q in thread %q", checkpoint.ErrNotFound, opts.Before, threadID)
			}
			before = *seq
		}
		if _, err := tx.Exec(ctx, `CREATE TEMP TABLE doomed ON COMMIT DROP AS
			SELECT ns, id FROM (
				SELECT ns, id, seq, row_number() OVER (PARTITION BY ns ORDER BY seq DESC) AS rank
				FROM checkpoints WHERE thread_id = $1
			) r WHERE ($2 > 0 AND rank > $2) OR seq < $3`, threadID, opts.KeepLast, before); err != nil {
			return err
		}
		// Survivors whose parent is doomed become full snapshots.
		rows, err := tx.Query(ctx, `SELECT c.ns, c.id FROM checkpoints c JOIN doomed d ON c.ns = d.ns AND c.parent_id = d.id
			WHERE c.thread_id = $1 AND NOT EXISTS (SELECT 1 FROM doomed x WHERE x.ns = c.ns AND x.id = c.id)`, threadID)
		if err != nil {
			return err
		}
		type key struct{ ns, id string }
		var bounds []key
		for rows.Next() {
			var k key
			if err := rows.Scan(&k.ns, &k.id); err != nil {
				rows.Close()
				return err
			}
			bounds = append(bounds, k)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, b := range bounds {
			if err := rebase(ctx, tx, threadID, b.ns, b.id, s.db.opts.SnapshotEvery); err != nil {
				return err
			}
		}
		for _, table := range []struct{ name, idcol string }{
			{"writes", "checkpoint_id"}, {"messages", "checkpoint_id"}, {"file_changes", "checkpoint_id"},
			{"snapshot_files", "checkpoint_id"}, {"checkpoints", "id"},
		} {
			if _, err := tx.Exec(ctx, `DELETE FROM `+table.name+` t USING doomed d
				WHERE t.thread_id = $1 AND t.ns = d.ns AND t.`+table.idcol+` = d.id`, threadID); err != nil {
				return err
			}
		}
		return sweepBlobs(ctx, tx)
	})
}

// rebase makes checkpoint id a full snapshot whose own messages are its
// whole history, so it no longer needs any ancestor.
func rebase(ctx context.Context, tx pgx.Tx, thread, ns, id string, every int) error {
	l, err := loadState(ctx, tx, thread, ns, id, every)
	if err != nil {
		return err
	}
	msgs, err := chainMessages(ctx, tx, thread, ns, l.chain)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `DELETE FROM messages WHERE thread_id = $1 AND ns = $2 AND checkpoint_id = $3`, thread, ns, id); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `DELETE FROM snapshot_files WHERE thread_id = $1 AND ns = $2 AND checkpoint_id = $3`, thread, ns, id); err != nil {
		return err
	}
	batch := &pgx.Batch{}
	for i, m := range msgs {
		body, err := checkpoint.EncodeMessage(m)
		if err != nil {
			return err
		}
		batch.Queue(`INSERT INTO messages (thread_id, ns, checkpoint_id, idx, body) VALUES ($1, $2, $3, $4, $5)`, thread, ns, id, i, body)
	}
	for p, f := range l.files {
		batch.Queue(`INSERT INTO snapshot_files (thread_id, ns, checkpoint_id, path, sha, created_at, modified_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`, thread, ns, id, p, f.sha, f.created, f.modified)
	}
	rec := snapshotRec{Chain: []string{id}}
	if len(l.values) > 0 {
		rec.Values = l.values
	}
	snap, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	batch.Queue(`UPDATE checkpoints SET snapshot = $4, snap_base = '' WHERE thread_id = $1 AND ns = $2 AND id = $3`, thread, ns, id, snap)
	return tx.SendBatch(ctx, batch).Close()
}

func validLease(threadID, holder string, ttl time.Duration) error {
	if err := checkpoint.ValidateThreadID(threadID); err != nil {
		return err
	}
	if holder == "" {
		return fmt.Errorf("%w: lease holder is empty", checkpoint.ErrInvalid)
	}
	if len(holder) > checkpoint.MaxIDLen {
		return fmt.Errorf("%w: lease holder is %d bytes long; at most %d are allowed", checkpoint.ErrInvalid, len(holder), checkpoint.MaxIDLen)
	}
	if ttl <= 0 {
		return fmt.Errorf("%w: lease duration %s is not positive", checkpoint.ErrInvalid, ttl)
	}
	return nil
}

// Acquire leases a thread to holder until now+ttl with one conditional
// upsert: it takes a free or expired lease, renews the holder's own, and
// otherwise reports who holds it.
func (s *Saver) Acquire(ctx context.Context, threadID, holder string, now time.Time, ttl time.Duration) (checkpoint.Lease, error) {
	if err := s.check(ctx); err != nil {
		return checkpoint.Lease{}, err
	}
	if err := validLease(threadID, holder, ttl); err != nil {
		return checkpoint.Lease{}, err
	}
	expires := now.Add(ttl)
	ctx, cancel := s.db.call(ctx)
	defer cancel()
	var got string
	err := s.db.pool.QueryRow(ctx, `INSERT INTO leases (thread_id, holder, expires_ns) VALUES ($1, $2, $3)
		ON CONFLICT (thread_id) DO UPDATE SET holder = excluded.holder, expires_ns = excluded.expires_ns
		WHERE leases.holder = excluded.holder OR leases.expires_ns <= $4
		RETURNING holder`, threadID, holder, expires.UnixNano(), now.UnixNano()).Scan(&got)
	if err == nil {
		return checkpoint.Lease{ThreadID: threadID, Holder: holder, Expires: expires}, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return checkpoint.Lease{}, s.wrap(ctx, err)
	}
	var other string
	var exp int64
	if err := s.db.pool.QueryRow(ctx, `SELECT holder, expires_ns FROM leases WHERE thread_id = $1`, threadID).Scan(&other, &exp); err != nil {
		return checkpoint.Lease{}, s.wrap(ctx, err)
	}
	return checkpoint.Lease{}, &checkpoint.LeasedError{ThreadID: threadID, Holder: other, Expires: time.Unix(0, exp).UTC()}
}

// Renew extends holder's lease to now+ttl.
func (s *Saver) Renew(ctx context.Context, threadID, holder string, now time.Time, ttl time.Duration) (checkpoint.Lease, error) {
	if err := s.check(ctx); err != nil {
		return checkpoint.Lease{}, err
	}
	if err := validLease(threadID, holder, ttl); err != nil {
		return checkpoint.Lease{}, err
	}
	expires := now.Add(ttl)
	ctx, cancel := s.db.call(ctx)
	defer cancel()
	tag, err := s.db.pool.Exec(ctx, `UPDATE leases SET expires_ns = $3 WHERE thread_id = $1 AND holder = $2`, threadID, holder, expires.UnixNano())
	if err != nil {
		return checkpoint.Lease{}, s.wrap(ctx, err)
	}
	if tag.RowsAffected() == 0 {
		return checkpoint.Lease{}, fmt.Errorf("%w: thread %q by %s", checkpoint.ErrNotHeld, threadID, holder)
	}
	return checkpoint.Lease{ThreadID: threadID, Holder: holder, Expires: expires}, nil
}

// Release ends holder's lease; another holder's lease is left alone.
func (s *Saver) Release(ctx context.Context, threadID, holder string) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	if err := checkpoint.ValidateThreadID(threadID); err != nil {
		return err
	}
	ctx, cancel := s.db.call(ctx)
	defer cancel()
	_, err := s.db.pool.Exec(ctx, `DELETE FROM leases WHERE thread_id = $1 AND holder = $2`, threadID, holder)
	return s.wrap(ctx, err)
}
