package skills

import (
	"cmp"
	"context"
	"errors"
	"iter"

	"slices"
	"strings"

	"github.com/deepagents-go/deepagents/vfs"
)

// Mount returns base with fs mounted at prefix (a clean directory path
// with a trailing slash, "/skills/"): paths at and below the prefix go to
// fs with the prefix taken off, everything else to base. Listing or
// walking a directory above the prefix shows the mount as a directory.
// Writes under the prefix go to fs (NewFS refuses them).
func Mount(base vfs.Backend, prefix string, fs vfs.Backend) vfs.Backend {
	return mount(base, prefix, fs)
}

func mount(base vfs.Backend, prefix string, fs vfs.Backend) vfs.Backend {
	dir := strings.TrimSuffix(prefix, "/")
	if dir == "" || dir[0] != '/' {
		return base
	}
	return &mounted{base: base, dir: dir, fs: fs}
}

type mounted struct {
	base vfs.Backend
	dir  string // "/skills"
	fs   vfs.Backend
}

// route says whether p (clean) is at or below the mount, and its path
// inside it.
func (m *mounted) route(p string) (string, bool) {
	if p == m.dir {
		return "/", true
	}
	if rest, ok := strings.CutPrefix(p, m.dir+"/"); ok {
		return "/" + rest, true
	}
	return "", false
}

// above reports whether p is a directory above the mount.
func (m *mounted) above(p string) bool {
	return p == "/" || strings.HasPrefix(m.dir, p+"/")
}

func clean(p string) string {
	if c, err := vfs.Clean(p); err == nil {
		return c
	}
	return p
}

func (m *mounted) Stat(ctx context.Context, p string) (vfs.Entry, error) {
	c := clean(p)
	if in, ok := m.route(c); ok {
		e, err := m.fs.Stat(ctx, in)
		if err == nil {
			e.Path = m.outer(e.Path)
		}
		return e, err
	}
	e, err := m.base.Stat(ctx, p)
	if err != nil && m.above(c) && errors.Is(err, vfs.ErrNotFound) {
		return vfs.Entry{Path: c, IsDir: true}, nil
	}
	return e, err
}

func (m *mounted) outer(in string) string {
	if in == "/" || in == "" {
		return m.dir
	}
	return m.dir + in
}

func (m *mounted) Read(ctx context.Context, p string) (string, error) {
	if in, ok := m.route(clean(p)); ok {
		return m.fs.Read(ctx, in)
	}
	return m.base.Read(ctx, p)
}

func (m *mounted) Write(ctx context.Context, p, content string) error {
	if in, ok := m.route(clean(p)); ok {
		return m.fs.Write(ctx, in, content)
	}
	return m.base.Write(ctx, p, content)
}

func (m *mounted) Delete(ctx context.Context, p string) (int, error) {
	c := clean(p)
	if in, ok := m.route(c); ok {
		return m.fs.Delete(ctx, in)
	}
	return m.base.Delete(ctx, p)
}

// Update keeps the base's atomic updates; under the mount it reads and
// writes through the mounted backend.
func (m *mounted) Update(ctx context.Context, p string, fn vfs.UpdateFunc) error {
	if in, ok := m.route(clean(p)); ok {
		return vfs.Update(ctx, m.fs, in, fn)
	}
	return vfs.Update(ctx, m.base, p, fn)
}

func (m *mounted) List(ctx context.Context, dir string) ([]vfs.Entry, error) {
	c := clean(dir)
	if in, ok := m.route(c); ok {
		es, err := m.fs.List(ctx, in)
		for i := range es {
			es[i].Path = m.outer(es[i].Path)
		}
		return es, err
	}
	es, err := m.base.List(ctx, dir)
	if !m.above(c) {
		return es, err
	}
	if err != nil && !errors.Is(err, vfs.ErrNotFound) {
		return es, err
	}
	// The mount, or the directory on the way to it, is a child of c.
	child := m.dir
	if c != "/" {
		child = c + "/" + strings.SplitN(strings.TrimPrefix(m.dir, c+"/"), "/", 2)[0]
	} else {
		child = "/" + strings.SplitN(m.dir[1:], "/", 2)[0]
	}
	if !slices.ContainsFunc(es, func(e vfs.Entry) bool { return e.Path == child }) {
		es = append(es, vfs.Entry{Path: child, IsDir: true})
		slices.SortFunc(es, func(a, b vfs.Entry) int { return cmp.Compare(a.Path, b.Path) })
	}
	return es, nil
}

func (m *mounted) Walk(ctx context.Context, dir string) iter.Seq2[vfs.Entry, error] {
	c := clean(dir)
	if in, ok := m.route(c); ok {
		return func(yield func(vfs.Entry, error) bool) {
			for e, err := range m.fs.Walk(ctx, in) {
				if err == nil {
					e.Path = m.outer(e.Path)
				}
				if !yield(e, err) {
					return
				}
			}
		}
	}
	if !m.above(c) {
		return m.base.Walk(ctx, dir)
	}
	return func(yield func(vfs.Entry, error) bool) {
		var all []vfs.Entry
		for e, err := range m.base.Walk(ctx, dir) {
			if err != nil {
				if errors.Is(err, vfs.ErrNotFound) {
					break
				}
				yield(e, err)
				return
			}
			if _, under := m.route(e.Path); !under {
				all = append(all, e)
			}
		}
		for e, err := range m.fs.Walk(ctx, "/") {
			if err != nil {
				yield(e, err)
				return
			}
			e.Path = m.outer(e.Path)
			all = append(all, e)
		}
		slices.SortFunc(all, func(a, b vfs.Entry) int { return cmp.Compare(a.Path, b.Path) })
		for _, e := range all {
			if !yield(e, nil) {
				return
			}
		}
	}
}
