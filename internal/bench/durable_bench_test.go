package bench

import (
	"fmt"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/runner"
)

// BenchmarkDurable runs the phases of durable mode (an SQLite store on a
// temporary file, each iteration on a thread of its own) for profiling the
// save path: go test -run XXX -bench Durable -cpuprofile cpu.out
// ./internal/bench. ns/round and cpu-ns/round (the process's
// CPU time, GC included) are per model call; the sequential phases at
// K=50, 200 and 2000 show whether a round's cost grows with the thread.
func BenchmarkDurable(b *testing.B) {
	for _, c := range []struct {
		task  string
		calls int
	}{{"seq 50", 51}, {"seq 200", 201}, {"seq 2000", 2001}, {"fan 1", 2 + 3}, {"fan 8", 2 + 3*8}} {
		b.Run(c.task, func(b *testing.B) {
			st, err := openStore()
			if err != nil {
				b.Fatal(err)
			}
			defer st.close()
			a, m, err := NewAgentFor(Options{K: max(200, c.calls-1), Fanouts: []int{1, 8}, SubRounds: 3}.norm())
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			c0 := cpuTime()
			i := 0
			for b.Loop() {
				i++
				m.Reset()
				res, err := a.Invoke(b.Context(), agent.Prompt(c.task), runner.Checkpoints(st.saver, fmt.Sprintf("b-%d", i)))
				if err != nil || res.Status != agent.StatusOK {
					b.Fatalf("%v %v", err, res.Status)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*c.calls), "ns/round")
			b.ReportMetric(float64((cpuTime()-c0).Nanoseconds())/float64(b.N*c.calls), "cpu-ns/round")
		})
	}
}

// BenchmarkDurableMemory runs the same phases on the in-memory saver and
// with no checkpoints at all (saver "none"): the difference between the
// two is what the agent's own bookkeeping of a durable run costs (building
// the steps, encoding the values and results), apart from any store.
func BenchmarkDurableMemory(b *testing.B) {
	for _, c := range []struct {
		task  string
		calls int
	}{{"seq 50", 51}, {"seq 2000", 2001}, {"fan 1", 2 + 3}, {"fan 8", 2 + 3*8}} {
		for _, saver := range []string{"none", "memory"} {
			b.Run(c.task+"/"+saver, func(b *testing.B) {
				a, m, err := NewAgentFor(Options{K: max(200, c.calls-1), Fanouts: []int{1, 8}, SubRounds: 3}.norm())
				if err != nil {
					b.Fatal(err)
				}
				mem := checkpoint.NewMemory(0)
				b.ReportAllocs()
				c0 := cpuTime()
				i := 0
				for b.Loop() {
					i++
					m.Reset()
					var opts []agent.RunOption
					if saver == "memory" {
						opts = append(opts, runner.Checkpoints(mem, fmt.Sprintf("b-%d", i)))
					}
					res, err := a.Invoke(b.Context(), agent.Prompt(c.task), opts...)
					if err != nil || res.Status != agent.StatusOK {
						b.Fatalf("%v %v", err, res.Status)
					}
				}
				b.ReportMetric(float64((cpuTime()-c0).Nanoseconds())/float64(b.N*c.calls), "cpu-ns/round")
			})
		}
	}
}
