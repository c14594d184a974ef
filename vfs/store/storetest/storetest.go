// Package storetest checks a store.Table: the vfs conformance suite over a
// Store on it, namespaces kept apart, and files that one thread of an agent
// writes under /memories/ read by another thread on the same database.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/runner"
	"github.com/deepagents-go/deepagents/vfs"
	"github.com/deepagents-go/deepagents/vfs/store"
	"github.com/deepagents-go/deepagents/vfs/vfstest"
)

// Run runs the checks. newTable returns a table on a fresh, empty database
// (it may register cleanups on t); saver, when not nil, returns a
// checkpoint saver on that same database for the cross-thread check.
func Run(t *testing.T, newTable func(t *testing.T) store.Table, saver func(t *testing.T) checkpoint.Saver) {
	ctx := context.Background()
	t.Run("Conformance", func(t *testing.T) {
		vfstest.Run(t, func(t *testing.T, files map[string]string) vfs.Backend {
			s, err := store.New(newTable(t), "conformance")
			if err != nil {
				t.Fatal(err)
			}
			for p, c := range files {
				if err := s.Write(ctx, p, c); err != nil {
					t.Fatal(err)
				}
			}
			return s
		})
	})
	t.Run("Namespaces", func(t *testing.T) {
		tab := newTable(t)
		a, _ := store.New(tab, "alice")
		b, _ := store.New(tab, "bob")
		if err := a.Write(ctx, "/d/prefs.md", "tea"); err != nil {
			t.Fatal(err)
		}
		if err := b.Write(ctx, "/d", "a file in bob's namespace"); err != nil {
			t.Errorf("bob cannot write where alice has a directory: %v", err)
		}
		if _, err := b.Read(ctx, "/d/prefs.md"); !errors.Is(err, vfs.ErrNotFound) {
			t.Errorf("bob reads alice's file: %v", err)
		}
		if n, err := b.Delete(ctx, "/"); n != 1 || err != nil {
			t.Errorf("bob's Delete(/) = %d, %v", n, err)
		}
		if got := vfstest.MustRead(t, a, "/d/prefs.md"); got != "tea" {
			t.Errorf("alice's file after bob's delete = %q", got)
		}
	})
	t.Run("Apply", func(t *testing.T) {
		s, _ := store.New(newTable(t), "n")
		if err := s.Write(ctx, "/gone", "g"); err != nil {
			t.Fatal(err)
		}
		s.Apply(vfs.Delta{{Path: "/a/b", File: &vfs.File{Content: "ab"}}, {Path: "/gone"}, {Path: "/a", File: &vfs.File{Content: "refused"}}})
		if got := vfstest.Paths(t, s, "/"); len(got) != 1 || got[0] != "/a/b" {
			t.Errorf("after Apply: %v, want [/a/b]", got)
		}
	})
	t.Run("Times", func(t *testing.T) { times(t, newTable(t)) })
	t.Run("ConcurrentStores", func(t *testing.T) {
		// Two stores of one namespace (two processes, say) updating one
		// file: every update lands.
		tab := newTable(t)
		s1, _ := store.New(tab, "n")
		s2, _ := store.New(tab, "n")
		if err := s1.Write(ctx, "/count", ""); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for i := range 20 {
			s := s1
			if i%2 == 1 {
				s = s2
			}
			wg.Go(func() {
				if err := vfs.Update(ctx, s, "/count", func(c string) (string, error) { return c + "x", nil }); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if got := vfstest.MustRead(t, s1, "/count"); got != strings.Repeat("x", 20) {
			t.Errorf("after 20 updates: %q", got)
		}
	})
	if saver != nil {
		t.Run("AcrossThreads", func(t *testing.T) { acrossThreads(t, newTable(t), saver(t)) })
	}
}

// times: a file keeps the time it was created through every overwrite
// (Write, a merged Apply, Update), while its modification time moves on.
func times(t *testing.T, tab store.Table) {
	ctx := context.Background()
	s, err := store.New(tab, "n")
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
	clock := t0
	s.SetClock(func() time.Time { return clock })
	check := func(step string, created, modified time.Time) {
		t.Helper()
		f, ok, err := tab.Get(ctx, "n", "/notes.md")
		if err != nil || !ok {
			t.Fatalf("%s: Get = %v, %v", step, ok, err)
		}
		if !f.CreatedAt.Equal(created) || !f.ModifiedAt.Equal(modified) {
			t.Errorf("%s: created %v, modified %v; want created %v, modified %v", step, f.CreatedAt, f.ModifiedAt, created, modified)
		}
	}
	if err := s.Write(ctx, "/notes.md", "one"); err != nil {
		t.Fatal(err)
	}
	check("created", t0, t0)
	clock = t0.Add(time.Hour)
	if err := s.Write(ctx, "/notes.md", "two"); err != nil {
		t.Fatal(err)
	}
	check("overwritten", t0, clock)
	// A layer's change carries the layer's own times; the stored file's
	// creation time wins.
	clock = t0.Add(2 * time.Hour)
	s.Apply(vfs.Delta{{Path: "/notes.md", File: &vfs.File{Content: "three", CreatedAt: clock, ModifiedAt: clock}}})
	check("applied", t0, clock)
	clock = t0.Add(3 * time.Hour)
	if err := vfs.Update(ctx, s, "/notes.md", func(c string) (string, error) { return c + "!", nil }); err != nil {
		t.Fatal(err)
	}
	check("updated", t0, clock)
	if got := vfstest.MustRead(t, s, "/notes.md"); got != "three!" {
		t.Errorf("content %q", got)
	}
}

// acrossThreads: thread A writes /memories/x through a composite route,
// thread B (a new thread on the same database) reads it; B does not see
// A's own files.
func acrossThreads(t *testing.T, tab store.Table, saver checkpoint.Saver) {
	mem, err := store.New(tab, "agent")
	if err != nil {
		t.Fatal(err)
	}
	files, err := vfs.NewComposite(nil, vfs.Route{Prefix: "/memories/", Backend: mem})
	if err != nil {
		t.Fatal(err)
	}
	call := func(id, name, args string) scripted.StepCall {
		return scripted.StepCall{ID: id, Name: name, Args: json.RawMessage(args)}
	}
	m := scripted.New(scripted.Script{"parent": {Cases: []scripted.Case{
		{Match: "remember", Steps: []scripted.Step{
			{ToolCalls: []scripted.StepCall{
				call("w1", "write_file", `{"file_path":"/memories/x","content":"the user likes tea"}`),
				call("w2", "write_file", `{"file_path":"/scratch.md","content":"thread A only"}`),
			}},
			{Content: "noted"},
		}},
		{Match: "recall", Steps: []scripted.Step{
			{ToolCalls: []scripted.StepCall{
				call("r1", "read_file", `{"file_path":"/memories/x"}`),
				call("r2", "read_file", `{"file_path":"/scratch.md"}`),
			}},
			{Content: "done"},
		}},
	}}}, scripted.Options{})
	a, err := deepagents.New(deepagents.Config{Model: m, Backend: files})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Invoke(t.Context(), agent.Prompt("remember"), runner.Checkpoints(saver, "thread-A")); err != nil {
		t.Fatal(err)
	}
	m.Reset() // the scripted model's progress is per agent, not per thread
	res, err := a.Invoke(t.Context(), agent.Prompt("recall"), runner.Checkpoints(saver, "thread-B"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, msg := range res.State.Messages {
		if msg.Role == llm.RoleTool {
			got[msg.ToolCallID] = msg.Content
		}
	}
	if !strings.Contains(got["r1"], "the user likes tea") {
		t.Errorf("thread B reading /memories/x got %q", got["r1"])
	}
	if !strings.Contains(got["r2"], "does not exist") {
		t.Errorf("thread B reading thread A's /scratch.md got %q", got["r2"])
	}
}

// Script runs a script of operations on b and on ref, the reference (a
// vfs.Memory, say), and fails t when an operation fails differently or
// returns something different, or when the files end different. Lines are
// "w PATH" (write the line as content), "d PATH", "r PATH", "s PATH" or
// "l PATH"; others are skipped, and only the first 40 lines count. Fuzz
// targets feed it.
func Script(t *testing.T, s, m vfs.Backend, script string) {
	t.Helper()
	ctx := context.Background()
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
}

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
	t.Helper()
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
