package store

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/deepagents-go/deepagents/vfs"
)

// MemoryTable is a Table in memory: for tests, and for a store that lives
// as long as the process.
type MemoryTable struct {
	mu    sync.Mutex
	files map[string]map[string]vfs.File // namespace -> path -> file
}

// NewMemoryTable returns an empty MemoryTable.
func NewMemoryTable() *MemoryTable { return &MemoryTable{files: map[string]map[string]vfs.File{}} }

// Get implements Table.
func (m *MemoryTable) Get(_ context.Context, ns, path string) (vfs.File, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f, ok := m.files[ns][path]
	return f, ok, nil
}

// Rows implements Table.
func (m *MemoryTable) Rows(_ context.Context, ns, dir string) ([]Row, error) {
	m.mu.Lock()
	var out []Row
	for p, f := range m.files[ns] {
		if vfs.Under(p, dir) {
			out = append(out, Row{Path: p, Size: int64(len(f.Content)), CreatedAt: f.CreatedAt, ModifiedAt: f.ModifiedAt})
		}
	}
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b Row) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

// Change implements Table: fn works on a copy of the namespace that
// replaces it when fn succeeds.
func (m *MemoryTable) Change(_ context.Context, ns string, fn func(tx Tx) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	tx := &memTx{files: map[string]vfs.File{}}
	for p, f := range m.files[ns] {
		tx.files[p] = f
	}
	if err := fn(tx); err != nil {
		return err
	}
	m.files[ns] = tx.files
	return nil
}

type memTx struct{ files map[string]vfs.File }

func (t *memTx) Get(path string) (vfs.File, bool, error) {
	f, ok := t.files[path]
	return f, ok, nil
}

func (t *memTx) Below(dir string) (bool, error) {
	for p := range t.files {
		if p != dir && vfs.Under(p, dir) {
			return true, nil
		}
	}
	return false, nil
}

func (t *memTx) Put(path string, f vfs.File) error {
	t.files[path] = f
	return nil
}

func (t *memTx) Delete(dir string) (int, error) {
	n := 0
	for p := range t.files {
		if vfs.Under(p, dir) {
			delete(t.files, p)
			n++
		}
	}
	return n, nil
}
