package vfs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"slices"
	"strings"
	"time"
)

// Route mounts a backend at a directory of a Composite.
//
// Prefix is the mount point, a directory path such as "/memories/" (the
// trailing slash is optional; "/" itself cannot be a route). Every path at
// or below it belongs to the route and reaches Backend with the prefix
// stripped: with Prefix "/skills/", the composite's /skills/web/SKILL.md is
// the backend's /web/SKILL.md, so a disk backend opened at a host
// directory serves that directory's files under /skills/. ReadOnly routes
// refuse writes, edits and deletes with a *DeniedError (it matches
// ErrPermission) that names the route.
type Route struct {
	Prefix   string
	Backend  Backend
	ReadOnly bool
}

// Composite is a Backend that routes each path to the backend mounted at
// its longest matching Route prefix, and every other path to a fallback.
// Listing or walking a directory that holds mount points (the root, say)
// merges the routes in: a route shows as a directory once its backend holds
// a file. Directories are implied by files as everywhere in vfs, so an
// empty route does not show, and a file cannot be written at a mount point
// or at a parent of one.
//
// Composite can branch copy-on-write layers, like Memory: the agent loop
// gives each parallel tool call a layer and merges the layers back with
// Apply, which passes each change on to the backend that owns its path.
//
// A Composite made with a nil fallback mounts its routes over the run's
// in-state files: an agent given it as its backend builds each run's Memory
// as usual (checkpointed with the run) and serves it through MountState.
// Used directly, such a composite has an empty Memory as its fallback.
type Composite struct {
	fallback Backend
	state    bool
	routes   []*route // longest prefix first
}

type route struct {
	dir string // clean mount point, without a trailing slash
	b   Backend
	ro  bool
}

// label is the mount point as users write it, with a trailing slash.
func (r *route) label() string { return r.dir + "/" }

// outer maps a path of the route's backend back to the composite.
func (r *route) outer(inner string) string {
	if inner == "/" {
		return r.dir
	}
	return r.dir + inner
}

// NewComposite returns a composite of fallback and routes. It fails on a
// route without a backend, a prefix that is not a valid directory path or
// is "/", and two routes with one prefix.
func NewComposite(fallback Backend, routes ...Route) (*Composite, error) {
	c := &Composite{fallback: fallback}
	if fallback == nil {
		c.fallback, c.state = NewMemory(nil), true
	}
	for _, rt := range routes {
		if rt.Backend == nil {
			return nil, fmt.Errorf("vfs: route %q has no backend", rt.Prefix)
		}
		dir, err := Clean(rt.Prefix)
		if err != nil {
			return nil, fmt.Errorf("vfs: route prefix: %w", err)
		}
		if dir == "/" {
			return nil, fmt.Errorf("vfs: route prefix %q is the root; make that backend the fallback instead", rt.Prefix)
		}
		if slices.ContainsFunc(c.routes, func(r *route) bool { return r.dir == dir }) {
			return nil, fmt.Errorf("vfs: two routes are mounted at %s/", dir)
		}
		c.routes = append(c.routes, &route{dir: dir, b: rt.Backend, ro: rt.ReadOnly})
	}
	slices.SortStableFunc(c.routes, func(a, b *route) int { return cmp.Compare(len(b.dir), len(a.dir)) })
	return c, nil
}

// Routes returns the composite's routes, longest prefix first, each prefix
// with a trailing slash.
func (c *Composite) Routes() []Route {
	out := make([]Route, len(c.routes))
	for i, r := range c.routes {
		out[i] = Route{Prefix: r.label(), Backend: r.b, ReadOnly: r.ro}
	}
	return out
}

// Fallback returns the backend of paths no route claims.
func (c *Composite) Fallback() Backend { return c.fallback }

// StateMounter is a backend that wants the run's in-state files below it:
// the agent loop calls MountState with each run's Memory and, when it says
// true, uses the backend it returns for that run.
type StateMounter interface {
	Backend
	MountState(state *Memory) (Backend, bool)
}

