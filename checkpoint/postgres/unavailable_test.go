package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/internal/pgtest"
)

func TestUnavailableMarksServerFailures(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		ctx  context.Context
		err  error
		want bool
	}{
		{context.Background(), &pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"}, true},
		{context.Background(), &pgconn.PgError{Code: "08006"}, true}, // connection failure
		{context.Background(), &pgconn.PgError{Code: "53300"}, true}, // too many connections
		{context.Background(), &pgconn.PgError{Code: "40001"}, true}, // serialization failure
		{context.Background(), fmt.Errorf("reading: %w", io.ErrUnexpectedEOF), true},
		{context.Background(), &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}, true},
		{context.Background(), &pgconn.PgError{Code: "23505"}, false}, // unique violation: the operation's fault
		{context.Background(), &pgconn.PgError{Code: "42P01"}, false}, // undefined table
		{context.Background(), checkpoint.ErrNotFound, false},
		{context.Background(), errors.New("anything else"), false},
		{cancelled, fmt.Errorf("reading: %w", io.ErrUnexpectedEOF), false}, // the caller gave up
	} {
		got := unavailable(c.ctx, c.err)
		if errors.Is(got, checkpoint.ErrUnavailable) != c.want || !errors.Is(got, c.err) {
			t.Errorf("unavailable(%v) = %v; want marked %v, keeping the cause", c.err, got, c.want)
		}
	}
}

// When the server ends the saver's connection in the middle of a put (a
// restart, a failover, an administrator), the put fails as unavailable,
// not as its own fault, and the same put tried again goes through. So does
// the first put on a connection the server ended while it was idle.
func TestPutAfterTheServerEndedTheConnections(t *testing.T) {
	dsn, schema := pgtest.Schema(t)
	app := "unavail_" + schema
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	s, admin := openWithC1(t, u.String(), Options{Schema: schema})
	ctx := t.Context()
	end := func() int {
		var n int
		if err := admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// Idle connections ended: the next put goes through, or fails as
	// unavailable and goes through when tried again.
	if end() == 0 {
		t.Fatal("no connection of the saver to end")
	}
	c2 := checkpoint.Step{ThreadID: "T", ID: "c2", ParentID: "c1"}
	if err := s.Put(ctx, c2); err != nil {
		if !errors.Is(err, checkpoint.ErrUnavailable) {
			t.Fatalf("put after the server ended the idle connections: %v; want it stored or checkpoint.ErrUnavailable", err)
		}
		if err := s.Put(ctx, c2); err != nil {
			t.Fatalf("the same put tried again: %v", err)
		}
	}
	// A connection ended while the put waits on a lock inside its
	// transaction: unavailable.
	tx, err := admin.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, "LOCK TABLE "+pgx.Identifier{schema, "cp_records"}.Sanitize()+" IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	st := checkpoint.Step{ThreadID: "T", ID: "c3", ParentID: "c2"}
	done := make(chan error, 1)
	go func() { done <- s.Put(ctx, st) }()
	// Poll the server, up to a deadline, until the put waits on the lock.
	for waiting, deadline := 0, time.Now().Add(time.Minute); waiting == 0; time.Sleep(5 * time.Millisecond) {
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`, app).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting == 0 && time.Now().After(deadline) {
			t.Fatal("the put did not wait on the locked table")
		}
	}
	var n int
	if err := tx.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`, app).Scan(&n); err != nil || n == 0 {
		t.Fatalf("ending the waiting put's connection: %v (%d ended)", err, n)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, checkpoint.ErrUnavailable) {
		t.Fatalf("put whose connection the server ended: %v; want checkpoint.ErrUnavailable", err)
	}
	if err := s.Put(ctx, st); err != nil {
		t.Fatalf("the same put tried again: %v", err)
	}
	cp, err := s.Get(ctx, checkpoint.Ref{ThreadID: "T"})
	if err != nil || cp.ID != "c3" {
		t.Fatalf("latest: %v %v; want c3", cp, err)
	}
}

// A server too slow to answer within the call timeout (frozen, or stuck
// behind a lock) fails a put or a write as unavailable, not as the
// caller's own deadline: the caller's context is still live, and the same
// call tried again once the server answers goes through.
func TestCallTimeoutIsUnavailable(t *testing.T) {
	dsn, schema := pgtest.Schema(t)
	s, admin := openWithC1(t, dsn, Options{Schema: schema, CallTimeout: 300 * time.Millisecond})
	ctx := t.Context()
	for _, c := range []struct {
		table string
		call  func() error
	}{
		{"cp_writes", func() error {
			return s.PutWrite(ctx, checkpoint.Ref{ThreadID: "T", ID: "c1"}, checkpoint.Write{CallID: "x", Kind: checkpoint.KindResult})
		}},
		{"cp_records", func() error { return s.Put(ctx, checkpoint.Step{ThreadID: "T", ID: "c2", ParentID: "c1"}) }},
	} {
		tx, err := admin.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, "LOCK TABLE "+pgx.Identifier{schema, c.table}.Sanitize()+" IN ACCESS EXCLUSIVE MODE"); err != nil {
			t.Fatal(err)
		}
		err = c.call()
		if rerr := tx.Rollback(ctx); rerr != nil {
			t.Fatal(rerr)
		}
		if !errors.Is(err, checkpoint.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
			t.Errorf("%s locked past the call timeout: %v; want checkpoint.ErrUnavailable", c.table, err)
		}
		if err := c.call(); err != nil {
			t.Errorf("%s: the same call once the lock is gone: %v", c.table, err)
		}
	}
}

// openWithC1 opens a saver on dsn with checkpoint c1 of thread T in it, and
// a connection of the test's own to the same server. The schema is created
// by a saver of its own first, so that the saver under test, with its short
// call timeout, opens a current schema.
func openWithC1(t *testing.T, dsn string, opts Options) (*Saver, *pgx.Conn) {
	t.Helper()
	mig, err := Open(t.Context(), dsn, Options{Schema: opts.Schema})
	if err != nil {
		t.Fatal(err)
	}
	mig.Close()
	s, err := Open(t.Context(), dsn, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Put(t.Context(), checkpoint.Step{ThreadID: "T", ID: "c1"}); err != nil {
		t.Fatal(err)
	}
	return s, pgtest.Connect(t)
}
