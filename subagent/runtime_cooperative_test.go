package subagent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/approve"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/runner"
	"github.com/deepagents-go/deepagents/subagent"
	"github.com/deepagents-go/deepagents/tool"
)

// coop is a cooperative agent.Runtime, built the way a durable-execution
// engine's workflow code runs: every task (the run itself, and each call
// Fanout starts) has its own goroutine, but only the one holding the turn
// runs, and the scheduler on the test's goroutine hands the turn out one
// task at a time, in a fixed order. A task gives the turn back only by
// finishing or by waiting on one of the runtime's primitives (Queue.Next,
// Semaphore.Acquire). A task waiting with a context that is done is woken
// by the scheduler itself, between turns, in the order the tasks were
// started, so cancellations are as deterministic as the rest. Its timers
// are virtual: when no task can run, the clock jumps to the next one. A task that blocks anywhere else keeps the
// turn; the scheduler fails the test after a second with its stack. So does
// a run in which no task can run and none will be woken.
type coop struct {
	t tb

	mu       sync.Mutex
	now      time.Time
	runnable []*coopTask
	timers   []*coopTimer
	running  *coopTask
	tasks    []*coopTask          // every task, in the order they started
	parked   map[*coopTask]string // the tasks waiting, and on what
	// maxParked is the most tasks that waited at once.
	maxParked int
	live      int
	started   int
	timeouts  int

	wake chan struct{} // a goroutine outside the tasks made one runnable
	turn chan struct{} // the running task gives the turn back
}

// tb is what coop needs of a *testing.T.
type tb interface {
	Helper()
	Fatalf(format string, args ...any)
}

type coopTask struct {
	name   string
	gid    string // its goroutine's id, once it started
	resume chan struct{}
	queued bool
	done   bool
	// ctx is the context the task waits with, while it waits.
	ctx context.Context
}

type coopTimer struct {
	at   time.Time
	fire func()
}

func newCoop(t tb) *coop {
	return &coop{t: t, now: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC), parked: map[*coopTask]string{},
		wake: make(chan struct{}, 1), turn: make(chan struct{})}
}

// spawn makes a task of f; it runs when the scheduler gives it the turn.
func (c *coop) spawn(name string, f func()) *coopTask {
	tk := &coopTask{name: name, resume: make(chan struct{})}
	c.mu.Lock()
	c.live++
	c.started++
	c.tasks = append(c.tasks, tk)
	c.mu.Unlock()
	go func() {
		c.mu.Lock()
		tk.gid = goroutineID()
		c.mu.Unlock()
		<-tk.resume
		defer func() {
			c.mu.Lock()
			tk.done = true
			c.live--
			c.mu.Unlock()
			c.turn <- struct{}{}
		}()
		f()
	}()
	c.ready(tk)
	return tk
}

