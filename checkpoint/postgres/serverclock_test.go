package postgres

import (
	"errors"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/checkpoint"
)

// With ServerClock, leases run on the server's clock: a machine whose clock
// is ten minutes ahead does not take over a live lease, and one whose clock
// is far behind takes over a lease that has run out by the server's.
func TestServerClockTimesLeases(t *testing.T) {
	ctx := t.Context()
	s := openTest(t, Options{ServerClock: true})
	const ttl = 400 * time.Millisecond
	before := time.Now()
	l, err := s.Acquire(ctx, "T", "a", before, ttl)
	if err != nil {
		t.Fatal(err)
	}
	// The server runs on this machine: its expiry is about ours.
	if l.Expires.Before(before.Add(ttl-time.Second)) || l.Expires.After(time.Now().Add(ttl+time.Second)) {
		t.Errorf("expires %s, want about %s", l.Expires, before.Add(ttl))
	}
	if _, err := s.Acquire(ctx, "T", "b", time.Now().Add(10*time.Minute), ttl); !errors.Is(err, checkpoint.ErrLeased) {
		t.Fatalf("a clock ten minutes ahead took a live lease: %v", err)
	}
	if _, err := s.Renew(ctx, "T", "a", time.Unix(0, 0), ttl); err != nil {
		t.Fatalf("renew with a clock far behind: %v", err)
	}
	// Real time: the lease runs out by the PostgreSQL server's clock, which
	// no fake clock in this process moves.
	time.Sleep(ttl + 200*time.Millisecond)
	if l, err := s.Acquire(ctx, "T", "b", time.Unix(0, 0), ttl); err != nil || l.Holder != "b" {
		t.Fatalf("the lease ran out by the server's clock, but a clock far behind could not take it: %v", err)
	}
}
