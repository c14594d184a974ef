package store_test

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/vfs"
	"github.com/deepagents-go/deepagents/vfs/store"
)

// errKind names the vfs error an operation failed with.
func errKind(err error) string {
	for _, k := range []struct {
		name string
		err  error
	}{{"none", nil}, {"notfound", vfs.ErrNotFound}, {"isdir", vfs.ErrIsDir}, {"notdir", vfs.ErrNotDir}, {"invalid", vfs.ErrInvalidPath}} {
		if k.err == nil && err == nil || k.err != nil && errors.Is(err, k.err) {
			return k.name
		}
	}
	return "other: " + err.Error()
}

func snapshot(t *testing.T, b vfs.Backend) map[string]string {
	out := map[string]string{}
	for e, err := range b.Walk(context.Background(), "/") {
		if err != nil {
			t.Fatal(err)
		}
		s, err := b.Read(context.Background(), e.Path)
		if err != nil {
			t.Fatal(err)
		}
		out[e.Path] = s
	}
	return out
}

// FuzzStoreMatchesMemory runs one script of writes, deletes, reads,
// stats and listings on a store and on vfs.Memory, the reference: every
// operation must fail the same way or succeed alike, and the files must
// end the same. Script lines are "w PATH", "d PATH", "r PATH", "s PATH"
// or "l PATH".
func FuzzStoreMatchesMemory(f *testing.F) {
	f.Add("w /a/b\nw /a\nl /a\nd /a\nr /a/b\nw /a\ns /a")
	f.Add("w /x/y/z\nw /x/y\nd /x/y/z\ns /x\nl /\nw x/y")
	f.Add("w /a-b\nw /a/b\nw /a.b\nl /a\nd /a\nl /")
	f.Fuzz(func(t *testing.T, script string) {
		ctx := context.Background()
		s, _ := store.New(store.NewMemoryTable(), "fuzz")
		m := vfs.NewMemory(nil)
		lines := strings.Split(script, "\n")
		if len(lines) > 40 {
			lines = lines[:40]
		}
		for i, line := range lines {
			op, p, ok := strings.Cut(line, " ")
			if !ok {
				continue
			}
			var es, em error
			switch op {
			case "w":
				es, em = s.Write(ctx, p, line), m.Write(ctx, p, line)
			case "d":
				var ns, nm int
				ns, es = s.Delete(ctx, p)
				nm, em = m.Delete(ctx, p)
				if ns != nm {
					t.Fatalf("line %d %q: store deleted %d, memory %d", i+1, line, ns, nm)
				}
			case "r":
				var cs, cm string
				cs, es = s.Read(ctx, p)
				cm, em = m.Read(ctx, p)
				if cs != cm {
					t.Fatalf("line %d %q: store read %q, memory %q", i+1, line, cs, cm)
				}
			case "s":
				var xs, xm vfs.Entry
				xs, es = s.Stat(ctx, p)
				xm, em = m.Stat(ctx, p)
				if xs.Path != xm.Path || xs.IsDir != xm.IsDir || xs.Size != xm.Size {
					t.Fatalf("line %d %q: store stat %+v, memory %+v", i+1, line, xs, xm)
				}
			case "l":
				var ls, lm []vfs.Entry
				ls, es = s.List(ctx, p)
				lm, em = m.List(ctx, p)
				if len(ls) != len(lm) {
					t.Fatalf("line %d %q: store lists %v, memory %v", i+1, line, ls, lm)
				}
				for j := range ls {
					if ls[j].Path != lm[j].Path || ls[j].IsDir != lm[j].IsDir || ls[j].Size != lm[j].Size {
						t.Fatalf("line %d %q: store lists %v, memory %v", i+1, line, ls, lm)
					}
				}
			default:
				continue
			}
			if ks, km := errKind(es), errKind(em); ks != km {
				t.Fatalf("line %d %q: store error %v, memory error %v", i+1, line, es, em)
			}
		}
		if a, b := snapshot(t, s), snapshot(t, m); !maps.Equal(a, b) {
			t.Fatalf("files differ: store %v, memory %v", a, b)
		}
	})
}
