//go:build unix

package runner_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/checkpoint/sqlite"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/runner"
	"github.com/deepagents-go/deepagents/tool"
)

// The real-process crash test. A child process (this test binary run again,
// see TestCrashChildProcess) runs the scripted scenario in testdata/crash on
// a SQLite saver and prints, one line each, every event, every model call as
// it begins and every checkpoint write before and after it is made. The
// parent kills it with SIGKILL at chosen lines, starts it again in resume
// mode, and checks the end against an uncrashed run.
//
// The child waits for the parent's go-ahead after every line (lockstep), so a
// kill lands at a known place: "at" a line (the goroutine that printed it
// never goes on) or "after" it (the parent lets it go on and kills at once,
// so the kill lands in the work that follows: a model call's latency, a
// tool's run, a SQLite transaction). Goroutines that print nothing (tools
// running in parallel, subagents between lines) keep going meanwhile, as
// they would in a real crash.

const (
	crashChildEnv   = "DEEPAGENTS_CRASH_CHILD"
	crashDBEnv      = "DEEPAGENTS_CRASH_DB"
	crashCounterEnv = "DEEPAGENTS_CRASH_COUNTER"
	crashModeEnv    = "DEEPAGENTS_CRASH_MODE" // "start" (with the prompt) or "resume"
	crashThread     = "crash"
	crashPrompt     = "run the crash scenario"
	crashPrefix     = "CRASH "
)

// Kinds of line the child prints.
const (
	lineEvent      = "event"       // an agent event
	lineModelBegin = "model-begin" // a model call has begun (inside the model)
	linePutBegin   = "put-begin"   // a checkpoint write is about to be made
	linePutEnd     = "put-end"     // a checkpoint write was made
	lineExit       = "exit"        // the run is over
)

// crashLine is one line of the child's protocol.
type crashLine struct {
	Kind string `json:"kind"`
	// Type is the event type (events only).
	Type string `json:"type,omitempty"`
	// Agent is the agent path of an event or model call, or the namespace of
	// a checkpoint write ("parent" for the top level).
	Agent string `json:"agent,omitempty"`
	// Detail tells lines of one kind and agent apart: the round of a model
	// call, the call id of a tool event, "step N STATUS" of a put, "write
	// CALL KIND" of a call's result.
	Detail string          `json:"detail,omitempty"`
	Event  json.RawMessage `json:"event,omitempty"`
	Error  string          `json:"error,omitempty"`
}

func (l crashLine) key() string {
	return l.Kind + "|" + l.Type + "|" + l.Agent + "|" + l.Detail
}

// ---- the child ----

// crashWire prints protocol lines and, after each, waits for the parent's
// go-ahead (one byte on stdin).
type crashWire struct {
	mu sync.Mutex
	in *bufio.Reader
}

func (w *crashWire) send(l crashLine) {
	b, err := json.Marshal(l)
	if err != nil {
		panic(err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, err := os.Stdout.Write(append(append([]byte(crashPrefix), b...), '\n')); err != nil {
		os.Exit(3) // the parent is gone
	}
	if _, err := w.in.ReadByte(); err != nil {
		os.Exit(3)
	}
}

// markedSaver prints a line before and after every write to the saver.
type markedSaver struct {
	checkpoint.Saver
	w *crashWire
}

func nsLabel(ns string) string {
	if ns == "" {
		return "parent"
	}
	return ns
}

func (s *markedSaver) Put(ctx context.Context, st checkpoint.Step) error {
	l := crashLine{Kind: linePutBegin, Agent: nsLabel(st.NS), Detail: fmt.Sprintf("step %d %s", st.Step, st.Status)}
	s.w.send(l)
	err := s.Saver.Put(ctx, st)
	l.Kind = linePutEnd
	if err != nil {
		l.Error = err.Error()
	}
	s.w.send(l)
	return err
}

func (s *markedSaver) PutWrite(ctx context.Context, ref checkpoint.Ref, wr checkpoint.Write) error {
	kind := wr.Kind
	if kind == "" {
		kind = checkpoint.KindResult
	}
	l := crashLine{Kind: linePutBegin, Agent: nsLabel(ref.NS), Detail: "write " + wr.CallID + " " + kind}
	s.w.send(l)
	err := s.Saver.PutWrite(ctx, ref, wr)
	l.Kind = linePutEnd
	if err != nil {
		l.Error = err.Error()
	}
	s.w.send(l)
	return err
}

// markedModel prints a line as each model call begins, from inside the
// call, so a kill there lands in a model call that has started.
type markedModel struct {
	*scripted.Model
	w *crashWire
}

func (m *markedModel) begin(ctx context.Context) {
	ci, _ := llm.CallInfoFrom(ctx)
	m.w.send(crashLine{Kind: lineModelBegin, Agent: ci.Path, Detail: strconv.Itoa(ci.Round)})
}

func (m *markedModel) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	m.begin(ctx)
	return m.Model.Generate(ctx, req)
}

func (m *markedModel) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.StreamEvent, error] {
	return func(yield func(llm.StreamEvent, error) bool) {
		m.begin(ctx)
		for ev, err := range m.Model.Stream(ctx, req) {
			if !yield(ev, err) {
				return
			}
		}
	}
}

