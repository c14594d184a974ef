package sqlite

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"time"
)

// opTx runs a put's or write's statements (fn) and then calls then, in the
// journaled transaction when the saver journals, in a transaction of its
// own when not.
func (s *Saver) opTx(ctx context.Context, fn func(q querier) error, then func()) error {
	if !s.journaling.Load() {
		return s.writeTxThen(ctx, fn, then)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.sticky != nil {
		return s.sticky
	}
	if s.j == nil {
		j, err := createJournal(s.path, s.syncJ)
		if err != nil {
			// Without a journal every put commits on its own, as durable.
			s.journaling.Store(false)
			return s.writeTxLocked(ctx, fn, then)
		}
		s.j = j
	}
	ctx = still(ctx)
	s.sharing()
	if !s.open {
		if err := s.begin(ctx); err != nil {
			return err
		}
		s.ops, s.opBytes, s.since = 0, 0, time.Now()
	}
	s.rec = s.rec[:0]
	if err := fn(querier{tx: s.wc, s: s, rec: &s.rec}); err != nil {
		var no refusal
		if errors.As(err, &no) && len(s.rec) == 0 {
			// Refused after reads that succeeded: the transaction is
			// intact and holds nothing of this operation.
			if s.ops == 0 {
				s.rollback() // begun for this operation only
				s.setOpen(false)
			}
			return no.error
		}
		return s.undo(err)
	}
	if len(s.rec) > 0 {
		if err := s.j.append(s.rec, s.syncJ); err != nil {
			return s.undo(fmt.Errorf("writing the checkpoint journal: %w", err))
		}
		s.opBytes += len(s.rec)
	}
	if cap(s.rec) > 1<<20 {
		s.rec = nil
	}
	if then != nil {
		then()
	}
	s.ops++
	// The operation is safe in the journal; a commit that fails from here
	// on fails the operations after it (see sticky), not this one.
	if s.shared || s.ops >= maxOpenOps || s.opBytes >= maxOpenBytes || time.Since(s.since) >= s.delay {
		s.flushLocked()
	} else {
		s.armTimer()
	}
	return nil
}

// sharedCheck is how often a saver looks for other savers' journals
// beside its database.
const sharedCheck = 50 * time.Millisecond

// sharing finds out, at most every sharedCheck, whether other savers
// (other processes, mostly) write to the database too (wmu held). While
// they do, the journaled transaction is committed after each operation
// instead of staying open for the commit delay: SQLite has one write
// lock per database, and a writer that keeps it for the delay, again and
// again, leaves the others waiting in SQLite's busy handler, whose
// sleeps grow to a tenth of a second, for seconds on end. Other savers
// are known by their journal files, which they make with their first
// put or write; a dead saver's journal counts until a lease taken
// replays it.
func (s *Saver) sharing() {
	if now := time.Now(); now.Sub(s.sharedAt) >= sharedCheck {
		s.sharedAt = now
		others, err := s.otherJournals()
		s.shared = err != nil || len(others) > 0
	}
}

// refusal is an operation's answer that it will not write (a lease held
// by another holder), given after reads that succeeded: the journaled
// transaction is not rolled back for it.
type refusal struct{ error }

func (r refusal) Unwrap() error { return r.error }

// armTimer makes sure the open transaction is committed when its delay
// is over, even if no other operation comes (wmu held).
func (s *Saver) armTimer() {
	if !s.open || s.timer != nil {
		return
	}
	txn := s.txn
	s.timer = time.AfterFunc(s.delay-time.Since(s.since), func() { s.flushTimer(txn) })
}

// begin opens the journaled transaction and reads its era.
func (s *Saver) begin(ctx context.Context) error {
	if err := s.lock(ctx); err != nil {
		s.rollback()
		return err
	}
	if _, err := s.stmts["mark"].ExecContext(ctx); err != nil {
		s.rollback()
		return err
	}
	if err := s.stmts["dataversion"].QueryRowContext(ctx).Scan(&s.era); err != nil {
		s.rollback()
		return err
	}
	s.setOpen(true)
	s.txn++
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	return nil
}

// lock begins the writer's transaction, which takes SQLite's write lock.
// Alone, it waits for the lock in SQLite's busy handler. Shared, it asks
// again every few milliseconds instead: the handler's sleeps grow to a
// tenth of a second, and a writer that sleeps that long between tries
// keeps losing the lock to savers that hold it only briefly.
func (s *Saver) lock(ctx context.Context) error {
	if !s.shared {
		_, err := s.stmts["begin"].ExecContext(ctx)
		return err
	}
	deadline := time.Now().Add(s.busy)
	for pause := time.Millisecond; ; pause = min(2*pause, 4*time.Millisecond) {
		// The busy handler gives up when the try's context ends.
		try, cancel := context.WithTimeout(ctx, 2*time.Millisecond)
		_, err := s.stmts["begin"].ExecContext(try)
		cancel()
		if err == nil || try.Err() == nil && !isBusy(err) {
			return err
		}
		if try.Err() != nil {
			// Should the end of the try have come as the lock was taken,
			// the transaction is open: end it before trying again.
			s.wc.ExecContext(context.Background(), "ROLLBACK")
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waiting %v for the database's write lock: %w", s.busy, err)
		}
		time.Sleep(pause/2 + rand.N(pause)) // jittered, so that waiters spread
	}
}

// flushTimer commits the open transaction txn when it is still open. A
// timer of an earlier transaction does nothing: every transaction stops
// its predecessor's timer when it begins.
func (s *Saver) flushTimer(txn uint64) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.open && s.txn == txn {
		s.timer = nil
		s.flushLocked()
	}
}

