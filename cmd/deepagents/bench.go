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
	compare := fs.String("compare", "", "a JSON report of the JS reference (node bench.mjs --runs N > FILE) to print ratios against")
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
	var ref *jsReport
	if *compare != "" {
		data, err := os.ReadFile(*compare)
		if err != nil {
			fmt.Fprintf(stderr, "deepagents bench: %v\n", err)
			return 2
		}
		ref = &jsReport{}
		if err := json.Unmarshal(lastJSONLine(data), ref); err != nil || len(ref.Phases) == 0 {
			fmt.Fprintf(stderr, "deepagents bench: %s is not a bench.mjs report: %v\n", *compare, err)
			return 2
		}
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
	if ref != nil {
		fmt.Fprintf(stdout, "\nagainst %s %s (%s):\n", ref.Impl, ref.Versions["deepagents"], *compare)
		tw = tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "phase\tJS CPU ms/round\tGo CPU µs/round\tCPU ratio\tJS wall ms/round\tGo wall µs/round\twall ratio\t")
		for _, name := range rep.Order {
			p, j := rep.Phases[name], ref.Phases[name]
			if j.CPUMSPerRound == 0 || p.CPUMSPerRound == 0 {
				continue
			}
			fmt.Fprintf(tw, "%s\t%.2f\t%.1f\t%.0f×\t%.2f\t%.1f\t%.0f×\t\n", name, j.CPUMSPerRound, p.CPUMSPerRound*1000, j.CPUMSPerRound/p.CPUMSPerRound,
				j.MSPerModelRound, p.MSPerModelRound*1000, j.MSPerModelRound/p.MSPerModelRound)
		}
		tw.Flush()
	}
	return 0
}

// jsReport is the part of bench.mjs's output the comparison reads.
type jsReport struct {
	Impl     string            `json:"impl"`
	Versions map[string]string `json:"versions"`
	Phases   map[string]struct {
		MSPerModelRound float64 `json:"ms_per_model_round"`
		CPUMSPerRound   float64 `json:"cpu_ms_per_model_round"`
	} `json:"phases"`
}

// lastJSONLine returns the last line of data that looks like a JSON object
// (bench.mjs prints one per run on stderr and the median on stdout).
func lastJSONLine(data []byte) []byte {
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(strings.TrimSpace(lines[i]), "{") {
			return []byte(lines[i])
		}
	}
	return data
}
