package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/checkpoint/internal/msgcodec"
)

// ErrStored is what Writer.Insert returns, having written nothing, when the
// record's id is already stored in its namespace (a put that skipped
// Writer.Begin learns so only then).
var ErrStored = errors.New("checkpoint already stored")

// EraAtInsert, passed to Put as the era, asks it to read the era with the
// insert (the Writer must be an EraInserter) instead of before the put:
// a put continuing from a tip is built on the assumption that the tip's
// era is still current, and fails with ErrStaleTip, having written its
// record, when the insert shows it is not. The caller then rolls the
// transaction back and puts again with an era read first. This saves a
// statement per put where other writers are rare.
const EraAtInsert int64 = -2

// ErrStaleTip is what Put returns under EraAtInsert when the store changed
// since the tip it built on was recorded; the transaction must be rolled
// back.
var ErrStaleTip = errors.New("checkpoint tip is stale")

// An EraInserter is a Writer whose insert also reports the saver's era
// (see Put), read in the same transaction; ErrStored as for Insert.
type EraInserter interface {
	InsertEra(ctx context.Context, r *checkpoint.Record, raw []byte, msgs [][]byte, blobs map[string][]byte, refs []string) (era int64, err error)
}

// Put stores step st through w, in the caller's transaction: a checkpoint
// id already stored in its namespace is left as it is. With tips (nil
// for none), the parent's decoded record and chain are taken from the last
// put in the namespace when its stored bytes still match; Put then returns
// the tip of this put, which the caller records with Tips.Set once the
// transaction has committed (nil when nothing was stored).
//
// era is the saver's proof that no one else has written to the store since
// the tips of the same era were recorded (for SQLite, the writer
// connection's data version); a negative era proves nothing. When the
// parent is the namespace's tip of the current era, Put skips
// Writer.Begin: the tip knows the parent's record and the next message
// number, and Insert reports an id already stored.
func Put(ctx context.Context, w Writer, st *checkpoint.Step, every int, tips *Tips, era int64) (*Tip, error) {
	var parent *checkpoint.Record
	var pchain []*checkpoint.Record // the parent's chain, when known
	var view *checkpoint.View
	var next int64
	fast := false
	first := false // the thread's first put (see Tips.Fresh)
	lazy := era == EraAtInsert
	if t := tips.Get(st.ThreadID, st.NS); t != nil && st.ParentID != "" && t.rec.ID == st.ParentID &&
		(era >= 0 && t.era == era || lazy && t.era >= 0) {
		parent, pchain, next, fast = t.rec, t.chain, t.next, true
		if lazy {
			era = t.era // assumed; checked by the insert
		}
	} else if t == nil && st.ParentID == "" && era >= 0 && tips.Fresh(st.ThreadID, era) {
		// A namespace of a thread this saver started, without a tip: it is
		// empty (a subagent's first put).
	} else {
		stored, raw, n, err := w.Begin(ctx, st)
		if err != nil {
			return nil, err
		}
		if stored {
			return nil, nil // a put is idempotent
		}
		next = n
		if tips != nil && era >= 0 && st.NS == "" && st.ParentID == "" && n == 0 && raw == nil {
			// The first put of a thread's top namespace (where a run
			// starts): when it is the thread's first put at all, the saver
			// knows the thread whole from here on. A subagent's first put
			// asks nothing more.
			exists, err := w.ThreadExists(ctx, st.ThreadID)
			if err != nil {
				return nil, err
			}
			first = !exists
		}
		if st.ParentID != "" {
			if raw == nil {
				return nil, fmt.Errorf("parent of %q: %w: thread %q namespace %q checkpoint %q", st.ID, checkpoint.ErrNotFound, st.ThreadID, st.NS, st.ParentID)
			}
			if t != nil && t.rec.ID == st.ParentID && bytes.Equal(t.raw, raw) {
				parent, pchain = t.rec, t.chain
			} else if parent, err = checkpoint.Decode(raw); err != nil {
				return nil, fmt.Errorf("parent of %q: %w", st.ID, err)
			}
		}
	}
	if parent != nil && checkpoint.NeedsView(parent, every) {
		if pchain == nil {
			var err error
			if pchain, err = checkpoint.Chain(ctx, parent, RecentLoader(w, st.ThreadID, st.NS, parent.ID, max(every, parent.Depth))); err != nil {
				return nil, err
			}
		}
		v := checkpoint.ViewOf(pchain)
		view = &v
	}
	b, err := checkpoint.Build(st, parent, view, next, every)
	if err != nil {
		return nil, err
	}
	newRaw, err := checkpoint.Encode(b.Record)
	if err != nil {
		return nil, err
	}
	if lazy {
		var got int64
		got, err = w.(EraInserter).InsertEra(ctx, b.Record, newRaw, b.Messages, b.Blobs, b.Record.DeltaRefs())
		switch {
		case err != nil:
		case fast && got != era:
			return nil, ErrStaleTip
		default:
			era = got
		}
	} else {
		err = w.Insert(ctx, b.Record, newRaw, b.Messages, b.Blobs, b.Record.DeltaRefs())
	}
	if err != nil {
		if fast && errors.Is(err, ErrStored) {
			return nil, nil // a put is idempotent
		}
		return nil, err
	}
	// The first put of a namespace (a subagent run's input, a new thread)
	// has no earlier chunk to pack its own with: that one joins the next
	// snapshot's pack instead.
	if b.Record.Snapshot != nil && next > 0 {
		if err := PackChunks(ctx, w, st.ThreadID, st.NS); err != nil {
			return nil, err
		}
	}
	if tips == nil {
		return nil, nil
	}
	put := &Tip{raw: newRaw, rec: b.Record, next: b.Record.Messages.To, era: era, fresh: first}
	switch {
	case b.Record.Snapshot != nil:
		put.chain = []*checkpoint.Record{b.Record}
	case pchain != nil:
		put.chain = append([]*checkpoint.Record{b.Record}, pchain...)
	}
	return put, nil
}

