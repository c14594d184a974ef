package vfs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"slices"
	"strings"
	"sync"
	"time"
)

// Layer is a copy-on-write view over a base backend: reads fall through to
// the base, writes and deletes stay in the layer until its Delta is merged.
// The base must not change while the layer is in use; the agent loop
// guarantees that by merging only after every call of a batch is done.
type Layer struct {
	base    Backend
	now     func() time.Time
	mu      sync.RWMutex
	changes map[string]*File // nil value: deleted in this layer
}

func newLayer(base Backend, now func() time.Time) *Layer {
	if now == nil {
		now = time.Now
	}
	return &Layer{base: base, now: now, changes: map[string]*File{}}
}

// NewLayer returns a layer over any backend.
func NewLayer(base Backend) *Layer { return newLayer(base, nil) }

// Branch implements Brancher: a layer over this layer.
func (l *Layer) Branch() *Layer { return newLayer(l, l.now) }

type fileSource interface {
	file(p string) (File, bool)
}

func (l *Layer) file(p string) (File, bool) {
	l.mu.RLock()
	c, ok := l.changes[p]
	l.mu.RUnlock()
	if ok {
		if c == nil {
			return File{}, false
		}
		return *c, true
	}
	if fsrc, ok := l.base.(fileSource); ok {
		return fsrc.file(p)
	}
	content, err := l.base.Read(context.Background(), p)
	if err != nil {
		return File{}, false
	}
	return File{Content: content}, true
}

// Stat implements Backend.
func (l *Layer) Stat(ctx context.Context, path string) (Entry, error) {
	p, err := Clean(path)
	if err != nil {
		return Entry{}, err
	}
	l.mu.RLock()
	c, changed := l.changes[p]
	l.mu.RUnlock()
	if changed && c != nil {
		return Entry{Path: p, Size: int64(len(c.Content)), ModifiedAt: c.ModifiedAt}, nil
	}
	if !changed {
		e, err := l.base.Stat(ctx, p)
		switch {
		case err == nil && !e.IsDir:
			return e, nil
		case err != nil && !errors.Is(err, ErrNotFound):
			return Entry{}, err
		}
	}
	if p == "/" {
		return Entry{Path: p, IsDir: true}, nil
	}
	for e, err := range l.Walk(ctx, p) {
		if err != nil {
			return Entry{}, err
		}
		if e.Path != p {
			return Entry{Path: p, IsDir: true}, nil
		}
	}
	return Entry{}, &fs.PathError{Op: "stat", Path: p, Err: ErrNotFound}
}

// Read implements Backend.
func (l *Layer) Read(ctx context.Context, path string) (string, error) {
	p, err := Clean(path)
	if err != nil {
		return "", err
	}
	l.mu.RLock()
	c, changed := l.changes[p]
	l.mu.RUnlock()
	if changed && c != nil {
		return c.Content, nil
	}
	if !changed {
		s, err := l.base.Read(ctx, p)
		if err == nil || !errors.Is(err, ErrNotFound) {
			return s, err
		}
	}
	if e, err := l.Stat(ctx, p); err == nil && e.IsDir {
		return "", &fs.PathError{Op: "read", Path: p, Err: ErrIsDir}
	}
	return "", &fs.PathError{Op: "read", Path: p, Err: ErrNotFound}
}

func (l *Layer) isFile(p string) bool {
	_, ok := l.file(p)
	return ok
}

// Write implements Backend.
func (l *Layer) Write(ctx context.Context, path, content string) error {
	p, err := Clean(path)
	if err != nil {
		return err
	}
	if p == "/" {
		return &fs.PathError{Op: "write", Path: p, Err: ErrIsDir}
	}
	for d := Parent(p); d != "/"; d = Parent(d) {
		if l.isFile(d) {
			return &fs.PathError{Op: "write", Path: p, Err: ErrNotDir}
		}
	}
	prev, exists := l.file(p)
	if !exists {
		if e, err := l.Stat(ctx, p); err == nil && e.IsDir {
			return &fs.PathError{Op: "write", Path: p, Err: ErrIsDir}
		}
	}
	now := l.now()
	f := &File{Content: content, CreatedAt: now, ModifiedAt: now}
	if exists && !prev.CreatedAt.IsZero() {
		f.CreatedAt = prev.CreatedAt
	}
	l.mu.Lock()
	l.changes[p] = f
	l.mu.Unlock()
	return nil
}

// Delete implements Backend.
func (l *Layer) Delete(ctx context.Context, path string) (int, error) {
	p, err := Clean(path)
	if err != nil {
		return 0, err
	}
	if l.isFile(p) {
		l.mu.Lock()
		l.changes[p] = nil
		l.mu.Unlock()
		return 1, nil
	}
	var doomed []string
	for e, err := range l.Walk(ctx, p) {
		if err != nil {
			return 0, err
		}
		doomed = append(doomed, e.Path)
	}
	if len(doomed) == 0 {
		if p == "/" {
			return 0, nil
		}
		return 0, &fs.PathError{Op: "delete", Path: p, Err: ErrNotFound}
	}
	l.mu.Lock()
	for _, d := range doomed {
		l.changes[d] = nil
	}
	l.mu.Unlock()
	return len(doomed), nil
}

