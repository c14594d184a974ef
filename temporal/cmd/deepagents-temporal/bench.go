package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/subagent"
	"github.com/deepagents-go/deepagents/temporal"
)

const benchSynopsis = `
bench [--runs N] [--workers W] [--in-process] [--json] [--address ...] [--namespace ...]

Measures N concurrent runs of a scripted agent that delegates once (a parent that calls
task, a subagent that answers, the parent's answer: three model calls), started at once
on W worker processes of this binary on the task queue (it starts and stops them itself),
and prints runs per second, the runs' latency (start to result), the step latency (a
model activity from scheduled to completed, read from the workflows' histories) and the
workers' peak RSS. --in-process runs the same load in this process, without Temporal,
for comparison. The workers keep threads in the workflows' memory (no --db).
`

// benchAgentEnv, set to 1, registers the bench agent (benchAgentName) on a
// worker; bench sets it for the workers it starts.
const benchAgentEnv = "DEEPAGENTS_TEMPORAL_BENCH_AGENT"

const benchAgentName = "bench"

// startsInFlight bounds the workflow starts bench sends at once.
const startsInFlight = 50

// benchAgent is the bench's agent on model m: a parent that delegates once
// to a helper, which answers at once.
func benchAgent(m llm.Model) (*agent.Agent, error) {
	return deepagents.New(deepagents.Config{
		Name: benchAgentName, Model: m, NoCompaction: true,
		Subagents: []subagent.Spec{{Name: "helper", Description: "Helps."}},
	})
}

// benchModel is the bench's script.
func benchModel() llm.Model {
	return scripted.New(scripted.Script{
		benchAgentName: {Steps: []scripted.Step{
			{ToolCalls: []scripted.StepCall{{ID: "t1", Name: "task", Args: json.RawMessage(`{"description":"help","subagent_type":"helper"}`)}}},
			{Content: "done"},
		}},
		"helper": {Steps: []scripted.Step{{Content: "helped"}}},
	}, scripted.Options{NoUsage: true})
}

// benchAgents registers the bench agent when benchAgentEnv asks for it.
func benchAgents(reg *temporal.Registry, names *[]string) error {
	if os.Getenv(benchAgentEnv) != "1" {
		return nil
	}
	a, err := benchAgent(reg.Model(benchAgentName, benchModel()))
	if err != nil {
		return err
	}
	if err := reg.Agent(benchAgentName, a); err != nil {
		return err
	}
	*names = append(*names, benchAgentName)
	return nil
}

// benchResult is what bench reports (--json prints it as one line).
type benchResult struct {
	Mode          string        `json:"mode"`
	Runs          int           `json:"runs"`
	OK            int           `json:"ok"`
	Workers       int           `json:"workers,omitempty"`
	Seconds       float64       `json:"seconds"`
	RunsPerSecond float64       `json:"runs_per_second"`
	RunP50        time.Duration `json:"run_p50_ns"`
	RunP99        time.Duration `json:"run_p99_ns"`
	StepP50       time.Duration `json:"step_p50_ns,omitempty"`
	StepP99       time.Duration `json:"step_p99_ns,omitempty"`
	Steps         int           `json:"steps,omitempty"`
	// RSSKB is the peak resident set (VmHWM) of each worker process, or of
	// this process in process, in KiB.
	RSSKB []int `json:"rss_kb"`
}

func benchCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var f conn
	var runs, workers int
	var inProcess, asJSON bool
	var timeout time.Duration
	fs := newFlags("bench", benchSynopsis, stderr)
	f.flags(fs)
	fs.IntVar(&runs, "runs", 1000, "how many runs, started at once")
	fs.IntVar(&workers, "workers", 3, "how many worker processes to start")
	fs.BoolVar(&inProcess, "in-process", false, "run the load in this process, without Temporal")
	fs.BoolVar(&asJSON, "json", false, "print the result as one JSON line")
	fs.DurationVar(&timeout, "timeout", 30*time.Minute, "how long the whole bench may take")
	fs.Lookup("task-queue").DefValue = "deepagents-bench"
	_ = fs.Set("task-queue", "deepagents-bench")
	if st, ok := parse(fs, args); !ok {
		return st
	}
	if runs < 1 || workers < 1 || fs.NArg() > 0 {
		return fail(stderr, "bench", exitUsage, errors.New("--runs and --workers must be at least 1, and bench takes no arguments"))
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var res benchResult
	var err error
	if inProcess {
		res, err = benchInProcess(ctx, runs)
	} else {
		res, err = benchOnTemporal(ctx, f, runs, workers, stderr)
	}
	if err != nil {
		return fail(stderr, "bench", exitFailed, err)
	}
	if asJSON {
		b, _ := json.Marshal(res)
		fmt.Fprintln(stdout, string(b))
	} else {
		fmt.Fprintf(stdout, "%s: %d/%d runs ok in %.2fs (%.1f runs/s); run latency p50 %s p99 %s",
			res.Mode, res.OK, res.Runs, res.Seconds, res.RunsPerSecond, res.RunP50.Round(time.Millisecond), res.RunP99.Round(time.Millisecond))
		if res.Steps > 0 {
			fmt.Fprintf(stdout, "; step latency p50 %s p99 %s (%d steps)", res.StepP50.Round(time.Millisecond), res.StepP99.Round(time.Millisecond), res.Steps)
		}
		fmt.Fprintf(stdout, "; peak RSS %v KiB\n", res.RSSKB)
	}
	if res.OK != res.Runs {
		return exitFailed
	}
	return 0
}

// percentile is the p-th percentile (0..100) of ds, sorted in place.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := int(float64(len(ds)-1) * p / 100)
	return ds[i]
}

// peakRSS is a process's peak resident set in KiB (VmHWM), 0 when unknown.
func peakRSS(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return n
		}
	}
	return 0
}

// benchInProcess runs the load with the agent in this process.
func benchInProcess(ctx context.Context, runs int) (benchResult, error) {
	a, err := benchAgent(benchModel())
	if err != nil {
		return benchResult{}, err
	}
	res := benchResult{Mode: "in process", Runs: runs}
	lat := make([]time.Duration, runs)
	okc := make([]bool, runs)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range runs {
		wg.Go(func() {
			t0 := time.Now()
			r, err := a.Invoke(ctx, agent.Prompt("go"))
			lat[i] = time.Since(t0)
			okc[i] = err == nil && r.Status == agent.StatusOK && r.FinalText() == "done"
		})
	}
	wg.Wait()
	res.Seconds = time.Since(start).Seconds()
	for _, ok := range okc {
		if ok {
			res.OK++
		}
	}
	res.RunsPerSecond = float64(runs) / res.Seconds
	res.RunP50, res.RunP99 = percentile(lat, 50), percentile(lat, 99)
	res.RSSKB = []int{peakRSS(os.Getpid())}
	return res, nil
}

