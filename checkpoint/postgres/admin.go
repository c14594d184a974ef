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

// serverNowNS is the server's clock in nanoseconds since 1970, for
// Options.ServerClock.
const serverNowNS = `(extract(epoch FROM clock_timestamp()) * 1000000000)::bigint`

// leaseNow is the SQL for "now" in a lease statement, whose arguments are
// args, and the arguments to pass: the caller's now as one more argument,
// or the server's clock with Options.ServerClock.
func (s *Saver) leaseNow(now time.Time, args ...any) (string, []any) {
	if s.db.opts.ServerClock {
		return serverNowNS, args
	}
	return fmt.Sprintf("$%d::bigint", len(args)+1), append(args, now.UnixNano())
}

// Acquire leases a thread to holder until now+ttl with one conditional
// upsert: it takes a free or expired lease, renews the holder's own, and
// otherwise reports who holds it. With Options.ServerClock, now is the
// server's.
func (s *Saver) Acquire(ctx context.Context, threadID, holder string, now time.Time, ttl time.Duration) (checkpoint.Lease, error) {
	if err := s.check(ctx); err != nil {
		return checkpoint.Lease{}, err
	}
	if err := validLease(threadID, holder, ttl); err != nil {
		return checkpoint.Lease{}, err
	}
	ctx, cancel := s.db.call(ctx)
	defer cancel()
	var exp int64
	at, args := s.leaseNow(now, threadID, holder, int64(ttl))
	err := s.db.pool.QueryRow(ctx, `INSERT INTO leases (thread_id, holder, expires_ns) VALUES ($1, $2, `+at+` + $3::bigint)
		ON CONFLICT (thread_id) DO UPDATE SET holder = excluded.holder, expires_ns = excluded.expires_ns
		WHERE leases.holder = excluded.holder OR leases.expires_ns <= `+at+`
		RETURNING expires_ns`, args...).Scan(&exp)
	if err == nil {
		return checkpoint.Lease{ThreadID: threadID, Holder: holder, Expires: time.Unix(0, exp).UTC()}, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return checkpoint.Lease{}, s.wrap(ctx, err)
	}
	var other string
	if err := s.db.pool.QueryRow(ctx, `SELECT holder, expires_ns FROM leases WHERE thread_id = $1`, threadID).Scan(&other, &exp); err != nil {
		return checkpoint.Lease{}, s.wrap(ctx, err)
	}
	return checkpoint.Lease{}, &checkpoint.LeasedError{ThreadID: threadID, Holder: other, Expires: time.Unix(0, exp).UTC()}
}

// Renew extends holder's lease to now+ttl (the server's now with
// Options.ServerClock).
func (s *Saver) Renew(ctx context.Context, threadID, holder string, now time.Time, ttl time.Duration) (checkpoint.Lease, error) {
	if err := s.check(ctx); err != nil {
		return checkpoint.Lease{}, err
	}
	if err := validLease(threadID, holder, ttl); err != nil {
		return checkpoint.Lease{}, err
	}
	ctx, cancel := s.db.call(ctx)
	defer cancel()
	var exp int64
	at, args := s.leaseNow(now, threadID, holder, int64(ttl))
	err := s.db.pool.QueryRow(ctx, `UPDATE leases SET expires_ns = `+at+` + $3::bigint
		WHERE thread_id = $1 AND holder = $2 RETURNING expires_ns`, args...).Scan(&exp)
	if errors.Is(err, pgx.ErrNoRows) {
		return checkpoint.Lease{}, fmt.Errorf("%w: thread %q by %s", checkpoint.ErrNotHeld, threadID, holder)
	}
	if err != nil {
		return checkpoint.Lease{}, s.wrap(ctx, err)
	}
	return checkpoint.Lease{ThreadID: threadID, Holder: holder, Expires: time.Unix(0, exp).UTC()}, nil
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
