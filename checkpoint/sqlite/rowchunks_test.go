package sqlite

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// Short messages ride in their checkpoint's row, long ones get a chunk row
// of their own; a history that mixes them, packs them at snapshots, forks,
// is copied and pruned reads back at every checkpoint as the memory saver
// gives it, with messages written by a saver of schema 5 under them.
func TestMessagesInRowsAndChunksReadBack(t *testing.T) {
	ctx := context.Background()
	path := copyFixture(t)
	s := openOpts(t, path, Options{SnapshotEvery: fixtureEvery})
	mem := checkpoint.NewMemory(fixtureEvery)
	applyOps(t, mem, fixtureOps(0))
	at := time.Date(2026, 12, 7, 15, 0, 0, 0, time.UTC)
	put := func(ns, id, parent string, i int) {
		t.Helper()
		text := fmt.Sprintf("message %s", id)
		if i%3 == 1 {
			text += strings.Repeat(" long", maxRowChunk/4) // past maxRowChunk
		}
		st := checkpoint.Step{ThreadID: "fx", NS: ns, ID: id, ParentID: parent, Step: i, Time: at,
			Messages: []llm.Message{{Role: llm.RoleUser, Content: text}}}
		if i%4 == 0 {
			st.Messages = nil
		}
		for _, sv := range []checkpoint.RunStore{s, mem} {
			if err := sv.Put(ctx, st); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, ns := range []string{"", "fx / sub#call_1", "fx / new#call_2"} {
		parent := ""
		if ns != "fx / new#call_2" {
			c, err := mem.Get(ctx, checkpoint.Ref{ThreadID: "fx", NS: ns})
			if err != nil {
				t.Fatal(err)
			}
			parent = c.ID
		}
		for i := 1; i <= 11; i++ {
			id := fmt.Sprintf("m%02d", i)
			put(ns, id, parent, i)
			parent = id
		}
		// A fork from an older checkpoint, long enough to snapshot.
		parent = "m05"
		for i := 1; i <= 5; i++ {
			id := fmt.Sprintf("f%02d", i)
			put(ns, id, parent, i)
			parent = id
		}
	}
	var inRows, inTable int
	if err := s.r.QueryRow(`SELECT (SELECT COUNT(*) FROM checkpoints WHERE msgs IS NOT NULL), (SELECT COUNT(*) FROM msgchunks WHERE NOT packed)`).Scan(&inRows, &inTable); err != nil {
		t.Fatal(err)
	}
	if inRows == 0 || inTable == 0 {
		t.Fatalf("%d checkpoint rows and %d unpacked chunk rows hold messages; the test wants both", inRows, inTable)
	}
	sameThreads(t, s, mem)
	sameThreads(t, openOpts(t, path, Options{SnapshotEvery: fixtureEvery}), mem)
	for _, sv := range []checkpoint.Saver{s, mem} {
		if err := sv.CopyThread(ctx, checkpoint.Ref{ThreadID: "fx", NS: "fx / new#call_2", ID: "f03"}, "fx-copy"); err != nil {
			t.Fatal(err)
		}
		if err := sv.Prune(ctx, "fx", checkpoint.PruneOptions{KeepLast: 5}); err != nil {
			t.Fatal(err)
		}
	}
	sameThreads(t, s, mem)
	for _, ns := range []string{"", "fx / new#call_2"} {
		w, err := mem.Get(ctx, checkpoint.Ref{ThreadID: "fx-copy", NS: ns})
		if err != nil {
			t.Fatal(err)
		}
		g, err := s.Get(ctx, checkpoint.Ref{ThreadID: "fx-copy", NS: ns})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(w, g, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("the copy's namespace %q differs (-want +got):\n%s", ns, diff)
		}
	}
}
