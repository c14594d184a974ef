package engine

import (
	"sync"

	"github.com/deepagents-go/deepagents/checkpoint"
)

// Tip is the last record a saver put in a namespace: its stored bytes, the
// decoded record and, when known, the records back to the nearest snapshot
// (newest first, the record itself first). The next put in the namespace
// usually continues from it: comparing the parent's stored bytes with raw
// spares decoding the parent, and at a snapshot re-reading the chain. A
// record whose bytes still match is the record decoded here; its ancestors
// can only have been rewritten by a prune, which keeps every state as it
// was.
type Tip struct {
	raw   []byte
	rec   *checkpoint.Record
	chain []*checkpoint.Record
	// next is the namespace's next message number after this put, and era
	// the saver's era it was put in (see Put).
	next int64
	era  int64
	// fresh says the thread had no checkpoint at all before this put, the
	// first of the thread (see Tips.Fresh).
	fresh bool
}

// Is reports whether t is checkpoint id put in era (a negative era proves
// nothing): the checkpoint is then stored, and the last of its namespace.
func (t *Tip) Is(id string, era int64) bool {
	return t != nil && era >= 0 && t.era == era && t.rec.ID == id
}

// MaxTips bounds the cache (each tip holds up to SnapshotEvery decoded
// records, or its history's Span, and every subagent run has a namespace of
// its own); when full it
// starts again empty.
const MaxTips = 256

// Tips caches the Tip of each namespace a saver put in. A nil *Tips caches
// nothing. It is safe for concurrent use.
type Tips struct {
	mu sync.Mutex
	m  map[[2]string]*Tip
	// fresh holds the threads this saver started, with the era of their
	// first put: while the era lasts, every namespace of such a thread that
	// has a checkpoint has a tip here, so one without a tip is empty.
	fresh map[string]int64
}

// Get returns the namespace's tip, or nil.
func (t *Tips) Get(thread, ns string) *Tip {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[[2]string{thread, ns}]
}

// Set records v (when not nil) as the namespace's tip.
func (t *Tips) Set(thread, ns string, v *Tip) {
	if t == nil || v == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil || len(t.m) >= MaxTips {
		t.m = map[[2]string]*Tip{}
		t.fresh = nil // a thread's namespaces are no longer all here
	}
	t.m[[2]string{thread, ns}] = v
	if v.fresh {
		if t.fresh == nil {
			t.fresh = map[string]int64{}
		}
		t.fresh[thread] = v.era
	}
}

// Fresh reports whether this saver started thread in era (a negative era
// proves nothing) and has the tip of each of its namespaces: a namespace
// without one has no checkpoint, and needs no query to say so.
func (t *Tips) Fresh(thread string, era int64) bool {
	if t == nil || era < 0 {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.fresh[thread]
	return ok && e == era
}

// Clear drops every tip.
func (t *Tips) Clear() {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.m = nil
	t.fresh = nil
}

// Forget drops a thread's tips (after a delete, prune or copy onto it).
func (t *Tips) Forget(thread string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for k := range t.m {
		if k[0] == thread {
			delete(t.m, k)
		}
	}
	delete(t.fresh, thread)
}
