package vfs

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"iter"
	"slices"
	"strings"
)

// FileSearch runs a search file by file over any backend: the file tools'
// own search (fstools.Search). A Composite uses the one in the context
// (WithFileSearch) for the files of its mounts.
type FileSearch func(ctx context.Context, b Backend, req SearchRequest) (SearchResult, error)

type fileSearchKey struct{}

// WithFileSearch returns ctx carrying fn, so that a Composite met by
// Search can search its mounts file by file and its fallback in one call.
func WithFileSearch(ctx context.Context, fn FileSearch) context.Context {
	return context.WithValue(ctx, fileSearchKey{}, fn)
}

func fileSearchOf(ctx context.Context) FileSearch {
	fn, _ := ctx.Value(fileSearchKey{}).(FileSearch)
	return fn
}

// Search implements Searcher. A path the fallback owns with no route below
// it is the fallback's search. A directory with mount points below it (the
// root, with skills at /skills/) is searched in parts: the fallback in one
// call with the mounts left out, each mount that can search (a Searcher)
// in one call too, and the other mounts file by file with the context's
// FileSearch; the answers are merged in path order within the request's
// caps, so the answer is the one a search of the composite file by file
// gives. Search declines (ok false) a path inside a route, and a directory
// with mounts below when the fallback cannot search or the context carries
// no FileSearch.
func (c *Composite) Search(ctx context.Context, req SearchRequest) (SearchResult, bool, error) {
	p, err := Clean(req.Path)
	if err != nil || req.Mount != "" {
		return SearchResult{}, false, nil
	}
	if r, _ := c.find(p); r != nil || c.state {
		return SearchResult{}, false, nil
	}
	below := c.below(p)
	if len(below) == 0 {
		return Search(ctx, c.fallback, req)
	}
	byFile := fileSearchOf(ctx)
	if byFile == nil {
		return SearchResult{}, false, nil
	}
	part := func(mount string, exclude []*route) SearchRequest {
		sub := req
		sub.Path, sub.Part, sub.Mount = p, true, mount
		if mount != "" {
			// The rules so far are on the composite's paths; those the
			// mount's own wrappers add will be on the mount's.
			sub.OuterRules = len(req.Rules)
		}
		sub.Exclude = slices.Clone(req.Exclude)
		for _, r := range exclude {
			sub.Exclude = append(sub.Exclude, r.dir)
		}
		return sub
	}
	own, ok, err := Search(ctx, c.fallback, part("", below))
	switch {
	case !ok:
		return SearchResult{}, false, nil
	case err != nil || own.Denied != nil:
		return own, true, err
	case !own.Part:
		// Answered by a backend that does not search parts (an older
		// worker): the tool searches file by file.
		return SearchResult{}, false, nil
	}
	parts := []SearchResult{own}
	var rest []*route
	for _, r := range below {
		if slices.ContainsFunc(req.Exclude, func(d string) bool { return Under(r.dir, d) }) {
			continue // hidden whole by a mount of the caller's
		}
		res, ok, err := Search(ctx, r.b, part(r.dir, c.below(r.dir)))
		switch {
		case !ok || err == nil && res.Denied == nil && !res.Part:
			rest = append(rest, r)
		case err != nil || res.Denied != nil:
			return res, true, err
		default:
			parts = append(parts, res)
		}
	}
	if len(rest) > 0 {
		res, err := byFile(ctx, &mounts{c: c, dir: p, routes: rest, below: below}, part("", nil))
		if err != nil || res.Denied != nil {
			return res, true, err
		}
		parts = append(parts, res)
	}
	return mergeSearch(req, parts...), true, nil
}

// Excluded reports whether a search with the directories exclude left out
// skips the file at p: one at or below such a directory, or at a parent of
// one (a file a mount point hides).
func Excluded(p string, exclude []string) bool {
	return slices.ContainsFunc(exclude, func(d string) bool { return Under(p, d) || Under(d, p) })
}

