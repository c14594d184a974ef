package checkpoint

import (
	"cmp"
	"context"
	"slices"
)

// PendingReader is implemented by savers that can read the pending writes
// of a namespace's checkpoints without rebuilding their state, as Get must:
// one read for every checkpoint, where calling Get on each would read the
// whole history again and again. Memory, checkpoint/sqlite and
// checkpoint/postgres implement it.
type PendingReader interface {
	// PendingWrites returns the pending writes of every checkpoint of the
	// thread's namespace ns, by checkpoint id, each checkpoint's as Get
	// returns them in Pending (sorted by call id then kind). Checkpoints
	// without writes are left out; an unknown thread or namespace gives an
	// empty map, not ErrNotFound. A saver that wraps another may return an
	// error wrapping errors.ErrUnsupported when the one it wraps has no
	// PendingWrites: the caller then reads the checkpoints with Get.
	PendingWrites(ctx context.Context, threadID, ns string) (map[string][]Write, error)
}

// sortedWrites decodes a checkpoint's stored writes, keyed by call id and
// kind, in the order Get returns them.
func sortedWrites(ws map[[2]string][]byte) ([]Write, error) {
	keys := make([][2]string, 0, len(ws))
	for k := range ws {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]string) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
	out := make([]Write, 0, len(keys))
	for _, k := range keys {
		w, err := DecodeWrite(ws[k])
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, nil
}

// PendingWrites implements PendingReader.
func (m *Memory) PendingWrites(ctx context.Context, threadID, ns string) (map[string][]Write, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := ValidateRef(Ref{ThreadID: threadID, NS: ns}, false); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string][]Write{}
	th := m.thread(threadID, false)
	if th == nil {
		return out, nil
	}
	for key, ws := range th.writes {
		if key.ns != ns || len(ws) == 0 {
			continue
		}
		list, err := sortedWrites(ws)
		if err != nil {
			return nil, err
		}
		out[key.id] = list
	}
	return out, nil
}
