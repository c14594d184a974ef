package fstools

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/deepagents-go/deepagents/vfs"
	"github.com/deepagents-go/deepagents/vfs/perm"
)

// A search may be one part of a search that a vfs.Composite merges
// (vfs.SearchRequest.Part): its files are then searched in path order,
// without those the request excludes (the composite's mounts), and each
// entry kept says which file it is of.

// mountFor returns b as a search's request sees it, under the request's
// rules: for a part with a Mount, b under the rules of its own wrappers,
// mounted there, under the caller's rules, so that the search's paths,
// rules and answer are the caller's.
func mountFor(b vfs.Backend, req vfs.SearchRequest) (vfs.Backend, error) {
	if req.Mount == "" {
		return perm.WrapSearch(b, req.Rules)
	}
	k := req.OuterRules
	if k < 0 || k > len(req.Rules) {
		return nil, fmt.Errorf("a search mounted at %q says %d of its %d rule lists are the caller's", req.Mount, k, len(req.Rules))
	}
	b, err := perm.WrapSearch(b, req.Rules[k:])
	if err != nil {
		return nil, err
	}
	c, err := vfs.NewComposite(vfs.NewMemory(nil), vfs.Route{Prefix: req.Mount, Backend: b})
	if err != nil {
		return nil, fmt.Errorf("searching a backend mounted at %q: %w", req.Mount, err)
	}
	return perm.WrapSearch(c, req.Rules[:k])
}

// walkFor walks dir for req: the backend's walk, or for a part, its files
// in path order without those req excludes.
func walkFor(ctx context.Context, fs vfs.Backend, dir string, req vfs.SearchRequest) iter.Seq2[vfs.Entry, error] {
	if !req.Part {
		return fs.Walk(ctx, dir)
	}
	return func(yield func(vfs.Entry, error) bool) {
		var out []vfs.Entry
		for e, err := range fs.Walk(ctx, dir) {
			if err != nil {
				yield(vfs.Entry{}, err)
				return
			}
			if !vfs.Excluded(e.Path, req.Exclude) {
				out = append(out, e)
			}
		}
		slices.SortFunc(out, func(a, b vfs.Entry) int { return strings.Compare(a.Path, b.Path) })
		for _, e := range out {
			if !yield(e, nil) {
				return
			}
		}
	}
}

// addOf adds the entry s of file; for a part it also records the file, or
// the file at which the budget stopped the search.
func (e *entries) addOf(file, s string) {
	n, full := len(e.res.Entries), e.full
	e.add(s)
	if !e.part {
		return
	}
	switch {
	case len(e.res.Entries) > n && file == e.last && n > 0:
		e.res.Paths = append(e.res.Paths, "")
	case len(e.res.Entries) > n:
		e.res.Paths = append(e.res.Paths, file)
		e.last = file
	case e.full && !full:
		e.res.CutAt = file
	}
}