// PackChunks joins the namespace's unpacked chunks into packs: each run of
// chunks with consecutive numbers becomes one packed chunk (or several of
// at most MaxPack bytes); a run of one chunk is only marked packed. Message
// numbers only grow and every pack takes all unpacked chunks, so those are
// the namespace's last chunks, after its last packed one.
func PackChunks(ctx context.Context, w Writer, thread, ns string) error {
	tail, err := w.Unpacked(ctx, thread, ns)
	if err != nil {
		return err
	}
	if len(tail) == 0 {
		return nil
	}
	var runs [][]msgcodec.Chunk
	size := 0
	for _, c := range tail {
		n := len(runs)
		if n == 0 || runs[n-1][len(runs[n-1])-1].To != c.From || size+len(c.Data) > MaxPack {
			runs = append(runs, nil)
			n++
			size = 0
		}
		runs[n-1] = append(runs[n-1], c)
		size += len(c.Data)
	}
	packs := make([]Pack, 0, len(runs))
	for _, run := range runs {
		p := Pack{From: run[0].From, To: run[len(run)-1].To, Chunks: len(run)}
		if len(run) > 1 {
			n := 0
			for _, c := range run {
				n += len(c.Data)
			}
			p.Data = make([]byte, 0, n)
			for _, c := range run {
				p.Data = append(p.Data, c.Data...)
			}
		}
		packs = append(packs, p)
	}
	return w.WritePacks(ctx, thread, ns, packs)
}

// Row is a stored record with its put order.
type Row struct {
	Seq int64
	Rec *checkpoint.Record
}

// All returns a thread's records in put order.
func All(ctx context.Context, w Writer, thread string) ([]Row, error) {
	var out []Row
	err := w.Rows(ctx, thread, func(seq int64, raw []byte) error {
		rec, err := checkpoint.Decode(raw)
		if err != nil {
			return err
		}
		out = append(out, Row{Seq: seq, Rec: rec})
		return nil
	})
	return out, err
}

// RecordsOf returns the records of rows.
func RecordsOf(rows []Row) []*checkpoint.Record {
	out := make([]*checkpoint.Record, len(rows))
	for i, r := range rows {
		out[i] = r.Rec
	}
	return out
}

