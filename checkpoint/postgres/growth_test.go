package postgres

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/internal/pgtest"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/vfs"
)

// TestBytesPerStepStayFlat puts 500 steps, each with a 2 KB tool result,
// and checks that storage is delta-first: the ten steps ending at step 500
// cost at most 1.5 times what the first ten cost, and the whole thread at
// most 3 times its raw payload.
func TestBytesPerStepStayFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("500 puts against the server")
	}
	s := openTest(t, Options{})
	ctx := t.Context()
	payload := strings.Repeat("0123456789abcdef", 128) // 2 KB
	t0 := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	bytesAt := map[int]int64{}
	prev := ""
	for i := 1; i <= 500; i++ {
		id := fmt.Sprintf("cp-%04d", i)
		st := checkpoint.Step{ThreadID: "long", ID: id, ParentID: prev, Step: i, Time: t0.Add(time.Duration(i) * time.Second),
			Messages: []llm.Message{{Role: llm.RoleTool, ToolCallID: fmt.Sprint("c", i), Name: "read_file", Content: fmt.Sprint(i, payload)}},
			Usage:    llm.Usage{InputTokens: 1000, OutputTokens: 10}}
		if err := s.Put(ctx, st); err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
		prev = id
		if i == 10 || i == 490 || i == 500 {
			stats, err := s.Stats(ctx, "long")
			if err != nil {
				t.Fatal(err)
			}
			bytesAt[i] = stats.Bytes
		}
	}
	first, last := bytesAt[10], bytesAt[500]-bytesAt[490]
	if last > first*3/2 {
		t.Errorf("steps 491-500 stored %d bytes, steps 1-10 %d: more than 1.5 times", last, first)
	}
	if raw := int64(500 * len(payload)); bytesAt[500] > 3*raw {
		t.Errorf("500 steps stored %d bytes for %d bytes of payload", bytesAt[500], raw)
	}
	c, err := s.Get(ctx, checkpoint.Ref{ThreadID: "long"})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.State.Messages) != 500 || c.State.Messages[499].ToolCallID != "c500" || c.Usage.InputTokens != 500_000 {
		t.Errorf("latest: %d messages, usage %+v", len(c.State.Messages), c.Usage)
	}
}

// seed10k opens a saver in a fresh schema and puts one thread of 10,000
// checkpoints, each with one short message and a file change.
func seed10k(b *testing.B) *Saver {
	b.Helper()
	dsn, schema := pgtest.Schema(b)
	s, err := Open(b.Context(), dsn, Options{Schema: schema})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	t0 := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	prev := ""
	for i := 1; i <= 10_000; i++ {
		id := fmt.Sprintf("cp-%05d", i)
		st := checkpoint.Step{ThreadID: "big", ID: id, ParentID: prev, Step: i, Time: t0,
			Messages: []llm.Message{{Role: llm.RoleAssistant, Content: fmt.Sprint("step ", i)}},
			Files:    vfs.Delta{{Path: fmt.Sprintf("/f%d", i%20), File: &vfs.File{Content: fmt.Sprint(i), CreatedAt: t0, ModifiedAt: t0}}}}
		if err := s.Put(b.Context(), st); err != nil {
			b.Fatal(err)
		}
		prev = id
	}
	return s
}

// BenchmarkGetLatest10k reads the latest full state of a thread of 10,000
// checkpoints (one snapshot and at most 49 deltas, plus 10,000 messages).
func BenchmarkGetLatest10k(b *testing.B) {
	s := seed10k(b)
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.Get(b.Context(), checkpoint.Ref{ThreadID: "big"}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkList20At10k lists the newest 20 of 10,000 checkpoints.
func BenchmarkList20At10k(b *testing.B) {
	s := seed10k(b)
	b.ResetTimer()
	for b.Loop() {
		cs, err := s.List(b.Context(), checkpoint.ListOptions{ThreadID: "big", Limit: 20})
		if err != nil || len(cs) != 20 {
			b.Fatalf("list: %d, %v", len(cs), err)
		}
	}
}

// TestLongBranchesKeepTheirOwnMessages builds two long branches off one
// history (past the length where messages are read per namespace) and
// checks that each tip sees its own history only.
func TestLongBranchesKeepTheirOwnMessages(t *testing.T) {
	s := openTest(t, Options{SnapshotEvery: 40})
	ctx := t.Context()
	put := func(id, parent, text string) {
		t.Helper()
		if err := s.Put(ctx, checkpoint.Step{ThreadID: "th", ID: id, ParentID: parent,
			Messages: []llm.Message{{Role: llm.RoleAssistant, Content: text}}}); err != nil {
			t.Fatal(err)
		}
	}
	prev := ""
	for i := 1; i <= 300; i++ {
		id := fmt.Sprintf("a%d", i)
		put(id, prev, id)
		prev = id
	}
	prev = "a150"
	for i := 1; i <= 200; i++ {
		id := fmt.Sprintf("b%d", i)
		put(id, prev, id)
		prev = id
	}
	for _, tc := range []struct {
		tip         string
		n           int
		last, at150 string
	}{{"a300", 300, "a300", "a151"}, {"b200", 350, "b200", "b1"}} {
		c, err := s.Get(ctx, checkpoint.Ref{ThreadID: "th", ID: tc.tip})
		if err != nil {
			t.Fatal(err)
		}
		ms := c.State.Messages
		if len(ms) != tc.n || ms[len(ms)-1].Content != tc.last || ms[150].Content != tc.at150 || ms[149].Content != "a150" {
			t.Errorf("tip %s: %d messages, [149]=%q [150]=%q last=%q", tc.tip, len(ms), ms[149].Content, ms[150].Content, ms[len(ms)-1].Content)
		}
	}
}