// MountState implements StateMounter: a composite made with a nil fallback
// returns a copy of itself over state, and so does one whose fallback is
// such a composite (composites nest); any other returns false.
func (c *Composite) MountState(state *Memory) (Backend, bool) {
	if state == nil {
		return c, false
	}
	if c.state {
		return &Composite{fallback: state, routes: c.routes}, true
	}
	if sm, ok := c.fallback.(StateMounter); ok {
		if b, ok := sm.MountState(state); ok {
			return &Composite{fallback: b, routes: c.routes}, true
		}
	}
	return c, false
}

// With returns a composite with c's fallback (or its place for the run's
// state) and c's routes plus routes; c is unchanged. NewComposite's rules
// apply to the whole set.
func (c *Composite) With(routes ...Route) (*Composite, error) {
	var fallback Backend
	if !c.state {
		fallback = c.fallback
	}
	return NewComposite(fallback, append(c.Routes(), routes...)...)
}

// find returns the route owning p (nil: the fallback) and p as that
// backend sees it.
func (c *Composite) find(p string) (*route, string) {
	for _, r := range c.routes {
		if Under(p, r.dir) {
			if len(p) == len(r.dir) {
				return r, "/"
			}
			return r, p[len(r.dir):]
		}
	}
	return nil, p
}

// below returns the routes mounted strictly below dir.
func (c *Composite) below(dir string) []*route {
	var out []*route
	for _, r := range c.routes {
		if r.dir != dir && Under(r.dir, dir) {
			out = append(out, r)
		}
	}
	return out
}

func (c *Composite) backend(r *route) Backend {
	if r == nil {
		return c.fallback
	}
	return r.b
}

// filled reports whether r's backend holds anything, so its mount point
// shows as a directory.
func filled(ctx context.Context, r *route) bool {
	es, err := r.b.List(ctx, "/")
	return err == nil && len(es) > 0
}

func anyFilled(ctx context.Context, rs []*route) bool {
	return slices.ContainsFunc(rs, func(r *route) bool { return filled(ctx, r) })
}

// outerErr names the composite's path in an error of a route's backend.
func outerErr(r *route, err error) error {
	if r == nil || err == nil {
		return err
	}
	var pe *fs.PathError
	if errors.As(err, &pe) && pe == err && strings.HasPrefix(pe.Path, "/") {
		return &fs.PathError{Op: pe.Op, Path: r.outer(pe.Path), Err: pe.Err}
	}
	return err
}

func (c *Composite) outerEntry(r *route, e Entry) Entry {
	if r != nil {
		e.Path = r.outer(e.Path)
	}
	return e
}

// guard refuses a change of p that would touch a read-only route, and a
// file written at a mount point or at a parent of one.
func (c *Composite) guard(op, p string) error {
	r, inner := c.find(p)
	if r != nil && r.ro {
		return &DeniedError{Op: op, Path: p, Reason: r.label() + " is mounted read-only"}
	}
	if op != "delete" && (r != nil && inner == "/" || len(c.below(p)) > 0) {
		return &fs.PathError{Op: op, Path: p, Err: ErrIsDir}
	}
	if op == "delete" {
		for _, r := range c.below(p) {
			if r.ro {
				return &DeniedError{Op: op, Path: p, Reason: r.label() + " is mounted read-only"}
			}
		}
	}
	return nil
}

// Stat implements Backend.
func (c *Composite) Stat(ctx context.Context, path string) (Entry, error) {
	p, err := Clean(path)
	if err != nil {
		return Entry{}, err
	}
	r, inner := c.find(p)
	if r != nil && inner == "/" {
		if filled(ctx, r) || anyFilled(ctx, c.below(p)) {
			return Entry{Path: p, IsDir: true}, nil
		}
		return Entry{}, &fs.PathError{Op: "stat", Path: p, Err: ErrNotFound}
	}
	e, err := c.backend(r).Stat(ctx, inner)
	if err == nil && e.IsDir || err != nil && !errors.Is(err, ErrNotFound) {
		return c.outerEntry(r, e), outerErr(r, err)
	}
	if anyFilled(ctx, c.below(p)) {
		return Entry{Path: p, IsDir: true}, nil
	}
	return c.outerEntry(r, e), outerErr(r, err)
}

