package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/tool"
	"github.com/deepagents-go/deepagents/vfs"
)

// This file runs background subagents: runs a nested tool (the task tool)
// starts and returns from at once, which go on beside their parent's steps.
// They run through the parent's Runtime (Fanout, Queue, Timeout), report
// their events into a buffer the loop empties, and end with a receipt that
// the loop appends to the parent's messages, as a notification, before its
// next model call. subagent/doc.go says what a model and a user see.

// DefaultBackgroundRunning is how many background subagent runs one run may
// have going at once when the tool that starts them sets no bound.
const DefaultBackgroundRunning = 4

// BackgroundTask is a background subagent run as its parent saves it, until
// its receipt has reached the parent's messages: enough to start it again
// after a crash (its own thread namespace then resumes it, or gives its
// saved result).
type BackgroundTask struct {
	// ID is the task's id: the id of the tool call that started it, the
	// call id of its path's last segment.
	ID string `json:"id"`
	// Tool is the nested tool that started it, Args the call's arguments
	// (started again with run_in_background set to true, so that it runs
	// in the background whatever its subagent's default has become).
	Tool string          `json:"tool"`
	Args json.RawMessage `json:"args"`
	// Name is the subagent's name.
	Name string `json:"name"`
	// ParentStep names the parent's step that started it (namespace@step
	// id), which its thread namespace is recorded under.
	ParentStep string `json:"parent_step,omitempty"`
	// Cancelled: its parent cancelled it (task_cancel). A resumed run
	// does not start it again but gives it a cancelled receipt.
	Cancelled bool `json:"cancelled,omitempty"`
}

// BackgroundRun is a subagent run a nested tool starts in the background
// (Background.Start): c.Agent.Run(ctx, c.Input, c.Options...) on the
// hosting run's runtime, under the hosting run's context.
type BackgroundRun struct {
	Agent *Agent
	// Name and Mode are the subagent's, Brief the task it was given.
	Name, Mode, Brief string
	// Path is the run's agent path (its AsChild path).
	Path Path
	// Input is the run's input; a nil Backend runs it on a copy-on-write
	// layer of the hosting run's files (or, when those cannot branch, on
	// them directly), merged when its receipt reaches the hosting run.
	Input Input
	// Options start the run (caps, AsChild, and the hosting run's
	// Host.Options so that it is recorded under its own namespace).
	Options []RunOption
	// MaxRunning bounds the hosting run's background runs going at once
	// (0: DefaultBackgroundRunning); a start past it is refused.
	MaxRunning int
	// Receipt turns the run's result into what the hosting run's model
	// reads: the same receipt a run in the foreground gives.
	Receipt func(*Result) tool.Result
	// Context, when set, makes the run's context from the one it is given
	// (a token budget of its own, say, and a tally that counts its spending
	// towards the hosting run's). It is called once, before the run starts.
	// The state values of its receipt (Receipt) apply to the hosting run
	// when the receipt reaches its messages, as a tool result's do.
	Context func(context.Context) context.Context
	// Saved is what the hosting run saves to start it again after a crash
	// (Tool, Args, ParentStep; ID and Name are filled in).
	Saved BackgroundTask
}

// TaskInfo is what the steering tools and callers see of a background
// run.
type TaskInfo struct {
	ID, Name, Mode, Brief string
	Path                  Path
	// Running: it has not ended; Status is how it ended otherwise.
	Running bool
	Status  Status
	// Cancelled: a cancellation was asked for (task_cancel).
	Cancelled      bool
	Started, Ended time.Time
	// Rounds counts its own model calls, Usage its tree's so far.
	Rounds int
	Usage  llm.Usage
	// Text is the last text it wrote while running; its receipt once it
	// ended.
	Text    string
	IsError bool
}

