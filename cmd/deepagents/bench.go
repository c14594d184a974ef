package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/deepagents-go/deepagents/internal/bench"
	"github.com/deepagents-go/deepagents/internal/safefile"
)

const benchHelp = `usage: deepagents bench [-k K] [-n N,...] [--sub-rounds R] [--checkpointer none|sqlite] [--runs RUNS] [--json] [--compare FILE]

Measures the harness's own overhead per model round, with an instant scripted
model, in the phases of the JavaScript reference's bench.mjs so the two can be
compared: "sequential" (K rounds of write_file then read_file, then an answer)
and "fanout_N" (one message with N task calls, each child making R model
calls). The step limit is raised to what the phases need, so -k is never cut
short by the default limit; a phase that still ends early is reported as cut.

With --checkpointer sqlite every run is durable, as with bench.mjs
--checkpointer sqlite: saved step by step in an SQLite checkpoint store on a
temporary file (removed afterwards), each phase on a thread of its own. The
report then adds the checkpoints written, the bytes each phase's thread stores
(and per model round), how much the database's files grew, and their size at
the end. Compare -k 50 with -k 200 to see whether a round costs more as a
thread grows.

With --runs RUNS > 1 it runs RUNS fresh processes and reports the median of
each figure. The result goes to stdout (a table, or one JSON line with --json);
progress and errors go to stderr.

Exit status:
  0  every phase ran in full
  1  a phase failed or was cut short
  2  bad usage
`

// benchCommand returns the command that runs one fresh bench process with
// args; tests replace it.
var benchCommand = func(ctx context.Context, args ...string) (*exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return exec.CommandContext(ctx, exe, args...), nil
}