// Read implements Backend.
func (c *Composite) Read(ctx context.Context, path string) (string, error) {
	p, err := Clean(path)
	if err != nil {
		return "", err
	}
	if err := c.dirAt(ctx, "read", p); err != nil {
		return "", err
	}
	r, inner := c.find(p)
	s, err := c.backend(r).Read(ctx, inner)
	return s, outerErr(r, err)
}

// dirAt fails with ErrIsDir when p is a mount point or a parent of one
// whose route holds files, and with ErrNotFound at an empty mount point:
// reading there never reaches a file the mount hides.
func (c *Composite) dirAt(ctx context.Context, op, p string) error {
	r, inner := c.find(p)
	below := c.below(p)
	if inner != "/" && len(below) == 0 {
		return nil
	}
	if anyFilled(ctx, below) || r != nil && inner == "/" && filled(ctx, r) {
		return &fs.PathError{Op: op, Path: p, Err: ErrIsDir}
	}
	if r != nil && inner == "/" {
		return &fs.PathError{Op: op, Path: p, Err: ErrNotFound}
	}
	return nil
}

// Write implements Backend.
func (c *Composite) Write(ctx context.Context, path, content string) error {
	p, err := Clean(path)
	if err != nil {
		return err
	}
	if err := c.guard("write", p); err != nil {
		return err
	}
	r, inner := c.find(p)
	return outerErr(r, c.backend(r).Write(ctx, inner, content))
}

// Update implements Updater through the owning backend (see the function
// Update).
func (c *Composite) Update(ctx context.Context, path string, fn UpdateFunc) error {
	p, err := Clean(path)
	if err != nil {
		return err
	}
	if err := c.guard("edit", p); err != nil {
		return err
	}
	r, inner := c.find(p)
	return outerErr(r, Update(ctx, c.backend(r), inner, fn))
}

// Open implements Opener: the owning backend streams the file when it can.
func (c *Composite) Open(ctx context.Context, path string) (io.ReadCloser, Entry, error) {
	p, err := Clean(path)
	if err != nil {
		return nil, Entry{}, err
	}
	if err := c.dirAt(ctx, "open", p); err != nil {
		return nil, Entry{}, err
	}
	r, inner := c.find(p)
	rc, e, err := Open(ctx, c.backend(r), inner)
	if err != nil {
		return nil, Entry{}, outerErr(r, err)
	}
	return rc, c.outerEntry(r, e), nil
}

// Delete implements Backend. Deleting a directory that holds mount points
// empties those routes too (their mount points stay, empty); it is refused,
// changing nothing, when one of them is read-only.
func (c *Composite) Delete(ctx context.Context, path string) (int, error) {
	p, err := Clean(path)
	if err != nil {
		return 0, err
	}
	if err := c.guard("delete", p); err != nil {
		return 0, err
	}
	r, inner := c.find(p)
	below := c.below(p)
	n, found := 0, false
	if inner == "/" && r != nil {
		k, err := emptyRoute(ctx, r)
		if err != nil {
			return k, err
		}
		n, found = k, k > 0
	} else {
		k, err := c.backend(r).Delete(ctx, inner)
		switch {
		case err == nil:
			n, found = k, true
		case errors.Is(err, ErrNotFound) && len(below) > 0:
		default:
			return k, outerErr(r, err)
		}
	}
	for _, b := range below {
		k, err := emptyRoute(ctx, b)
		n += k
		if err != nil {
			return n, err
		}
		found = found || k > 0
	}
	if !found && p != "/" {
		return 0, &fs.PathError{Op: "delete", Path: p, Err: ErrNotFound}
	}
	return n, nil
}

