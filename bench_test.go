package deepagents_test

import (
	"fmt"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/internal/bench"
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
