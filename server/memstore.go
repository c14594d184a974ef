package server

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
)

// MemoryStore is a Store in memory, for tests and servers whose runs need
// not survive a restart.
type MemoryStore struct {
	mu      sync.Mutex
	threads map[string]ThreadRecord
	runs    map[string]RunRecord // by run id
	events  map[string][]StoredEvent
	seq     int64
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{threads: map[string]ThreadRecord{}, runs: map[string]RunRecord{}, events: map[string][]StoredEvent{}}
}

// CreateThread implements Store.
func (m *MemoryStore) CreateThread(_ context.Context, t ThreadRecord) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.threads[t.ID]; ok {
		return ErrExists
	}
	m.threads[t.ID] = cloneThread(t)
	return nil
}

func cloneThread(t ThreadRecord) ThreadRecord {
	t.Metadata = maps.Clone(t.Metadata)
	return t
}

// GetThread implements Store.
func (m *MemoryStore) GetThread(_ context.Context, id string) (ThreadRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.threads[id]
	if !ok {
		return ThreadRecord{}, ErrNotFound
	}
	return cloneThread(t), nil
}

// UpdateThread implements Store.
func (m *MemoryStore) UpdateThread(_ context.Context, t ThreadRecord) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.threads[t.ID]; !ok {
		return ErrNotFound
	}
	m.threads[t.ID] = cloneThread(t)
	return nil
}

// DeleteThread implements Store.
func (m *MemoryStore) DeleteThread(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.threads[id]; !ok {
		return ErrNotFound
	}
	delete(m.threads, id)
	for rid, r := range m.runs {
		if r.ThreadID == id {
			delete(m.runs, rid)
			delete(m.events, rid)
			delete(m.events, runInfoLog(rid))
			delete(m.events, RunInputLog(rid))
		}
	}
	delete(m.events, ThreadLog(id))
	return nil
}

// SearchThreads implements Store.
func (m *MemoryStore) SearchThreads(_ context.Context, q ThreadQuery) ([]ThreadRecord, int, error) {
	m.mu.Lock()
	var all []ThreadRecord
	for _, t := range m.threads {
		if matchThread(t, q) {
			all = append(all, cloneThread(t))
		}
	}
	m.mu.Unlock()
	sortThreads(all, q.SortBy, q.SortOrder)
	total := len(all)
	return page(all, q.Limit, q.Offset), total, nil
}

// matchThread says whether t has q's status and every metadata key of q
// with an equal (JSON) value.
func matchThread(t ThreadRecord, q ThreadQuery) bool {
	if q.Status != "" && t.Status != q.Status {
		return false
	}
	for k, v := range q.Metadata {
		got, ok := t.Metadata[k]
		if !ok || !jsonEqual(got, v) {
			return false
		}
	}
	return true
}

func sortThreads(ts []ThreadRecord, by, order string) {
	slices.SortFunc(ts, func(a, b ThreadRecord) int {
		var c int
		switch by {
		case "thread_id":
			c = strings.Compare(a.ID, b.ID)
		case "created_at":
			c = a.CreatedAt.Compare(b.CreatedAt)
		default:
			c = a.UpdatedAt.Compare(b.UpdatedAt)
		}
		if c == 0 {
			c = strings.Compare(a.ID, b.ID)
		}
		if order != "asc" {
			c = -c
		}
		return c
	})
}

func page[T any](xs []T, limit, offset int) []T {
	if offset >= len(xs) {
		return []T{}
	}
	xs = xs[offset:]
	if limit > 0 && limit < len(xs) {
		xs = xs[:limit]
	}
	return xs
}

// PutRun implements Store.
func (m *MemoryStore) PutRun(_ context.Context, r RunRecord) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.runs[r.RunID]; ok {
		r.Seq = old.Seq
	} else {
		m.seq++
		r.Seq = m.seq
	}
	m.runs[r.RunID] = r
	return nil
}

// GetRun implements Store.
func (m *MemoryStore) GetRun(_ context.Context, threadID, runID string) (RunRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.runs[runID]
	if !ok || r.ThreadID != threadID {
		return RunRecord{}, ErrNotFound
	}
	return r, nil
}

// ListRuns implements Store.
func (m *MemoryStore) ListRuns(_ context.Context, threadID string, limit, offset int) ([]RunRecord, error) {
	m.mu.Lock()
	var out []RunRecord
	for _, r := range m.runs {
		if r.ThreadID == threadID {
			out = append(out, r)
		}
	}
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b RunRecord) int { return cmp.Compare(b.Seq, a.Seq) })
	return page(out, limit, offset), nil
}

// AppendEvents implements Store.
func (m *MemoryStore) AppendEvents(_ context.Context, runID string, evs []StoredEvent) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events[runID] = append(m.events[runID], evs...)
	return nil
}

// Events implements Store.
func (m *MemoryStore) Events(ctx context.Context, runID string, after int64) ([]StoredEvent, error) {
	return m.EventsPage(ctx, runID, after, -1)
}

// EventsPage implements EventPager (limit < 0: all).
func (m *MemoryStore) EventsPage(_ context.Context, runID string, after int64, limit int) ([]StoredEvent, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	evs := m.events[runID]
	i, _ := slices.BinarySearchFunc(evs, after+1, func(e StoredEvent, s int64) int { return cmp.Compare(e.Seq, s) })
	evs = evs[i:]
	if limit >= 0 && len(evs) > limit {
		evs = evs[:limit]
	}
	return slices.Clone(evs), nil
}

// Close implements Store.
func (m *MemoryStore) Close() error { return nil }

// unfinishedRuns lists the runs stored pending or running.
func (m *MemoryStore) unfinishedRuns(context.Context) ([]RunRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []RunRecord
	for _, r := range m.runs {
		if r.Status == runPending || r.Status == runRunning {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b RunRecord) int { return cmp.Compare(a.Seq, b.Seq) })
	return out, nil
}

// lastEvent returns a run's last stored event.
func (m *MemoryStore) lastEvent(_ context.Context, runID string) (StoredEvent, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	evs := m.events[runID]
	if len(evs) == 0 {
		return StoredEvent{}, false, nil
	}
	return evs[len(evs)-1], true, nil
}