// fileCounter is a tool with a side effect that survives the process: every
// run of a call appends "AGENT-PATH CALL-ID" to a file, synced before the
// tool returns. An "ms" argument keeps the call running that long first, so
// that calls of one step overlap.
type fileCounter struct{ path string }

func (c *fileCounter) Spec() llm.ToolSpec {
	return llm.ToolSpec{Name: "bump", Description: "Count once.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"},"ms":{"type":"integer"}}}`)}
}

func (c *fileCounter) Run(ctx context.Context, env *tool.Env, args json.RawMessage) (tool.Result, error) {
	var in struct{ N, MS int }
	if err := json.Unmarshal(args, &in); err != nil {
		return tool.Result{}, fmt.Errorf("bump: %w", err)
	}
	if in.MS > 0 {
		t := time.NewTimer(time.Duration(in.MS) * time.Millisecond)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return tool.Result{}, ctx.Err()
		}
	}
	f, err := os.OpenFile(c.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return tool.Result{}, err
	}
	_, err = f.WriteString(env.Agent + " " + env.CallID + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return tool.Result{}, err
	}
	return tool.Text(fmt.Sprintf("bumped %d", in.N)), nil
}

// TestCrashChildProcess is the child of TestCrashSIGKILLResumesToTheSameEnd:
// it runs only when that test starts it.
func TestCrashChildProcess(t *testing.T) {
	if os.Getenv(crashChildEnv) != "1" {
		t.Skip("the child process of TestCrashSIGKILLResumesToTheSameEnd; runs only when started by it")
	}
	w := &crashWire{in: bufio.NewReader(os.Stdin)}
	raw, err := os.ReadFile("testdata/crash/script.json")
	if err != nil {
		t.Fatal(err)
	}
	var script scripted.Script
	if err := json.Unmarshal(raw, &script); err != nil {
		t.Fatal(err)
	}
	model := &markedModel{Model: scripted.New(script, scripted.Options{}), w: w}
	a, err := deepagents.New(deepagents.Config{Model: model, Tools: []tool.Tool{&fileCounter{path: os.Getenv(crashCounterEnv)}}})
	if err != nil {
		t.Fatal(err)
	}
	db, err := sqlite.Open(os.Getenv(crashDBEnv), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	in := agent.Input{}
	if os.Getenv(crashModeEnv) == "start" {
		in = agent.Prompt(crashPrompt)
	}
	_, runErr := agent.Drain(a.Run(context.Background(), in, runner.Checkpoints(&markedSaver{Saver: db, w: w}, crashThread)), func(ev agent.Event) {
		b, err := json.Marshal(ev)
		if err != nil {
			t.Errorf("event %s: %v", ev.Type, err)
		}
		l := crashLine{Kind: lineEvent, Type: string(ev.Type), Agent: ev.Agent.String(), Event: b}
		switch {
		case ev.Request != nil:
			l.Detail = strconv.Itoa(ev.Request.Round)
		case ev.Response != nil:
			l.Detail = strconv.Itoa(ev.Response.Round)
		case ev.Tool != nil:
			l.Detail = ev.Tool.CallID
		case ev.Subagent != nil:
			l.Detail = ev.Subagent.CallID
		case ev.File != nil:
			l.Detail = ev.File.Path
		}
		w.send(l)
	})
	end := crashLine{Kind: lineExit}
	if runErr != nil {
		end.Error = runErr.Error()
	}
	w.send(end)
	if runErr != nil {
		t.Fatal(runErr)
	}
}

// ---- the parent ----

// killAt says where to kill the child: at the N-th line (from 1) with Key.
// With After the child is let go on past that line and killed at once.
type killAt struct {
	Key   string
	N     int
	After bool
}

func (k killAt) String() string {
	s := fmt.Sprintf("%s#%d", k.Key, k.N)
	if k.After {
		s += "+"
	}
	return s
}

// childRun is what one child process did.
type childRun struct {
	lines  []crashLine
	killed bool
	// exitErr is the error the child reported on its exit line.
	exitErr string
	code    int
	pid     int
	other   string // output outside the protocol, and stderr
}

// runCrashChild runs the child in dir (its database and counter file) until
// it exits, or until kill's line comes and it is killed.
func runCrashChild(t *testing.T, dir, mode string, kill *killAt) childRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, exe, "-test.run=^TestCrashChildProcess$", "-test.count=1", "-test.timeout=2m")
	// The race detector sleeps a second before a process exits unless
	// told not to.
	gorace := strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")
	cmd.Env = append(os.Environ(), "GORACE="+gorace, crashChildEnv+"=1", crashDBEnv+"="+dir+"/state.db",
		crashCounterEnv+"="+dir+"/counter", crashModeEnv+"="+mode)
	var stderr bytes.Buffer // written by exec's copying goroutine until Wait
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := childRun{pid: cmd.Process.Pid}
	var other strings.Builder
	seen := map[string]int{}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	goAhead := []byte{'\n'}
	for sc.Scan() {
		text, ok := strings.CutPrefix(sc.Text(), crashPrefix)
		if !ok {
			other.WriteString(sc.Text() + "\n")
			continue
		}
		var l crashLine
		if err := json.Unmarshal([]byte(text), &l); err != nil {
			t.Fatalf("child line %q: %v", text, err)
		}
		out.lines = append(out.lines, l)
		if l.Kind == lineExit {
			out.exitErr = l.Error
		}
		if out.killed {
			continue // lines the child printed before it died
		}
		k := l.key()
		seen[k]++
		if kill != nil && k == kill.Key && seen[k] == kill.N {
			if kill.After {
				_, _ = stdin.Write(goAhead)
			}
			if err := cmd.Process.Kill(); err != nil {
				t.Fatalf("kill at %v: %v", kill, err)
			}
			out.killed = true
			continue
		}
		_, _ = stdin.Write(goAhead) // fails only if the child died
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading the child: %v", err)
	}
	_ = stdin.Close()
	werr := cmd.Wait()
	out.other = other.String() + stderr.String()
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	switch {
	case out.killed:
		if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("the child was to die of SIGKILL at %v; it ended with %v\n%s", kill, werr, out.other)
		}
	case ws.Signaled():
		t.Fatalf("the child died of %v\n%s", ws.Signal(), out.other)
	default:
		out.code = ws.ExitStatus()
	}
	return out
}

// crashNS is one namespace's end as read from the database.
type crashNS struct {
	Status   agent.Status
	Rounds   int
	Usage    llm.Usage
	Messages string // JSON
}

// crashEnd is a thread's state as read from the database.
type crashEnd struct {
	NS     map[string]crashNS
	Files  map[string]string
	Values string // JSON
}

// crashSaved is what the database holds after a kill: the calls whose
// results are saved (they must never run again) and, per agent, the model
// calls whose responses are saved (rounds below that must never be asked
// again).
type crashSaved struct {
	finished map[string]bool // "AGENT-PATH CALL-ID"
	rounds   map[string]int  // agent path → saved rounds
	// holder holds the thread's lease ("" if no one does).
	holder string
	// written are the calls whose result write returned in this or an
	// earlier killed process, from the child's lines (see writtenResults).
	written map[string]bool
}

func openCrashDB(t *testing.T, dir string) *sqlite.Saver {
	t.Helper()
	db, err := sqlite.Open(dir+"/state.db", sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// crashStates reads the state of every namespace of the thread.
func crashStates(t *testing.T, db checkpoint.Saver) map[string]*agent.RunState {
	t.Helper()
	ctx := context.Background()
	cps, err := db.List(ctx, checkpoint.ListOptions{ThreadID: crashThread, AllNamespaces: true})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*agent.RunState{}
	for _, c := range cps {
		if _, ok := out[nsLabel(c.NS)]; ok {
			continue
		}
		path := agent.RootPath("parent")
		if c.NS != "" {
			if path, err = agent.ParsePath(c.NS); err != nil {
				t.Fatal(err)
			}
		}
		rs, err := runner.LoadRunState(ctx, db, crashThread, path, false)
		if err != nil {
			t.Fatal(err)
		}
		out[path.String()] = rs
	}
	return out
}

func readCrashSaved(t *testing.T, dir string) crashSaved {
	t.Helper()
	db := openCrashDB(t, dir)
	defer db.Close()
	s := crashSaved{finished: map[string]bool{}, rounds: map[string]int{}, holder: crashLeaseHolder(t, db), written: map[string]bool{}}
	for path, rs := range crashStates(t, db) {
		s.rounds[path] = rs.Loop.Rounds
		for _, m := range rs.Messages {
			if m.Role == llm.RoleTool {
				s.finished[path+" "+m.ToolCallID] = true
			}
		}
		if rs.InProgress != nil {
			for id := range rs.InProgress.Done {
				s.finished[path+" "+id] = true
			}
		}
	}
	return s
}

func readCrashEnd(t *testing.T, dir string) crashEnd {
	t.Helper()
	db := openCrashDB(t, dir)
	defer db.Close()
	end := crashEnd{NS: map[string]crashNS{}, Files: map[string]string{}}
	for path, rs := range crashStates(t, db) {
		msgs, err := json.Marshal(rs.Messages)
		if err != nil {
			t.Fatal(err)
		}
		end.NS[path] = crashNS{Status: rs.Status, Rounds: rs.Loop.Rounds, Usage: rs.Loop.Usage, Messages: string(msgs)}
		if path == "parent" {
			for p, f := range rs.Files {
				end.Files[p] = f.Content
			}
			v, err := json.Marshal(rs.Values)
			if err != nil {
				t.Fatal(err)
			}
			end.Values = string(v)
		}
	}
	return end
}

// crashLeaseHolder names the holder of the thread's lease ("" if none),
// asking for the lease under another name and reading who refuses it.
func crashLeaseHolder(t *testing.T, db checkpoint.Saver) string {
	t.Helper()
	ctx := context.Background()
	_, err := db.Acquire(ctx, crashThread, "probe", time.Now(), time.Minute)
	var le *checkpoint.LeasedError
	if errors.As(err, &le) {
		return le.Holder
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Release(ctx, crashThread, "probe"); err != nil {
		t.Fatal(err)
	}
	return ""
}

// writtenResults names the calls ("AGENT-PATH CALL-ID") whose result write
// returned without error in the child's run r: the child printed the write's
// put-end line, so the saver had taken it before the kill. It is read from
// the protocol, not from the database, so a saver that loses a result it
// took, or reads it back wrong, cannot hide it.
func writtenResults(r childRun) map[string]bool {
	out := map[string]bool{}
	for _, l := range r.lines {
		if l.Kind != linePutEnd || l.Error != "" {
			continue
		}
		rest, ok := strings.CutPrefix(l.Detail, "write ")
		if !ok {
			continue
		}
		if call, ok := strings.CutSuffix(rest, " "+checkpoint.KindResult); ok {
			out[l.Agent+" "+call] = true
		}
	}
	return out
}

// readCounter counts the counter tool's runs per call.
func readCounter(t *testing.T, dir string) map[string]int {
	t.Helper()
	b, err := os.ReadFile(dir + "/counter")
	if errors.Is(err, os.ErrNotExist) {
		return map[string]int{}
	}
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if l != "" {
			out[l]++
		}
	}
	return out
}

// compareCrashEnd reports every way got differs from the uncrashed want.
func compareCrashEnd(t *testing.T, got, want crashEnd) {
	t.Helper()
	for ns, w := range want.NS {
		g, ok := got.NS[ns]
		switch {
		case !ok:
			t.Errorf("%s: no checkpoints after the crash", ns)
		case g.Messages != w.Messages:
			t.Errorf("%s: messages differ from the uncrashed run:\n got %s\nwant %s", ns, g.Messages, w.Messages)
		case g != w:
			t.Errorf("%s: end %+v, uncrashed %+v", ns, g, w)
		}
	}
	for ns := range got.NS {
		if _, ok := want.NS[ns]; !ok {
			t.Errorf("%s: a namespace the uncrashed run does not have", ns)
		}
	}
	if !mapsEqual(got.Files, want.Files) {
		t.Errorf("files %q, uncrashed %q", got.Files, want.Files)
	}
	if got.Values != want.Values {
		t.Errorf("values %s, uncrashed %s", got.Values, want.Values)
	}
}

func mapsEqual[V comparable](a, b map[string]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// crashPoint is one case: kill at each of kills in turn (each in the
// process started after the previous kill), then resume to the end.
type crashPoint struct {
	name  string
	kills []killAt
}

// What a point's kills cover, checked over the chosen set.
const (
	coverParentModel = "a parent model call"
	coverChildModel  = "a subagent model call"
	coverBetween     = "between parallel tool calls"
	coverChildStep   = "inside a subagent's step"
	coverPutBegin    = "before a checkpoint write"
	coverPutDuring   = "during a checkpoint write"
	coverPutEnd      = "after a checkpoint write, before the loop knew"
	coverMulti       = "several kills in one run"
)

// chooseCrashPoints picks kill points from the uncrashed run's lines, by
// kind, agent and detail (never by time), and says what each covers.
func chooseCrashPoints(ref []crashLine) ([]crashPoint, map[string]int) {
	var points []crashPoint
	covers := map[string]int{}
	seen := map[string]int{}
	occ := make([]int, len(ref)) // occurrence number of each line's key
	for i, l := range ref {
		seen[l.key()]++
		occ[i] = seen[l.key()]
	}
	at := func(i int, after bool) killAt { return killAt{Key: ref[i].key(), N: occ[i], After: after} }
	add := func(name string, what []string, kills ...killAt) {
		points = append(points, crashPoint{name: name, kills: kills})
		for _, w := range what {
			covers[w]++
		}
	}
	isChild := func(l crashLine) bool { return l.Agent != "parent" }

	// A tool call that ends while another of its step still runs: its
	// tool.start came and its tool.end has not.
	between := map[int]bool{}
	open := map[string]map[string]bool{}
	for i, l := range ref {
		if l.Kind != lineEvent {
			continue
		}
		switch agent.EventType(l.Type) {
		case agent.ToolStart:
			if open[l.Agent] == nil {
				open[l.Agent] = map[string]bool{}
			}
			open[l.Agent][l.Detail] = true
		case agent.ToolEnd:
			delete(open[l.Agent], l.Detail)
			between[i] = len(open[l.Agent]) > 0
		}
	}

	// Parallel calls and subagents interleave their lines differently from
	// run to run, so the points are taken in the order of their keys, which
	// does not change.
	order := make([]int, len(ref))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(x, y int) bool { return ref[order[x]].key() < ref[order[y]].key() })
	var puts, childEvents int
	for _, i := range order {
		l := ref[i]
		switch {
		// Every model call, parent's and subagents': killed while the
		// model is answering (the script gives each call a latency).
		case l.Kind == lineModelBegin:
			what := coverParentModel
			if isChild(l) {
				what = coverChildModel
			}
			add(fmt.Sprintf("model %s round %s", l.Agent, l.Detail), []string{what}, at(i, true))
		case between[i]:
			what := []string{coverBetween}
			if isChild(l) {
				what = append(what, coverChildStep)
			}
			add(fmt.Sprintf("tool.end %s %s", l.Agent, l.Detail), what, at(i, false))
		case l.Kind == lineEvent && isChild(l) && l.Type != string(agent.ModelRequest):
			// Other events of subagents, every fourth.
			if childEvents%4 == 0 {
				add(fmt.Sprintf("%s %s %s", l.Type, l.Agent, l.Detail), []string{coverChildStep}, at(i, false))
			}
			childEvents++
		case l.Kind == linePutBegin:
			// Every fifth write, in turn killed before it starts and
			// while it is being made; and some just after they were made.
			if puts%5 == 0 {
				after := puts%10 == 5
				what := []string{coverPutBegin}
				if after {
					what = []string{coverPutDuring}
				}
				if isChild(l) {
					what = append(what, coverChildStep)
				}
				add(fmt.Sprintf("put %s %s", l.Agent, l.Detail), what, at(i, after))
			}
			if puts%10 == 2 || puts%10 == 7 {
				if j := nextLine(ref, i, linePutEnd, l.Agent, l.Detail); j >= 0 {
					add(fmt.Sprintf("saved %s %s", l.Agent, l.Detail), []string{coverPutEnd}, at(j, false))
				}
			}
			puts++
		}
	}

	// Before the input was saved: there is nothing to resume, so the run
	// starts again.
	if i := slices.IndexFunc(ref, func(l crashLine) bool { return l.Kind == linePutBegin }); i >= 0 {
		add("before the input", []string{coverPutBegin}, at(i, false))
	}
	// Several kills in one run, each in the process resumed after the one
	// before, on lines that must come again after it: during the parent's
	// second model call, inside a subagent's first model call, during the
	// write of that subagent's result.
	var multi []killAt
	for _, k := range []killAt{
		{Key: lineModelBegin + "||parent|1", N: 1, After: true},
		{Key: lineModelBegin + "||parent / general-purpose#t1|0", N: 1},
		{Key: linePutBegin + "||parent|write t1 result", N: 1, After: true},
	} {
		if slices.ContainsFunc(ref, func(l crashLine) bool { return l.key() == k.Key }) {
			multi = append(multi, k)
		}
	}
	if len(multi) == 3 {
		add("three kills", []string{coverMulti, coverParentModel, coverChildModel, coverPutDuring}, multi...)
	}
	// The end is saved but the process dies before it knows, still holding
	// the lease: the resumed process finds nothing left to do.
	if i := slices.IndexFunc(ref, func(l crashLine) bool {
		return l.Kind == lineEvent && l.Type == string(agent.RunEnd) && l.Agent == "parent"
	}); i >= 0 {
		add("after the end", []string{coverPutEnd}, at(i, false))
	}
	return points, covers
}

// nextLine finds the first line after i of this kind, agent and detail.
func nextLine(ref []crashLine, i int, kind, agentPath, detail string) int {
	for j := i + 1; j < len(ref); j++ {
		if ref[j].Kind == kind && ref[j].Agent == agentPath && ref[j].Detail == detail {
			return j
		}
	}
	return -1
}

// TestCrashSIGKILLResumesToTheSameEnd runs the scenario in a child process
// on SQLite, kills it with SIGKILL at points chosen from an uncrashed run's
// stream (model calls of the parent and of subagents, tool calls ending while
// others of their step run, subagent steps, before, during and after
// checkpoint writes, and several kills in one run), resumes it each time, and
// checks that the end is the uncrashed run's and that no call (tool or model)
// whose result was saved before a kill ever ran again. The killed process's
// lease on the thread must not hold the resumed one back: it names a dead
// local process, so it is taken over at once.
func TestCrashSIGKILLResumesToTheSameEnd(t *testing.T) {
	began := time.Now()
	// Runs after the parallel subtests are done.
	t.Cleanup(func() { t.Logf("wall time %v", time.Since(began).Round(time.Millisecond)) })
	refDir := t.TempDir()
	ref := runCrashChild(t, refDir, "start", nil)
	if ref.code != 0 || ref.exitErr != "" {
		t.Fatalf("uncrashed run: exit %d, %s\n%s", ref.code, ref.exitErr, ref.other)
	}
	want := readCrashEnd(t, refDir)
	if got := want.NS["parent"]; got.Status != agent.StatusOK || got.Rounds != 4 {
		t.Fatalf("uncrashed run ended %+v", got)
	}
	if len(want.NS) != 3 || len(want.Files) != 3 {
		t.Fatalf("uncrashed run: namespaces %v, files %v", slices.Sorted(maps.Keys(want.NS)), want.Files)
	}
	wantCounts := readCounter(t, refDir)
	if len(wantCounts) != 8 {
		t.Fatalf("uncrashed run: counter %v, want 8 calls", wantCounts)
	}
	for k, n := range wantCounts {
		if n != 1 {
			t.Fatalf("uncrashed run: %s ran %d times", k, n)
		}
	}

	points, covers := chooseCrashPoints(ref.lines)
	kills := 0
	for _, p := range points {
		kills += len(p.kills)
	}
	t.Logf("%d lines in the uncrashed run; %d points, %d kills: %v", len(ref.lines), len(points), kills, covers)
	if kills < 20 {
		t.Fatalf("only %d kill points", kills)
	}
	for _, w := range []string{coverParentModel, coverChildModel, coverBetween, coverChildStep, coverPutBegin, coverPutDuring, coverPutEnd, coverMulti} {
		if covers[w] == 0 {
			t.Errorf("no kill point %s", w)
		}
	}

	for i, p := range points {
		t.Run(fmt.Sprintf("%02d %s", i, p.name), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			mode := "start"
			var saved []crashSaved
			var counts []map[string]int
			var after []childRun // the runs after each kill
			var all []childRun
			run := func(mode string, k *killAt) childRun {
				r := runCrashChild(t, dir, mode, k)
				all = append(all, r)
				return r
			}
			t.Cleanup(func() {
				if !t.Failed() {
					return
				}
				for n, r := range all {
					keys := make([]string, len(r.lines))
					for i, l := range r.lines {
						keys[i] = l.key()
					}
					t.Logf("process %d (killed %v, exit %d %q):\n%s\n%s", n+1, r.killed, r.code, r.exitErr, strings.Join(keys, "\n"), r.other)
				}
			})
			for _, k := range p.kills {
				r := run(mode, &k)
				if !r.killed && strings.Contains(r.exitErr, "has no run to resume") {
					// The kill came before the input was saved.
					mode = "start"
					r = run(mode, &k)
				}
				if !r.killed {
					t.Fatalf("the child ended (exit %d, %q) before kill point %v came", r.code, r.exitErr, k)
				}
				if len(saved) > 0 {
					after = append(after, r)
				}
				s := readCrashSaved(t, dir)
				// The dead process still holds the thread: the next one must
				// take its lease over, not wait for it to run out.
				if !strings.Contains(s.holder, fmt.Sprintf("/%d/", r.pid)) {
					t.Fatalf("after the kill the thread's lease is held by %q, not by the killed process %d", s.holder, r.pid)
				}
				// Every result the saver took before the kill is read back
				// as finished, so the resumed run cannot run its call again.
				for call := range writtenResults(r) {
					if !s.finished[call] {
						t.Errorf("the result of call %s was saved before kill %d but is not read back as finished", call, len(saved)+1)
					}
					s.written[call] = true
				}
				for _, earlier := range saved {
					for call := range earlier.written {
						s.written[call] = true
					}
				}
				saved = append(saved, s)
				counts = append(counts, readCounter(t, dir))
				mode = "resume"
			}
			r := run(mode, nil)
			if strings.Contains(r.exitErr, "has no run to resume") {
				r = run("start", nil)
			}
			after = append(after, r)
			switch {
			case strings.Contains(r.exitErr, "has no unfinished run"):
				// The kill came after the run's end was saved.
			case r.code != 0 || r.exitErr != "":
				t.Fatalf("resumed run: exit %d, %s\n%s", r.code, r.exitErr, r.other)
			}
			compareCrashEnd(t, readCrashEnd(t, dir), want)

			final := readCounter(t, dir)
			for k := range wantCounts {
				if final[k] == 0 {
					t.Errorf("call %s never ran", k)
				}
			}
			for k := range final {
				if wantCounts[k] == 0 {
					t.Errorf("call %s is not in the uncrashed run", k)
				}
			}
			for n := range saved {
				// Calls whose result write returned before the kill, as the
				// child's own lines tell, whatever the database says.
				for call := range saved[n].written {
					if wantCounts[call] > 0 && counts[n][call] == 0 {
						t.Errorf("call %s wrote its result before kill %d but its side effect is not in the counter", call, n+1)
					}
					if final[call] != counts[n][call] {
						t.Errorf("call %s wrote its result before kill %d but ran again (%d → %d runs)", call, n+1, counts[n][call], final[call])
					}
				}
				for call := range saved[n].finished {
					if wantCounts[call] > 0 && counts[n][call] == 0 {
						t.Errorf("call %s was saved as finished at kill %d but its side effect is not in the counter", call, n+1)
					}
					if final[call] != counts[n][call] {
						t.Errorf("call %s was saved as finished at kill %d but ran again (%d → %d runs)", call, n+1, counts[n][call], final[call])
					}
				}
				// Model calls whose responses were saved are never asked
				// again, in any later process.
				for _, later := range after[n:] {
					for _, l := range later.lines {
						if l.Kind != lineModelBegin {
							continue
						}
						round, _ := strconv.Atoi(l.Detail)
						if round < saved[n].rounds[l.Agent] {
							t.Errorf("model call %s round %d was saved at kill %d but was made again", l.Agent, round, n+1)
						}
					}
				}
			}
			resumed := false
			for _, l := range after[0].lines {
				if l.Kind == lineEvent && l.Type == string(agent.Notice) && strings.Contains(string(l.Event), `"source":"resume"`) {
					resumed = true
				}
			}
			if !resumed && len(saved[0].rounds) > 0 && !strings.Contains(after[0].exitErr, "has no unfinished run") {
				t.Errorf("the run after the kill did not say it resumed")
			}
		})
	}
}
