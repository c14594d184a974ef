package vfs

import (
	"context"
	"io/fs"
	"iter"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// Memory is the default backend: files live in a map that is part of the
// run's state, so they are checkpointed with it. It is safe for concurrent
// use and supports Branch for copy-on-write layers.
type Memory struct {
	mu    sync.RWMutex
	files map[string]File
	dirs  map[string]int // directory path -> number of files below it
	now   func() time.Time
	// touched are the paths written or deleted since the last
	// TakeChanges; nil when nobody tracks changes.
	touched map[string]struct{}
}

// NewMemory returns a Memory holding a copy of files. Keys are cleaned.
// Entries that cannot be stored are dropped: invalid paths, the root, and a
// path below another entry that is a file (a path cannot be a file and a
// directory at once). When two keys clean to the same path, the one already
// in clean form wins. The result does not depend on map iteration order.
func NewMemory(files map[string]File) *Memory {
	m := &Memory{files: make(map[string]File, len(files)), dirs: map[string]int{}, now: time.Now}
	type seed struct {
		path, raw string
		f         File
	}
	seeds := make([]seed, 0, len(files))
	for raw, f := range files {
		if c, err := Clean(raw); err == nil && c != "/" {
			seeds = append(seeds, seed{c, raw, f})
		}
	}
	// Sorted by clean path, an ancestor comes before everything below it;
	// among keys with one clean path, the clean-form key comes first.
	slices.SortFunc(seeds, func(a, b seed) int {
		if c := strings.Compare(a.path, b.path); c != 0 {
			return c
		}
		if (a.raw == a.path) != (b.raw == b.path) {
			if a.raw == a.path {
				return -1
			}
			return 1
		}
		return strings.Compare(a.raw, b.raw)
	})
	for _, s := range seeds {
		if _, dup := m.files[s.path]; dup || m.underFile(s.path) {
			continue
		}
		m.put(s.path, s.f)
	}
	return m
}

// underFile reports whether some proper ancestor of p is a file.
func (m *Memory) underFile(p string) bool {
	for d := Parent(p); d != "/"; d = Parent(d) {
		if _, ok := m.files[d]; ok {
			return true
		}
	}
	return false
}

// SetClock replaces the clock used for created/modified times (for tests).
func (m *Memory) SetClock(now func() time.Time) {
	m.mu.Lock()
	m.now = now
	m.mu.Unlock()
}

// Files returns a copy of every file.
func (m *Memory) Files() map[string]File {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return maps.Clone(m.files)
}

// TrackChanges makes m remember the paths written or deleted from now on,
// so that TakeChanges can say what changed without comparing every file.
// It serves one consumer: the run that owns m saves its changes step by
// step this way.
func (m *Memory) TrackChanges() {
	m.mu.Lock()
	if m.touched == nil {
		m.touched = map[string]struct{}{}
	}
	m.mu.Unlock()
}

// HasChanges says whether anything changed since the last TakeChanges
// (or since TrackChanges).
func (m *Memory) HasChanges() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.touched) > 0
}

// TakeChanges returns what changed since the previous call (or since
// TrackChanges): each path written with its file, each path deleted with a
// nil File, sorted by path; and forgets it. A path written and deleted in
// between is reported deleted.
func (m *Memory) TakeChanges() Delta {
	m.mu.Lock()
	defer m.mu.Unlock()
	d := make(Delta, 0, len(m.touched))
	for p := range m.touched {
		if f, ok := m.files[p]; ok {
			d = append(d, Change{Path: p, File: &f})
		} else {
			d = append(d, Change{Path: p})
		}
	}
	clear(m.touched)
	slices.SortFunc(d, func(a, b Change) int { return strings.Compare(a.Path, b.Path) })
	return d
}

// Len returns the number of files.
func (m *Memory) Len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.files)
}

func (m *Memory) put(p string, f File) {
	if _, ok := m.files[p]; !ok {
		for d := Parent(p); ; d = Parent(d) {
			m.dirs[d]++
			if d == "/" {
				break
			}
		}
	}
	m.files[p] = f
	if m.touched != nil {
		m.touched[p] = struct{}{}
	}
}