// ready makes tk runnable, once, unless it has finished. Any goroutine may
// call it.
func (c *coop) ready(tk *coopTask) {
	c.mu.Lock()
	if !tk.queued && !tk.done {
		tk.queued = true
		c.runnable = append(c.runnable, tk)
	}
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// park gives the turn back until the task is made runnable again. Only the
// running task calls it, from inside a primitive.
func (c *coop) park(on string) {
	c.mu.Lock()
	tk := c.running
	running := ""
	if tk != nil {
		running = tk.gid
	}
	c.mu.Unlock()
	if gid := goroutineID(); gid != running {
		panic(fmt.Sprintf("coop: goroutine %s waits on %s but is not the running task", gid, on))
	}
	c.mu.Lock()
	c.parked[tk] = on
	c.maxParked = max(c.maxParked, len(c.parked))
	c.mu.Unlock()
	c.turn <- struct{}{}
	<-tk.resume
}

// run runs f as the first task and schedules until it finishes; every task
// must have finished with it.
func (c *coop) run(f func()) {
	c.t.Helper()
	c.schedule(c.spawn("run", f))
}

// schedule hands the turn out until main finishes, or the test fails.
func (c *coop) schedule(main *coopTask) {
	c.t.Helper()
	for {
		c.mu.Lock()
		for _, tk := range c.tasks {
			if tk.ctx != nil && tk.ctx.Err() != nil && !tk.queued && !tk.done {
				tk.queued = true
				c.runnable = append(c.runnable, tk)
			}
		}
		if main.done {
			live := c.live
			c.mu.Unlock()
			if live > 0 {
				c.t.Fatalf("the run ended with %d tasks still waiting:\n%s", live, c.parkedStacks())
			}
			return
		}
		if len(c.runnable) > 0 {
			tk := c.runnable[0]
			c.runnable = c.runnable[1:]
			tk.queued = false
			delete(c.parked, tk)
			c.running = tk
			c.mu.Unlock()
			tk.resume <- struct{}{}
			if stack, ok := c.awaitTurn(tk); !ok {
				c.t.Fatalf("task %q blocked for 1s outside the runtime's primitives:\n%s", tk.name, stack)
				return
			}
			c.mu.Lock()
			c.running = nil
			c.mu.Unlock()
			continue
		}
		if len(c.timers) > 0 {
			slices.SortStableFunc(c.timers, func(a, b *coopTimer) int { return a.at.Compare(b.at) })
			tm := c.timers[0]
			c.timers = c.timers[1:]
			c.now = tm.at
			c.mu.Unlock()
			tm.fire()
			continue
		}
		c.mu.Unlock()
		select {
		case <-c.wake:
		case <-time.After(time.Second):
			c.t.Fatalf("for 1s no task could run and the run did not finish; waiting:\n%s", c.parkedStacks())
			return
		}
	}
}

// awaitTurn waits for tk to give the turn back. After a second it looks at
// tk's goroutine: one that waits (on a channel, a lock, a timer, ...) and
// still waits, on the same stack, a moment later is blocked outside the
// runtime's primitives, since those give the turn back before they wait,
// and awaitTurn returns its stack. One that is only slow (running, or
// runnable on a loaded machine) is given more time.
func (c *coop) awaitTurn(tk *coopTask) (stack string, ok bool) {
	c.mu.Lock()
	gid := tk.gid // set before the task took the turn
	c.mu.Unlock()
	check := time.NewTimer(time.Second)
	defer check.Stop()
	for {
		select {
		case <-c.turn:
			return "", true
		case <-check.C:
		}
		if first, waits := goroutineWaits(gid); waits {
			select {
			case <-c.turn:
				return "", true
			case <-time.After(50 * time.Millisecond):
			}
			if again, waits := goroutineWaits(gid); waits && again == first {
				return again, false
			}
		}
		check.Reset(100 * time.Millisecond)
	}
}

// goroutineWaits returns the stack of goroutine gid and whether it is
// waiting rather than running or ready to run.
func goroutineWaits(gid string) (string, bool) {
	stack := stackOf(gid)
	header, _, _ := strings.Cut(stack, "\n")
	_, state, _ := strings.Cut(header, "[")
	for _, busy := range []string{"running", "runnable", "preempted", "syscall"} {
		if strings.HasPrefix(state, busy) {
			return stack, false
		}
	}
	return stack, strings.HasPrefix(header, "goroutine ")
}

func (c *coop) parkedStacks() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	for tk, on := range c.parked {
		fmt.Fprintf(&b, "task %q on %s:\n%s\n", tk.name, on, stackOf(tk.gid))
	}
	return b.String()
}

func (c *coop) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (*coop) CallID(round, index int) string { return fmt.Sprintf("call_%d_%d", round, index) }

// Model and Tool make the calls in process, on the calling task's goroutine.
func (*coop) Model(ctx context.Context, req *llm.Request, next agent.ModelFunc) (*llm.Response, error) {
	return next(ctx, req)
}

func (*coop) Tool(ctx context.Context, call *agent.ToolCall, next agent.ToolFunc) (tool.Result, error) {
	return next(ctx, call)
}

func (c *coop) Fanout(calls []func()) {
	for i, f := range calls {
		c.spawn(fmt.Sprintf("call %d of %d", i+1, len(calls)), f)
	}
}