// Background is the registry of a run's background subagent runs. A
// nested tool finds the one of the run hosting its call with BackgroundOf.
// Its methods may be called from any goroutine.
type Background struct {
	rt      Runtime
	ctx     context.Context
	backend vfs.Backend
	parent  Path

	mu     sync.Mutex
	tasks  map[string]*bgTask
	order  []string
	events []Event
	wakers []*bgWaker
	// fresh are the tasks started by calls of the step in progress, by
	// call id, until the call's outcome is saved with them.
	fresh map[string]BackgroundTask
}

type bgTask struct {
	saved             BackgroundTask
	name, mode, brief string
	path              Path
	started, ended    time.Time
	cancel            context.CancelCauseFunc
	files             vfs.Backend
	receipt           func(*Result) tool.Result

	// Set under Background.mu.
	done      bool
	res       *Result
	result    tool.Result
	rounds    int
	usage     llm.Usage
	last      string
	notified  bool
	cancelled bool
	// touched are the paths the parent (or another background run)
	// changed since this one started, with who changed them.
	touched map[string]string
}

// bgWaker is a queue someone waits on for news of the background runs;
// pending says a wake-up is in it already, so that a queue never holds
// more than one and a Put never waits.
type bgWaker struct {
	q       Queue
	pending bool
}

// bgWake is what a bgWaker's queue carries.
type bgWake struct{}

type backgroundKey struct{}
type restartKey struct{}

// BackgroundOf returns the background registry of the run whose tool call
// ctx belongs to; nil when there is none (a tool run outside an agent
// loop).
func BackgroundOf(ctx context.Context) *Background {
	b, _ := ctx.Value(backgroundKey{}).(*Background)
	return b
}

func withBackground(ctx context.Context, b *Background) context.Context {
	return context.WithValue(ctx, backgroundKey{}, b)
}

func newBackground(r *run, ctx context.Context) *Background {
	return &Background{rt: r.rt, ctx: ctx, backend: r.backend, parent: r.path, tasks: map[string]*bgTask{}}
}

// errTaskCancelled ends a background run cancelled by task_cancel.
var errTaskCancelled = errors.New("cancelled by its parent (task_cancel)")

// parentEnded ends the background runs of a run that ends.
type parentEnded struct{ status Status }

func (e parentEnded) Error() string {
	return fmt.Sprintf("its parent run ended (%s) before it did", e.status)
}

// Start starts c in the background and returns at once. It refuses a start
// past c.MaxRunning, and a second task with the id of one not yet reported.
func (b *Background) Start(ctx context.Context, c BackgroundRun) (TaskInfo, error) {
	if c.Agent == nil || len(c.Path) == 0 {
		return TaskInfo{}, errors.New("a background run needs an agent and a path")
	}
	saved := c.Saved
	saved.ID, saved.Name = c.Path.Last().CallID, c.Name
	restart, restarting := ctx.Value(restartKey{}).(BackgroundTask)
	if restarting {
		saved = restart
	}
	limit := c.MaxRunning
	if limit <= 0 {
		limit = DefaultBackgroundRunning
	}
	b.mu.Lock()
	if old, ok := b.tasks[saved.ID]; ok && !old.notified {
		b.mu.Unlock()
		return TaskInfo{}, fmt.Errorf("a background task with id %s is still going; start this one with another call", saved.ID)
	}
	if n := b.runningLocked(); !restarting && n >= limit {
		b.mu.Unlock()
		what := fmt.Sprintf("%d background tasks are", n)
		if n == 1 {
			what = "1 background task is"
		}
		return TaskInfo{}, fmt.Errorf("%s running already, the most this agent may run at once; "+
			"wait for one to end (task_wait), cancel one (task_cancel), or run this task in the foreground", what)
	}
	t := &bgTask{saved: saved, name: c.Name, mode: c.Mode, brief: c.Brief, path: slices.Clone(c.Path),
		started: b.rt.Now(), receipt: c.Receipt}
	in := c.Input
	if in.Backend == nil {
		if br, ok := b.backend.(brancher); ok {
			in.Backend = br.Branch()
		} else if b.backend != nil {
			in.Backend = vfs.Track(b.backend)
		}
	}
	t.files = in.Backend
	var cctx context.Context
	cctx, t.cancel = context.WithCancelCause(b.ctx)
	if c.Context != nil {
		cctx = c.Context(cctx)
	}
	if _, ok := b.tasks[saved.ID]; !ok {
		b.order = append(b.order, saved.ID)
	}
	b.tasks[saved.ID] = t
	if !restarting {
		if b.fresh == nil {
			b.fresh = map[string]BackgroundTask{}
		}
		b.fresh[saved.ID] = saved
	}
	info := t.info()
	// Its start is reported before anything it does.
	b.events = append(b.events, Event{Type: SubagentStart, Agent: b.parent, Time: t.started, Subagent: &SubagentInfo{
		Name: c.Name, Mode: c.Mode, CallID: saved.ID, Path: t.path, Task: c.Brief, Background: true}})
	qs := b.wakeLocked()
	b.mu.Unlock()
	wake(qs)

	emit := b.emitter(t)
	opts := slices.Clone(c.Options)
	b.rt.Fanout([]func(){func() {
		res := runBackground(cctx, c.Agent, in, opts, emit, t.path)
		b.finish(t, res)
	}})
	return info, nil
}

