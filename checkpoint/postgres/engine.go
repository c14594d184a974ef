package postgres

import (
	"context"
	"fmt"
	"hash/fnv"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/checkpoint/internal/engine"
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
	return unavailable(ctx, s.txWrap(ctx, func(ctx context.Context, tx pgx.Tx) error {
		_, err := engine.Put(ctx, store{tx}, &st, s.db.opts.SnapshotEvery, nil, -1)
		return err
	}))
}

// PutWrite stores one finished call's result for the checkpoint at ref,
// replacing an earlier write of the same call id and kind.
func (s *Saver) PutWrite(ctx context.Context, ref checkpoint.Ref, w checkpoint.Write) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	kind, body, err := engine.WriteRow(ref, w)
	if err != nil {
		return err
	}
	// The call's own deadline is not the caller's: a write it cuts short
	// failed for the server's slowness, which unavailable says.
	cctx, cancel := s.db.call(ctx)
	defer cancel()
	tag, err := s.db.pool.Exec(cctx, `INSERT INTO cp_writes (thread_id, ns, cp, call_id, kind, data)
		SELECT $1, $2, $3, $4, $5, $6
		WHERE EXISTS (SELECT 1 FROM cp_records WHERE thread_id = $1 AND ns = $2 AND id = $3)
		ON CONFLICT (thread_id, ns, cp, call_id, kind) DO UPDATE SET data = excluded.data`,
		ref.ThreadID, ref.NS, ref.ID, w.CallID, kind, body)
	if err != nil {
		return unavailable(ctx, s.wrap(ctx, err))
	}
	if tag.RowsAffected() == 0 {
		return engine.NotStored(ref)
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
		var err error
		out, err = engine.Get(ctx, store{tx}, ref, s.db.opts.SnapshotEvery)
		return err
	})
	if err != nil {
		return nil, s.wrap(ctx, err)
	}
	return out, nil
}

// List returns a thread's checkpoints newest first, without state.
func (s *Saver) List(ctx context.Context, opts checkpoint.ListOptions) ([]checkpoint.Checkpoint, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	if err := checkpoint.CheckListOptions(opts); err != nil {
		return nil, err
	}
	ctx, cancel := s.db.call(ctx)
	defer cancel()
	out, err := engine.List(ctx, store{s.db.pool}, opts)
	if err != nil {
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
		return store{tx}.SweepBlobs(ctx)
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
		return engine.CopyThread(ctx, store{tx}, src, dst)
	})
}

// Prune drops history of a thread. Each surviving checkpoint whose parent
// is dropped becomes a snapshot, so every survivor keeps its state.
func (s *Saver) Prune(ctx context.Context, threadID string, opts checkpoint.PruneOptions) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	if err := checkpoint.CheckPruneOptions(threadID, opts); err != nil {
		return err
	}
	if opts.KeepLast == 0 && opts.Before == "" {
		return nil
	}
	return s.txWrap(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if err := lockThread(ctx, tx, threadID); err != nil {
			return err
		}
		return engine.Prune(ctx, store{tx}, threadID, opts)
	})
}
