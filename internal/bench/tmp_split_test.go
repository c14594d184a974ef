package bench

import (
	"fmt"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
)

func BenchmarkTmpSplit(b *testing.B) {
	for _, c := range []struct {
		task  string
		calls int
	}{{"seq 50", 51}, {"fan 1", 2 + 3}, {"fan 8", 2 + 3*8}} {
		for _, mode := range []string{"none", "mem"} {
			b.Run(c.task+"/"+mode, func(b *testing.B) {
				a, m, err := NewAgentFor(Options{K: 200, Fanouts: []int{1, 8}, SubRounds: 3}.norm())
				if err != nil {
					b.Fatal(err)
				}
				sv := checkpoint.NewMemory(0)
				c0 := cpuTime()
				i := 0
				for b.Loop() {
					i++
					m.Reset()
					var opts []agent.RunOption
					if mode == "mem" {
						opts = append(opts, agent.WithCheckpoints(sv, fmt.Sprintf("b-%d", i)))
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
