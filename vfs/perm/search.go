package perm

import (
	"context"

	"github.com/deepagents-go/deepagents/vfs"
)

// Search implements vfs.Searcher when the wrapped backend can search: the
// rules travel with the request, and the search applies them as this
// wrapper's reads would, so it never returns a path they hide.
func (b *Backend) Search(ctx context.Context, req vfs.SearchRequest) (vfs.SearchResult, bool, error) {
	req.Rules = append(append([][]string(nil), req.Rules...), b.rules.Encode())
	return vfs.Search(ctx, b.inner, req)
}

// WrapSearch returns b under the rules of a search or page request (see
// vfs.SearchRequest.Rules, written by Rules.Encode), each list wrapping the
// ones after it, as the wrappers that added them did.
func WrapSearch(b vfs.Backend, rules [][]string) (vfs.Backend, error) {
	for i := len(rules) - 1; i >= 0; i-- {
		rs, err := DecodeRules(rules[i])
		if err != nil {
			return nil, err
		}
		b = Wrap(b, rs)
	}
	return b, nil
}

// ReadPage implements vfs.PageReader when the wrapped backend can read a
// page itself; the rules travel with the request, as for Search.
func (b *Backend) ReadPage(ctx context.Context, req vfs.PageRequest) (vfs.PageResult, bool, error) {
	req.Rules = append(append([][]string(nil), req.Rules...), b.rules.Encode())
	return vfs.ReadPage(ctx, b.inner, req)
}
