package sqlite

import (
	"sync"

	"github.com/deepagents-go/deepagents/checkpoint"
)

// tip is the last record this saver put in a namespace: its stored bytes,
// the decoded record and, when known, the records back to the nearest
// snapshot (newest first, the record itself first). The next put in the
// namespace usually continues from it: comparing the parent's stored bytes
// with raw spares decoding the parent, and at a snapshot re-reading the
// chain. A record whose bytes still match is the record decoded here; its
// ancestors can only have been rewritten by a prune, which keeps every
// state as it was.
type tip struct {
	raw   []byte
	rec   *checkpoint.Record
	chain []*checkpoint.Record
}

// maxTips bounds the cache (each tip holds up to SnapshotEvery decoded
// records, and every subagent run has a namespace of its own); when full it
// starts again empty.
const maxTips = 256

type tips struct {
	mu sync.Mutex
	m  map[[2]string]*tip
}

func (t *tips) get(thread, ns string) *tip {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[[2]string{thread, ns}]
}

func (t *tips) set(thread, ns string, v *tip) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil || len(t.m) >= maxTips {
		t.m = map[[2]string]*tip{}
	}
	t.m[[2]string{thread, ns}] = v
}

// forget drops a thread's tips (after a delete, prune or copy onto it).
func (t *tips) forget(thread string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k := range t.m {
		if k[0] == thread {
			delete(t.m, k)
		}
	}
}
