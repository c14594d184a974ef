// Package bench measures framework overhead with an instant scripted model,
// in the same phases as the JavaScript reference harness's bench.mjs, so the
// two can be compared side by side: "sequential" (K rounds alternating
// write_file and read_file, then an answer) and "fanout_N" (one message with
// N task calls, each child doing a few rounds of file work).
//
// In durable mode (Options.Checkpointer "sqlite", like bench.mjs
// --checkpointer sqlite) every run is saved step by step in an SQLite
// checkpoint store on a temporary file, each phase on a thread of its own,
// and the report adds the checkpoints written and the bytes stored and on
// disk.
package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint/sqlite"
	"github.com/deepagents-go/deepagents/internal/safefile"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/runner"
)

// Options choose the phases. The zero value is the reference setup: K=50,
// N=1,8,32, 3 rounds per child.
type Options struct {
	K         int
	Fanouts   []int
	SubRounds int
	// Checkpointer is "" or "none" for in-memory runs, "sqlite" for durable
	// runs on an SQLite store in a temporary directory.
	Checkpointer string
}

// Checkpointers are the values Options.Checkpointer takes.
var Checkpointers = []string{"none", "sqlite"}

func (o Options) norm() Options {
	if o.K == 0 {
		o.K = 50
	}
	if o.Fanouts == nil {
		o.Fanouts = []int{1, 8, 32}
	}
	if o.SubRounds == 0 {
		o.SubRounds = 3
	}
	if o.Checkpointer == "" {
		o.Checkpointer = "none"
	}
	return o
}

// Phase is one measured invoke.
type Phase struct {
	Name            string  `json:"name"`
	ModelCalls      int     `json:"model_calls"`
	WallMS          float64 `json:"wall_ms"`
	MSPerModelRound float64 `json:"ms_per_model_round"`
	CPUMS           float64 `json:"cpu_ms"`
	CPUMSPerRound   float64 `json:"cpu_ms_per_model_round"`
	AllocsPerRound  float64 `json:"allocs_per_model_round"`
	BytesPerRound   float64 `json:"bytes_per_model_round"`
	ParentMessages  int     `json:"parent_messages"`
	Files           int     `json:"files"`
	HeapAfterMB     float64 `json:"heap_after_mb"`
	// Cut says why the phase stopped before making every model call it was
	// meant to (a step limit, an error); empty when it ran in full.
	Cut string `json:"cut,omitempty"`
	// First10MSPerRound and Last10MSPerRound are the mean gaps between the
	// starts of the first eleven and the last eleven model calls of a
	// sequential phase of more than 21 calls: whether a round costs more
	// as the thread grows.
	First10MSPerRound float64 `json:"first10_ms_per_round,omitempty"`
	Last10MSPerRound  float64 `json:"last10_ms_per_round,omitempty"`
	// Durable mode only: the checkpoints the phase's run wrote, the bytes
	// its thread stores (records, messages, writes, file contents), and how
	// much the database's files (with the write-ahead log) grew.
	Checkpoints              int     `json:"checkpoints,omitempty"`
	StoredBytes              int64   `json:"stored_bytes,omitempty"`
	StoredBytesPerModelRound float64 `json:"stored_bytes_per_model_round,omitempty"`
	DBBytesAdded             int64   `json:"db_bytes_added,omitempty"`
}

// Report is one run of every phase, shaped like bench.mjs's output.
type Report struct {
	Impl      string           `json:"impl"`
	Go        string           `json:"go"`
	CPUs      int              `json:"cpus"`
	K         int              `json:"k"`
	SubRounds int              `json:"sub_rounds"`
	BuildMS   float64          `json:"build_ms"`
	WarmupMS  float64          `json:"warmup_ms"`
	Phases    map[string]Phase `json:"phases"`
	Order     []string         `json:"order"`
	MaxRSSMB  float64          `json:"max_rss_mb"`
	// LoadAvg is the machine's one-minute load average when the run
	// started (0 where it cannot be read).
	LoadAvg      float64 `json:"loadavg_1m_at_start"`
	Checkpointer string  `json:"checkpointer"`
	// DBBytes is the size of the durable store's files at the end, while
	// the store is still open: the database file and SQLite's write-ahead
	// log, which fills up to its checkpoint interval and is then reused.
	DBBytes int64 `json:"db_bytes,omitempty"`
	// DBBytesClosed is their size once the store is closed (its Close
	// copies the log into the database file and empties it).
	DBBytesClosed int64 `json:"db_bytes_closed,omitempty"`
}