// List implements Backend.
func (l *Layer) List(ctx context.Context, dir string) ([]Entry, error) {
	p, err := Clean(dir)
	if err != nil {
		return nil, err
	}
	if l.isFile(p) {
		return nil, &fs.PathError{Op: "list", Path: p, Err: ErrNotDir}
	}
	return listFromWalk(ctx, l, p)
}

// Walk implements Backend.
func (l *Layer) Walk(ctx context.Context, dir string) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		p, err := Clean(dir)
		if err != nil {
			yield(Entry{}, err)
			return
		}
		l.mu.RLock()
		var out []Entry
		for k, c := range l.changes {
			if c != nil && Under(k, p) {
				out = append(out, Entry{Path: k, Size: int64(len(c.Content)), ModifiedAt: c.ModifiedAt})
			}
		}
		l.mu.RUnlock()
		for e, err := range l.base.Walk(ctx, p) {
			if err != nil {
				yield(Entry{}, err)
				return
			}
			l.mu.RLock()
			_, changed := l.changes[e.Path]
			l.mu.RUnlock()
			if !changed {
				out = append(out, e)
			}
		}
		sortEntries(out)
		for _, e := range out {
			if !yield(e, nil) {
				return
			}
		}
	}
}

// Apply implements Applier.
func (l *Layer) Apply(d Delta) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range d {
		if c.File == nil {
			l.changes[c.Path] = nil
		} else {
			f := *c.File
			l.changes[c.Path] = &f
		}
	}
}

// Delta returns the layer's changes, sorted by path. Deleting a file the base
// never had is not a change.
func (l *Layer) Delta() Delta {
	l.mu.RLock()
	d := make(Delta, 0, len(l.changes))
	for p, f := range l.changes {
		d = append(d, Change{Path: p, File: f})
	}
	l.mu.RUnlock()
	out := d[:0]
	for _, c := range d {
		if c.File == nil {
			if _, err := l.base.Stat(context.Background(), c.Path); err != nil {
				continue
			}
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b Change) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// Conflict records two deltas of one batch changing the same path
// differently. The later delta's version is kept; the earlier one's content,
// if it wrote one, is saved to SavedTo so no write is lost.
type Conflict struct {
	Path    string `json:"path"`
	Kept    string `json:"kept"`               // owner of the version kept at Path
	Other   string `json:"other"`              // owner of the other version
	SavedTo string `json:"saved_to,omitempty"` // where the other version now lives; "" if it was a delete
	KeptOp  string `json:"kept_op"`            // "write" or "delete"
}

func (c Conflict) String() string {
	if c.SavedTo == "" {
		return fmt.Sprintf("%s was deleted by %s and then %s by %s; the %s of %s was kept", c.Path, c.Other, opPast(c.KeptOp), c.Kept, c.KeptOp, c.Kept)
	}
	return fmt.Sprintf("%s was written by both %s and %s; the version of %s was kept at %s and the version of %s was saved to %s",
		c.Path, c.Other, c.Kept, c.Kept, c.Path, c.Other, c.SavedTo)
}

func opPast(op string) string {
	if op == "delete" {
		return "deleted"
	}
	return "written"
}

// Merge applies the deltas of one batch to dst in order; owners[i] names
// whoever produced deltas[i] (for example a tool-call id). When two deltas
// change one path differently the later one wins, the earlier version is
// saved beside it, and the conflict is reported. It returns the net changes
// applied and the conflicts, both in a deterministic order.
func Merge(ctx context.Context, dst Applier, deltas []Delta, owners []string) (Delta, []Conflict) {
	type claim struct {
		owner int
		file  *File
	}
	final := map[string]claim{}
	var order []string
	var conflicts []Conflict
	for i, d := range deltas {
		for _, c := range d {
			prev, seen := final[c.Path]
			if seen && prev.owner != i && !sameOutcome(prev.file, c.File) {
				cf := Conflict{Path: c.Path, Kept: owners[i], Other: owners[prev.owner], KeptOp: "write"}
				if c.File == nil {
					cf.KeptOp = "delete"
				}
				if prev.file != nil {
					side := sidePath(ctx, dst, c.Path, owners[prev.owner], final)
					final[side] = claim{prev.owner, prev.file}
					order = append(order, side)
					cf.SavedTo = side
				}
				conflicts = append(conflicts, cf)
			}
			if !seen {
				order = append(order, c.Path)
			}
			final[c.Path] = claim{i, c.File}
		}
	}
	net := make(Delta, 0, len(order))
	for _, p := range order {
		net = append(net, Change{Path: p, File: final[p].file, By: owners[final[p].owner]})
	}
	slices.SortFunc(net, func(a, b Change) int { return strings.Compare(a.Path, b.Path) })
	dst.Apply(net)
	return net, conflicts
}

func sameOutcome(a, b *File) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Content == b.Content
}

// sidePath picks a free path next to p for owner's version.
func sidePath[V any](ctx context.Context, dst Backend, p, owner string, taken map[string]V) string {
	var b strings.Builder
	for _, r := range owner {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	base := p + ".conflict-" + b.String()
	cand := base
	for n := 2; ; n++ {
		_, used := taken[cand]
		if !used {
			if _, err := dst.Stat(ctx, cand); err != nil {
				return cand
			}
		}
		cand = fmt.Sprintf("%s-%d", base, n)
	}
}
