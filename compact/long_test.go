package compact_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/compact"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/tokens"
	"github.com/deepagents-go/deepagents/tool"
)

// longRun is a scripted run of rounds tool calls, each answered with about
// 2 KB, under a 32,000-token window. It returns the largest request sent
// (estimated tokens), the number of compactions, and the time the harness
// spent on each round (from one model call's end to the next one's start:
// tool, loop and compaction work, not the model's).
func longRun(tb testing.TB, rounds int) (maxReq, compactions int, perRound []time.Duration) {
	tb.Helper()
	const window = 32_000
	result := strings.Repeat("0123456789abcdef", 128) // 2 KB
	big := tool.MustFunc("fetch", "Fetch a page.", func(_ context.Context, _ *tool.Env, in struct {
		N int `json:"n"`
	}) (string, error) {
		return fmt.Sprintf("page %d: %s", in.N, result), nil
	})
	var starts, ends []time.Time
	m := scripted.New(nil, scripted.Options{NoUsage: true, Func: func(ci llm.CallInfo, req *llm.Request) (scripted.Step, error) {
		if ci.Agent == compact.SummarizerAgent {
			return scripted.Step{Content: "Pages fetched so far, all fine; go on with the next page."}, nil
		}
		starts = append(starts, time.Now())
		maxReq = max(maxReq, tokens.Estimate(req).Total)
		if ci.Round >= rounds-1 {
			return scripted.Step{Content: "done"}, nil
		}
		return scripted.Step{ToolCalls: []scripted.StepCall{{ID: fmt.Sprintf("c%d", ci.Round), Name: "fetch",
			Args: json.RawMessage(fmt.Sprintf(`{"n":%d}`, ci.Round))}}}, nil
	}})
	mw, err := compact.New(compact.Config{Window: window, Model: m})
	if err != nil {
		tb.Fatal(err)
	}
	a, err := agent.New(agent.Config{Model: m, Tools: []tool.Tool{big}, Middleware: []agent.Middleware{mw}, MaxSteps: rounds + 1})
	if err != nil {
		tb.Fatal(err)
	}
	for ev, err := range a.Run(context.Background(), agent.Prompt("Fetch pages 0 to the end, one per call.")) {
		if err != nil {
			tb.Fatal(err)
		}
		switch ev.Type {
		case agent.ModelResponse:
			if ev.Agent.String() == "parent" {
				ends = append(ends, time.Now())
			}
		case compact.EventEnd:
			if info(ev).Error != "" {
				tb.Fatalf("compaction failed: %s", info(ev).Error)
			}
			compactions++
		}
	}
	if len(starts) != rounds {
		tb.Fatalf("%d rounds, want %d", len(starts), rounds)
	}
	for i := 1; i < len(starts); i++ {
		perRound = append(perRound, starts[i].Sub(ends[i-1]))
	}
	if maxReq > window {
		tb.Fatalf("a request of %d estimated tokens, over the %d-token window", maxReq, window)
	}
	return maxReq, compactions, perRound
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func sum(ds []time.Duration) time.Duration {
	var t time.Duration
	for _, d := range ds {
		t += d
	}
	return t
}

// A 2,000-round run with 2 KB results under a 32,000-token window
// completes, compacting as it goes, and no request exceeds the window.
func TestLongRunStaysInsideTheWindow(t *testing.T) {
	rounds := 2000
	if testing.Short() {
		rounds = 300
	}
	maxReq, n, per := longRun(t, rounds)
	if n < rounds/100 {
		t.Fatalf("%d compactions in %d rounds", n, rounds)
	}
	first, last := sum(per[:100]), sum(per[len(per)-100:])
	t.Logf("%d rounds, %d compactions, largest request %d tokens; harness time first 100 rounds %v, last 100 %v (ratio %.2f); medians %v %v",
		rounds, n, maxReq, first, last, float64(last)/float64(first), median(per[:100]), median(per[len(per)-100:]))
}

// BenchmarkLongRun reports the ratio of the harness's time per round over
// the last hundred rounds to the first hundred (1 is flat), as totals
// (compaction rounds included) and as medians (a typical round). What
// growth there is comes from the garbage collector scanning the thread,
// which keeps every message by design: with GOGC=off the medians match.
func BenchmarkLongRun(b *testing.B) {
	for b.Loop() {
		_, n, per := longRun(b, 2000)
		first, last := per[:100], per[len(per)-100:]
		b.ReportMetric(float64(sum(last))/float64(sum(first)), "total-last100/first100")
		b.ReportMetric(float64(median(last))/float64(median(first)), "median-last100/first100")
		b.ReportMetric(float64(n), "compactions")
	}
}
