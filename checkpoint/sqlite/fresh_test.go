package sqlite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/checkpoint/internal/engine"
	"github.com/deepagents-go/deepagents/llm"
)

func putNS(t *testing.T, s *Saver, thread, ns, id, parent, text string) {
	t.Helper()
	if err := s.Put(context.Background(), checkpoint.Step{ThreadID: thread, NS: ns, ID: id, ParentID: parent,
		Messages: []llm.Message{{Role: llm.RoleUser, Content: text}}}); err != nil {
		t.Fatal(err)
	}
}

// latestText is the last message of the namespace's latest checkpoint, or
// the error's text.
func latestText(s *Saver, thread, ns string) string {
	c, err := s.Get(context.Background(), checkpoint.Ref{ThreadID: thread, NS: ns})
	if err != nil {
		return "error: " + err.Error()
	}
	return c.State.Messages[len(c.State.Messages)-1].Content
}

// The tips of a thread this saver started never hide a checkpoint: a
// namespace used twice, every namespace once the tip cache has started
// again, and everything once another connection has written are found.
func TestFreshThreadKnowsItsEmptyNamespaces(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	s := openT(t, path)
	putNS(t, s, "th", "", "c1", "", "root")
	_, err := s.Get(ctx, checkpoint.Ref{ThreadID: "th", NS: "task:a"})
	if !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("child namespace of a fresh thread: %v, want not found", err)
	}
	putNS(t, s, "th", "task:a", "a1", "", "child a")
	putNS(t, s, "th", "task:a", "a2", "a1", "child a again")
	if got := latestText(s, "th", "task:a"); got != "child a again" {
		t.Errorf("child namespace: %q", got)
	}

	// A thread that was there before this saver is not fresh.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, path)
	if got := latestText(s, "th", "task:a"); got != "child a again" {
		t.Errorf("child namespace after reopening: %q", got)
	}
	putNS(t, s, "th", "", "c2", "c1", "root 2")
	putNS(t, s, "th", "task:z", "z1", "", "z")
	if got := latestText(s, "th", "task:z"); got != "z" {
		t.Errorf("new child namespace of a thread stored before: %q", got)
	}

	// The tip cache starting again forgets which threads are whole.
	putNS(t, s, "big", "", "r", "", "root")
	for i := range engine.MaxTips + 1 {
		putNS(t, s, "big", fmt.Sprint("task:", i), "x", "", fmt.Sprint("child ", i))
	}
	if got := latestText(s, "big", "task:0"); got != "child 0" {
		t.Errorf("first child after the tip cache started again: %q", got)
	}

	// Another connection's commit ends the era: its puts are seen.
	putNS(t, s, "t3", "", "r", "", "root")
	other, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	putNS(t, other, "t3", "task:b", "b1", "", "from the other")
	other.Close()
	putNS(t, s, "t3", "", "r2", "r", "root 2") // a new transaction, a new era
	if got := latestText(s, "t3", "task:b"); got != "from the other" {
		t.Errorf("namespace another connection put in: %q", got)
	}
	putNS(t, s, "t3", "task:c", "c1", "", "c")
	if got := latestText(s, "t3", "task:c"); got != "c" {
		t.Errorf("new namespace after the other's commit: %q", got)
	}

	// A prune forgets the thread's tips, and with them that it is whole.
	putNS(t, s, "t6", "", "r", "", "root")
	putNS(t, s, "t6", "task:e", "e1", "", "e")
	if err := s.Prune(ctx, "t6", checkpoint.PruneOptions{KeepLast: 10}); err != nil {
		t.Fatal(err)
	}
	putNS(t, s, "t6", "", "r2", "r", "root 2")
	if got := latestText(s, "t6", "task:e"); got != "e" {
		t.Errorf("namespace after a prune: %q", got)
	}

	// A copy onto a thread makes no fresh thread of it.
	putNS(t, s, "t4", "", "r", "", "root")
	putNS(t, s, "t4", "task:d", "d1", "", "d")
	if err := s.CopyThread(ctx, checkpoint.Ref{ThreadID: "t4"}, "t5"); err != nil {
		t.Fatal(err)
	}
	putNS(t, s, "t5", "", "r2", "r", "root 2")
	if got := latestText(s, "t5", "task:d"); got != "d" {
		t.Errorf("copied namespace: %q", got)
	}
}

// A write to the namespace's last checkpoint skips looking it up; a write
// to a checkpoint that is not stored still fails, and one to an earlier
// checkpoint still lands.
func TestPutWriteToTipAndElsewhere(t *testing.T) {
	ctx := context.Background()
	s := openT(t, filepath.Join(t.TempDir(), "state.db"))
	putMsg(t, s, "c1", "", "one")
	putMsg(t, s, "c2", "c1", "two")
	write := func(cp, call string) error {
		return s.PutWrite(ctx, checkpoint.Ref{ThreadID: "th", ID: cp}, checkpoint.Write{CallID: call, Result: llm.Message{Role: llm.RoleTool, ToolCallID: call, Content: "r " + call}})
	}
	if err := write("c2", "k1"); err != nil {
		t.Fatalf("write to the tip: %v", err)
	}
	if err := write("nope", "k2"); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("write to a missing checkpoint: %v, want not found", err)
	}
	if err := write("c1", "k3"); err != nil {
		t.Fatalf("write to an earlier checkpoint: %v", err)
	}
	for cp, want := range map[string]string{"c2": "r k1", "c1": "r k3"} {
		c, err := s.Get(ctx, checkpoint.Ref{ThreadID: "th", ID: cp})
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Pending) != 1 || c.Pending[0].Result.Content != want {
			t.Errorf("%s pending: %+v, want %q", cp, c.Pending, want)
		}
	}
}
