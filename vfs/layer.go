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
	// wmu serialises writes and deletes, so a check that a path is not a
	// directory (or below a file) still holds when the change is stored.
	wmu sync.Mutex
	// guard, when set, vets a write, edit or delete before the layer
	// takes it (a composite's read-only routes), so a refusal reaches the
	// caller instead of being dropped at merge.
	guard func(op, path string) error
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
func (l *Layer) Branch() *Layer {
	nl := newLayer(l, l.now)
	nl.guard = l.guard
	return nl
}

func (l *Layer) vet(op, p string) error {
	if l.guard == nil {
		return nil
	}
	return l.guard(op, p)
}

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
	dir, err := l.isDir(ctx, p)
	if err != nil {
		return Entry{}, err
	}
	if dir {
		return Entry{Path: p, IsDir: true}, nil
	}
	return Entry{}, &fs.PathError{Op: "stat", Path: p, Err: ErrNotFound}
}

// isDir reports whether some file lives below p in the merged view, without
// walking the base unless files below p were deleted in this layer.
func (l *Layer) isDir(ctx context.Context, p string) (bool, error) {
	tombstones := false
	l.mu.RLock()
	for k, c := range l.changes {
		if k != p && Under(k, p) {
			if c != nil {
				l.mu.RUnlock()
				return true, nil
			}
			tombstones = true
		}
	}
	l.mu.RUnlock()
	e, err := l.base.Stat(ctx, p)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return false, nil
		}
		return false, err
	}
	if !e.IsDir {
		return false, nil
	}
	if !tombstones {
		return true, nil
	}
	for e, err := range l.Walk(ctx, p) {
		if err != nil {
			return false, err
		}
		if e.Path != p {
			return true, nil
		}
	}
	return false, nil
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
		if err == nil || !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrIsDir) {
			return s, err
		}
		// A base directory may have been emptied in this layer: decide below.
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
	if err := l.vet("write", p); err != nil {
		return err
	}
	l.wmu.Lock()
	defer l.wmu.Unlock()
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
		if dir, err := l.isDir(ctx, p); err != nil {
			return err
		} else if dir {
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
	if err := l.vet("delete", p); err != nil {
		return 0, err
	}
	l.wmu.Lock()
	defer l.wmu.Unlock()
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
				if errors.Is(err, ErrNotFound) {
					break // the base lacks dir; the layer may still have files there
				}
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
// does not have as a file is not a change.
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
			if e, err := l.base.Stat(context.Background(), c.Path); err != nil || e.IsDir {
				continue
			}
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b Change) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// Conflict records two deltas of one batch changing the same path
// differently, or one making a path a file while another writes files below
// it. The later delta's version is kept; the earlier one's content, if it
// wrote one, is saved to SavedTo so no write is lost.
type Conflict struct {
	Path    string `json:"path"`
	Kept    string `json:"kept"`               // owner of the version kept at Path
	Other   string `json:"other"`              // owner of the other version
	SavedTo string `json:"saved_to,omitempty"` // where the other version now lives; "" if it was a delete
	KeptOp  string `json:"kept_op"`            // "write" or "delete"
	// Kind is "" when both changed Path itself. ConflictDirKept: Kept wrote
	// files below Path while Other wrote a file at Path, saved to SavedTo.
	// ConflictFileKept: Kept wrote a file at Path while Other wrote files
	// below it, moved below SavedTo.
	Kind string `json:"kind,omitempty"`
}

// Conflict kinds for a path that one delta made a file and another a
// directory.
const (
	ConflictDirKept  = "dir-kept"
	ConflictFileKept = "file-kept"
)