// CopyThread forks src into the new thread dst (see checkpoint.Saver), in
// the caller's transaction, which holds whatever locks the saver needs.
func CopyThread(ctx context.Context, w Writer, src checkpoint.Ref, dst string) error {
	rows, err := All(ctx, w, src.ThreadID)
	if err != nil {
		return err
	}
	keep, err := checkpoint.PlanCopy(RecordsOf(rows), src)
	if err != nil {
		return err
	}
	taken, err := w.ThreadExists(ctx, dst)
	if err != nil {
		return err
	}
	if taken {
		return fmt.Errorf("%w: thread %q", checkpoint.ErrThreadExists, dst)
	}
	need := map[string][]checkpoint.Range{}
	for i, r := range rows {
		if !keep[i] {
			continue
		}
		rec := *r.Rec
		rec.ThreadID = dst
		raw, err := checkpoint.Encode(&rec)
		if err != nil {
			return err
		}
		if err := w.Insert(ctx, &rec, raw, nil, nil, rec.Refs()); err != nil {
			return err
		}
		if err := w.CopyWrites(ctx, src.ThreadID, dst, rec.NS, rec.ID); err != nil {
			return err
		}
		need[rec.NS] = append(need[rec.NS], rec.Messages)
		if rec.Snapshot != nil {
			need[rec.NS] = append(need[rec.NS], rec.Snapshot.Messages...)
		}
	}
	for ns, rgs := range need {
		if err := KeepMessages(ctx, w, src.ThreadID, ns, checkpoint.MergeRanges(rgs), dst); err != nil {
			return err
		}
	}
	return nil
}

// Prune drops history of a thread (see checkpoint.Saver), in the caller's
// transaction. Each surviving checkpoint whose parent is dropped becomes a
// snapshot, so every survivor keeps its state.
func Prune(ctx context.Context, w Writer, thread string, opts checkpoint.PruneOptions) error {
	rows, err := All(ctx, w, thread)
	if err != nil {
		return err
	}
	plan, err := checkpoint.PlanPrune(ctx, RecordsOf(rows), opts)
	if err != nil {
		return fmt.Errorf("prune thread %q: %w", thread, err)
	}
	ops := make([]PruneOp, 0, len(rows))
	for i, r := range rows {
		op := PruneOp{Seq: r.Seq, NS: r.Rec.NS, ID: r.Rec.ID, Drop: plan.Drop[i]}
		if !op.Drop {
			kept := r.Rec
			if nr := plan.Rewrite[i]; nr != nil {
				if op.Raw, err = checkpoint.Encode(nr); err != nil {
					return err
				}
				kept = nr
			}
			// Puts store only a record's own references; the records that
			// brought a survivor's files in may be going, so it now refers
			// to all of them itself.
			op.Refs = kept.Refs()
		}
		ops = append(ops, op)
	}
	if err := w.ApplyPrune(ctx, thread, ops); err != nil {
		return err
	}
	// Drop the messages no survivor reaches.
	nss, err := w.Namespaces(ctx, thread)
	if err != nil {
		return err
	}
	for _, ns := range nss {
		if err := KeepMessages(ctx, w, thread, ns, plan.Keep[ns], ""); err != nil {
			return err
		}
	}
	return w.SweepBlobs(ctx)
}

// KeepMessages rewrites the chunks of (thread, ns) to hold only the
// messages of keep (merged ranges): chunks outside it are deleted, chunks
// partly inside are cut. With dst set, the kept messages are copied to
// thread dst instead and the source is left alone.
func KeepMessages(ctx context.Context, w Writer, thread, ns string, keep []checkpoint.Range, dst string) error {
	spans, err := w.Spans(ctx, thread, ns)
	if err != nil {
		return err
	}
	for _, sp := range spans {
		whole, some := false, false
		for _, r := range keep {
			if r.From <= sp.From && sp.To <= r.To {
				whole = true
			}
			if r.From < sp.To && sp.From < r.To {
				some = true
			}
		}
		switch {
		case whole && dst != "":
			if err := w.CopyChunk(ctx, thread, ns, sp.From, dst); err != nil {
				return err
			}
		case whole:
		case !some && dst == "":
			if err := w.DeleteChunk(ctx, thread, ns, sp.From); err != nil {
				return err
			}
		case !some:
		default:
			data, err := w.ChunkData(ctx, thread, ns, sp.From)
			if err != nil {
				return err
			}
			parts, err := msgcodec.TrimChunk(msgcodec.Chunk{From: sp.From, Data: data}, keep)
			if err != nil {
				return fmt.Errorf("message chunk from %d: %w", sp.From, err)
			}
			to := thread
			if dst != "" {
				to = dst
			} else if err := w.DeleteChunk(ctx, thread, ns, sp.From); err != nil {
				return err
			}
			for _, p := range parts {
				entries, err := msgcodec.ChunkEntries(p.Data)
				if err != nil {
					return err
				}
				p.To = p.From + int64(len(entries))
				if err := w.InsertChunk(ctx, to, ns, p, true); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
