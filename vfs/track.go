package vfs

import (
	"context"
	"sync"
)

// Tracked wraps a backend that writes through (one that cannot branch, such
// as a real directory) and records what changed, so the agent loop can
// report file events for it as it does for layers. Its Update passes
// through to the wrapped backend's own atomic Update when it has one, so
// parallel edits of one file through several Tracked views of one backend
// do not lose each other's changes.
type Tracked struct {
	Backend
	mu      sync.Mutex
	changes []Change
}

// Track wraps b.
func Track(b Backend) *Tracked { return &Tracked{Backend: b} }

// Write implements Backend.
func (t *Tracked) Write(ctx context.Context, path, content string) error {
	if err := t.Backend.Write(ctx, path, content); err != nil {
		return err
	}
	p, _ := Clean(path)
	t.record(Change{Path: p, File: &File{Content: content}})
	return nil
}

// Delete implements Backend.
func (t *Tracked) Delete(ctx context.Context, path string) (int, error) {
	n, err := t.Backend.Delete(ctx, path)
	if err == nil {
		p, _ := Clean(path)
		t.record(Change{Path: p})
	}
	return n, err
}

func (t *Tracked) record(c Change) {
	t.mu.Lock()
	t.changes = append(t.changes, c)
	t.mu.Unlock()
}

// Changes returns what was written or deleted, in order.
func (t *Tracked) Changes() Delta {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append(Delta(nil), t.changes...)
}

// Note records changes that were made to the wrapped backend by someone
// else on this view's behalf (a subagent that wrote through the same
// directory elsewhere), without making them again.
func (t *Tracked) Note(d Delta) {
	t.mu.Lock()
	t.changes = append(t.changes, d...)
	t.mu.Unlock()
}
