// Package storetest checks a store.Table: the vfs conformance suite over a
// Store on it, namespaces kept apart, and files that one thread of an agent
// writes under /memories/ read by another thread on the same database.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
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
	if _, err := a.Invoke(t.Context(), agent.Prompt("remember"), agent.WithCheckpoints(saver, "thread-A")); err != nil {
		t.Fatal(err)
	}
	m.Reset() // the scripted model's progress is per agent, not per thread
	res, err := a.Invoke(t.Context(), agent.Prompt("recall"), agent.WithCheckpoints(saver, "thread-B"))
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