func (m *Memory) remove(p string) {
	if _, ok := m.files[p]; !ok {
		return
	}
	delete(m.files, p)
	if m.touched != nil {
		m.touched[p] = struct{}{}
	}
	for d := Parent(p); ; d = Parent(d) {
		if m.dirs[d]--; m.dirs[d] <= 0 {
			delete(m.dirs, d)
		}
		if d == "/" {
			break
		}
	}
}

func (m *Memory) file(p string) (File, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	f, ok := m.files[p]
	return f, ok
}

// Stat implements Backend.
func (m *Memory) Stat(_ context.Context, path string) (Entry, error) {
	p, err := Clean(path)
	if err != nil {
		return Entry{}, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if f, ok := m.files[p]; ok {
		return Entry{Path: p, Size: int64(len(f.Content)), ModifiedAt: f.ModifiedAt}, nil
	}
	if p == "/" || m.dirs[p] > 0 {
		return Entry{Path: p, IsDir: true}, nil
	}
	return Entry{}, &fs.PathError{Op: "stat", Path: p, Err: ErrNotFound}
}

// Read implements Backend.
func (m *Memory) Read(_ context.Context, path string) (string, error) {
	p, err := Clean(path)
	if err != nil {
		return "", err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if f, ok := m.files[p]; ok {
		return f.Content, nil
	}
	if p == "/" || m.dirs[p] > 0 {
		return "", &fs.PathError{Op: "read", Path: p, Err: ErrIsDir}
	}
	return "", &fs.PathError{Op: "read", Path: p, Err: ErrNotFound}
}

// Write implements Backend.
func (m *Memory) Write(_ context.Context, path, content string) error {
	p, err := Clean(path)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if p == "/" || m.dirs[p] > 0 {
		return &fs.PathError{Op: "write", Path: p, Err: ErrIsDir}
	}
	if m.underFile(p) {
		return &fs.PathError{Op: "write", Path: p, Err: ErrNotDir}
	}
	now := m.now()
	f, ok := m.files[p]
	if !ok {
		f.CreatedAt = now
	}
	f.Content, f.ModifiedAt = content, now
	m.put(p, f)
	return nil
}

// Delete implements Backend.
func (m *Memory) Delete(_ context.Context, path string) (int, error) {
	p, err := Clean(path)
	if err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.files[p]; ok {
		m.remove(p)
		return 1, nil
	}
	if p != "/" && m.dirs[p] == 0 {
		return 0, &fs.PathError{Op: "delete", Path: p, Err: ErrNotFound}
	}
	var n int
	for k := range m.files {
		if Under(k, p) {
			m.remove(k)
			n++
		}
	}
	return n, nil
}

// List implements Backend.
func (m *Memory) List(ctx context.Context, dir string) ([]Entry, error) {
	p, err := Clean(dir)
	if err != nil {
		return nil, err
	}
	if _, ok := m.file(p); ok {
		return nil, &fs.PathError{Op: "list", Path: p, Err: ErrNotDir}
	}
	return listFromWalk(ctx, m, p)
}

// Walk implements Backend.
func (m *Memory) Walk(_ context.Context, dir string) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		p, err := Clean(dir)
		if err != nil {
			yield(Entry{}, err)
			return
		}
		m.mu.RLock()
		var out []Entry
		for k, f := range m.files {
			if Under(k, p) {
				out = append(out, Entry{Path: k, Size: int64(len(f.Content)), ModifiedAt: f.ModifiedAt})
			}
		}
		m.mu.RUnlock()
		sortEntries(out)
		for _, e := range out {
			if !yield(e, nil) {
				return
			}
		}
	}
}

// Apply implements Applier.
func (m *Memory) Apply(d Delta) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range d {
		if c.File == nil {
			m.remove(c.Path)
		} else {
			m.put(c.Path, *c.File)
		}
	}
}

// Branch implements Brancher.
func (m *Memory) Branch() *Layer { return newLayer(m, m.now) }

func sortEntries(es []Entry) {
	slices.SortFunc(es, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })
}
