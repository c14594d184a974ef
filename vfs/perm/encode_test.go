package perm_test

import (
	"context"
	"slices"
	"testing"

	"github.com/deepagents-go/deepagents/vfs"
	"github.com/deepagents-go/deepagents/vfs/perm"
	"github.com/deepagents-go/deepagents/vfs/vfstest"
)

// captures is a backend that searches in one call and keeps the request
// it was given.
type captures struct {
	*vfs.Memory
	req vfs.SearchRequest
}

func (c *captures) Search(_ context.Context, req vfs.SearchRequest) (vfs.SearchResult, bool, error) {
	c.req = req
	return vfs.SearchResult{}, true, nil
}

// Rules that cross with a search are read on the other side as the very
// rules the wrapper holds, a glob that ends in spaces included, so they
// decide every path as the wrapper does.
func TestRulesCrossWithASearchUnchanged(t *testing.T) {
	rules := perm.Rules{
		{Allow: false, Ops: perm.Read, Glob: "/notes "},
		{Allow: true, Ops: perm.All, Glob: "/docs/**"},
		{Allow: false, Ops: perm.Write, Glob: "\t/odd\u00a0"},
	}
	inner := &captures{Memory: vfs.NewMemory(vfstest.Files(map[string]string{"/notes ": "a", "/notes": "b"}))}
	if _, ok, err := vfs.Search(context.Background(), perm.Wrap(inner, rules), vfs.SearchRequest{Op: "grep", Path: "/"}); !ok || err != nil {
		t.Fatalf("search: %v %v", ok, err)
	}
	got, err := perm.DecodeRules(inner.req.Rules[0])
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, rules) {
		t.Errorf("crossed as %q, read back as %q, want %q", inner.req.Rules[0], got, rules)
	}
	b, err := perm.WrapSearch(inner.Memory, inner.req.Rules)
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]bool{"/notes ": false, "/notes": true} {
		if _, err := b.Read(context.Background(), path); (err == nil) != want {
			t.Errorf("read %q on the other side: %v, want allowed %v", path, err, want)
		}
	}
	// Rules Parse reads back unchanged cross as the text users write.
	plain := perm.Rules{{Ops: perm.Write, Glob: "/etc/**"}, {Allow: true, Ops: perm.Read, Glob: "/my notes/*.md"}}
	if got := plain.Encode(); !slices.Equal(got, plain.Strings()) {
		t.Errorf("plain rules encode as %q, want %q", got, plain.Strings())
	}
}

// FuzzRulesEncode: any two rules, whatever their globs and operations,
// are read back by DecodeRules exactly as Encode was given them, and any
// rule text Parse reads crosses to the rule Parse reads.
func FuzzRulesEncode(f *testing.F) {
	f.Add(true, uint8(1), "/a ", false, uint8(3), "/b/**", "deny read /x ")
	f.Add(false, uint8(0), "", true, uint8(255), "exact deny 1 \"/\"", "allow all  /my notes/**")
	f.Add(false, uint8(2), "a//b/../c", true, uint8(1), "\xff\"\\", "exact allow 1 \"/a\"")
	f.Fuzz(func(t *testing.T, allow1 bool, ops1 uint8, glob1 string, allow2 bool, ops2 uint8, glob2, text string) {
		rs := perm.Rules{{Allow: allow1, Ops: perm.Op(ops1), Glob: glob1}, {Allow: allow2, Ops: perm.Op(ops2), Glob: glob2}}
		got, err := perm.DecodeRules(rs.Encode())
		if err != nil || !slices.Equal(got, rs) {
			t.Fatalf("%q encodes as %q, read back as %q, %v", rs, rs.Encode(), got, err)
		}
		r, err := perm.Parse(text)
		if err != nil {
			return
		}
		got, err = perm.DecodeRules(perm.Rules{r}.Encode())
		if err != nil || len(got) != 1 || got[0] != r {
			t.Fatalf("Parse(%q) = %q, which crosses as %q, %v", text, r, got, err)
		}
	})
}
