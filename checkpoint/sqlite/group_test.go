package sqlite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm"
)

// Puts and writes that queue while a commit runs are committed together;
// one that fails in such a batch fails alone, and every caller sees its own
// outcome.
func TestGroupCommit(t *testing.T) {
	for _, withBad := range []bool{false, true} {
		t.Run(fmt.Sprintf("failing=%v", withBad), func(t *testing.T) {
			s, err := Open(filepath.Join(t.TempDir(), "state.db"), Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			const n = 6
			for i := range n {
				st := checkpoint.Step{ThreadID: "th", NS: fmt.Sprint("ns", i), ID: "c1",
					Messages: []llm.Message{{Role: llm.RoleUser, Content: "start"}}}
				if err := s.Put(ctx, st); err != nil {
					t.Fatal(err)
				}
			}
			// Hold the writer as a running commit would, and queue one put and
			// one write per namespace behind it.
			g := &s.group
			g.mu.Lock()
			g.busy = true
			g.mu.Unlock()
			type outcome struct {
				what string
				err  error
			}
			out := make(chan outcome, 2*n+1)
			var wg sync.WaitGroup
			for i := range n {
				ns := fmt.Sprint("ns", i)
				wg.Add(2)
				go func() {
					defer wg.Done()
					err := s.Put(ctx, checkpoint.Step{ThreadID: "th", NS: ns, ID: "c2", ParentID: "c1",
						Messages: []llm.Message{{Role: llm.RoleUser, Content: "second " + ns}}})
					out <- outcome{"put " + ns, err}
				}()
				go func() {
					defer wg.Done()
					err := s.PutWrite(ctx, checkpoint.Ref{ThreadID: "th", NS: ns, ID: "c1"},
						checkpoint.Write{CallID: "call", Result: llm.Message{Role: llm.RoleTool, ToolCallID: "call", Content: "result " + ns}})
					out <- outcome{"write " + ns, err}
				}()
			}
			queued := 2 * n
			if withBad {
				wg.Add(1)
				queued++
				go func() {
					defer wg.Done()
					err := s.PutWrite(ctx, checkpoint.Ref{ThreadID: "th", NS: "ns0", ID: "missing"},
						checkpoint.Write{CallID: "call", Result: llm.Message{Role: llm.RoleTool, ToolCallID: "call", Content: "lost"}})
					out <- outcome{"bad write", err}
				}()
			}
			for {
				g.mu.Lock()
				l := len(g.queue)
				g.mu.Unlock()
				if l == queued {
					break
				}
				runtime.Gosched()
			}
			// The running commit ends: the first in the queue commits the rest.
			g.mu.Lock()
			g.queue[0].lead = true
			g.queue[0].done <- struct{}{}
			g.mu.Unlock()
			wg.Wait()
			close(out)
			for o := range out {
				if o.what == "bad write" {
					if !errors.Is(o.err, checkpoint.ErrNotFound) {
						t.Errorf("%s: %v, want ErrNotFound", o.what, o.err)
					}
				} else if o.err != nil {
					t.Errorf("%s: %v", o.what, o.err)
				}
			}
			if g.together != 1 {
				t.Errorf("%d transactions of several operations, want 1", g.together)
			}
			if g.busy || len(g.queue) != 0 {
				t.Errorf("after the batch: busy %v, %d queued", g.busy, len(g.queue))
			}
			for i := range n {
				ns := fmt.Sprint("ns", i)
				c, err := s.Get(ctx, checkpoint.Ref{ThreadID: "th", NS: ns, ID: "c1"})
				if err != nil {
					t.Fatal(err)
				}
				if len(c.Pending) != 1 || c.Pending[0].Result.Content != "result "+ns {
					t.Errorf("%s: pending writes %+v", ns, c.Pending)
				}
				c, err = s.Get(ctx, checkpoint.Ref{ThreadID: "th", NS: ns})
				if err != nil {
					t.Fatal(err)
				}
				if c.ID != "c2" || len(c.State.Messages) != 2 || c.State.Messages[1].Content != "second "+ns {
					t.Errorf("%s: latest %q with %+v", ns, c.ID, c.State.Messages)
				}
			}
			// The writer is free again: a put goes through at once.
			if err := s.Put(ctx, checkpoint.Step{ThreadID: "th", ID: "c3", ParentID: "c2", NS: "ns0"}); err != nil {
				t.Error(err)
			}
		})
	}
}

// The writer's transactions run by hand on one held connection: one whose
// context is cancelled halfway is rolled back, and the next write starts a
// transaction of its own (a transaction left open would swallow it).
func TestCancelledWriteLeavesNoTransactionOpen(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "state.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	err = s.writeTx(ctx, func(q querier) error {
		if _, err := q.tx.ExecContext(ctx, `INSERT INTO leases (thread, holder, expires) VALUES ('a', 'h', 1)`); err != nil {
			return err
		}
		cancel()
		_, err := q.tx.ExecContext(ctx, `INSERT INTO leases (thread, holder, expires) VALUES ('b', 'h', 1)`)
		return err
	})
	if err == nil {
		t.Fatal("a write whose context was cancelled halfway succeeded")
	}
	bg := context.Background()
	if err := s.Put(bg, checkpoint.Step{ThreadID: "th", ID: "c1"}); err != nil {
		t.Fatalf("the next put: %v", err)
	}
	var n int
	if err := s.r.QueryRow(`SELECT COUNT(*) FROM leases`).Scan(&n); err != nil || n != 0 {
		t.Errorf("leases after the cancelled write: %d (%v), want 0", n, err)
	}
	if _, err := s.Get(bg, checkpoint.Ref{ThreadID: "th"}); err != nil {
		t.Errorf("the put is not readable: %v", err)
	}
}