// Flush commits what the journal holds, so that other processes (and
// other Savers on the file) see every put and write that has returned; it
// fails when journaled work could not be committed (and stays in the
// journal for the next Open). Releasing a lease, other writes and Close
// commit too; this saver's reads see the open transaction.
func (s *Saver) Flush() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.flushLocked()
}

// flushLocked commits the open journaled transaction (wmu held). When the
// commit fails, the transaction is rolled back and its work run again
// from the journal for one more try; when that fails too, the saver stops
// writing (sticky) and the journal is kept for the next Open.
func (s *Saver) flushLocked() error {
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	if !s.open {
		return s.sticky
	}
	err := s.commitOpen()
	if err != nil {
		s.rollback()
		s.setOpen(false)
		if err = s.redo(); err == nil {
			err = s.commitOpen()
		}
	}
	if err != nil {
		s.rollback()
		s.setOpen(false)
		s.sticky = fmt.Errorf("sqlite checkpoint store: committing the journaled puts failed: %w (they are kept in %s and applied when the store is opened again)", err, s.j.path)
		return s.sticky
	}
	s.setOpen(false)
	// A journal that keeps records already committed costs only a skip
	// when replayed (the oplog row says they are in).
	s.j.reset()
	return nil
}

func (s *Saver) setOpen(open bool) {
	s.open = open
	s.dirty.Store(open)
}

// commitOpen records how far the journal is committed and commits. It
// first releases the transaction's savepoint, which fails when SQLite
// rolled the transaction back after an error: the oplog row, written
// outside any transaction then, would claim records that were lost.
func (s *Saver) commitOpen() error {
	ctx := context.Background()
	if _, err := s.stmts["release"].ExecContext(ctx); err != nil {
		return err
	}
	if s.oplogSt == nil {
		// Prepared at the first commit rather than with the others (whose
		// map is read without wmu): the tests that write a database of an
		// older schema, without the table, open a saver too.
		st, err := s.wc.PrepareContext(ctx, oplogPut)
		if err != nil {
			return err
		}
		s.oplogSt = st
	}
	if _, err := s.oplogSt.ExecContext(ctx, s.j.gen, s.j.seq); err != nil {
		return err
	}
	if _, err := s.stmts["commit"].ExecContext(ctx); err != nil {
		return err
	}
	s.j.done = s.j.seq
	return nil
}

// undo ends an operation that failed halfway: the transaction is rolled
// back and the operations journaled before it in the same transaction run
// again, so that only the failed one is gone.
func (s *Saver) undo(cause error) error {
	s.rollback()
	s.setOpen(false)
	if s.j.seq == s.j.done {
		return cause
	}
	if err := s.redo(); err != nil {
		s.rollback()
		s.setOpen(false)
		s.sticky = fmt.Errorf("sqlite checkpoint store: restoring the journaled puts after a failed one: %w (they are kept in %s and applied when the store is opened again)", err, s.j.path)
		return errors.Join(cause, s.sticky)
	}
	s.armTimer()
	return cause
}

// redo opens a transaction and runs the journal's records again: all of
// them are work done since the last commit.
func (s *Saver) redo() error {
	ctx := context.Background()
	f, err := os.Open(s.j.path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, recs, err := readJournal(f)
	if err != nil {
		return err
	}
	if err := s.begin(ctx); err != nil {
		return err
	}
	for _, r := range recs {
		if r.seq <= s.j.done {
			continue // committed; still there when an emptying failed
		}
		if err := s.execStmts(ctx, r.stmts); err != nil {
			return err
		}
	}
	return nil
}

// closeJournal commits and deletes the journal (wmu held). With work that
// could not be committed, the journal stays for the next Open.
func (s *Saver) closeJournal() error {
	if s.j == nil {
		return nil
	}
	err := s.flushLocked()
	if err != nil {
		s.j.f.Close()
		s.j = nil
		return err
	}
	gen := s.j.gen
	err = s.j.remove()
	s.j = nil
	if _, e := s.wc.ExecContext(context.Background(), `DELETE FROM oplog WHERE gen = ?`, gen); err == nil {
		err = e
	}
	return err
}

// recoverOthers replays the journals of savers that are gone.
func (s *Saver) recoverOthers(ctx context.Context) error {
	if !journalSupported {
		return nil
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	others, err := s.otherJournals()
	if err != nil || len(others) == 0 {
		return err
	}
	if err := s.flushLocked(); err != nil {
		return err
	}
	return s.recoverJournals(still(ctx), others, false)
}