// benchOnTemporal starts the workers, runs the load on them, reads the
// step latencies from the histories and stops the workers.
func benchOnTemporal(ctx context.Context, f conn, runs, workers int, stderr io.Writer) (res benchResult, err error) {
	exe, err := os.Executable()
	if err != nil {
		return benchResult{}, err
	}
	var procs []*exec.Cmd
	// The workers' stderr, printed when the bench fails.
	var logs lockedBuffer
	defer func() {
		if err != nil || res.OK != runs {
			fmt.Fprintf(stderr, "bench: the workers' stderr:\n%s", logs.String())
		}
	}()
	defer func() {
		for _, p := range procs {
			_ = p.Process.Signal(syscall.SIGTERM)
		}
		for _, p := range procs {
			_ = p.Wait()
		}
	}()
	for range workers {
		cmd := exec.CommandContext(ctx, exe, "worker", "--demo", "--address", f.address, "--namespace", f.namespace,
			"--task-queue", f.taskQueue, "--dial-timeout", f.dialTimeout.String())
		cmd.Env = append(os.Environ(), benchAgentEnv+"=1")
		cmd.Stderr = &logs
		out, err := cmd.StdoutPipe()
		if err != nil {
			return benchResult{}, err
		}
		if err := cmd.Start(); err != nil {
			return benchResult{}, err
		}
		procs = append(procs, cmd)
		sc := bufio.NewScanner(out)
		if !sc.Scan() || !strings.Contains(sc.Text(), "ready on") {
			return benchResult{}, fmt.Errorf("worker %d did not get ready", cmd.Process.Pid)
		}
		go func() { _, _ = io.Copy(io.Discard, out) }()
	}
	c, err := f.dial(ctx)
	if err != nil {
		return benchResult{}, err
	}
	defer c.Close()

	res = benchResult{Mode: "temporal", Runs: runs, Workers: workers}
	prefix := fmt.Sprintf("bench-%d-", time.Now().UnixNano())
	lat := make([]time.Duration, runs)
	okc := make([]bool, runs)
	var wg sync.WaitGroup
	// Starts go at most startsInFlight at a time (a server refuses a burst
	// of a thousand); the runs they start all run at once.
	starting := make(chan struct{}, startsInFlight)
	start := time.Now()
	for i := range runs {
		wg.Go(func() {
			t0 := time.Now()
			starting <- struct{}{}
			sctx, cancel := context.WithTimeout(ctx, time.Minute)
			run, err := c.ExecuteWorkflow(sctx, client.StartWorkflowOptions{ID: prefix + strconv.Itoa(i), TaskQueue: f.taskQueue},
				temporal.RunAgentWorkflow, temporal.RunInput{Agent: benchAgentName, Input: "go"})
			cancel()
			<-starting
			if err != nil {
				fmt.Fprintf(stderr, "bench: starting run %d: %v\n", i, err)
				return
			}
			var s temporal.Summary
			err = run.Get(ctx, &s)
			lat[i] = time.Since(t0)
			okc[i] = err == nil && s.Status == agent.StatusOK && s.Text == "done"
			if !okc[i] {
				fmt.Fprintf(stderr, "bench: run %d: %v %+v\n", i, err, s)
			}
		})
	}
	wg.Wait()
	res.Seconds = time.Since(start).Seconds()
	for _, ok := range okc {
		if ok {
			res.OK++
		}
	}
	res.RunsPerSecond = float64(runs) / res.Seconds
	res.RunP50, res.RunP99 = percentile(lat, 50), percentile(lat, 99)
	for _, p := range procs {
		res.RSSKB = append(res.RSSKB, peakRSS(p.Process.Pid))
	}

	// Step latency: each model activity from scheduled to completed, in
	// the runs' workflows and in their subagents' child workflows.
	var steps []time.Duration
	var read func(id, runID string) error
	read = func(id, runID string) error {
		scheduled := map[int64]time.Time{}
		hctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		it := c.GetWorkflowHistory(hctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		var children [][2]string
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				return fmt.Errorf("reading the history of %s: %w", id, err)
			}
			switch ev.GetEventType() {
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
				if ev.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName() == temporal.ModelActivity {
					scheduled[ev.GetEventId()] = ev.GetEventTime().AsTime()
				}
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
				if t0, ok := scheduled[ev.GetActivityTaskCompletedEventAttributes().GetScheduledEventId()]; ok {
					steps = append(steps, ev.GetEventTime().AsTime().Sub(t0))
				}
			case enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED:
				we := ev.GetChildWorkflowExecutionStartedEventAttributes().GetWorkflowExecution()
				children = append(children, [2]string{we.GetWorkflowId(), we.GetRunId()})
			}
		}
		for _, ch := range children {
			if err := read(ch[0], ch[1]); err != nil {
				return err
			}
		}
		return nil
	}
	for i := range runs {
		if !okc[i] {
			continue
		}
		if err := read(prefix+strconv.Itoa(i), ""); err != nil {
			return res, err
		}
	}
	res.Steps = len(steps)
	res.StepP50, res.StepP99 = percentile(steps, 50), percentile(steps, 99)
	return res, nil
}

// lockedBuffer collects what several processes write.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
