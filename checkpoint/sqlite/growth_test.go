package sqlite_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/checkpoint/sqlite"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/vfs"
)

var t0 = time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)

// agentStep is step i of a typical tool-using thread: the model calls a
// tool, the tool returns resultSize bytes; every 5th step updates the todo
// list, every 10th writes a file. It returns the step and its raw payload
// size (message texts, arguments and file contents).
func agentStep(thread string, i, resultSize int) (checkpoint.Step, int) {
	id := fmt.Sprintf("0193a8f0-%04x-7000-8000-%012x", i/65536, i)
	parent := ""
	if i > 1 {
		parent = fmt.Sprintf("0193a8f0-%04x-7000-8000-%012x", (i-1)/65536, i-1)
	}
	callID := fmt.Sprintf("call_%06d", i)
	args := fmt.Sprintf(`{"url":"https://example.com/page/%d"}`, i)
	result := strings.Repeat(fmt.Sprintf("line %d of a fetched page. ", i), resultSize/24+1)[:resultSize]
	st := checkpoint.Step{
		ThreadID: thread, ID: id, ParentID: parent, Step: i, Time: t0.Add(time.Duration(i) * time.Second),
		Metadata: map[string]string{"source": "loop"},
		Messages: []llm.Message{
			{Role: llm.RoleAssistant, Content: "Fetching the next page.", ToolCalls: []llm.ToolCall{{ID: callID, Name: "fetch", Args: json.RawMessage(args)}}},
			{Role: llm.RoleTool, ToolCallID: callID, Name: "fetch", Content: result},
		},
		Usage:  llm.Usage{InputTokens: 1000 + i*600, OutputTokens: 40},
		Status: checkpoint.StatusRunning,
	}
	raw := len("Fetching the next page.") + len(args) + len(result)
	if i%5 == 0 {
		v := fmt.Sprintf(`[{"content":"read page %d","status":"completed"},{"content":"summarise","status":"pending"}]`, i)
		st.Values = map[string]json.RawMessage{"todos": json.RawMessage(v)}
		raw += len(v)
	}
	if i%10 == 0 {
		content := fmt.Sprintf("# Notes after page %d\n%s", i, strings.Repeat("a finding\n", 30))
		st.Files = vfs.Delta{{Path: fmt.Sprintf("/notes/%d.md", i%3), File: &vfs.File{Content: content, CreatedAt: st.Time, ModifiedAt: st.Time}}}
		raw += len(content)
	}
	return st, raw
}

// growth puts n steps and returns the payload bytes each step added (from
// Stats; measured for step 10 and the last 20 steps only, since Stats scans
// the thread), the raw payload put, and the database's size on disk.
func growth(t testing.TB, n int) (perStep []int64, raw int, disk int64) {
	s := open(t, sqlite.Options{Synchronous: "NORMAL"})
	defer s.Close()
	ctx := context.Background()
	perStep = make([]int64, n+1)
	bytes := func() int64 {
		stats, err := s.Stats(ctx, "growth")
		if err != nil {
			t.Fatal(err)
		}
		return stats.Bytes
	}
	for i := 1; i <= n; i++ {
		st, r := agentStep("growth", i, 2048)
		raw += r
		measure := i == 10 || i > n-20
		var before int64
		if measure {
			before = bytes()
		}
		if err := s.Put(ctx, st); err != nil {
			t.Fatal(err)
		}
		if measure {
			perStep[i] = bytes() - before
		}
	}
	disk, err := s.DiskSize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return perStep, raw, disk
}

// TestGrowthIsFlat asserts sizes, not times: a step late in a long thread
// costs about what an early one does (no state is rewritten per step, and
// snapshots hold references, not content), and the database on disk stays
// within 3 times the raw payload put into it.
func TestGrowthIsFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("500 puts")
	}
	perStep, raw, disk := growth(t, 510)
	for i := 491; i <= 510; i++ { // includes a snapshot step (501)
		if float64(perStep[i]) > 1.5*float64(perStep[10]) {
			t.Errorf("step %d wrote %d bytes, more than 1.5 × step 10's %d", i, perStep[i], perStep[10])
		}
	}
	if float64(disk) > 3*float64(raw) {
		t.Errorf("database is %d bytes on disk for %d raw bytes (%.2f×), want ≤ 3×", disk, raw, float64(disk)/float64(raw))
	}
	t.Logf("step 10: %d B, step 500: %d B, step 501 (snapshot): %d B; disk %d B for %d B raw (%.2f×)",
		perStep[10], perStep[500], perStep[501], disk, raw, float64(disk)/float64(raw))
}

// BenchmarkThreadGrowth puts 500 steps with 2 KB tool results per iteration
// and reports bytes per step at step 10 and step 500, and disk bytes per raw
// byte.
func BenchmarkThreadGrowth(b *testing.B) {
	var perStep []int64
	var raw int
	var disk int64
	for b.Loop() {
		perStep, raw, disk = growth(b, 500)
	}
	b.ReportMetric(float64(perStep[10]), "bytes/step@10")
	b.ReportMetric(float64(perStep[500]), "bytes/step@500")
	b.ReportMetric(float64(disk)/float64(raw), "disk/raw")
}

