package vfs_test

import (
	"context"
	"testing"

	"github.com/deepagents-go/deepagents/vfs"
)

// oneCall is a backend that searches and reads pages in one call.
type oneCall struct{ *vfs.Memory }

func (oneCall) Search(context.Context, vfs.SearchRequest) (vfs.SearchResult, bool, error) {
	return vfs.SearchResult{Total: 7}, true, nil
}

func (oneCall) ReadPage(context.Context, vfs.PageRequest) (vfs.PageResult, bool, error) {
	return vfs.PageResult{End: 7}, true, nil
}

// opaque wraps a backend without taking part in searches.
type opaque struct{ vfs.Backend }

func (o opaque) Unwrap() vfs.Backend { return o.Backend }

// A search or a page is done in one call through a tracked view and a
// composite's fallback, and never through a wrapper that does not take
// part (its rules would be bypassed) or over a route of a composite.
func TestSearchSeesThroughOnlyWhatTakesPart(t *testing.T) {
	ctx := context.Background()
	fast := oneCall{vfs.NewMemory(nil)}
	c, err := vfs.NewComposite(fast, vfs.Route{Prefix: "/mnt/m", Backend: vfs.NewMemory(nil)})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		b    vfs.Backend
		path string
		want bool
	}{
		{"itself", fast, "/", true},
		{"tracked", vfs.Track(fast), "/src", true},
		{"a wrapper that does not take part", opaque{fast}, "/src", false},
		{"tracked wrapper that does not take part", vfs.Track(opaque{fast}), "/src", false},
		{"composite, under its fallback", c, "/src", true},
		{"composite, unlayered", c.Unlayered(), "/src", true},
		{"composite, a route below", c, "/mnt", false},
		{"composite, in a route", c, "/mnt/m/x", false},
		{"memory", vfs.NewMemory(nil), "/", false},
	}
	for _, tc := range cases {
		res, ok, err := vfs.Search(ctx, tc.b, vfs.SearchRequest{Op: "grep", Path: tc.path})
		if err != nil || ok != tc.want || ok && res.Total != 7 {
			t.Errorf("search %s: %+v %v %v, want ok %v", tc.name, res, ok, err, tc.want)
		}
		page, ok, err := vfs.ReadPage(ctx, tc.b, vfs.PageRequest{Path: tc.path})
		if err != nil || ok != tc.want || ok && page.End != 7 {
			t.Errorf("page %s: %+v %v %v, want ok %v", tc.name, page, ok, err, tc.want)
		}
	}
}