func fileStep(prefix string, i int) scripted.Step {
	path := fmt.Sprintf("/%s/f%d.txt", prefix, i/2)
	if i%2 == 0 {
		args, _ := json.Marshal(map[string]string{"file_path": path, "content": strings.Repeat(fmt.Sprintf("line %d\n", i), 5)})
		return scripted.Step{ToolCalls: []scripted.StepCall{{Name: "write_file", Args: args}}}
	}
	args, _ := json.Marshal(map[string]string{"file_path": path})
	return scripted.Step{ToolCalls: []scripted.StepCall{{Name: "read_file", Args: args}}}
}

// Script is the programmatic script of the phases: the parent's task text is
// "seq K" or "fan N"; every child does SubRounds-1 rounds of file work and
// then answers.
func Script(subRounds int) func(ci llm.CallInfo, req *llm.Request) (scripted.Step, error) {
	return func(ci llm.CallInfo, _ *llm.Request) (scripted.Step, error) {
		if ci.Instance == "" {
			kind, num, _ := strings.Cut(ci.Task, " ")
			n, err := strconv.Atoi(num)
			if err != nil {
				return scripted.Step{}, fmt.Errorf("bench: bad task %q", ci.Task)
			}
			if kind == "seq" {
				if ci.Round < n {
					return fileStep("p", ci.Round), nil
				}
				return scripted.Step{Content: "done"}, nil
			}
			if ci.Round == 0 {
				calls := make([]scripted.StepCall, n)
				for j := range calls {
					args, _ := json.Marshal(map[string]string{"description": fmt.Sprintf("sub %d", j), "subagent_type": "general-purpose"})
					calls[j] = scripted.StepCall{ID: fmt.Sprintf("call_%d", j), Name: "task", Args: args}
				}
				return scripted.Step{ToolCalls: calls}, nil
			}
			return scripted.Step{Content: "all subagents done"}, nil
		}
		if ci.Round < subRounds-1 {
			return fileStep(strings.ReplaceAll(ci.Task, " ", "_"), ci.Round), nil
		}
		return scripted.Step{Content: ci.Task + " finished"}, nil
	}
}

// NewAgent returns the default deep agent on the instant bench model, with
// a step limit that fits the reference setup (K=50) and subRounds.
func NewAgent(subRounds int) (*agent.Agent, *scripted.Model, error) {
	return NewAgentFor(Options{SubRounds: subRounds})
}

// NewAgentFor returns the default deep agent on the instant bench model
// with a step limit high enough for every phase of o, so that no phase is
// cut short by the default limit.
func NewAgentFor(o Options) (*agent.Agent, *scripted.Model, error) {
	o = o.norm()
	return newAgent(o.SubRounds, StepsNeeded(o))
}

func newAgent(subRounds, maxSteps int) (*agent.Agent, *scripted.Model, error) {
	m := scripted.New(nil, scripted.Options{Func: Script(subRounds), NoUsage: true})
	a, err := deepagents.New(deepagents.Config{Model: m, MaxSteps: maxSteps, MaxParallel: 64})
	return a, m, err
}

// warmupSeq is the number of rounds of the sequential warm-up.
const warmupSeq = 6

// StepsNeeded is the per-agent step limit the phases of o need: the
// sequential phase makes K+1 model calls in the parent (K rounds of file
// work, then the answer) and each fan-out child SubRounds.
func StepsNeeded(o Options) int {
	o = o.norm()
	return max(o.K, warmupSeq, o.SubRounds) + 1
}

// expectedCalls is how many model calls a phase's task makes when it runs
// in full.
func expectedCalls(task string, subRounds int) int {
	kind, num, _ := strings.Cut(task, " ")
	n, _ := strconv.Atoi(num)
	if kind == "seq" {
		return n + 1
	}
	return 2 + n*subRounds
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// RunPhase invokes a once with the task text ("seq K" or "fan N") and
// measures it. A run that ends early (a step limit, a failed call) is still
// measured, with Phase.Cut saying why; the error is for a run that produced
// no result at all.
func RunPhase(ctx context.Context, a *agent.Agent, m *scripted.Model, name, task string) (Phase, error) {
	return runPhase(ctx, a, m, name, task, 0, nil)
}

// SQLiteSynchronous is the durable mode's SQLite synchronous setting.
const SQLiteSynchronous = "NORMAL"

// store is the durable mode's checkpoint store.
type store struct {
	saver   *sqlite.Saver
	path    string
	threads int
	closed  bool
}

// open opens an SQLite store in a new temporary directory.
func openStore() (*store, error) {
	dir, err := os.MkdirTemp("", "deepagents-bench-")
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "state.db")
	// NORMAL, as the reference's store runs: LangGraph's SqliteSaver uses
	// WAL mode, where better-sqlite3's build makes NORMAL the default (a
	// committed step survives a crash of the process, not of the machine).
	s, err := sqlite.Open(path, sqlite.Options{Synchronous: SQLiteSynchronous})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return &store{saver: s, path: path}, nil
}

