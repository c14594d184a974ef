package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/deepagents-go/deepagents/checkpoint"
)

func checkLease(ctx context.Context, threadID, holder string, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkpoint.ValidateThreadID(threadID); err != nil {
		return err
	}
	if err := checkpoint.ValidateHolder(holder); err != nil {
		return err
	}
	if ttl <= 0 {
		return fmt.Errorf("%w: lease time %s is not positive", checkpoint.ErrInvalid, ttl)
	}
	return nil
}

// Acquire implements checkpoint.Saver. Expiry times are stored as Unix
// nanoseconds of the caller's clock.
func (s *Saver) Acquire(ctx context.Context, threadID, holder string, now time.Time, ttl time.Duration) (checkpoint.Lease, error) {
	if err := checkLease(ctx, threadID, holder, ttl); err != nil {
		return checkpoint.Lease{}, err
	}
	l := checkpoint.Lease{ThreadID: threadID, Holder: holder, Expires: now.Add(ttl).UTC()}
	// The lease is read and written in one write transaction, which holds
	// SQLite's write lock: no other connection, in this process or
	// another, can take the thread in between. The statements run on a
	// context that cannot be cancelled, as every started write's (see
	// still).
	wctx := still(ctx)
	err := s.writeTx(ctx, func(q querier) error {
		var cur string
		var exp int64
		err := q.stmt(wctx, "leaseget").QueryRowContext(wctx, threadID).Scan(&cur, &exp)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if err == nil && cur != holder && now.UnixNano() < exp {
			return &checkpoint.LeasedError{ThreadID: threadID, Holder: cur, Expires: time.Unix(0, exp).UTC()}
		}
		_, err = q.execNamed(wctx, "leaseput", threadID, holder, l.Expires.UnixNano())
		return err
	})
	if err != nil {
		return checkpoint.Lease{}, err
	}
	return l, nil
}

// Renew implements checkpoint.Saver.
func (s *Saver) Renew(ctx context.Context, threadID, holder string, now time.Time, ttl time.Duration) (checkpoint.Lease, error) {
	if err := checkLease(ctx, threadID, holder, ttl); err != nil {
		return checkpoint.Lease{}, err
	}
	l := checkpoint.Lease{ThreadID: threadID, Holder: holder, Expires: now.Add(ttl).UTC()}
	// One statement: its own transaction.
	res, err := s.execAlone(ctx, "leaserenew", l.Expires.UnixNano(), threadID, holder)
	if err == nil {
		if n, rerr := res.RowsAffected(); rerr != nil || n == 0 {
			err = fmt.Errorf("%w: %s does not hold thread %q", checkpoint.ErrNotHeld, holder, threadID)
		}
	}
	if err != nil {
		return checkpoint.Lease{}, err
	}
	return l, nil
}

// Release implements checkpoint.Saver.
func (s *Saver) Release(ctx context.Context, threadID, holder string) error {
	if err := checkLease(ctx, threadID, holder, time.Second); err != nil {
		return err
	}
	_, err := s.execAlone(ctx, "leasedel", threadID, holder)
	return err
}

// Threads implements checkpoint.Saver.
func (s *Saver) Threads(ctx context.Context, opts checkpoint.ThreadsOptions) ([]checkpoint.ThreadInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []checkpoint.ThreadInfo
	err := s.readTx(ctx, func(q querier) error {
		rows, err := q.tx.QueryContext(ctx, `
			SELECT c.thread, c.record,
				(SELECT COUNT(*) FROM checkpoints x WHERE x.thread = c.thread AND x.ns = ''),
				COALESCE((SELECT t.title FROM checkpoints t WHERE t.thread = c.thread AND t.ns = '' AND t.title <> '' ORDER BY t.seq LIMIT 1), '')
			FROM checkpoints c
			WHERE c.seq IN (SELECT MAX(seq) FROM checkpoints WHERE ns = '' GROUP BY thread)`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var info checkpoint.ThreadInfo
			var raw []byte
			if err := rows.Scan(&info.ID, &raw, &info.Steps, &info.Title); err != nil {
				return err
			}
			r, err := checkpoint.Decode(raw)
			if err != nil {
				return err
			}
			info.Updated, info.Status = r.Time, r.Status
			info.Tokens = r.Usage.InputTokens + r.Usage.OutputTokens
			out = append(out, info)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	checkpoint.SortThreads(out)
	if opts.Limit > 0 && len(out) > opts.Limit {
		out = out[:opts.Limit]
	}
	return out, nil
}

// Stats implements checkpoint.Saver. Bytes counts stored payloads, not the
// database's pages and indexes; see DiskSize for the file.
func (s *Saver) Stats(ctx context.Context, threadID string) (checkpoint.Stats, error) {
	if err := ctx.Err(); err != nil {
		return checkpoint.Stats{}, err
	}
	var st checkpoint.Stats
	err := s.readTx(ctx, func(q querier) error {
		where, args := "", []any{}
		if threadID != "" {
			where, args = " WHERE thread = ?", []any{threadID}
		}
		var b1, b2, b3, b4 int64
		var chunks, inRows int
		// Messages are in checkpoint rows (those not packed yet) and in
		// chunks.
		if err := q.tx.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(LENGTH(record)), 0) + COALESCE(SUM(LENGTH(msgs)), 0),
			COALESCE(SUM(CASE WHEN msgs IS NULL THEN 0 ELSE seq_to - seq_from END), 0) FROM checkpoints`+where, args...).Scan(&st.Checkpoints, &b1, &inRows); err != nil {
			return err
		}
		if err := q.tx.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(seq_to - seq_from), 0), COALESCE(SUM(LENGTH(data)), 0) FROM msgchunks`+where, args...).Scan(&chunks, &st.Messages, &b2); err != nil {
			return err
		}
		st.Messages += inRows
		if err := q.tx.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(LENGTH(data)), 0) FROM writes`+where, args...).Scan(&st.Writes, &b3); err != nil {
			return err
		}
		if err := q.tx.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(LENGTH(data)), 0) FROM blobs
			WHERE hash IN (SELECT hash FROM refs`+where+`)`, args...).Scan(&st.Blobs, &b4); err != nil {
			return err
		}
		st.Bytes = b1 + b2 + b3 + b4
		st.Rows = st.Checkpoints + chunks + st.Writes + st.Blobs
		return nil
	})
	return st, err
}

// DiskSize checkpoints the write-ahead log into the database file and
// returns the file's size in bytes.
func (s *Saver) DiskSize(ctx context.Context) (int64, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if _, err := s.wc.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		return 0, err
	}
	var pages, size int64
	if err := s.wc.QueryRowContext(ctx, `PRAGMA page_count`).Scan(&pages); err != nil {
		return 0, err
	}
	if err := s.wc.QueryRowContext(ctx, `PRAGMA page_size`).Scan(&size); err != nil {
		return 0, err
	}
	return pages * size, nil
}