// runBackground runs a background child to its end; a panic becomes an
// error result.
func runBackground(ctx context.Context, a *Agent, in Input, opts []RunOption, emit func(Event), path Path) (res *Result) {
	defer func() {
		if p := recover(); p != nil {
			res = &Result{Agent: path, Status: StatusError, Error: fmt.Sprintf("the subagent crashed: %v\n%s", p, debug.Stack())}
		}
	}()
	r, err := Drain(a.Run(ctx, in, opts...), emit)
	if r == nil {
		r = &Result{Agent: path, Status: StatusError}
		if err != nil {
			r.Error = err.Error()
		}
	}
	return r
}

// emitter returns what a background run's events go through: into the
// buffer the loop empties, counting its usage and keeping its last text.
func (b *Background) emitter(t *bgTask) func(Event) {
	return func(ev Event) {
		if ev.Type == InterruptEvent && ev.Interrupt != nil {
			// Nobody can answer a background run's question: its run ends
			// there (its receipt says so), and the stream is told, not
			// asked.
			ev = Event{Type: Notice, Agent: ev.Agent, TaskCall: ev.TaskCall, Time: ev.Time, Notice: &NoticeInfo{Source: "background", Count: 1,
				Text: fmt.Sprintf("background task %s stopped: its %s call needs a person's approval, which a background subagent cannot ask for", t.saved.ID, ev.Interrupt.Tool)}}
		}
		b.mu.Lock()
		if ev.Type == ModelResponse && ev.Response != nil && hasPrefix(ev.Agent, t.path) {
			t.usage = t.usage.Add(ev.Response.Usage)
			if ev.Agent.Equal(t.path) {
				t.rounds++
				if text := strings.TrimSpace(ev.Response.Text); text != "" {
					t.last = text
				}
			}
		}
		b.events = append(b.events, ev)
		qs := b.wakeLocked()
		b.mu.Unlock()
		wake(qs)
	}
}

func (b *Background) finish(t *bgTask, res *Result) {
	receipt := tool.Result{Content: NoBackgroundReport, IsError: res.Status != StatusOK}
	if t.receipt != nil {
		receipt = t.receipt(res)
	}
	now := b.rt.Now()
	b.mu.Lock()
	t.done, t.res, t.result, t.ended = true, res, receipt, now
	b.events = append(b.events, Event{Type: SubagentEnd, Agent: b.parent, Time: now, Subagent: &SubagentInfo{
		Name: t.name, Mode: t.mode, CallID: t.saved.ID, Path: t.path, Status: res.Status, Error: res.Error,
		Rounds: res.Rounds, Usage: res.Usage, Background: true, Run: res}})
	qs := b.wakeLocked()
	b.mu.Unlock()
	wake(qs)
}

// NoBackgroundReport is the receipt of a background run whose tool gave no
// way to make one.
const NoBackgroundReport = "The background subagent ended without a report."