// closeSaver closes the saver, once.
func (s *store) closeSaver() error {
	if s.closed {
		return nil
	}
	s.closed = true
	return s.saver.Close()
}

func (s *store) close() {
	s.closeSaver()
	os.RemoveAll(filepath.Dir(s.path))
}

// bytes is the size of the database file and its write-ahead log.
func (s *store) bytes() int64 {
	var n int64
	for _, p := range []string{s.path, s.path + "-wal"} {
		if fi, err := os.Stat(p); err == nil {
			n += fi.Size()
		}
	}
	return n
}

func runPhase(ctx context.Context, a *agent.Agent, m *scripted.Model, name, task string, subRounds int, st *store) (Phase, error) {
	m.Reset()
	var opts []agent.RunOption
	var thread string
	var dbBefore int64
	if st != nil {
		st.threads++
		thread = fmt.Sprintf("bench-%d", st.threads)
		opts = append(opts, runner.Checkpoints(st.saver, thread))
		dbBefore = st.bytes()
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	c0, t0 := cpuTime(), time.Now()
	res, err := a.Invoke(ctx, agent.Prompt(task), opts...)
	wall, cpu := time.Since(t0), cpuTime()-c0
	runtime.ReadMemStats(&after)
	if res == nil {
		if err == nil {
			err = fmt.Errorf("the run of %q produced no result", task)
		}
		return Phase{}, err
	}
	calls := len(m.Records())
	p := Phase{
		Name: name, ModelCalls: calls, WallMS: ms(wall), CPUMS: ms(cpu),
		ParentMessages: len(res.State.Messages), Files: len(res.State.Files),
		HeapAfterMB: float64(after.HeapAlloc) / (1 << 20),
	}
	var child *agent.Result
	for _, id := range slices.Sorted(maps.Keys(res.Children)) {
		if c := res.Children[id]; child == nil && c.Status != agent.StatusOK {
			child = c
		}
	}
	switch {
	case res.Status != agent.StatusOK:
		p.Cut = fmt.Sprintf("the run ended with status %s after %d model calls: %s", res.Status, calls, res.Error)
	case child != nil:
		p.Cut = fmt.Sprintf("a child ended with status %s: %s", child.Status, child.Error)
	case subRounds > 0 && calls != expectedCalls(task, subRounds):
		p.Cut = fmt.Sprintf("made %d model calls, not the %d the phase needs", calls, expectedCalls(task, subRounds))
	}
	if calls > 0 {
		p.MSPerModelRound = p.WallMS / float64(calls)
		p.CPUMSPerRound = p.CPUMS / float64(calls)
		p.AllocsPerRound = float64(after.Mallocs-before.Mallocs) / float64(calls)
		p.BytesPerRound = float64(after.TotalAlloc-before.TotalAlloc) / float64(calls)
	}
	if strings.HasPrefix(task, "seq") && calls > 21 {
		p.First10MSPerRound, p.Last10MSPerRound = growth(m.Records())
	}
	if st != nil {
		p.Checkpoints = res.SavedSteps
		p.DBBytesAdded = st.bytes() - dbBefore
		stats, err := st.saver.Stats(ctx, thread)
		if err != nil {
			return p, fmt.Errorf("stats of thread %s: %w", thread, err)
		}
		p.StoredBytes = stats.Bytes
		if calls > 0 {
			p.StoredBytesPerModelRound = float64(stats.Bytes) / float64(calls)
		}
	}
	return p, nil
}

// growth returns the mean gap between model-call starts over the first ten
// and the last ten gaps, in milliseconds.
func growth(recs []scripted.Record) (first, last float64) {
	starts := make([]time.Duration, len(recs))
	for i, r := range recs {
		starts[i] = r.Start
	}
	slices.Sort(starts)
	gap := func(a, b int) float64 { return ms(starts[b]-starts[a]) / float64(b-a) }
	n := len(starts)
	return gap(0, 10), gap(n-11, n-1)
}

// loadAvg reads the one-minute load average (Linux); 0 elsewhere.
func loadAvg() float64 {
	data, err := safefile.Read("/proc/loadavg", 4096)
	if err != nil {
		return 0
	}
	f, _, _ := strings.Cut(string(data), " ")
	v, _ := strconv.ParseFloat(f, 64)
	return v
}

// Run builds the agent, warms it up and runs every phase once. The agent's
// step limit is set to what the phases need (StepsNeeded); a phase that
// still ends early is reported with Phase.Cut set.
func Run(ctx context.Context, o Options) (*Report, error) {
	o = o.norm()
	rep := &Report{Impl: "deepagents-go", Go: runtime.Version(), CPUs: runtime.NumCPU(), K: o.K, SubRounds: o.SubRounds, Phases: map[string]Phase{},
		LoadAvg: loadAvg(), Checkpointer: o.Checkpointer}
	var st *store
	switch o.Checkpointer {
	case "none":
	case "sqlite":
		var err error
		if st, err = openStore(); err != nil {
			return nil, fmt.Errorf("durable mode: %w", err)
		}
		defer st.close()
	default:
		return nil, fmt.Errorf("unknown checkpointer %q (want one of %s)", o.Checkpointer, strings.Join(Checkpointers, ", "))
	}
	t0 := time.Now()
	a, m, err := NewAgentFor(o)
	if err != nil {
		return nil, err
	}
	rep.BuildMS = ms(time.Since(t0))
	t0 = time.Now()
	for _, w := range [][2]string{{"warmup_seq", fmt.Sprintf("seq %d", warmupSeq)}, {"warmup_fanout", "fan 2"}} {
		name := w[0]
		p, err := runPhase(ctx, a, m, name, w[1], o.SubRounds, st)
		if err == nil && p.Cut != "" {
			err = errors.New(p.Cut)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	rep.WarmupMS = ms(time.Since(t0))
	add := func(name, task string) error {
		p, err := runPhase(ctx, a, m, name, task, o.SubRounds, st)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		rep.Phases[name] = p
		rep.Order = append(rep.Order, name)
		return nil
	}
	if err := add("sequential", fmt.Sprintf("seq %d", o.K)); err != nil {
		return nil, err
	}
	for _, n := range o.Fanouts {
		if err := add(fmt.Sprintf("fanout_%d", n), fmt.Sprintf("fan %d", n)); err != nil {
			return nil, err
		}
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		rep.MaxRSSMB = float64(ru.Maxrss) / 1024
	}
	if st != nil {
		rep.DBBytes = st.bytes()
		if err := st.closeSaver(); err != nil {
			return nil, fmt.Errorf("closing the store: %w", err)
		}
		rep.DBBytesClosed = st.bytes()
	}
	return rep, nil
}

// Cut lists the phases that did not run in full, as "NAME: why".
func (r *Report) Cut() []string {
	var out []string
	for _, name := range r.Order {
		if c := r.Phases[name].Cut; c != "" {
			out = append(out, name+": "+c)
		}
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

// Median combines reports of fresh runs: every number is the median of the
// runs' values.
func Median(rs []*Report) *Report {
	if len(rs) == 0 {
		return nil
	}
	med := func(get func(*Report) float64) float64 {
		xs := make([]float64, len(rs))
		for i, r := range rs {
			xs[i] = get(r)
		}
		slices.Sort(xs)
		return xs[len(xs)/2]
	}
	out := *rs[0]
	out.BuildMS = med(func(r *Report) float64 { return r.BuildMS })
	out.WarmupMS = med(func(r *Report) float64 { return r.WarmupMS })
	out.MaxRSSMB = med(func(r *Report) float64 { return r.MaxRSSMB })
	out.LoadAvg = med(func(r *Report) float64 { return r.LoadAvg })
	out.DBBytes = int64(med(func(r *Report) float64 { return float64(r.DBBytes) }))
	out.DBBytesClosed = int64(med(func(r *Report) float64 { return float64(r.DBBytesClosed) }))
	out.Phases = map[string]Phase{}
	for _, name := range rs[0].Order {
		p := rs[0].Phases[name]
		get := func(f func(Phase) float64) float64 { return med(func(r *Report) float64 { return f(r.Phases[name]) }) }
		p.WallMS = get(func(p Phase) float64 { return p.WallMS })
		p.MSPerModelRound = get(func(p Phase) float64 { return p.MSPerModelRound })
		p.CPUMS = get(func(p Phase) float64 { return p.CPUMS })
		p.CPUMSPerRound = get(func(p Phase) float64 { return p.CPUMSPerRound })
		p.AllocsPerRound = get(func(p Phase) float64 { return p.AllocsPerRound })
		p.BytesPerRound = get(func(p Phase) float64 { return p.BytesPerRound })
		p.HeapAfterMB = get(func(p Phase) float64 { return p.HeapAfterMB })
		p.First10MSPerRound = get(func(p Phase) float64 { return p.First10MSPerRound })
		p.Last10MSPerRound = get(func(p Phase) float64 { return p.Last10MSPerRound })
		p.Checkpoints = int(get(func(p Phase) float64 { return float64(p.Checkpoints) }))
		p.StoredBytes = int64(get(func(p Phase) float64 { return float64(p.StoredBytes) }))
		p.StoredBytesPerModelRound = get(func(p Phase) float64 { return p.StoredBytesPerModelRound })
		p.DBBytesAdded = int64(get(func(p Phase) float64 { return float64(p.DBBytesAdded) }))
		for _, r := range rs {
			if p.Cut == "" {
				p.Cut = r.Phases[name].Cut
			}
		}
		out.Phases[name] = p
	}
	return &out
}