// BenchmarkPut reports the cost of one put on a growing thread, with the
// default (FULL) durability.
func BenchmarkPut(b *testing.B) {
	s := open(b, sqlite.Options{})
	defer s.Close()
	ctx := context.Background()
	i := 0
	for b.Loop() {
		i++
		st, _ := agentStep("put", i, 2048)
		if err := s.Put(ctx, st); err != nil {
			b.Fatal(err)
		}
	}
	stats, _ := s.Stats(ctx, "put")
	b.ReportMetric(float64(stats.Bytes)/float64(i), "bytes/step")
}

// tenThousand opens a database holding one thread of 10,000 checkpoints.
func tenThousand(b *testing.B) *sqlite.Saver {
	b.Helper()
	s := open(b, sqlite.Options{Synchronous: "OFF"})
	ctx := context.Background()
	for i := 1; i <= 10000; i++ {
		st, _ := agentStep("big", i, 64)
		if err := s.Put(ctx, st); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

// cpuPerOp reports the process's CPU time per iteration (user and system,
// all threads: garbage collection included) as cpu-ms/op, which a busy
// machine disturbs less than the wall time of ns/op. Call it before b.Loop.
func cpuPerOp(b *testing.B) {
	var ru syscall.Rusage
	cpu := func() time.Duration {
		if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
			return 0
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	start := cpu()
	b.Cleanup(func() {
		if b.N > 0 {
			b.ReportMetric(float64(cpu()-start)/float64(b.N)/1e6, "cpu-ms/op")
		}
	})
}

// BenchmarkGetLatest10k rebuilds the latest full state (20,000 messages) of
// a thread with 10,000 checkpoints.
func BenchmarkGetLatest10k(b *testing.B) {
	s := tenThousand(b)
	defer s.Close()
	ctx := context.Background()
	cpuPerOp(b)
	for b.Loop() {
		c, err := s.Get(ctx, checkpoint.Ref{ThreadID: "big"})
		if err != nil || len(c.State.Messages) != 20000 {
			b.Fatalf("get: %v", err)
		}
	}
}

// BenchmarkList20At10k lists the newest 20 checkpoints of a thread with
// 10,000.
func BenchmarkList20At10k(b *testing.B) {
	s := tenThousand(b)
	defer s.Close()
	ctx := context.Background()
	cpuPerOp(b)
	for b.Loop() {
		cs, err := s.List(ctx, checkpoint.ListOptions{ThreadID: "big", Limit: 20})
		if err != nil || len(cs) != 20 {
			b.Fatalf("list: %d, %v", len(cs), err)
		}
	}
}

// TestGrowthIsFlatWithManyFiles: a thread that keeps a new file at every
// step (2,000 of them by the end) stores about as many bytes per step late
// as early, and its database stays within 3 times its raw payload. A
// snapshot lists every file, so a state of many files is snapshotted less
// often (checkpoint.SnapshotSpan); before, each snapshot at 2,000 files
// cost some 340 KB, and the late steps several times the early ones. The
// state read back at the end has every file.
func TestGrowthIsFlatWithManyFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("2,000 puts")
	}
	s := open(t, sqlite.Options{Synchronous: "NORMAL"})
	defer s.Close()
	ctx := context.Background()
	const n = 2000
	total := map[int]int64{}
	raw := 0
	for i := 1; i <= n; i++ {
		st, r := agentStep("files", i, 2048)
		content := fmt.Sprintf("note %d\n", i)
		st.Files = append(st.Files, vfs.Change{Path: fmt.Sprintf("/kept/%05d.md", i), File: &vfs.File{Content: content, CreatedAt: st.Time, ModifiedAt: st.Time}})
		raw += r + len(content)
		if err := s.Put(ctx, st); err != nil {
			t.Fatal(err)
		}
		if i == 100 || i == n-200 || i == n {
			stats, err := s.Stats(ctx, "files")
			if err != nil {
				t.Fatal(err)
			}
			total[i] = stats.Bytes
		}
	}
	early := float64(total[100]) / 100
	late := float64(total[n]-total[n-200]) / 200
	if late > 1.5*early {
		t.Errorf("steps %d-%d stored %.0f bytes each, more than 1.5 × the first 100 steps' %.0f", n-199, n, late, early)
	}
	disk, err := s.DiskSize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if float64(disk) > 3*float64(raw) {
		t.Errorf("database is %d bytes on disk for %d raw bytes (%.2f×), want ≤ 3×", disk, raw, float64(disk)/float64(raw))
	}
	start := time.Now()
	c, err := s.Get(ctx, checkpoint.Ref{ThreadID: "files"})
	if err != nil || len(c.State.Files) < n {
		t.Fatalf("latest state: %v, %d files", err, len(c.State.Files))
	}
	t.Logf("%.0f bytes a step over the first 100 steps, %.0f over the last 200; disk %.2f× raw; the latest state read in %s",
		early, late, float64(disk)/float64(raw), time.Since(start))
}