func (b *Background) wakeLocked() []Queue {
	var qs []Queue
	for _, w := range b.wakers {
		if !w.pending {
			w.pending = true
			qs = append(qs, w.q)
		}
	}
	return qs
}

func wake(qs []Queue) {
	for _, q := range qs {
		q.Put(bgWake{})
	}
}

// watch registers q to be woken on news; unwatch undoes it.
func (b *Background) watch(q Queue) *bgWaker {
	w := &bgWaker{q: q}
	b.mu.Lock()
	b.wakers = append(b.wakers, w)
	b.mu.Unlock()
	return w
}

func (b *Background) unwatch(w *bgWaker) {
	b.mu.Lock()
	b.wakers = slices.DeleteFunc(b.wakers, func(x *bgWaker) bool { return x == w })
	b.mu.Unlock()
}

// woke says w's wake-up was taken: the next news puts another.
func (b *Background) woke(w *bgWaker) {
	b.mu.Lock()
	w.pending = false
	b.mu.Unlock()
}

func (b *Background) runningLocked() int {
	n := 0
	for _, t := range b.tasks {
		if !t.done {
			n++
		}
	}
	return n
}

// Running counts the runs that have not ended.
func (b *Background) Running() int {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.runningLocked()
}

// active counts the runs whose receipts have not reached the messages.
func (b *Background) active() int {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, t := range b.tasks {
		if !t.notified {
			n++
		}
	}
	return n
}

func (b *Background) any() bool {
	if b == nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.tasks) > 0
}

func (t *bgTask) info() TaskInfo {
	in := TaskInfo{ID: t.saved.ID, Name: t.name, Mode: t.mode, Brief: t.brief, Path: t.path, Running: !t.done,
		Cancelled: t.cancelled, Started: t.started, Ended: t.ended, Rounds: t.rounds, Usage: t.usage, Text: t.last}
	if t.done {
		in.Status, in.Text, in.IsError = t.res.Status, t.result.Content, t.result.IsError
		in.Usage, in.Rounds = t.res.Usage, t.res.Rounds
	}
	return in
}

// Tasks lists the run's background tasks of this run, in the order they
// started.
func (b *Background) Tasks() []TaskInfo {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]TaskInfo, 0, len(b.order))
	for _, id := range b.order {
		out = append(out, b.tasks[id].info())
	}
	return out
}

// Task returns one background task by id.
func (b *Background) Task(id string) (TaskInfo, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, ok := b.tasks[id]
	if !ok {
		return TaskInfo{}, false
	}
	return t.info(), true
}

// Cancel asks the background task id to stop; its receipt (status
// cancelled) then reaches the run as any other.
func (b *Background) Cancel(id string) (TaskInfo, error) {
	b.mu.Lock()
	t, ok := b.tasks[id]
	if !ok {
		b.mu.Unlock()
		return TaskInfo{}, fmt.Errorf("there is no background task %q", id)
	}
	if !t.done {
		t.cancelled, t.saved.Cancelled = true, true
		t.cancel(errTaskCancelled)
	}
	info := t.info()
	b.mu.Unlock()
	return info, nil
}

// Wait waits, up to timeout (0: until ctx ends), until the task id ends,
// or with id "" any task running when the wait began. ended says whether
// one did; info is that task's, or the one waited for.
func (b *Background) Wait(ctx context.Context, id string, timeout time.Duration) (info TaskInfo, ended bool, err error) {
	w := b.watch(b.rt.Queue())
	defer func() { b.unwatch(w); w.q.Close() }()
	if timeout > 0 {
		var stop context.CancelFunc
		ctx, stop = b.rt.Timeout(ctx, timeout, nil)
		defer stop()
	}
	var waited []string
	b.mu.Lock()
	if id != "" {
		if _, ok := b.tasks[id]; !ok {
			b.mu.Unlock()
			return TaskInfo{}, false, fmt.Errorf("there is no background task %q", id)
		}
		waited = []string{id}
	} else {
		for _, k := range b.order {
			if !b.tasks[k].done {
				waited = append(waited, k)
			}
		}
	}
	b.mu.Unlock()
	if len(waited) == 0 {
		return TaskInfo{}, false, errors.New("no background task is running")
	}
	for {
		b.mu.Lock()
		for _, k := range waited {
			if t := b.tasks[k]; t.done {
				info := t.info()
				b.mu.Unlock()
				return info, true, nil
			}
		}
		info := b.tasks[waited[0]].info()
		b.mu.Unlock()
		if v := w.q.Next(ctx); v == nil {
			return info, false, nil
		}
		b.woke(w)
	}
}

