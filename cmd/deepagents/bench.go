package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/deepagents-go/deepagents/internal/bench"
)

// cmdBench measures framework overhead in the reference harness's phases.
// With --runs N > 1 it runs N fresh processes and reports the median of each
// figure, as bench.mjs --runs does.
func cmdBench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	k := fs.Int("k", 50, "rounds of the sequential phase")
	ns := fs.String("n", "1,8,32", "fan-out sizes, comma-separated")
	sub := fs.Int("sub-rounds", 3, "model calls of each fan-out child")
	runs := fs.Int("runs", 1, "fresh processes to run; the median is reported")
	asJSON := fs.Bool("json", false, "print one JSON line instead of a table")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var fan []int
	for _, s := range strings.Split(*ns, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			fmt.Fprintf(stderr, "deepagents bench: bad -n value %q\n", s)
			return 2
		}
		fan = append(fan, n)
	}
	var rep *bench.Report
	if *runs <= 1 {
		r, err := bench.Run(ctx, bench.Options{K: *k, Fanouts: fan, SubRounds: *sub})
		if err != nil {
			fmt.Fprintf(stderr, "deepagents bench: %v\n", err)
			return 1
		}
		rep = r
	} else {
		exe, err := os.Executable()
		if err != nil {
			fmt.Fprintf(stderr, "deepagents bench: %v\n", err)
			return 1
		}
		var all []*bench.Report
		for i := 0; i < *runs; i++ {
			cmd := exec.CommandContext(ctx, exe, "bench", "--json", "-k", strconv.Itoa(*k), "-n", *ns, "--sub-rounds", strconv.Itoa(*sub))
			cmd.Stderr = stderr
			out, err := cmd.Output()
			if err != nil {
				fmt.Fprintf(stderr, "deepagents bench: run %d: %v\n", i+1, err)
				return 1
			}
			var r bench.Report
			if err := json.Unmarshal(out, &r); err != nil {
				fmt.Fprintf(stderr, "deepagents bench: run %d: %v\n", i+1, err)
				return 1
			}
			fmt.Fprintf(stderr, "%s", out)
			all = append(all, &r)
		}
		rep = bench.Median(all)
	}
	if *asJSON {
		data, _ := json.Marshal(rep)
		fmt.Fprintf(stdout, "%s\n", data)
		return 0
	}
	fmt.Fprintf(stdout, "deepagents-go %s, %d CPUs, build %.2f ms, warm-up %.1f ms, max RSS %.1f MB\n", rep.Go, rep.CPUs, rep.BuildMS, rep.WarmupMS, rep.MaxRSSMB)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "phase\tmodel calls\twall ms\twall µs/round\tCPU ms\tCPU µs/round\tallocs/round\tKB/round\tparent msgs\tfiles\t")
	for _, name := range rep.Order {
		p := rep.Phases[name]
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.1f\t%.2f\t%.1f\t%.0f\t%.1f\t%d\t%d\t\n", name, p.ModelCalls, p.WallMS, p.MSPerModelRound*1000,
			p.CPUMS, p.CPUMSPerRound*1000, p.AllocsPerRound, p.BytesPerRound/1024, p.ParentMessages, p.Files)
	}
	tw.Flush()
	return 0
}
