package postgres

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm"
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