// emptyRoute deletes everything in r's backend, one top-level entry at a
// time (a disk backend may refuse to delete its root).
func emptyRoute(ctx context.Context, r *route) (int, error) {
	es, err := r.b.List(ctx, "/")
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return 0, nil
		}
		return 0, outerErr(r, err)
	}
	n := 0
	for _, e := range es {
		k, err := r.b.Delete(ctx, e.Path)
		n += k
		if err != nil && !errors.Is(err, ErrNotFound) {
			return n, outerErr(r, err)
		}
	}
	return n, nil
}

// List implements Backend.
func (c *Composite) List(ctx context.Context, dir string) ([]Entry, error) {
	p, err := Clean(dir)
	if err != nil {
		return nil, err
	}
	r, inner := c.find(p)
	below := c.below(p)
	if len(below) == 0 {
		es, err := c.backend(r).List(ctx, inner)
		if err != nil {
			if r != nil && inner == "/" && errors.Is(err, ErrNotFound) {
				return nil, &fs.PathError{Op: "list", Path: p, Err: ErrNotFound}
			}
			return nil, outerErr(r, err)
		}
		out := make([]Entry, len(es))
		for i, e := range es {
			out[i] = c.outerEntry(r, e)
		}
		if r != nil && inner == "/" && len(out) == 0 {
			return nil, &fs.PathError{Op: "list", Path: p, Err: ErrNotFound}
		}
		return out, nil
	}
	// p holds mount points: its own backend's entries, without those a
	// mount point hides, and a directory for each filled route below.
	es, err := c.backend(r).List(ctx, inner)
	if err != nil && !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrNotDir) {
		return nil, outerErr(r, err)
	}
	mounts := map[string]bool{}
	for _, b := range below {
		if filled(ctx, b) {
			name, _ := childOf(b.dir, p)
			mounts[join(p, name)] = true
		}
	}
	var out []Entry
	for _, e := range es {
		e = c.outerEntry(r, e)
		if mounts[e.Path] {
			continue
		}
		if own, _ := c.find(e.Path); own != r {
			continue // a mount point whose route is empty
		}
		out = append(out, e)
	}
	for m := range mounts {
		out = append(out, Entry{Path: m, IsDir: true})
	}
	if len(out) == 0 && p != "/" && (err != nil || r != nil && inner == "/") {
		return nil, &fs.PathError{Op: "list", Path: p, Err: ErrNotFound}
	}
	sortEntries(out)
	return out, nil
}

