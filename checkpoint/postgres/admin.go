package postgres

import (
	"context"
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

func validLease(threadID, holder string, ttl time.Duration) error {
	if err := checkpoint.ValidateThreadID(threadID); err != nil {
		return err
	}
	if err := checkpoint.ValidateHolder(holder); err != nil {
		return err
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
	if err := checkpoint.ValidateHolder(holder); err != nil {
		return err
	}
	ctx, cancel := s.db.call(ctx)
	defer cancel()
	_, err := s.db.pool.Exec(ctx, `DELETE FROM leases WHERE thread_id = $1 AND holder = $2`, threadID, holder)
	return s.wrap(ctx, err)
}
