// Package engine is the logic the SQL checkpoint savers (sqlite and
// postgres) share on top of the record format of package checkpoint:
// putting a step, reading a checkpoint back from its records and message
// chunks, packing chunks at snapshots, and copying and pruning threads.
// Each saver supplies the few queries whose SQL and driver differ, through
// the interfaces below, and keeps its own transactions, locks and errors of
// the driver.
package engine

import (
	"context"
	"fmt"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/checkpoint/internal/msgcodec"
	"github.com/deepagents-go/deepagents/llm"
)

// MaxPack caps the bytes of a pack of chunks; a longer run of chunks makes
// several packs.
const MaxPack = 1 << 20

// Records reads stored records of one namespace, for rebuilding a
// checkpoint's chain back to its snapshot.
type Records interface {
	// Record returns the stored bytes of checkpoint id of (thread, ns),
	// or an error wrapping checkpoint.ErrNotFound when there is none.
	Record(ctx context.Context, thread, ns, id string) ([]byte, error)
	// Recent returns the stored bytes of up to n records of (thread, ns)
	// put at or before checkpoint from, newest first, in one query. A
	// saver that does not read ahead returns nil; the chain is then read
	// one record at a time.
	Recent(ctx context.Context, thread, ns, from string, n int) ([][]byte, error)
}

// Reader is what reading checkpoints back needs.
type Reader interface {
	Records
	// Latest returns the stored bytes of the namespace's newest record,
	// or an error wrapping checkpoint.ErrNotFound.
	Latest(ctx context.Context, thread, ns string) ([]byte, error)
	// Chunks calls add, in order of their first message number, with the
	// chunks holding the messages of rg: from the last one starting at or
	// before rg.From (or at rg.From itself when none does, so that a gap
	// is seen) to the last one starting before rg.To.
	Chunks(ctx context.Context, thread, ns string, rg checkpoint.Range, add func(msgcodec.Chunk)) error
	// Blobs puts into out the stored contents of those of hashes that are
	// stored.
	Blobs(ctx context.Context, hashes []string, out map[string][]byte) error
	// Writes returns the stored pending writes of checkpoint cp, ordered
	// by call id and kind.
	Writes(ctx context.Context, thread, ns, cp string) ([][]byte, error)
	// SeqOf returns the put order of the thread's first checkpoint with
	// id (in any namespace); ok is false when there is none.
	SeqOf(ctx context.Context, thread, id string) (seq int64, ok bool, err error)
	// List calls each, newest first, with the stored bytes of the
	// records q selects, until it returns false.
	List(ctx context.Context, q ListQuery, each func(raw []byte) bool) error
}

// ListQuery selects the records of one thread for Reader.List.
type ListQuery struct {
	Thread string
	// NS is the namespace, unless All asks for every namespace.
	NS  string
	All bool
	// Before, when HasBefore, keeps the records put before put order
	// Before.
	Before    int64
	HasBefore bool
	// Limit caps the rows (none when 0).
	Limit int
}

// Pack is one step of packing a namespace's chunks: a run of Chunks
// consecutive chunks covering [From, To) replaced by one packed chunk of
// Data, or, when Chunks is 1, the chunk at From only marked packed (Data is
// nil then).
type Pack struct {
	From, To int64
	Chunks   int
	Data     []byte
}

// PruneOp is what a prune does to one record: drop it (with its references
// and writes), or keep it, storing Raw over its bytes when Raw is set, and
// refer to all of Refs.
type PruneOp struct {
	Seq    int64
	NS, ID string
	Drop   bool
	Raw    []byte
	Refs   []string
}

// Writer is what writing needs, in one transaction.
type Writer interface {
	Records
	// Begin starts a put of st: whether st.ID is already stored in its
	// namespace, the stored bytes of its parent (nil when there is none
	// or it is missing) and the namespace's next message number.
	Begin(ctx context.Context, st *checkpoint.Step) (stored bool, parent []byte, next int64, err error)
	// Insert stores record r (raw is its encoding) with msgs as one
	// unpacked chunk of r.Messages when there are any, the contents blobs
	// by hash, and the references refs. A saver whose Put passes an era
	// (see Put) returns ErrStored, having written nothing, when r's id is
	// already stored in its namespace.
	Insert(ctx context.Context, r *checkpoint.Record, raw []byte, msgs [][]byte, blobs map[string][]byte, refs []string) error
	// Unpacked returns the namespace's chunks after its last packed one,
	// oldest first, with their data.
	Unpacked(ctx context.Context, thread, ns string) ([]msgcodec.Chunk, error)
	// WritePacks applies packs (see Pack).
	WritePacks(ctx context.Context, thread, ns string, packs []Pack) error
	// Rows calls each with the put order and stored bytes of every
	// record of the thread, in put order.
	Rows(ctx context.Context, thread string, each func(seq int64, raw []byte) error) error
	// ThreadExists says whether the thread has any checkpoint.
	ThreadExists(ctx context.Context, thread string) (bool, error)
	// CopyWrites copies the pending writes of checkpoint (ns, cp) of
	// thread src to thread dst.
	CopyWrites(ctx context.Context, src, dst, ns, cp string) error
	// ApplyPrune applies ops to records of thread.
	ApplyPrune(ctx context.Context, thread string, ops []PruneOp) error
	// Namespaces returns the namespaces of the thread that have chunks.
	Namespaces(ctx context.Context, thread string) ([]string, error)
	// Spans returns the message numbers [From, To) of the namespace's
	// chunks, in order.
	Spans(ctx context.Context, thread, ns string) ([]checkpoint.Range, error)
	// ChunkData returns the data of the chunk starting at from.
	ChunkData(ctx context.Context, thread, ns string, from int64) ([]byte, error)
	// CopyChunk copies the chunk of (thread, ns) starting at from to
	// thread dst.
	CopyChunk(ctx context.Context, thread, ns string, from int64, dst string) error
	// DeleteChunk deletes the chunk starting at from.
	DeleteChunk(ctx context.Context, thread, ns string, from int64) error
	// InsertChunk stores chunk c of (thread, ns), packed or not.
	InsertChunk(ctx context.Context, thread, ns string, c msgcodec.Chunk, packed bool) error
	// SweepBlobs deletes the contents no checkpoint refers to.
	SweepBlobs(ctx context.Context) error
}