// take empties the event buffer and hands out the ended runs whose
// receipts are to reach the messages now, in the order they ended, marked
// as reported.
func (b *Background) take(report bool) (events []Event, ended []*bgTask) {
	b.mu.Lock()
	defer b.mu.Unlock()
	events, b.events = b.events, nil
	if !report {
		return events, nil
	}
	for _, id := range b.order {
		if t := b.tasks[id]; t.done && !t.notified {
			t.notified = true
			ended = append(ended, t)
		}
	}
	slices.SortStableFunc(ended, func(x, y *bgTask) int { return x.ended.Compare(y.ended) })
	return events, ended
}

// saved are the tasks whose receipts have not reached the messages, as
// the run saves them.
func (b *Background) saved() []BackgroundTask {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []BackgroundTask
	for _, id := range b.order {
		if t := b.tasks[id]; !t.notified {
			out = append(out, t.saved)
		}
	}
	return out
}

// takeFresh returns the task call id started, once, for its saved outcome.
func (b *Background) takeFresh(id string) *BackgroundTask {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s, ok := b.fresh[id]
	if !ok {
		return nil
	}
	delete(b.fresh, id)
	return &s
}

func (b *Background) has(id string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, ok := b.tasks[id]
	return ok && !t.notified
}

// touch notes that p was changed by who, for every run going on but who.
func (b *Background) touch(p, who string) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for id, t := range b.tasks {
		if id == who || t.notified {
			continue
		}
		if t.touched == nil {
			t.touched = map[string]string{}
		}
		t.touched[p] = who
	}
}

// cancelAll stops every run going on with cause.
func (b *Background) cancelAll(cause error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, t := range b.tasks {
		if !t.done {
			t.cancel(cause)
		}
	}
}

// failed records a saved task that could not be started again as ended
// with an error receipt, so that its parent still hears of it.
func (b *Background) failed(saved BackgroundTask, text string) {
	b.endedBefore(saved, StatusError, text,
		tool.Errorf("Background task %s (subagent %s) could not be started again after the run resumed: %s", saved.ID, saved.Name, text))
}

// cancelledBefore records a saved task that its parent had cancelled
// before the run stopped as ended, cancelled, without starting it again.
func (b *Background) cancelledBefore(saved BackgroundTask) {
	b.endedBefore(saved, StatusCancelled, errTaskCancelled.Error(),
		tool.Errorf("Background task %s (subagent %s) was cancelled (task_cancel) before the run stopped; it was not started again.", saved.ID, saved.Name))
}

// endedBefore records a saved task as ended with status and receipt,
// without running it.
func (b *Background) endedBefore(saved BackgroundTask, status Status, text string, receipt tool.Result) {
	now := b.rt.Now()
	res := &Result{Agent: b.parent.Child(saved.Name, saved.ID), Status: status, Error: text}
	t := &bgTask{saved: saved, name: saved.Name, path: res.Agent, started: now, ended: now, done: true, res: res,
		cancelled: saved.Cancelled, result: receipt}
	b.mu.Lock()
	if _, ok := b.tasks[saved.ID]; !ok {
		b.order = append(b.order, saved.ID)
	}
	b.tasks[saved.ID] = t
	b.mu.Unlock()
}

