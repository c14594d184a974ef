package skills

import (
	"context"
	"fmt"
	"iter"
	"strings"
	"sync"

	"github.com/deepagents-go/deepagents/vfs"
	"github.com/deepagents-go/deepagents/vfs/osfs"
)

// FS is a read-only vfs.Backend of the loader's skills as last loaded (the
// middleware checks the sources before each model call): the file
// REST of skill NAME is at /NAME/REST, served from the skill's folder on
// disk (confined to it, symbolic links included, as package osfs does).
// Mount it at the loader's prefix (the middleware does so for every tool
// call) so that the paths in the listing work with read_file, ls, glob and
// grep. Writes and deletes fail with vfs.ErrPermission. The backend of a
// Snapshot serves the files it kept, and reads no folder.
type FS struct {
	l *Loader

	mu    sync.Mutex
	seen  *Set                // the set roots were opened for
	roots map[string]*osfs.FS // by skill folder
}

// NewFS returns the backend of l's skills.
func NewFS(l *Loader) *FS { return &FS{l: l, roots: map[string]*osfs.FS{}} }

// Close releases the skill folders opened so far.
func (f *FS) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for k, r := range f.roots {
		_ = r.Close()
		delete(f.roots, k)
	}
	return nil
}

var _ vfs.Backend = (*FS)(nil)

// split resolves a clean path to the skill's folder backend and the path
// inside it; name is "" for the root.
func (f *FS) split(path string) (name string, root *osfs.FS, inner string, err error) {
	p, err := vfs.Clean(path)
	if err != nil {
		return "", nil, "", err
	}
	if p == "/" {
		return "", nil, "/", nil
	}
	name, rest, _ := strings.Cut(p[1:], "/")
	set := f.l.last()
	sk, ok := set.Lookup(name)
	if !ok {
		return name, nil, "", fmt.Errorf("%s: there is no skill %q: %w", path, name, vfs.ErrNotFound)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if set != f.seen {
		// The skills were read again: a folder may have been replaced,
		// so open each one afresh. The old handles are not closed here,
		// since a call of another agent may still be using one.
		f.seen, f.roots = set, map[string]*osfs.FS{}
	}
	root = f.roots[sk.Dir]
	if root == nil {
		if root, err = osfs.New(sk.Dir, osfs.NoSweep(), osfs.MaxFileBytes(MaxFileSize)); err != nil {
			return name, nil, "", fmt.Errorf("%s: skill %q cannot be read: %w", path, name, vfs.ErrNotFound)
		}
		f.roots[sk.Dir] = root
	}
	return name, root, "/" + rest, nil
}

func (f *FS) Stat(ctx context.Context, path string) (vfs.Entry, error) {
	if m := f.l.mem; m != nil {
		return m.Stat(ctx, path)
	}
	name, root, inner, err := f.split(path)
	if err != nil {
		return vfs.Entry{}, err
	}
	if name == "" {
		return vfs.Entry{Path: "/", IsDir: true}, nil
	}
	e, err := root.Stat(ctx, inner)
	e.Path = rebase(name, e.Path)
	return e, err
}

func (f *FS) Read(ctx context.Context, path string) (string, error) {
	if m := f.l.mem; m != nil {
		return m.Read(ctx, path)
	}
	name, root, inner, err := f.split(path)
	if err != nil {
		return "", err
	}
	if name == "" {
		return "", fmt.Errorf("%s: %w", path, vfs.ErrIsDir)
	}
	return root.Read(ctx, inner)
}

// Write refuses: skills are read-only for the agent.
func (f *FS) Write(_ context.Context, path, _ string) error {
	return fmt.Errorf("%s: skills are read-only; write your own files elsewhere: %w", path, vfs.ErrPermission)
}

// Delete refuses: skills are read-only for the agent.
func (f *FS) Delete(_ context.Context, path string) (int, error) {
	return 0, fmt.Errorf("%s: skills are read-only and cannot be deleted: %w", path, vfs.ErrPermission)
}

func (f *FS) List(ctx context.Context, dir string) ([]vfs.Entry, error) {
	if m := f.l.mem; m != nil {
		return m.List(ctx, dir)
	}
	name, root, inner, err := f.split(dir)
	if err != nil {
		return nil, err
	}
	if name == "" {
		set := f.l.last()
		out := make([]vfs.Entry, 0, len(set.Skills))
		for _, s := range set.Skills {
			out = append(out, vfs.Entry{Path: "/" + s.Name, IsDir: true})
		}
		return out, nil
	}
	es, err := root.List(ctx, inner)
	for i := range es {
		es[i].Path = rebase(name, es[i].Path)
	}
	return es, err
}

func (f *FS) Walk(ctx context.Context, dir string) iter.Seq2[vfs.Entry, error] {
	if m := f.l.mem; m != nil {
		return m.Walk(ctx, dir)
	}
	return func(yield func(vfs.Entry, error) bool) {
		name, root, inner, err := f.split(dir)
		if err != nil {
			yield(vfs.Entry{}, err)
			return
		}
		if name != "" {
			for e, err := range root.Walk(ctx, inner) {
				e.Path = rebase(name, e.Path)
				if !yield(e, err) {
					return
				}
			}
			return
		}
		for _, s := range f.l.last().Skills {
			for e, err := range f.Walk(ctx, "/"+s.Name) {
				if !yield(e, err) {
					return
				}
			}
		}
	}
}

func rebase(name, p string) string {
	if p == "" {
		return ""
	}
	if p == "/" {
		return "/" + name
	}
	return "/" + name + p
}
