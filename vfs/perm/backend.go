package perm

import (
	"context"
	"io"
	"iter"

	"github.com/deepagents-go/deepagents/vfs"
)

// Backend is a vfs.Backend that enforces rules on another. Stat, Read,
// Open, List and Walk are reads; Write, Update and Delete are writes. A
// listing or walk leaves out the entries its caller may not read (a denied
// directory still shows when a file below it may be read), and fails
// with the rule only when the directory itself is denied and nothing below
// it is allowed. Deleting a directory is refused when any file below it may
// not be written.
type Backend struct {
	inner vfs.Backend
	rules Rules
}

// Wrap returns b under rules; with no rules it returns b itself.
func Wrap(b vfs.Backend, rules Rules) vfs.Backend {
	if len(rules) == 0 || b == nil {
		return b
	}
	return &Backend{inner: b, rules: rules}
}

// Unwrap returns the backend the rules apply to.
func (b *Backend) Unwrap() vfs.Backend { return b.inner }

// Stat implements vfs.Backend.
func (b *Backend) Stat(ctx context.Context, path string) (vfs.Entry, error) {
	p, err := vfs.Clean(path)
	if err != nil {
		return vfs.Entry{}, err
	}
	if err := b.rules.Check(Read, "stat", p); err != nil {
		return vfs.Entry{}, err
	}
	return b.inner.Stat(ctx, p)
}

// Read implements vfs.Backend.
func (b *Backend) Read(ctx context.Context, path string) (string, error) {
	p, err := vfs.Clean(path)
	if err != nil {
		return "", err
	}
	if err := b.rules.Check(Read, "read", p); err != nil {
		return "", err
	}
	return b.inner.Read(ctx, p)
}

// Open implements vfs.Opener, streaming when the wrapped backend can.
func (b *Backend) Open(ctx context.Context, path string) (io.ReadCloser, vfs.Entry, error) {
	p, err := vfs.Clean(path)
	if err != nil {
		return nil, vfs.Entry{}, err
	}
	if err := b.rules.Check(Read, "read", p); err != nil {
		return nil, vfs.Entry{}, err
	}
	return vfs.Open(ctx, b.inner, p)
}

// Write implements vfs.Backend.
func (b *Backend) Write(ctx context.Context, path, content string) error {
	p, err := vfs.Clean(path)
	if err != nil {
		return err
	}
	if err := b.rules.Check(Write, "write", p); err != nil {
		return err
	}
	return b.inner.Write(ctx, p, content)
}

// Update implements vfs.Updater through the wrapped backend.
func (b *Backend) Update(ctx context.Context, path string, fn vfs.UpdateFunc) error {
	p, err := vfs.Clean(path)
	if err != nil {
		return err
	}
	if err := b.rules.Check(Write, "edit", p); err != nil {
		return err
	}
	return vfs.Update(ctx, b.inner, p, fn)
}

// Delete implements vfs.Backend.
func (b *Backend) Delete(ctx context.Context, path string) (int, error) {
	p, err := vfs.Clean(path)
	if err != nil {
		return 0, err
	}
	if err := b.rules.Check(Write, "delete", p); err != nil {
		return 0, err
	}
	for e, err := range b.inner.Walk(ctx, p) {
		if err != nil {
			break // the delete itself reports what is wrong
		}
		if err := b.rules.Check(Write, "delete", e.Path); err != nil {
			return 0, err
		}
	}
	return b.inner.Delete(ctx, p)
}

// List implements vfs.Backend.
func (b *Backend) List(ctx context.Context, dir string) ([]vfs.Entry, error) {
	p, err := vfs.Clean(dir)
	if err != nil {
		return nil, err
	}
	denied := b.rules.Check(Read, "list", p)
	es, err := b.inner.List(ctx, p)
	if err != nil {
		if denied != nil {
			return nil, denied
		}
		return nil, err
	}
	out := make([]vfs.Entry, 0, len(es))
	for _, e := range es {
		if b.rules.Check(Read, "list", e.Path) == nil || e.IsDir && b.readableBelow(ctx, e.Path) {
			out = append(out, e)
		}
	}
	if denied != nil && len(out) == 0 {
		return nil, denied
	}
	return out, nil
}

// readableBelow reports whether some file below the denied directory dir
// may be read, so that the directory still shows in its parent's listing.
func (b *Backend) readableBelow(ctx context.Context, dir string) bool {
	for e, err := range b.inner.Walk(ctx, dir) {
		if err != nil {
			return false
		}
		if b.rules.Check(Read, "list", e.Path) == nil {
			return true
		}
	}
	return false
}

// Walk implements vfs.Backend.
func (b *Backend) Walk(ctx context.Context, dir string) iter.Seq2[vfs.Entry, error] {
	return func(yield func(vfs.Entry, error) bool) {
		p, err := vfs.Clean(dir)
		if err != nil {
			yield(vfs.Entry{}, err)
			return
		}
		denied := b.rules.Check(Read, "search", p)
		n := 0
		for e, err := range b.inner.Walk(ctx, p) {
			if err != nil {
				if denied != nil {
					err = denied
				}
				yield(vfs.Entry{}, err)
				return
			}
			if b.rules.Check(Read, "search", e.Path) != nil {
				continue
			}
			n++
			if !yield(e, nil) {
				return
			}
		}
		if denied != nil && n == 0 {
			yield(vfs.Entry{}, denied)
		}
	}
}