// NotificationText is the message that brings a background run's receipt
// to its parent's model.
func NotificationText(t TaskInfo) string {
	status := string(t.Status)
	if t.Cancelled && t.Status == StatusCancelled {
		status = "cancelled by you"
	}
	return fmt.Sprintf("[Background task %s (subagent %s) has ended: %s. Its report follows.]\n\n%s", t.ID, t.Name, status, t.Text)
}

// backgroundTurn runs before each model call: it reports the background
// runs' events, brings the receipts of those that ended into the messages,
// merging their files, and, when the model had ended its turn while some
// still run, waits for the next to end (a follow-up step of the same run).
// done ends the steps: the model had ended its turn and nothing is left to
// wait for.
func (r *run) backgroundTurn(ctx context.Context) (status Status, err error, done bool) {
	if r.bg == nil {
		return "", nil, false
	}
	said := false
	for {
		r.reportBackground(ctx)
		last := len(r.state.Messages) - 1
		ended := last >= 0 && r.state.Messages[last].Role == llm.RoleAssistant && len(r.state.Messages[last].ToolCalls) == 0
		if !ended {
			return "", nil, false
		}
		// Those that ended since the report above are reported next time
		// round: only when none is left is the turn over.
		n := r.bg.active()
		if n == 0 {
			// A turn that had ended with nothing left to report (a run
			// resumed after its last background receipt was answered).
			return StatusOK, nil, true
		}
		if !said {
			said = true
			text := "the model ended its turn; waiting for 1 background task to end"
			if n > 1 {
				text = fmt.Sprintf("the model ended its turn; waiting for %d background tasks to end", n)
			}
			r.emit(Event{Type: Notice, Notice: &NoticeInfo{Source: "background", Count: n, Text: text}})
		}
		if err := r.waitBackground(ctx); err != nil {
			return StatusCancelled, err, true
		}
	}
}

// finishBackground waits, when a call's result ends the run (Stop) while
// background runs are going, until every one has ended, and brings their
// receipts into the messages (after the result; the model does not read
// them in this run) and their files into the run's.
func (r *run) finishBackground(ctx context.Context) error {
	if r.bg == nil {
		return nil
	}
	said := false
	for {
		r.reportBackground(ctx)
		n := r.bg.active()
		if n == 0 {
			return nil
		}
		if !said {
			said = true
			text := "the run's answer is given; waiting for 1 background task to end before the run ends"
			if n > 1 {
				text = fmt.Sprintf("the run's answer is given; waiting for %d background tasks to end before the run ends", n)
			}
			r.emit(Event{Type: Notice, Notice: &NoticeInfo{Source: "background", Count: n, Text: text}})
		}
		if err := r.waitBackground(ctx); err != nil {
			return err
		}
	}
}

// waitBackground waits until a background run ends, reporting the events
// of those going on meanwhile.
func (r *run) waitBackground(ctx context.Context) error {
	w := r.bg.watch(r.rt.Queue())
	defer func() { r.bg.unwatch(w); w.q.Close() }()
	for {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		events, _ := r.bg.take(false)
		for _, ev := range events {
			r.emit(ev)
		}
		if r.bg.endedUnreported() {
			return nil
		}
		if v := w.q.Next(ctx); v == nil {
			continue
		}
		r.bg.woke(w)
	}
}

func (b *Background) endedUnreported() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, t := range b.tasks {
		if t.done && !t.notified {
			return true
		}
	}
	return false
}

// reportBackground emits the background runs' events and brings the
// receipts of those that ended into the messages.
func (r *run) reportBackground(ctx context.Context) {
	events, ended := r.bg.take(true)
	for _, ev := range events {
		r.emit(ev)
	}
	if len(ended) > 0 {
		r.mergeBackground(ctx, ended)
		for _, t := range ended {
			r.addChild(t.saved.ID, t.res)
			r.bg.mu.Lock()
			info, receipt := t.info(), t.result
			r.bg.mu.Unlock()
			// The receipt's state values apply as a tool result's do (what
			// the child spent, for a budget).
			r.applyState([]tool.Result{receipt})
			text := NotificationText(info)
			r.state.Messages = append(r.state.Messages, llm.User(text))
			r.emit(Event{Type: SubagentNotify, Subagent: &SubagentInfo{Name: t.name, Mode: t.mode, CallID: t.saved.ID, Path: t.path,
				Status: t.res.Status, Error: t.res.Error, Rounds: t.res.Rounds, Usage: t.res.Usage, Background: true, Notification: text}})
		}
	}
	r.rs.Loop.Background = r.bg.saved()
}