// mergeSearch merges the answers of searches of disjoint sets of files,
// each in path order, into the answer one search of them all in path order
// gives, within req's caps.
func mergeSearch(req SearchRequest, parts ...SearchResult) SearchResult {
	missing := true
	for _, r := range parts {
		if r.IsFile {
			return SearchResult{IsFile: true, Part: req.Part}
		}
		missing = missing && r.Missing
	}
	if missing {
		return SearchResult{Missing: true, Part: req.Part}
	}
	var out SearchResult
	// fileAt is the file of parts[k].Entries[i].
	files := make([][]string, len(parts))
	for k, r := range parts {
		out.Total += r.Total
		out.SkippedTotal += r.SkippedTotal
		last := ""
		files[k] = make([]string, len(r.Entries))
		for i := range r.Entries {
			if i < len(r.Paths) && r.Paths[i] != "" {
				last = r.Paths[i]
			}
			files[k][i] = last
		}
	}
	next := make([]int, len(parts))
	chars, last := 0, ""
	add := func(file, s string) bool {
		if len(out.Entries) >= req.Limit {
			return false
		}
		if chars+len(s)+1 > req.Budget && len(out.Entries) > 0 {
			out.CutAt = file
			return false
		}
		out.Entries = append(out.Entries, s)
		chars += len(s) + 1
		if req.Part {
			if file == last {
				out.Paths = append(out.Paths, "")
			} else {
				out.Paths = append(out.Paths, file)
			}
		}
		last = file
		return true
	}
merge:
	for {
		// The next file in path order, or the place a part that kept
		// fewer entries than it found stopped: past it the merged answer
		// is full too.
		best, file, stop := -1, "", false
		for k, r := range parts {
			at, isStop := "", false
			switch {
			case next[k] < len(r.Entries):
				at = files[k][next[k]]
			case r.Total > len(r.Entries):
				at, isStop = r.CutAt, true
			default:
				continue
			}
			if best < 0 || at < file || at == file && isStop {
				best, file, stop = k, at, isStop
			}
		}
		switch {
		case best < 0:
			break merge
		case stop:
			out.CutAt = file
			break merge
		}
		r := parts[best]
		for i := next[best]; i < len(r.Entries) && files[best][i] == file; i++ {
			if !add(file, r.Entries[i]) {
				break merge
			}
			next[best] = i + 1
		}
	}
	if out.Part = req.Part; !req.Part {
		out.CutAt = ""
	}
	// The skipped files named: in path order, as far as every part named
	// all it skipped up to there.
	keep := -1
	for _, r := range parts {
		out.Skipped = append(out.Skipped, r.Skipped...)
		if r.SkippedTotal > len(r.Skipped) && (keep < 0 || len(r.Skipped) < keep) {
			keep = len(r.Skipped)
		}
	}
	slices.SortStableFunc(out.Skipped, func(a, b SearchSkip) int { return strings.Compare(a.Path, b.Path) })
	if keep >= 0 && len(out.Skipped) > keep {
		out.Skipped = out.Skipped[:keep]
	}
	return out
}

// mounts is the part of a composite's directory that its routes below it
// hold: what the composite shows there but the fallback's files. It is
// read-only, for a search.
type mounts struct {
	c      *Composite
	dir    string
	routes []*route // the routes shown
	below  []*route // every route below dir, whose mount points hide files
}

// inside reports whether p is in one of the routes (the files of the
// fallback are not this view's).
func (m *mounts) inside(p string) bool {
	return slices.ContainsFunc(m.routes, func(r *route) bool { return Under(p, r.dir) })
}

func (m *mounts) clean(op, path string) (string, error) {
	p, err := Clean(path)
	if err != nil {
		return "", err
	}
	if p != m.dir && !m.inside(p) {
		return "", &fs.PathError{Op: op, Path: p, Err: ErrNotFound}
	}
	return p, nil
}

func (m *mounts) Stat(ctx context.Context, path string) (Entry, error) {
	p, err := m.clean("stat", path)
	if err != nil {
		return Entry{}, err
	}
	if p == m.dir {
		if anyFilled(ctx, m.routes) {
			return Entry{Path: p, IsDir: true}, nil
		}
		return Entry{}, &fs.PathError{Op: "stat", Path: p, Err: ErrNotFound}
	}
	return m.c.Stat(ctx, p)
}

func (m *mounts) Read(ctx context.Context, path string) (string, error) {
	p, err := m.clean("read", path)
	if err != nil {
		return "", err
	}
	if p == m.dir {
		return "", &fs.PathError{Op: "read", Path: p, Err: ErrIsDir}
	}
	return m.c.Read(ctx, p)
}

func (m *mounts) Open(ctx context.Context, path string) (io.ReadCloser, Entry, error) {
	p, err := m.clean("open", path)
	if err != nil {
		return nil, Entry{}, err
	}
	if p == m.dir {
		return nil, Entry{}, &fs.PathError{Op: "open", Path: p, Err: ErrIsDir}
	}
	return m.c.Open(ctx, p)
}

func (m *mounts) Write(_ context.Context, path, _ string) error {
	return &DeniedError{Op: "write", Path: path, Reason: "a search's view of mounted files is read-only"}
}

func (m *mounts) Delete(_ context.Context, path string) (int, error) {
	return 0, &DeniedError{Op: "delete", Path: path, Reason: "a search's view of mounted files is read-only"}
}

func (m *mounts) List(ctx context.Context, dir string) ([]Entry, error) {
	return listFromWalk(ctx, m, dir)
}

// Walk yields the routes' files below dir, as the composite's walk of its
// directory shows them, sorted by path.
func (m *mounts) Walk(ctx context.Context, dir string) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		p, err := Clean(dir)
		if err != nil {
			yield(Entry{}, err)
			return
		}
		var out []Entry
		for _, r := range m.routes {
			for e, err := range r.b.Walk(ctx, "/") {
				if err != nil {
					if errors.Is(err, ErrNotFound) {
						break
					}
					yield(Entry{}, outerErr(r, err))
					return
				}
				e = m.c.outerEntry(r, e)
				if own, _ := m.c.find(e.Path); own == r && !m.c.hidden(e.Path, m.below) && Under(e.Path, p) {
					out = append(out, e)
				}
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

var _ Opener = (*mounts)(nil)
