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
}

// maxTips bounds the cache (each tip holds up to SnapshotEvery decoded
// records, and every subagent run has a namespace of its own); when full it
// starts again empty.
const maxTips = 256

// Tips caches the Tip of each namespace a saver put in. A nil *Tips caches
// nothing. It is safe for concurrent use.
type Tips struct {
	mu sync.Mutex
	m  map[[2]string]*Tip
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
	if t.m == nil || len(t.m) >= maxTips {
		t.m = map[[2]string]*Tip{}
	}
	t.m[[2]string{thread, ns}] = v
}

// Clear drops every tip.
func (t *Tips) Clear() {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.m = nil
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
}