// mergeBackground merges the files of the background runs that ended into
// the run's, in the order they ended; a path the run (or another
// background run) changed since one of them started, which it changed too,
// is a conflict: its version is kept, the other (read through the run's
// backend, whatever it is) saved beside it, and its receipt says so.
func (r *run) mergeBackground(ctx context.Context, ended []*bgTask) {
	ap, ok := r.backend.(vfs.Applier)
	var deltas []vfs.Delta
	var owners []string
	kids := map[string]*bgTask{}
	if ok {
		var cur map[string]vfs.File
		byOwner := map[string]vfs.Delta{}
		seen := map[string]bool{}
		for _, t := range ended {
			l, isLayer := t.files.(*vfs.Layer)
			if !isLayer {
				continue
			}
			for _, c := range l.Delta() {
				who, hit := t.touched[c.Path]
				if !hit || seen[c.Path] {
					continue
				}
				seen[c.Path] = true
				if cur == nil && r.mem != nil {
					cur = r.mem.Files()
				}
				ch := vfs.Change{Path: c.Path}
				if f, has := cur[c.Path]; has {
					ch.File = &f
				} else if f, err := readFile(ctx, r.backend, c.Path); err == nil {
					ch.File = f
				} else if !errors.Is(err, vfs.ErrNotFound) {
					// Its version cannot be read: no conflict is claimed.
					continue
				}
				byOwner[who] = append(byOwner[who], ch)
			}
		}
		for _, who := range slices.Sorted(maps.Keys(byOwner)) {
			deltas, owners = append(deltas, byOwner[who]), append(owners, who)
		}
	}
	for _, t := range ended {
		kids[t.saved.ID] = t
		switch f := t.files.(type) {
		case *vfs.Layer:
			if ok {
				deltas, owners = append(deltas, f.Delta()), append(owners, t.saved.ID)
			}
		case *vfs.Tracked:
			d := f.Changes()
			for i := range d {
				d[i].By = t.saved.ID
			}
			r.fileEvents(d)
		}
	}
	if len(deltas) == 0 {
		return
	}
	net, conflicts := vfs.Merge(ctx, ap, deltas, owners)
	net = slices.DeleteFunc(net, func(c vfs.Change) bool { return kids[c.By] == nil })
	r.fileEvents(net)
	for _, cf := range conflicts {
		for _, id := range []string{cf.Kept, cf.Other} {
			if t := kids[id]; t != nil {
				r.bg.mu.Lock()
				t.result.Content += "\n\n[Note: " + cf.String() + ".]"
				r.bg.mu.Unlock()
			}
		}
		c := cf
		r.emit(Event{Type: FileConflict, Conflict: &c})
	}
}

// readFile reads a file as the run's backend has it now: any backend (a
// directory, a store, a mount such as /memories/), not only the run's
// state files.
func readFile(ctx context.Context, b vfs.Backend, p string) (*vfs.File, error) {
	content, err := b.Read(ctx, p)
	if err != nil {
		return nil, err
	}
	f := &vfs.File{Content: content}
	if e, err := b.Stat(ctx, p); err == nil {
		f.ModifiedAt = e.ModifiedAt
	}
	return f, nil
}

