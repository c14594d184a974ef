package vfs

import (
	"context"
	"errors"
	"io/fs"
)

// ErrConflict is the error of an update that found the file changed by
// another writer between reading it and writing the result. Nothing was
// written: read the file again and redo the change.
var ErrConflict = errors.New("the file was changed by another writer while it was being updated")

// UpdateFunc computes a file's new content from its current content. An
// error leaves the file as it is.
type UpdateFunc func(content string) (string, error)

// Updater is a Backend that can change a file in one step, so that
// concurrent read-modify-write cycles on one path (parallel edits, or two
// processes on one directory) never lose each other's changes.
//
// Update reads the file at path, calls fn with its content and writes what
// fn returns, with no other Update or Write of that file in between: they
// wait. When a writer that does not take part (another program) changes
// the file anyway, Update notices, writes nothing and returns an error
// matching ErrConflict. A missing file fails with ErrNotFound and a
// directory with ErrIsDir, without calling fn. When fn returns an error,
// nothing is written and Update returns that error unchanged.
//
// fn runs while the file is held: it must not call the backend.
type Updater interface {
	Backend
	Update(ctx context.Context, path string, fn UpdateFunc) error
}

// Update changes the file at path with fn: through b's own Update when b is
// an Updater, and otherwise by reading, computing and writing, checking
// just before the write that the file still holds what was read (a
// narrow window remains in which a concurrent change can be overwritten).
func Update(ctx context.Context, b Backend, path string, fn UpdateFunc) error {
	if u, ok := b.(Updater); ok {
		return u.Update(ctx, path, fn)
	}
	return updateByRead(ctx, b, path, fn)
}

func updateByRead(ctx context.Context, b Backend, path string, fn UpdateFunc) error {
	p, err := Clean(path)
	if err != nil {
		return err
	}
	old, err := b.Read(ctx, p)
	if err != nil {
		return err
	}
	updated, err := fn(old)
	if err != nil {
		return err
	}
	if now, err := b.Read(ctx, p); err != nil || now != old {
		return &fs.PathError{Op: "update", Path: p, Err: ErrConflict}
	}
	return b.Write(ctx, p, updated)
}

// Update implements Updater: the whole cycle holds the backend's lock.
func (m *Memory) Update(_ context.Context, path string, fn UpdateFunc) error {
	p, err := Clean(path)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	f, ok := m.files[p]
	switch {
	case ok:
	case p == "/" || m.dirs[p] > 0:
		return &fs.PathError{Op: "update", Path: p, Err: ErrIsDir}
	default:
		return &fs.PathError{Op: "update", Path: p, Err: ErrNotFound}
	}
	content, err := fn(f.Content)
	if err != nil {
		return err
	}
	f.Content, f.ModifiedAt = content, m.now()
	m.put(p, f)
	return nil
}

// Update implements Updater: the cycle holds the layer's write lock, so it
// is atomic against the layer's other writes. The base does not change
// while a layer is in use.
func (l *Layer) Update(ctx context.Context, path string, fn UpdateFunc) error {
	p, err := Clean(path)
	if err != nil {
		return err
	}
	if err := l.vet("edit", p); err != nil {
		return err
	}
	l.wmu.Lock()
	defer l.wmu.Unlock()
	prev, ok := l.file(p)
	if !ok {
		if dir, err := l.isDir(ctx, p); err != nil {
			return err
		} else if dir {
			return &fs.PathError{Op: "update", Path: p, Err: ErrIsDir}
		}
		return &fs.PathError{Op: "update", Path: p, Err: ErrNotFound}
	}
	content, err := fn(prev.Content)
	if err != nil {
		return err
	}
	now := l.now()
	f := &File{Content: content, CreatedAt: prev.CreatedAt, ModifiedAt: now}
	if f.CreatedAt.IsZero() {
		f.CreatedAt = now
	}
	l.mu.Lock()
	l.changes[p] = f
	l.mu.Unlock()
	return nil
}

// Update implements Updater through the wrapped backend's Update when it
// has one (otherwise as the function Update does), and records the change.
func (t *Tracked) Update(ctx context.Context, path string, fn UpdateFunc) error {
	p, err := Clean(path)
	if err != nil {
		return err
	}
	var written string
	err = Update(ctx, t.Backend, p, func(content string) (string, error) {
		s, err := fn(content)
		written = s
		return s, err
	})
	if err != nil {
		return err
	}
	t.record(Change{Path: p, File: &File{Content: written}})
	return nil
}

var (
	_ Updater = (*Memory)(nil)
	_ Updater = (*Layer)(nil)
	_ Updater = (*Tracked)(nil)
)