func (c Conflict) String() string {
	switch {
	case c.Kind == ConflictDirKept:
		return fmt.Sprintf("%s was written as a file by %s while %s wrote files below it; the files of %s were kept and the file of %s was saved to %s",
			c.Path, c.Other, c.Kept, c.Kept, c.Other, c.SavedTo)
	case c.Kind == ConflictFileKept:
		return fmt.Sprintf("%s was written as a file by %s while %s wrote files below it; the file of %s was kept and the files of %s were moved below %s",
			c.Path, c.Kept, c.Other, c.Kept, c.Other, c.SavedTo)
	case c.SavedTo == "":
		return fmt.Sprintf("%s was deleted by %s and then %s by %s; the %s of %s was kept", c.Path, c.Other, opPast(c.KeptOp), c.Kept, c.KeptOp, c.Kept)
	case c.KeptOp == "delete":
		return fmt.Sprintf("%s was written by %s and deleted by %s; the delete of %s was kept and the version of %s was saved to %s",
			c.Path, c.Other, c.Kept, c.Kept, c.Other, c.SavedTo)
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
// saved beside it, and the conflict is reported. Likewise when one delta
// writes a file at a path and another writes files below that path: the
// later one keeps the path and the earlier one's file, or files, move to a
// side path. It returns the net changes applied and the conflicts, both in a
// deterministic order.
//
// Each delta is expected to be consistent with dst on its own, as the Delta
// of a Layer branched from dst is.
func Merge(ctx context.Context, dst Applier, deltas []Delta, owners []string) (Delta, []Conflict) {
	m := &merger{ctx: ctx, dst: dst, owners: owners, final: map[string]claim{}}
	for i, d := range deltas {
		for _, c := range d {
			m.change(i, c.Path, c.File)
		}
	}
	m.resolveClashes()
	net := make(Delta, 0, len(m.order))
	for _, p := range m.order {
		cl := m.final[p]
		if cl.file == nil && !m.dstFile(p) {
			continue // deleting what dst never had (a file moved aside in this batch)
		}
		net = append(net, Change{Path: p, File: cl.file, By: m.owner(cl.owner)})
	}
	slices.SortFunc(net, func(a, b Change) int { return strings.Compare(a.Path, b.Path) })
	dst.Apply(net)
	return net, m.conflicts
}

type claim struct {
	owner int
	file  *File
}

type merger struct {
	ctx       context.Context
	dst       Backend
	owners    []string
	final     map[string]claim
	order     []string
	conflicts []Conflict
}

func (m *merger) owner(i int) string {
	if i >= 0 && i < len(m.owners) {
		return m.owners[i]
	}
	return fmt.Sprintf("delta-%d", i)
}

func (m *merger) set(p string, c claim) {
	if _, seen := m.final[p]; !seen {
		m.order = append(m.order, p)
	}
	m.final[p] = c
}

func (m *merger) dstFile(p string) bool {
	e, err := m.dst.Stat(m.ctx, p)
	return err == nil && !e.IsDir
}

// change records delta i's change of p, saving an earlier delta's differing
// version beside p.
func (m *merger) change(i int, p string, f *File) {
	prev, seen := m.final[p]
	if seen && prev.owner != i && !sameOutcome(prev.file, f) {
		cf := Conflict{Path: p, Kept: m.owner(i), Other: m.owner(prev.owner), KeptOp: "write"}
		if f == nil {
			cf.KeptOp = "delete"
		}
		if prev.file != nil {
			side := m.sidePath(p, m.owner(prev.owner))
			m.set(side, prev)
			cf.SavedTo = side
		}
		m.conflicts = append(m.conflicts, cf)
	}
	m.set(p, claim{i, f})
}

// written lists the paths the batch leaves as files, sorted.
func (m *merger) written() []string {
	var ps []string
	for p, c := range m.final {
		if c.file != nil {
			ps = append(ps, p)
		}
	}
	slices.Sort(ps)
	return ps
}

// clash finds the topmost path written as a file that also has files
// written below it.
func (m *merger) clash() (string, bool) {
	for _, p := range m.written() {
		var anc []string
		for d := Parent(p); d != "/"; d = Parent(d) {
			anc = append(anc, d)
		}
		for j := len(anc) - 1; j >= 0; j-- {
			if c, ok := m.final[anc[j]]; ok && c.file != nil {
				return anc[j], true
			}
		}
	}
	return "", false
}

// resolveClashes settles every path that the batch made both a file and a
// directory: whoever came later keeps it. Each round removes at least one
// clashing pair, so the loop ends.
func (m *merger) resolveClashes() {
	for range 1 << 20 {
		a, ok := m.clash()
		if !ok {
			return
		}
		file := m.final[a]
		var below []string
		latest := -1
		for _, p := range m.written() {
			if p != a && Under(p, a) {
				below = append(below, p)
				latest = max(latest, m.final[p].owner)
			}
		}
		if latest > file.owner {
			side := m.sidePath(a, m.owner(file.owner))
			m.set(side, file)
			m.set(a, claim{latest, nil})
			m.conflicts = append(m.conflicts, Conflict{Path: a, Kept: m.owner(latest), Other: m.owner(file.owner),
				SavedTo: side, KeptOp: "write", Kind: ConflictDirKept})
			continue
		}
		// The file is newer: every earlier writer's files below it move,
		// keeping their layout, below a side directory per writer.
		sides := map[int]string{}
		var losers []int
		for _, p := range below {
			c := m.final[p]
			side, ok := sides[c.owner]
			if !ok {
				side = m.sidePath(a, m.owner(c.owner))
				sides[c.owner] = side
				losers = append(losers, c.owner)
				m.set(side, claim{c.owner, nil}) // reserve the name
			}
			m.set(side+p[len(a):], c)
			m.set(p, claim{file.owner, nil})
		}
		slices.Sort(losers)
		for _, o := range losers {
			m.conflicts = append(m.conflicts, Conflict{Path: a, Kept: m.owner(file.owner), Other: m.owner(o),
				SavedTo: sides[o], KeptOp: "write", Kind: ConflictFileKept})
		}
	}
}

func sameOutcome(a, b *File) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Content == b.Content
}

// sidePath picks a path next to p for owner's version that nothing in dst
// or in the batch uses, as a file or as a directory.
func (m *merger) sidePath(p, owner string) string {
	var b strings.Builder
	for _, r := range owner {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		b.WriteString("other")
	}
	base := p + ".conflict-" + b.String()
	cand := base
	for n := 2; ; n++ {
		if m.free(cand) {
			return cand
		}
		cand = fmt.Sprintf("%s-%d", base, n)
	}
}

func (m *merger) free(p string) bool {
	if _, used := m.final[p]; used {
		return false
	}
	for q := range m.final {
		if Under(q, p) {
			return false
		}
	}
	_, err := m.dst.Stat(m.ctx, p)
	return err != nil
}