// Walk implements Backend.
func (c *Composite) Walk(ctx context.Context, dir string) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		p, err := Clean(dir)
		if err != nil {
			yield(Entry{}, err)
			return
		}
		r, inner := c.find(p)
		below := c.below(p)
		if len(below) == 0 {
			for e, err := range c.backend(r).Walk(ctx, inner) {
				if err != nil {
					if r != nil && inner == "/" && errors.Is(err, ErrNotFound) {
						return
					}
					yield(Entry{}, outerErr(r, err))
					return
				}
				if !yield(c.outerEntry(r, e), nil) {
					return
				}
			}
			return
		}
		var out []Entry
		collect := func(owner *route, from string) error {
			for e, err := range c.backend(owner).Walk(ctx, from) {
				if err != nil {
					if errors.Is(err, ErrNotFound) {
						return nil
					}
					return outerErr(owner, err)
				}
				e = c.outerEntry(owner, e)
				if own, _ := c.find(e.Path); own == owner && !c.hidden(e.Path, below) {
					out = append(out, e)
				}
			}
			return nil
		}
		if err := collect(r, inner); err != nil {
			yield(Entry{}, err)
			return
		}
		for _, b := range below {
			if err := collect(b, "/"); err != nil {
				yield(Entry{}, err)
				return
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

// hidden reports whether a file at p is a parent of a mount point, which
// shows as a directory instead.
func (c *Composite) hidden(p string, routes []*route) bool {
	return slices.ContainsFunc(routes, func(r *route) bool { return r.dir != p && Under(r.dir, p) })
}

// Apply implements Applier: each change goes to the backend owning its
// path, as a batch to one that is an Applier and otherwise by Write and
// Delete. Changes of read-only routes and of paths a mount point hides are
// dropped (a layer from Branch refuses them in the first place); so are
// errors of a route's backend, as Apply has no way to report them.
func (c *Composite) Apply(d Delta) {
	ctx := context.Background()
	parts := map[*route]Delta{}
	var order []*route
	for _, ch := range d {
		r, inner := c.find(ch.Path)
		if r != nil && (r.ro || inner == "/") || r == nil && len(c.below(ch.Path)) > 0 {
			continue
		}
		if _, ok := parts[r]; !ok {
			order = append(order, r)
		}
		ch.Path = inner
		parts[r] = append(parts[r], ch)
	}
	for _, r := range order {
		b := c.backend(r)
		if ap, ok := b.(Applier); ok {
			ap.Apply(parts[r])
			continue
		}
		for _, ch := range parts[r] {
			if ch.File == nil {
				_, _ = b.Delete(ctx, ch.Path)
			} else {
				_ = b.Write(ctx, ch.Path, ch.File.Content)
			}
		}
	}
}

// Branch implements Brancher: a copy-on-write layer over the composite that
// refuses changes of read-only routes when they are made, not at merge.
func (c *Composite) Branch() *Layer {
	l := newLayer(c, c.clock())
	l.guard = c.guard
	return l
}

// clock is the fallback's clock when it is a Memory, so layers stamp times
// as the run's own files do.
func (c *Composite) clock() func() time.Time {
	switch f := c.fallback.(type) {
	case *Memory:
		f.mu.RLock()
		defer f.mu.RUnlock()
		return f.now
	case *Composite:
		return f.clock()
	}
	return nil
}

var (
	_ Brancher     = (*Composite)(nil)
	_ Applier      = (*Composite)(nil)
	_ Updater      = (*Composite)(nil)
	_ Opener       = (*Composite)(nil)
	_ StateMounter = (*Composite)(nil)
)

// Unlayered returns c as a backend that cannot branch: for a fallback that
// writes through, such as a real directory, so that the agent loop tracks
// each call's changes as they happen (and edits of one file stay atomic on
// disk) instead of holding them in layers until the step ends. It keeps
// every other method of c.
func (c *Composite) Unlayered() Backend { return unlayered{c} }

type unlayered struct{ c *Composite }

func (u unlayered) Stat(ctx context.Context, path string) (Entry, error) { return u.c.Stat(ctx, path) }
func (u unlayered) Read(ctx context.Context, path string) (string, error) {
	return u.c.Read(ctx, path)
}
func (u unlayered) Write(ctx context.Context, path, content string) error {
	return u.c.Write(ctx, path, content)
}
func (u unlayered) Delete(ctx context.Context, path string) (int, error) {
	return u.c.Delete(ctx, path)
}
func (u unlayered) List(ctx context.Context, dir string) ([]Entry, error) { return u.c.List(ctx, dir) }
func (u unlayered) Walk(ctx context.Context, dir string) iter.Seq2[Entry, error] {
	return u.c.Walk(ctx, dir)
}
func (u unlayered) Update(ctx context.Context, path string, fn UpdateFunc) error {
	return u.c.Update(ctx, path, fn)
}
func (u unlayered) Open(ctx context.Context, path string) (io.ReadCloser, Entry, error) {
	return u.c.Open(ctx, path)
}

// Unwrap returns the composite, so that vfs.AsExecutor finds a fallback
// that runs commands.
func (u unlayered) Unwrap() Backend { return u.c }