// Timeout is a virtual timer: its context is done when the scheduler, with
// no task to run, moves the clock to it.
func (c *coop) Timeout(ctx context.Context, d time.Duration, cause error) (context.Context, context.CancelFunc) {
	if cause == nil {
		cause = context.DeadlineExceeded
	}
	tctx, cancel := context.WithCancelCause(ctx)
	tm := &coopTimer{fire: func() { cancel(cause) }}
	c.mu.Lock()
	c.timeouts++
	tm.at = c.now.Add(d)
	c.timers = append(c.timers, tm)
	c.mu.Unlock()
	return tctx, func() {
		c.mu.Lock()
		c.timers = slices.DeleteFunc(c.timers, func(x *coopTimer) bool { return x == tm })
		c.mu.Unlock()
		cancel(context.Canceled)
	}
}

// wait parks the running task until ready is true or ctx is done; ready is
// checked under c.mu and, when false, registers the task to be woken.
func (c *coop) wait(ctx context.Context, on string, ready func(me *coopTask) bool) error {
	for {
		c.mu.Lock()
		me := c.running
		ok := ready(me)
		c.mu.Unlock()
		if ok {
			return nil
		}
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		c.mu.Lock()
		me.ctx = ctx
		c.mu.Unlock()
		// The scheduler wakes the task once ctx is done; this only rouses
		// a scheduler with nothing to run.
		stop := context.AfterFunc(ctx, func() {
			select {
			case c.wake <- struct{}{}:
			default:
			}
		})
		c.park(on)
		stop()
		c.mu.Lock()
		me.ctx = nil
		c.mu.Unlock()
	}
}

func (c *coop) Queue() agent.Queue { return &coopQueue{c: c} }

type coopQueue struct {
	c      *coop
	items  []any
	waiter *coopTask
	closed bool
}

func (q *coopQueue) Put(v any) {
	q.c.mu.Lock()
	if q.closed {
		q.c.mu.Unlock()
		return
	}
	q.items = append(q.items, v)
	w := q.waiter
	q.waiter = nil
	q.c.mu.Unlock()
	if w != nil {
		q.c.ready(w)
	}
}

func (q *coopQueue) Next(ctx context.Context) any {
	var v any
	_ = q.c.wait(ctx, "Queue.Next", func(me *coopTask) bool {
		if len(q.items) == 0 {
			q.waiter = me
			return false
		}
		v, q.items = q.items[0], q.items[1:]
		return true
	})
	return v
}

func (q *coopQueue) Close() {
	q.c.mu.Lock()
	q.closed, q.items = true, nil
	q.c.mu.Unlock()
}

func (c *coop) Semaphore(n int) agent.Semaphore { return &coopSemaphore{c: c, n: max(n, 1)} }

type coopSemaphore struct {
	c       *coop
	n, held int
	waiters []*coopTask
}

func (s *coopSemaphore) Acquire(ctx context.Context) error {
	return s.c.wait(ctx, "Semaphore.Acquire", func(me *coopTask) bool {
		if s.held < s.n {
			s.held++
			return true
		}
		s.waiters = append(s.waiters, me)
		return false
	})
}

func (s *coopSemaphore) Release() {
	s.c.mu.Lock()
	s.held--
	ws := s.waiters
	s.waiters = nil
	s.c.mu.Unlock()
	for _, w := range ws {
		s.c.ready(w)
	}
}

func goroutineID() string {
	var buf [64]byte
	s := string(buf[:runtime.Stack(buf[:], false)])
	s = strings.TrimPrefix(s, "goroutine ")
	id, _, _ := strings.Cut(s, " ")
	if _, err := strconv.Atoi(id); err != nil {
		panic("coop: cannot read the goroutine id from " + s)
	}
	return id
}

// stackOf is the stack of goroutine gid, from a dump of all of them.
func stackOf(gid string) string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.HasPrefix(g, "goroutine "+gid+" [") {
			return g
		}
	}
	return "(goroutine " + gid + " not found)"
}