// Two puts in one namespace in one batch: the second must not trust the tip
// recorded before the batch, which the first has moved on (here a fork with
// messages, then a fork without any; the thread then continues from the
// second).
func TestGroupCommitTwoPutsInOneNamespace(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "state.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	msg := func(text string) []llm.Message { return []llm.Message{{Role: llm.RoleUser, Content: text}} }
	if err := s.Put(ctx, checkpoint.Step{ThreadID: "th", ID: "c1", Messages: msg("m1")}); err != nil {
		t.Fatal(err)
	}
	g := &s.group
	g.mu.Lock()
	g.busy = true
	g.mu.Unlock()
	waitQueued := func(n int) {
		for {
			g.mu.Lock()
			l := len(g.queue)
			g.mu.Unlock()
			if l == n {
				return
			}
			runtime.Gosched()
		}
	}
	errs := make(chan error, 2)
	go func() {
		errs <- s.Put(ctx, checkpoint.Step{ThreadID: "th", ID: "f1", ParentID: "c1", Messages: msg("f1")})
	}()
	waitQueued(1)
	go func() { errs <- s.Put(ctx, checkpoint.Step{ThreadID: "th", ID: "f2", ParentID: "c1"}) }()
	waitQueued(2)
	g.mu.Lock()
	g.queue[0].lead = true
	g.queue[0].done <- struct{}{}
	g.mu.Unlock()
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if g.together != 1 {
		t.Fatalf("%d transactions of several operations, want 1", g.together)
	}
	if err := s.Put(ctx, checkpoint.Step{ThreadID: "th", ID: "c3", ParentID: "f2", Messages: msg("m3")}); err != nil {
		t.Fatalf("continuing from the second fork: %v", err)
	}
	for id, want := range map[string]string{"c3": "m1,m3", "f1": "m1,f1"} {
		c, err := s.Get(ctx, checkpoint.Ref{ThreadID: "th", ID: id})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range c.State.Messages {
			got = append(got, m.Content)
		}
		if strings.Join(got, ",") != want {
			t.Errorf("%s: messages %q, want %s", id, got, want)
		}
	}
}

// A put continuing from the saver's tip reads the data version with its
// insert: when another connection committed since the tip was recorded,
// the put is rolled back and run again reading the namespace, and the
// tip it then records carries the new version, so the next put is fast
// again.
func TestStaleTipIsSeenAtInsert(t *testing.T) {
	const reruns = 1
	path := filepath.Join(t.TempDir(), "state.db")
	a, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	put := func(s *Saver, thread, id, parent string) {
		t.Helper()
		if err := s.Put(ctx, checkpoint.Step{ThreadID: thread, ID: id, ParentID: parent,
			Messages: []llm.Message{{Role: llm.RoleUser, Content: "text of " + id}}}); err != nil {
			t.Fatal(err)
		}
	}
	put(a, "th", "c1", "")
	put(a, "th", "c2", "c1")
	if a.group.stale != 0 {
		t.Fatalf("%d puts ran again with no other writer", a.group.stale)
	}
	// b's replacement of c2 (same id, other content) must be what c3
	// continues from, not a's tip.
	if err := b.DeleteThread(ctx, "th"); err != nil {
		t.Fatal(err)
	}
	put(b, "th", "c1", "")
	if err := b.Put(ctx, checkpoint.Step{ThreadID: "th", ID: "c2", ParentID: "c1",
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "b's c2"}}}); err != nil {
		t.Fatal(err)
	}
	put(a, "th", "c3", "c2")
	if a.group.stale != reruns {
		t.Errorf("%d puts ran again after another connection's commit, want %d", a.group.stale, reruns)
	}
	put(a, "th", "c4", "c3")
	if a.group.stale != reruns {
		t.Errorf("the put after the rerun ran again too (%d reruns)", a.group.stale)
	}
	c, err := a.Get(ctx, checkpoint.Ref{ThreadID: "th"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range c.State.Messages {
		got = append(got, m.Content)
	}
	if want := "text of c1,b's c2,text of c3,text of c4"; strings.Join(got, ",") != want {
		t.Errorf("messages %q, want %q", strings.Join(got, ","), want)
	}
	// All four of a's and b's puts are stored once.
	var n int
	if err := a.r.QueryRow(`SELECT COUNT(*) FROM checkpoints WHERE thread = 'th'`).Scan(&n); err != nil || n != 4 {
		t.Errorf("%d checkpoints, %v; want 4", n, err)
	}
}
