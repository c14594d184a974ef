// Package store is a vfs.Backend whose files outlive a thread: they live in
// a table of a database (the checkpoint database, through the Table
// implementations in checkpoint/sqlite and checkpoint/postgres), under a
// namespace, so every thread of one user or agent sees the same files. Mount
// it with vfs.NewComposite, typically at /memories/.
//
// The database is reached through Table, a small interface: a namespaced map
// from path to file, read directly and changed in transactions. The package
// keeps the rules of the virtual filesystem (clean paths, implied
// directories, a path is never both a file and a directory) on top of it, so
// every Table gets them the same. NewMemoryTable is a Table in memory, for
// tests and for trying the store without a database.
package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"time"

	"github.com/deepagents-go/deepagents/internal/safefile"
	"github.com/deepagents-go/deepagents/vfs"
)

// MaxFileSize is the largest file the store takes, in bytes: a memory
// store holds notes, not data sets, and a bigger row would slow every
// thread that reads it.
const MaxFileSize = 8 << 20

// Row is one stored file without its content.
type Row struct {
	Path       string
	Size       int64
	CreatedAt  time.Time
	ModifiedAt time.Time
}

// Table is the storage a Store needs. Paths are clean absolute virtual
// paths; "below dir" means dir itself or any path under dir + "/" ("/"
// covers the whole namespace). Implementations must be safe for concurrent
// use.
type Table interface {
	// Get returns the file at path; found is false when there is none.
	Get(ctx context.Context, ns, path string) (f vfs.File, found bool, err error)
	// Rows returns the files below dir, sorted by path (byte order).
	Rows(ctx context.Context, ns, dir string) ([]Row, error)
	// Change runs fn in one transaction that no other Change of ns runs
	// beside, and commits when fn returns nil.
	Change(ctx context.Context, ns string, fn func(tx Tx) error) error
}

// Tx is a Table's transaction on one namespace.
type Tx interface {
	Get(path string) (f vfs.File, found bool, err error)
	// Below reports whether some file lies strictly below dir.
	Below(dir string) (bool, error)
	// Put creates or replaces the file at path.
	Put(path string, f vfs.File) error
	// Delete removes the files below dir and says how many went.
	Delete(dir string) (int, error)
}

// Store is a vfs.Backend over one namespace of a Table.
type Store struct {
	t   Table
	ns  string
	now func() time.Time
}

// New returns the store of namespace ns (any non-empty text, such as an
// agent's or a user's name) in t.
func New(t Table, ns string) (*Store, error) {
	if t == nil {
		return nil, errors.New("store: no table")
	}
	if ns == "" {
		return nil, errors.New("store: the namespace is empty; give a user or agent name")
	}
	return &Store{t: t, ns: ns, now: time.Now}, nil
}

// Namespace returns the store's namespace.
func (s *Store) Namespace() string { return s.ns }

// SetClock replaces the clock that stamps created and modified times (for
// tests).
func (s *Store) SetClock(now func() time.Time) { s.now = now }

func pathErr(op, p string, err error) error { return &fs.PathError{Op: op, Path: p, Err: err} }

// Stat implements vfs.Backend.
func (s *Store) Stat(ctx context.Context, path string) (vfs.Entry, error) {
	p, err := vfs.Clean(path)
	if err != nil {
		return vfs.Entry{}, err
	}
	if p == "/" {
		return vfs.Entry{Path: p, IsDir: true}, nil
	}
	rows, err := s.t.Rows(ctx, s.ns, p)
	if err != nil {
		return vfs.Entry{}, pathErr("stat", p, err)
	}
	for _, r := range rows {
		if r.Path == p {
			return vfs.Entry{Path: p, Size: r.Size, ModifiedAt: r.ModifiedAt}, nil
		}
		return vfs.Entry{Path: p, IsDir: true}, nil
	}
	return vfs.Entry{}, pathErr("stat", p, vfs.ErrNotFound)
}

// Read implements vfs.Backend.
func (s *Store) Read(ctx context.Context, path string) (string, error) {
	p, err := vfs.Clean(path)
	if err != nil {
		return "", err
	}
	f, ok, err := s.t.Get(ctx, s.ns, p)
	if err != nil {
		return "", pathErr("read", p, err)
	}
	if ok {
		return f.Content, nil
	}
	if e, err := s.Stat(ctx, p); err == nil && e.IsDir {
		return "", pathErr("read", p, vfs.ErrIsDir)
	}
	return "", pathErr("read", p, vfs.ErrNotFound)
}

// settle checks, inside a transaction, that a file may be written at p.
func settle(tx Tx, op, p string) (prev vfs.File, existed bool, err error) {
	if p == "/" {
		return prev, false, pathErr(op, p, vfs.ErrIsDir)
	}
	for d := vfs.Parent(p); d != "/"; d = vfs.Parent(d) {
		_, isFile, err := tx.Get(d)
		if err != nil {
			return prev, false, err
		}
		if isFile {
			return prev, false, pathErr(op, p, vfs.ErrNotDir)
		}
	}
	prev, existed, err = tx.Get(p)
	if err != nil || existed {
		return prev, existed, err
	}
	if dir, err := tx.Below(p); err != nil {
		return prev, false, err
	} else if dir {
		return prev, false, pathErr(op, p, vfs.ErrIsDir)
	}
	return prev, false, nil
}

