package deepagents_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/approve"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/internal/bench"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/runner"
)

// BenchmarkSequential is the reference harness's "sequential" phase: 50
// rounds alternating write_file and read_file, instant scripted model, then
// an answer (51 model calls). ns/round and allocs/round are per model call.
func BenchmarkSequential(b *testing.B) {
	a, m, err := bench.NewAgent(3)
	if err != nil {
		b.Fatal(err)
	}
	runPhase(b, a, m, "seq 50", 51)
}

// BenchmarkFanout is the "fanout_N" phase: one message with N task calls,
// each general-purpose child doing 3 rounds (write_file, read_file, answer),
// then the parent's answer: 2 + 3N model calls.
func BenchmarkFanout(b *testing.B) {
	for _, n := range []int{1, 8, 32} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			a, m, err := bench.NewAgent(3)
			if err != nil {
				b.Fatal(err)
			}
			runPhase(b, a, m, fmt.Sprintf("fan %d", n), 2+3*n)
		})
	}
}

func runPhase(b *testing.B, a *agent.Agent, m interface{ Reset() }, task string, calls int) {
	b.ReportAllocs()
	for b.Loop() {
		m.Reset()
		res, err := a.Invoke(b.Context(), agent.Prompt(task))
		if err != nil || res.Status != agent.StatusOK {
			b.Fatalf("%v %v", err, res.Status)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*calls), "ns/round")
}

// BenchmarkParkedRuns parks 10,000 runs, each a thread of its own in one
// in-memory saver waiting on a person's approval of its write_file call,
// and reports what each parked run holds: heap-B/parked is the live heap
// after a collection, rss-B/parked the process's resident memory (Linux),
// both over the 10,000 runs beside the memory before them. One of them is
// then approved, to show the parked state is one a run resumes from.
// go test -run XXX -bench ParkedRuns -benchtime 1x .
func BenchmarkParkedRuns(b *testing.B) {
	const parked = 10_000
	for b.Loop() {
		model := scripted.New(nil, scripted.Options{NoUsage: true, Func: func(ci llm.CallInfo, _ *llm.Request) (scripted.Step, error) {
			if ci.Round > 0 {
				return scripted.Step{Content: "written"}, nil
			}
			args, _ := json.Marshal(map[string]string{"file_path": "/report.md", "content": "# Report\n\n" + ci.Task + "\n"})
			return scripted.Step{ToolCalls: []scripted.StepCall{{ID: "w1", Name: "write_file", Args: args}}}, nil
		}})
		a, err := deepagents.New(deepagents.Config{Model: model, InterruptOn: map[string]approve.Policy{"write_file": {}}})
		if err != nil {
			b.Fatal(err)
		}
		saver := checkpoint.NewMemory(0)
		heap0, rss0 := liveHeap(), residentBytes()
		for i := range parked {
			_, err := a.Invoke(b.Context(), agent.Prompt(fmt.Sprintf("write the report of thread %d", i)), runner.Checkpoints(saver, fmt.Sprintf("t-%d", i)))
			if !errors.Is(err, agent.ErrInterrupted) {
				b.Fatalf("thread %d: %v, want it waiting for approval", i, err)
			}
			if i%1000 == 999 {
				model.Reset() // its records are the bench's, not the parked runs'
			}
		}
		model.Reset()
		heap1, rss1 := liveHeap(), residentBytes()
		b.ReportMetric(float64(heap1-heap0)/parked, "heap-B/parked")
		if rss0 > 0 && rss1 > 0 {
			b.ReportMetric(float64(rss1-rss0)/parked, "rss-B/parked")
		}
		res, err := a.Invoke(b.Context(), agent.Input{}, runner.Checkpoints(saver, "t-7"), agent.WithDecisions(agent.Decision{Type: agent.Approve, CallID: "w1"}))
		if err != nil || res.Status != agent.StatusOK {
			b.Fatalf("resuming a parked run: %v %v", err, res.Status)
		}
		runtime.KeepAlive(saver)
	}
}

// liveHeap is the heap in use after a full collection.
func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// residentBytes is the process's resident set size, or 0 where
// /proc/self/statm cannot be read.
func residentBytes() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * int64(os.Getpagesize())
}