// RecentLoader loads records of (thread, ns) for checkpoint.Chain: the
// namespace's every+1 records put at or before from in one query (a linear
// history's whole chain), then one by one what that missed.
func RecentLoader(r Records, thread, ns, from string, every int) checkpoint.Loader {
	var recent map[string]*checkpoint.Record
	return func(ctx context.Context, id string) (*checkpoint.Record, error) {
		if recent == nil {
			raws, err := r.Recent(ctx, thread, ns, from, every+1)
			if err != nil {
				return nil, err
			}
			recent = make(map[string]*checkpoint.Record, len(raws))
			for _, raw := range raws {
				rec, err := checkpoint.Decode(raw)
				if err != nil {
					return nil, err
				}
				recent[rec.ID] = rec
			}
		}
		if rec := recent[id]; rec != nil {
			return rec, nil
		}
		raw, err := r.Record(ctx, thread, ns, id)
		if err != nil {
			return nil, err
		}
		return checkpoint.Decode(raw)
	}
}

// Messages reads and decodes the messages of ranges from their chunks.
func Messages(ctx context.Context, r Reader, thread, ns string, ranges []checkpoint.Range) ([]llm.Message, error) {
	var chunks []msgcodec.Chunk
	add := func(c msgcodec.Chunk) {
		// Ranges of a view are sorted and disjoint, but two may share a
		// chunk: read it once.
		if n := len(chunks); n > 0 && chunks[n-1].From == c.From {
			return
		}
		chunks = append(chunks, c)
	}
	for _, rg := range ranges {
		if rg.Len() <= 0 {
			continue
		}
		if err := r.Chunks(ctx, thread, ns, rg, add); err != nil {
			return nil, err
		}
	}
	return msgcodec.Messages(ranges, chunks)
}

// Get returns the checkpoint at ref (the latest of its namespace when
// ref.ID is empty) with its full state and pending writes.
func Get(ctx context.Context, r Reader, ref checkpoint.Ref, every int) (*checkpoint.Checkpoint, error) {
	var raw []byte
	var err error
	if ref.ID == "" {
		raw, err = r.Latest(ctx, ref.ThreadID, ref.NS)
	} else {
		raw, err = r.Record(ctx, ref.ThreadID, ref.NS, ref.ID)
	}
	if err != nil {
		return nil, err
	}
	rec, err := checkpoint.Decode(raw)
	if err != nil {
		return nil, err
	}
	chain, err := checkpoint.Chain(ctx, rec, RecentLoader(r, ref.ThreadID, ref.NS, rec.ID, max(every, rec.Depth)))
	if err != nil {
		return nil, err
	}
	v := checkpoint.ViewOf(chain)
	msgs, err := Messages(ctx, r, ref.ThreadID, ref.NS, v.Messages)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %q: %w", rec.ID, err)
	}
	blobs := map[string][]byte{}
	if len(v.Files) > 0 {
		hashes := make([]string, 0, len(v.Files))
		seen := make(map[string]bool, len(v.Files))
		for _, f := range v.Files {
			if !seen[f.Hash] {
				seen[f.Hash] = true
				hashes = append(hashes, f.Hash)
			}
		}
		if err := r.Blobs(ctx, hashes, blobs); err != nil {
			return nil, err
		}
	}
	c, err := checkpoint.AssembleMessages(rec, v, msgs, blobs)
	if err != nil {
		return nil, err
	}
	writes, err := r.Writes(ctx, ref.ThreadID, ref.NS, rec.ID)
	if err != nil {
		return nil, err
	}
	for _, data := range writes {
		w, err := checkpoint.DecodeWrite(data)
		if err != nil {
			return nil, fmt.Errorf("a write of checkpoint %q: %w", rec.ID, err)
		}
		c.Pending = append(c.Pending, w)
	}
	return c, nil
}

// List returns a thread's checkpoints newest first, without state. The
// caller has checked opts.
func List(ctx context.Context, r Reader, opts checkpoint.ListOptions) ([]checkpoint.Checkpoint, error) {
	q := ListQuery{Thread: opts.ThreadID, NS: opts.NS, All: opts.AllNamespaces}
	if opts.Before != "" {
		seq, ok, err := r.SeqOf(ctx, opts.ThreadID, opts.Before)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("%w: checkpoint %q in thread %q", checkpoint.ErrNotFound, opts.Before, opts.ThreadID)
		}
		q.Before, q.HasBefore = seq, true
	}
	// A metadata filter may skip rows, so the limit is then counted here.
	if opts.Limit > 0 && len(opts.Metadata) == 0 {
		q.Limit = opts.Limit
	}
	var out []checkpoint.Checkpoint
	var derr error
	err := r.List(ctx, q, func(raw []byte) bool {
		rec, err := checkpoint.Decode(raw)
		if err != nil {
			derr = err
			return false
		}
		if !checkpoint.MatchMetadata(rec.Metadata, opts.Metadata) {
			return true
		}
		out = append(out, *checkpoint.Header(rec))
		return opts.Limit <= 0 || len(out) < opts.Limit
	})
	if err != nil {
		return nil, err
	}
	if derr != nil {
		return nil, derr
	}
	return out, nil
}