func tooBig(op, p string, n int) error {
	return pathErr(op, p, fmt.Errorf("the content is %s, over the store's limit of %s per file", safefile.Size(int64(n)), safefile.Size(MaxFileSize)))
}

// Write implements vfs.Backend.
func (s *Store) Write(ctx context.Context, path, content string) error {
	p, err := vfs.Clean(path)
	if err != nil {
		return err
	}
	if len(content) > MaxFileSize {
		return tooBig("write", p, len(content))
	}
	return s.t.Change(ctx, s.ns, func(tx Tx) error { return s.put(tx, p, vfs.File{Content: content}) })
}

// put writes f at p inside a transaction once settle allows it (its
// *fs.PathError says why not). A file that was there keeps its creation
// time; times f leaves zero are now.
func (s *Store) put(tx Tx, p string, f vfs.File) error {
	prev, existed, err := settle(tx, "write", p)
	if err != nil {
		return err
	}
	now := s.now()
	if f.ModifiedAt.IsZero() {
		f.ModifiedAt = now
	}
	if existed && !prev.CreatedAt.IsZero() {
		f.CreatedAt = prev.CreatedAt
	} else if f.CreatedAt.IsZero() {
		f.CreatedAt = now
	}
	return tx.Put(p, f)
}

// Update implements vfs.Updater: the cycle runs in one transaction.
func (s *Store) Update(ctx context.Context, path string, fn vfs.UpdateFunc) error {
	p, err := vfs.Clean(path)
	if err != nil {
		return err
	}
	return s.t.Change(ctx, s.ns, func(tx Tx) error {
		prev, ok, err := tx.Get(p)
		if err != nil {
			return err
		}
		if !ok {
			if dir, err := tx.Below(p); err != nil {
				return err
			} else if dir || p == "/" {
				return pathErr("update", p, vfs.ErrIsDir)
			}
			return pathErr("update", p, vfs.ErrNotFound)
		}
		content, err := fn(prev.Content)
		if err != nil {
			return err
		}
		if len(content) > MaxFileSize {
			return tooBig("update", p, len(content))
		}
		prev.Content, prev.ModifiedAt = content, s.now()
		return tx.Put(p, prev)
	})
}

// Delete implements vfs.Backend.
func (s *Store) Delete(ctx context.Context, path string) (int, error) {
	p, err := vfs.Clean(path)
	if err != nil {
		return 0, err
	}
	var n int
	err = s.t.Change(ctx, s.ns, func(tx Tx) error {
		var err error
		n, err = tx.Delete(p)
		if err == nil && n == 0 && p != "/" {
			err = pathErr("delete", p, vfs.ErrNotFound)
		}
		return err
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// List implements vfs.Backend.
func (s *Store) List(ctx context.Context, dir string) ([]vfs.Entry, error) {
	p, err := vfs.Clean(dir)
	if err != nil {
		return nil, err
	}
	rows, err := s.t.Rows(ctx, s.ns, p)
	if err != nil {
		return nil, pathErr("list", p, err)
	}
	return vfs.ListFiles(p, entries(rows))
}

// entries yields rows as the files' entries.
func entries(rows []Row) iter.Seq2[vfs.Entry, error] {
	return func(yield func(vfs.Entry, error) bool) {
		for _, r := range rows {
			if !yield(vfs.Entry{Path: r.Path, Size: r.Size, ModifiedAt: r.ModifiedAt}, nil) {
				return
			}
		}
	}
}

// Walk implements vfs.Backend. It reads the listing before yielding, so
// the caller may use the store inside the loop.
func (s *Store) Walk(ctx context.Context, dir string) iter.Seq2[vfs.Entry, error] {
	return func(yield func(vfs.Entry, error) bool) {
		p, err := vfs.Clean(dir)
		if err != nil {
			yield(vfs.Entry{}, err)
			return
		}
		rows, err := s.t.Rows(ctx, s.ns, p)
		if err != nil {
			yield(vfs.Entry{}, pathErr("walk", p, err))
			return
		}
		entries(rows)(yield)
	}
}

// Apply implements vfs.Applier: a merged batch of changes in one
// transaction. Changes the store cannot take (a file where a directory
// is) are skipped, as Apply cannot report errors; a composite's layers
// have checked them already.
func (s *Store) Apply(d vfs.Delta) {
	_ = s.t.Change(context.Background(), s.ns, func(tx Tx) error {
		for _, c := range d {
			if c.File == nil {
				if _, err := tx.Delete(c.Path); err != nil {
					return err
				}
				continue
			}
			if len(c.File.Content) > MaxFileSize {
				continue
			}
			if err := s.put(tx, c.Path, *c.File); err != nil {
				var pe *fs.PathError
				if errors.As(err, &pe) {
					continue
				}
				return err
			}
		}
		return nil
	})
}

var (
	_ vfs.Updater = (*Store)(nil)
	_ vfs.Applier = (*Store)(nil)
)