// restartBackground starts again, through the tool that started it, a
// background run saved before the run stopped: its own namespace resumes
// it, or gives its result if it had ended.
func (r *run) restartBackground(ctx context.Context, saved BackgroundTask) {
	if r.bg.has(saved.ID) {
		return
	}
	if saved.Cancelled {
		r.bg.cancelledBefore(saved)
		return
	}
	t := r.a.byName[saved.Tool]
	n, ok := t.(Nested)
	if !ok {
		r.bg.failed(saved, fmt.Sprintf("the agent has no tool %q to run it with", saved.Tool))
		return
	}
	env := &tool.Env{CallID: saved.ID, Agent: r.where, Capabilities: r.a.caps, State: r.state.Values}
	for i, m := range r.state.Messages {
		if m.Role != llm.RoleAssistant {
			continue
		}
		if slices.ContainsFunc(m.ToolCalls, func(c llm.ToolCall) bool { return c.ID == saved.ID }) {
			// A fork starts again from the messages its call was made on.
			env.Request = &llm.Request{System: r.system, Messages: r.state.Messages[:i:i]}
		}
	}
	host := Host{Path: r.path, Runtime: r.custom, Options: r.nestedOptionsAt(saved.ParentStep), Emit: func(ev Event) {
		r.bg.mu.Lock()
		r.bg.events = append(r.bg.events, ev)
		r.bg.mu.Unlock()
	}}
	rctx := context.WithValue(withBackground(ctx, r.bg), restartKey{}, saved)
	res, _, err := n.RunNested(rctx, env, inBackground(saved.Args), host)
	switch {
	case err != nil:
		r.bg.failed(saved, err.Error())
	case res.IsError:
		r.bg.failed(saved, res.Content)
	}
}

// inBackground returns a task call's arguments with run_in_background
// true: a run saved as a background one starts again in the background,
// whatever its subagent's default has become since. Arguments that are not
// an object are returned as they are.
func inBackground(args json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil || m == nil {
		return args
	}
	m["run_in_background"] = json.RawMessage("true")
	out, err := json.Marshal(m)
	if err != nil {
		return args
	}
	return out
}

// stopBackground ends the background runs still going when the run ends:
// they are cancelled and waited for a while; their receipts do not reach
// the messages, and they stay saved, so that a resumed run starts them
// again. What they spent is in the run's result.
func (r *run) stopBackground(ctx context.Context, status Status) {
	if r.bg == nil || !r.bg.any() {
		return
	}
	if r.bg.Running() > 0 {
		r.bg.cancelAll(parentEnded{status})
		w := r.bg.watch(r.rt.Queue())
		grace, stop := r.rt.Timeout(context.WithoutCancel(ctx), nestedGrace, nil)
		for r.bg.Running() > 0 {
			if v := w.q.Next(grace); v == nil {
				break
			}
			r.bg.woke(w)
		}
		stop()
		r.bg.unwatch(w)
		w.q.Close()
	}
	events, _ := r.bg.take(false)
	for _, ev := range events {
		r.emit(ev)
	}
	r.bg.mu.Lock()
	for _, id := range r.bg.order {
		if t := r.bg.tasks[id]; t.done && !t.notified && t.res != nil {
			if r.held == nil {
				r.held = map[string]*Result{}
			}
			r.held[id] = t.res
		}
	}
	r.bg.mu.Unlock()
	r.rs.Loop.Background = r.bg.saved()
}

// backgroundTools are the tools that see and steer a run's background
// tasks, bound for a step only once the run has started one.
func (r *run) addBackgroundTools(req *llm.Request) {
	if !r.bg.any() {
		return
	}
	for _, t := range steeringTools {
		spec := t.Spec()
		if _, own := r.a.byName[spec.Name]; own {
			continue
		}
		if _, dup := r.stepTools[spec.Name]; dup {
			continue
		}
		if r.stepTools == nil {
			r.stepTools = map[string]tool.Tool{}
		}
		r.stepTools[spec.Name] = t
		req.Tools = append(slices.Clone(req.Tools), spec)
	}
}

// hasPrefix says whether p is q or a path below it.
func hasPrefix(p, q Path) bool { return len(p) >= len(q) && slices.Equal(p[:len(q)], q) }