// cmdBench measures framework overhead in the reference harness's phases.
// With --runs N > 1 it runs N fresh processes and reports the median of each
// figure, as bench.mjs --runs does.
func cmdBench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	k := fs.Int("k", 50, "rounds of the sequential phase")
	ns := fs.String("n", "1,8,32", "fan-out sizes, comma-separated")
	sub := fs.Int("sub-rounds", 3, "model calls of each fan-out child")
	runs := fs.Int("runs", 1, "fresh processes to run; the median is reported")
	asJSON := fs.Bool("json", false, "print one JSON line instead of a table")
	compare := fs.String("compare", "", "a JSON report of the JS reference (node bench.mjs --runs N > `FILE`) to print ratios against")
	ckpt := fs.String("checkpointer", "none", "none, or sqlite for durable runs on an SQLite store in a temporary file")
	operands, code, ok := parseFlags(fs, args, benchHelp, stdout, stderr)
	if !ok {
		return code
	}
	if len(operands) > 0 {
		return usageError(stderr, "bench", fmt.Sprintf("takes no arguments, got %q", operands[0]))
	}
	for _, c := range []struct {
		name string
		v    int
	}{{"-k", *k}, {"--sub-rounds", *sub}, {"--runs", *runs}} {
		if c.v < 1 {
			return usageError(stderr, "bench", fmt.Sprintf("%s must be at least 1, not %d", c.name, c.v))
		}
	}
	if !slices.Contains(bench.Checkpointers, *ckpt) {
		return usageError(stderr, "bench", fmt.Sprintf("--checkpointer must be one of %s, not %q", strings.Join(bench.Checkpointers, ", "), *ckpt))
	}
	var fan []int
	for _, s := range strings.Split(*ns, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return usageError(stderr, "bench", fmt.Sprintf("bad -n value %q: want positive whole numbers, comma-separated", s))
		}
		fan = append(fan, n)
	}
	var ref *jsReport
	if *compare != "" {
		data, err := safefile.Read(*compare, 16<<20)
		if err != nil {
			fmt.Fprintf(stderr, "deepagents bench: %v\n", err)
			return 2
		}
		ref = &jsReport{}
		if err := json.Unmarshal(lastJSONLine(data), ref); err != nil || len(ref.Phases) == 0 {
			fmt.Fprintf(stderr, "deepagents bench: %s is not a bench.mjs report (%v)\n", *compare, err)
			return 2
		}
	}
	var rep *bench.Report
	if *runs <= 1 {
		r, err := bench.Run(ctx, bench.Options{K: *k, Fanouts: fan, SubRounds: *sub, Checkpointer: *ckpt})
		if err != nil {
			fmt.Fprintf(stderr, "deepagents bench: %v\n", err)
			return 1
		}
		rep = r
	} else {
		var all []*bench.Report
		for i := 0; i < *runs; i++ {
			cmd, err := benchCommand(ctx, "bench", "--json", "-k", strconv.Itoa(*k), "-n", *ns, "--sub-rounds", strconv.Itoa(*sub), "--checkpointer", *ckpt)
			if err != nil {
				fmt.Fprintf(stderr, "deepagents bench: %v\n", err)
				return 1
			}
			cmd.Stderr = stderr // the child's progress and errors only; its result is read from its stdout
			out, err := cmd.Output()
			var r bench.Report
			if err == nil {
				err = json.Unmarshal(lastJSONLine(out), &r)
			}
			if err != nil {
				fmt.Fprintf(stderr, "deepagents bench: run %d of %d: %v\n", i+1, *runs, err)
				return 1
			}
			fmt.Fprintf(stderr, "deepagents bench: run %d of %d done\n", i+1, *runs)
			all = append(all, &r)
		}
		rep = bench.Median(all)
	}
	cut := rep.Cut()
	for _, c := range cut {
		fmt.Fprintf(stderr, "deepagents bench: phase cut short: %s\n", c)
	}
	code = 0
	if len(cut) > 0 {
		code = 1
	}
	if *asJSON {
		data, _ := json.Marshal(rep)
		fmt.Fprintf(stdout, "%s\n", data)
		return code
	}
	fmt.Fprintf(stdout, "deepagents-go %s, %d CPUs, load %.2f, build %.2f ms, warm-up %.1f ms, max RSS %.1f MB\n", rep.Go, rep.CPUs, rep.LoadAvg, rep.BuildMS, rep.WarmupMS, rep.MaxRSSMB)
	durable := rep.Checkpointer != "" && rep.Checkpointer != "none"
	if durable {
		fmt.Fprintf(stdout, "checkpointer %s: database %.2f MB at the end (all phases and warm-ups; with SQLite's write-ahead log, store open), %.2f MB once closed\n",
			rep.Checkpointer, float64(rep.DBBytes)/(1<<20), float64(rep.DBBytesClosed)/(1<<20))
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "phase\tmodel calls\twall ms\twall µs/round\tCPU ms\tCPU µs/round\tallocs/round\tKB/round\tparent msgs\tfiles\t")
	for _, name := range rep.Order {
		p := rep.Phases[name]
		if p.Cut != "" {
			name += " (cut)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.1f\t%.2f\t%.1f\t%.0f\t%.1f\t%d\t%d\t\n", name, p.ModelCalls, p.WallMS, p.MSPerModelRound*1000,
			p.CPUMS, p.CPUMSPerRound*1000, p.AllocsPerRound, p.BytesPerRound/1024, p.ParentMessages, p.Files)
	}
	tw.Flush()
	if durable {
		fmt.Fprintln(stdout)
		tw = tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "phase	checkpoints	stored KB	stored B/round	disk KB added	first10 µs/round	last10 µs/round	")
		for _, name := range rep.Order {
			p := rep.Phases[name]
			growth := "\t\t"
			if p.First10MSPerRound > 0 {
				growth = fmt.Sprintf("%.1f\t%.1f\t", p.First10MSPerRound*1000, p.Last10MSPerRound*1000)
			}
			fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.0f\t%.1f\t%s\n", name, p.Checkpoints, float64(p.StoredBytes)/1024, p.StoredBytesPerModelRound,
				float64(p.DBBytesAdded)/1024, growth)
		}
		tw.Flush()
	}
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
		if ref.DBBytes > 0 && rep.DBBytes > 0 {
			fmt.Fprintf(stdout, "database at the end: JS (%s) %.2f MB, Go (%s) %.2f MB: %.0f× smaller\n", ref.Checkpointer, float64(ref.DBBytes)/(1<<20),
				rep.Checkpointer, float64(rep.DBBytes)/(1<<20), float64(ref.DBBytes)/float64(rep.DBBytes))
		}
	}
	return code
}

// jsReport is the part of bench.mjs's output the comparison reads.
type jsReport struct {
	Impl         string            `json:"impl"`
	Versions     map[string]string `json:"versions"`
	Checkpointer string            `json:"checkpointer"`
	DBBytes      int64             `json:"db_bytes"`
	Phases       map[string]struct {
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
