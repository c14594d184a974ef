package sqlite

import (
	"context"
	"errors"
	"sync"

	"github.com/deepagents-go/deepagents/checkpoint/internal/engine"
)

// Group commit: puts and writes that arrive while another commit runs (the
// parallel tool calls of one step, subagents fanned out together) wait in a
// queue, and the caller that finds the writer free commits the whole queue
// in one transaction. Every caller returns only once its own put or write
// is committed, or has failed; a batch in which one operation fails is
// rolled back and its operations run again one transaction each, so an
// operation fails or succeeds on its own, as without batching.

// op is one put or write waiting to be committed.
type op struct {
	// ctx is the caller's context, checked before the operation starts.
	// Once started, it runs to its commit on a context that cannot be
	// cancelled (see still).
	ctx context.Context
	// run does the operation's statements in the batch's transaction; era
	// is the transaction's era (see querier.era). It returns what to do
	// once the transaction has committed.
	run func(ctx context.Context, q querier, era int64) (after func(), err error)
	// alone, when set, does the whole operation in a transaction of its
	// own (used when the batch is this operation only).
	alone func(ctx context.Context) error
	put   bool // needs the era
	// ns is a put's thread and namespace: a second put in the same
	// namespace in one batch gets no era, so it reads the namespace as
	// the first left it instead of trusting the tip recorded before it.
	ns  [2]string
	err error
	// done receives once: when the operation is finished, or when its
	// caller is to commit the next batch.
	done chan struct{}
	lead bool
}

// group is a saver's queue of operations waiting for the writer.
type group struct {
	mu    sync.Mutex
	queue []*op
	busy  bool // a caller is committing a batch
	// together counts the transactions of more than one operation (for
	// tests).
	together int
	// stale counts the puts run again because another connection had
	// committed since their tip (for tests).
	stale int
}

// commit queues o and returns once it is committed (or failed); a failure
// of the store rather than of o is marked checkpoint.ErrUnavailable.
func (s *Saver) commit(o *op) error { return unavailable(s.commitOp(o)) }

func (s *Saver) commitOp(o *op) error {
	o.done = make(chan struct{}, 1)
	g := &s.group
	g.mu.Lock()
	g.queue = append(g.queue, o)
	lead := !g.busy
	g.busy = true
	g.mu.Unlock()
	if !lead {
		<-o.done
		if !o.lead {
			return o.err
		}
	}
	// This caller commits what has queued, its own operation first.
	g.mu.Lock()
	batch := g.queue
	g.queue = nil
	g.mu.Unlock()
	s.runBatch(batch)
	for _, b := range batch {
		if b != o {
			b.done <- struct{}{}
		}
	}
	// Whoever queued meanwhile commits the next batch.
	g.mu.Lock()
	if len(g.queue) > 0 {
		next := g.queue[0]
		next.lead = true
		next.done <- struct{}{}
	} else {
		g.busy = false
	}
	g.mu.Unlock()
	return o.err
}

// runBatch commits batch in one transaction, or each of its operations in
// one of its own when the batch fails.
func (s *Saver) runBatch(batch []*op) {
	if len(batch) == 1 {
		o := batch[0]
		if o.err = o.ctx.Err(); o.err != nil {
			return
		}
		if o.alone != nil {
			o.err = o.alone(still(o.ctx))
		} else {
			o.err = s.runOne(o)
		}
		return
	}
	live := batch[:0:0]
	for _, o := range batch {
		if o.err = o.ctx.Err(); o.err == nil {
			live = append(live, o)
		}
	}
	if len(live) == 0 {
		return
	}
	if s.runTogether(live) == nil {
		return
	}
	for _, o := range live {
		o.err = s.runOne(o)
	}
}

// still returns ctx without its cancellation, for the statements of a put
// or write that has started. Such a write is short, and one cancelled
// halfway would be rolled back anyway; with a context that can be
// cancelled, database/sql and the driver watch it from a goroutine of their
// own for every transaction and every statement, which cost more CPU than
// the statements of a small write themselves.
func still(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }

// runTogether runs ops in one transaction and commits it.
func (s *Saver) runTogether(ops []*op) error {
	// The transaction belongs to no single caller: a caller that gives up
	// makes its own operation fail, which sends the batch to runOne.
	ctx := context.Background()
	s.group.together++
	afters := make([]func(), 0, len(ops))
	return s.writeTxThen(ctx, func(q querier) error {
		era := int64(-1)
		seen := map[[2]string]bool{}
		for _, o := range ops {
			if o.put && era < 0 {
				var err error
				if era, err = q.era(ctx); err != nil {
					return err
				}
			}
			opEra := era
			if o.put {
				if seen[o.ns] {
					opEra = -1
				}
				seen[o.ns] = true
			}
			after, err := o.run(still(o.ctx), q, opEra)
			if err != nil {
				return err
			}
			afters = append(afters, after)
		}
		return nil
	}, func() {
		for _, after := range afters {
			if after != nil {
				after()
			}
		}
	})
}

// runOne runs o in a transaction of its own. A put reads the era with its
// insert; when that shows another writer committed since the tip it
// continued from, the transaction is rolled back and the put runs again
// with the era read first.
func (s *Saver) runOne(o *op) error {
	err := s.runOneEra(o, true)
	if errors.Is(err, engine.ErrStaleTip) {
		s.group.stale++
		err = s.runOneEra(o, false)
	}
	return err
}

func (s *Saver) runOneEra(o *op, atInsert bool) error {
	if err := o.ctx.Err(); err != nil {
		return err
	}
	ctx := still(o.ctx)
	var after func()
	return s.writeTxThen(ctx, func(q querier) error {
		era := int64(-1)
		if o.put && atInsert {
			era = engine.EraAtInsert
		} else if o.put {
			var err error
			if era, err = q.era(ctx); err != nil {
				return err
			}
		}
		var err error
		after, err = o.run(ctx, q, era)
		return err
	}, func() {
		if after != nil {
			after()
		}
	})
}