// A parent fans out two subagents through the task tool (and writes a file
// itself in the same step); each subagent makes tool calls of its own. On
// the cooperative runtime the whole delegation runs one task at a time:
// both subagents are in the middle of their runs at once, finished calls
// are reported as they finish, the parallel limit holds, and the stream is
// the same on every run.
func TestCooperativeRuntimeRunsParallelDelegation(t *testing.T) {
	run := func(limit int) ([]byte, *agent.Result, *coop) {
		m := scripted.New(scripted.Script{
			"parent": {Steps: []scripted.Step{
				step("", scripted.StepCall{ID: "t1", Name: "task", Args: json.RawMessage(`{"description":"write a","subagent_type":"general-purpose"}`)},
					scripted.StepCall{ID: "t2", Name: "task", Args: json.RawMessage(`{"description":"write b","subagent_type":"helper"}`)},
					tc("write", `{"path":"/p.txt","content":"parent"}`)),
				step("all done"),
			}},
			"general-purpose": {Steps: []scripted.Step{
				step("", tc("write", `{"path":"/a.txt","content":"a"}`), tc("note", `{}`)),
				step("wrote a"),
			}},
			"helper": {Steps: []scripted.Step{
				step("", tc("write", `{"path":"/b.txt","content":"b"}`)),
				step("", tc("note", `{}`)),
				step("wrote b"),
			}},
		}, scripted.Options{})
		task := newTask(t, subagent.Config{Model: m, Subagents: []subagent.Spec{subagent.GeneralPurpose(), {Name: "helper", Description: "Helps."}}, DefaultTools: []tool.Tool{noteTool}})
		a, err := agent.New(agent.Config{Model: m, Tools: []tool.Tool{writeTool, task}, MaxParallel: limit})
		if err != nil {
			t.Fatal(err)
		}
		c := newCoop(t)
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		var res *agent.Result
		c.run(func() {
			res, err = agent.Drain(a.Run(t.Context(), agent.Prompt("delegate"), agent.WithRuntime(c)), func(ev agent.Event) {
				if err := enc.Encode(ev); err != nil {
					t.Error(err)
				}
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		return buf.Bytes(), res, c
	}
	ends := func(stream []byte) map[string]int {
		order := map[string]int{}
		i := 0
		for dec := json.NewDecoder(bytes.NewReader(stream)); dec.More(); i++ {
			var ev agent.Event
			if err := dec.Decode(&ev); err != nil {
				t.Fatal(err)
			}
			if ev.Type == agent.ToolEnd && ev.Agent.String() == "parent" {
				// The task calls by id, the parent's write by name.
				key := ev.Tool.CallID
				if ev.Tool.Name == "write" {
					key = "write"
				}
				order[key] = i
			}
		}
		return order
	}
	first, res, c := run(0)
	if len(res.Children) != 2 || res.FinalText() != "all done" || len(res.State.Files) != 3 {
		t.Fatalf("children %d, final %q, files %v", len(res.Children), res.FinalText(), res.State.Files)
	}
	for id, want := range map[string]string{"t1": "wrote a", "t2": "wrote b"} {
		if ch := res.Children[id]; ch == nil || ch.FinalText() != want {
			t.Errorf("child of %s: %+v, want it to end with %q", id, ch, want)
		}
	}
	// The run, both subagents' loops (each waiting for its own calls) at
	// least: they were in flight together, not one after the other.
	if c.maxParked < 3 {
		t.Errorf("at most %d tasks waited at once; the subagents did not run side by side", c.maxParked)
	}
	// The parent's three calls and the subagents' three run as tasks.
	if c.started < 1+3+3 {
		t.Errorf("%d tasks started, want the run and its 6 calls at least", c.started)
	}
	// Finished calls are reported as they finish: the parent's write, which
	// needs no model call, ends before either subagent does.
	if order := ends(first); len(order) != 3 || order["t1"] < order["write"] || order["t2"] < order["write"] {
		t.Errorf("the parent's tool ends came at %v", order)
	}
	if again, _, _ := run(0); !bytes.Equal(first, again) {
		t.Errorf("a second run on a fresh cooperative runtime streamed other events:\n%s\n---\n%s", first, again)
	}
	// Two at a time: the write waits for a subagent to end.
	limited, res, _ := run(2)
	if order := ends(limited); len(order) != 3 || order["write"] < min(order["t1"], order["t2"]) {
		t.Errorf("with a limit of 2 the parent's tool ends came at %v", order)
	}
	if len(res.State.Files) != 3 {
		t.Errorf("with a limit of 2: files %v", res.State.Files)
	}
}

// A parent's write and a subagent's write both need a person's approval:
// the run stops with both calls waiting, and resumes with the decisions to
// its end, every step of both runs one task at a time on the cooperative
// runtime.
func TestCooperativeRuntimeRunsApproval(t *testing.T) {
	m := scripted.New(scripted.Script{
		"parent": {Steps: []scripted.Step{
			step("", scripted.StepCall{ID: "t1", Name: "task", Args: json.RawMessage(`{"description":"write a","subagent_type":"helper"}`)},
				scripted.StepCall{ID: "w1", Name: "write", Args: json.RawMessage(`{"path":"/p.txt","content":"parent"}`)}),
			step("all done"),
		}},
		"helper": {Steps: []scripted.Step{
			step("", scripted.StepCall{ID: "w2", Name: "write", Args: json.RawMessage(`{"path":"/a.txt","content":"a"}`)}, tc("note", `{}`)),
			step("wrote a"),
		}},
	}, scripted.Options{})
	gates := map[string]approve.Policy{"write": {}}
	task := newTask(t, subagent.Config{Model: m, Middleware: []agent.Middleware{approve.Gate(gates)}, Subagents: []subagent.Spec{{Name: "helper", Description: "Helps.", Tools: []tool.Tool{noteTool}}}})
	a, err := agent.New(agent.Config{Model: m, Tools: []tool.Tool{writeTool, task}, Middleware: []agent.Middleware{approve.Gate(gates)}})
	if err != nil {
		t.Fatal(err)
	}
	saver := checkpoint.NewMemory(0)
	c := newCoop(t)
	var res *agent.Result
	c.run(func() {
		res, err = a.Invoke(t.Context(), agent.Prompt("go"), agent.WithRuntime(c), runner.Checkpoints(saver, "T"))
	})
	if !errors.Is(err, agent.ErrInterrupted) {
		t.Fatalf("first run: %v", err)
	}
	var waiting []string
	for _, in := range res.Interrupts {
		waiting = append(waiting, in.CallID)
	}
	if !slices.Equal(waiting, []string{"w1", "w2"}) {
		t.Fatalf("waiting calls %v, want w1 (the parent's) and w2 (the subagent's)", waiting)
	}
	if len(res.State.Files) != 0 {
		t.Fatalf("files %v before any approval", res.State.Files)
	}

	c = newCoop(t)
	c.run(func() {
		res, err = a.Invoke(t.Context(), agent.Input{}, agent.WithRuntime(c), runner.Checkpoints(saver, "T"),
			agent.WithDecisions(agent.Decision{Type: agent.Approve, CallID: "w1"}, agent.Decision{Type: agent.Approve, CallID: "w2", Path: res.Interrupts[1].Path}))
	})
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if res.FinalText() != "all done" || len(res.State.Files) != 2 {
		t.Fatalf("final %q, files %v", res.FinalText(), res.State.Files)
	}
	if ch := res.Children["t1"]; ch == nil || ch.FinalText() != "wrote a" {
		t.Errorf("child of t1: %+v", ch)
	}
}

// fakeT records a failure instead of ending the test.
type fakeT struct{ failed string }

func (*fakeT) Helper() {}

func (f *fakeT) Fatalf(format string, args ...any) { f.failed = fmt.Sprintf(format, args...) }

// A tool call that blocks on something other than the runtime's primitives
// (here a channel of its own) is caught within a second or so, with its
// stack; once it lets go, the run goes on to its end.
func TestCooperativeRuntimeCatchesABlockedCall(t *testing.T) {
	release := make(chan struct{})
	block := tool.MustFunc("block", "Block.", func(context.Context, *tool.Env, struct{}) (string, error) {
		<-release
		return "let go", nil
	})
	m := scripted.New(scripted.Script{"parent": {Steps: []scripted.Step{step("", tc("block", `{}`)), step("done")}}}, scripted.Options{})
	a, err := agent.New(agent.Config{Model: m, Tools: []tool.Tool{block}})
	if err != nil {
		t.Fatal(err)
	}
	fake := &fakeT{}
	c := newCoop(fake)
	var res *agent.Result
	main := c.spawn("run", func() { res, err = a.Invoke(t.Context(), agent.Prompt("go"), agent.WithRuntime(c)) })
	start := time.Now()
	c.schedule(main)
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("the blocked call was caught after %v", took)
	}
	if !strings.Contains(fake.failed, "blocked for 1s outside the runtime's primitives") || !strings.Contains(fake.failed, "TestCooperativeRuntimeCatchesABlockedCall") {
		t.Fatalf("failure %q, want the blocked call with its stack", fake.failed)
	}
	close(release)
	<-c.turn // the call ends
	c.t = t
	c.schedule(main)
	if err != nil || res.FinalText() != "done" {
		t.Fatalf("after the call let go: %v, %q", err, res.FinalText())
	}
}

// A run cancelled while its two subagents are in the middle of their runs
// stops on the cooperative runtime too: the loop waits for the subagents
// through the runtime's primitives (its timer bounding the wait), they see
// the cancellation and stop, and the result keeps their runs; the stream is
// the same on every run.
func TestCooperativeRuntimeRunsCancellation(t *testing.T) {
	run := func() ([]byte, *agent.Result, *coop) {
		m := scripted.New(scripted.Script{
			"parent": {Steps: []scripted.Step{
				step("", scripted.StepCall{ID: "t1", Name: "task", Args: json.RawMessage(`{"description":"write a","subagent_type":"helper"}`)},
					scripted.StepCall{ID: "t2", Name: "task", Args: json.RawMessage(`{"description":"write b","subagent_type":"helper"}`)}),
				step("all done"),
			}},
			"helper": {Steps: []scripted.Step{
				step("", tc("write", `{"path":"/x.txt","content":"x"}`)),
				step("", tc("note", `{}`)),
				step("wrote"),
			}},
		}, scripted.Options{})
		task := newTask(t, subagent.Config{Model: m, Subagents: []subagent.Spec{{Name: "helper", Description: "Helps.", Tools: []tool.Tool{noteTool}}}})
		a, err := agent.New(agent.Config{Model: m, Tools: []tool.Tool{task}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		c := newCoop(t)
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		var res *agent.Result
		c.run(func() {
			res, err = agent.Drain(a.Run(ctx, agent.Prompt("go"), agent.WithRuntime(c)), func(ev agent.Event) {
				if err := enc.Encode(ev); err != nil {
					t.Error(err)
				}
				if ev.Type == agent.ToolEnd && ev.Agent.String() != "parent" {
					// A subagent's first call ended: cut the run.
					cancel()
				}
			})
		})
		if !errors.Is(err, agent.ErrCancelled) || res == nil || res.Status != agent.StatusCancelled {
			t.Fatalf("run: %v (%+v)", err, res)
		}
		return buf.Bytes(), res, c
	}
	first, res, c := run()
	if len(res.Children) != 2 {
		t.Fatalf("children %v, want both subagents' runs kept", res.Children)
	}
	for id, ch := range res.Children {
		if ch.Status != agent.StatusCancelled {
			t.Errorf("child of %s ended %s", id, ch.Status)
		}
	}
	if c.maxParked < 3 {
		t.Errorf("at most %d tasks waited at once; the subagents did not run side by side", c.maxParked)
	}
	if c.timeouts == 0 {
		t.Error("the cancelled step did not wait for its subagents on the runtime's timer")
	}
	if again, _, _ := run(); !bytes.Equal(first, again) {
		t.Errorf("a second run on a fresh cooperative runtime streamed other events:\n%s\n---\n%s", first, again)
	}
}
