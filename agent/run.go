package agent

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/tokens"
	"github.com/deepagents-go/deepagents/tool"
	"github.com/deepagents-go/deepagents/vfs"
)

// RunOption is a per-run knob.
type RunOption func(*runConfig)

type runConfig struct {
	path     string
	instance string
	task     string
	maxSteps int
	timeout  time.Duration
	system   *string
}

// WithPath sets the run's agent path (default: the agent's name). Subagent
// runs are started with their parent's path plus their own segment.
func WithPath(path string) RunOption { return func(c *runConfig) { c.path = path } }

// WithInstance tags the run as the subagent instance started by the parent's
// tool call callID.
func WithInstance(callID string) RunOption { return func(c *runConfig) { c.instance = callID } }

// WithTask sets the text the run was started with, as reported to the model
// in llm.CallInfo (default: the first user message).
func WithTask(text string) RunOption { return func(c *runConfig) { c.task = text } }

// WithSystem replaces the agent's system prompt for this run (a fork
// subagent runs under its parent's prompt this way).
func WithSystem(prompt string) RunOption { return func(c *runConfig) { c.system = &prompt } }

// WithMaxSteps overrides Config.MaxSteps for this run.
func WithMaxSteps(n int) RunOption { return func(c *runConfig) { c.maxSteps = n } }

// WithTimeout bounds this run's wall time (0: no bound). When it runs out the
// run ends with StatusLimit, keeping what it did, and an error that wraps
// ErrLimit and context.DeadlineExceeded and reads "timed out after D". A
// subagent's Spec.Timeout works this way.
func WithTimeout(d time.Duration) RunOption { return func(c *runConfig) { c.timeout = d } }

// ErrNoStructuredResponse ends a run whose agent has a ResponseFormat but
// finished without a valid call of its response tool.
var ErrNoStructuredResponse = errors.New("the agent finished without a valid structured response")

// Run starts a run and streams its events. The last event is always RunEnd
// (unless the consumer stops early, which cancels the run); it is paired with
// the run's error, a *RunError, whenever the status is not StatusOK.
func (a *Agent) Run(ctx context.Context, in Input, opts ...RunOption) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		var rc runConfig
		for _, o := range opts {
			o(&rc)
		}
		r := a.newRun(in, rc)
		r.yield = yield
		r.loop(ctx)
	}
}

// Invoke runs to the end and returns the result. The error is nil only when
// the run ended with StatusOK; otherwise it is Result.Err(), which wraps
// ErrFailed, ErrLimit, ErrCancelled or ErrRefused. A result is returned whenever the run
// started, so the work of a cut-off run is never lost.
func (a *Agent) Invoke(ctx context.Context, in Input, opts ...RunOption) (*Result, error) {
	return Drain(a.Run(ctx, in, opts...), nil)
}

// Drain consumes a run's events, passing each to fn if fn is not nil, and
// returns the result carried by the final RunEnd event with its Err().
func Drain(events iter.Seq2[Event, error], fn func(Event)) (*Result, error) {
	var res *Result
	var runErr error
	for ev, err := range events {
		if fn != nil && ev.Type != "" {
			fn(ev)
		}
		if err != nil {
			runErr = err
		}
		if ev.Type == RunEnd && ev.Run != nil && ev.Run.Result != nil {
			res = ev.Run.Result
		}
	}
	if res == nil {
		if runErr == nil {
			runErr = errors.New("agent: the run ended without a result")
		}
		return nil, runErr
	}
	return res, res.Err()
}

type run struct {
	a        *Agent
	path     string
	instance string
	task     string
	maxSteps int
	timeout  time.Duration
	system   string

	yield   func(Event, error) bool
	stopped bool // the consumer stopped iterating
	cancel  context.CancelFunc

	state    State
	backend  vfs.Backend
	mem      *vfs.Memory
	rounds   int
	usage    llm.Usage // own model calls
	tree     map[string]llm.Usage
	children map[string]*Result
	changed  map[string]bool

	output        []byte
	respFailures  int
	respRepaired  bool
	lastRespError string
}

func (a *Agent) newRun(in Input, rc runConfig) *run {
	r := &run{a: a, path: rc.path, instance: rc.instance, task: rc.task, maxSteps: rc.maxSteps, timeout: rc.timeout,
		system: a.system}
	if rc.system != nil {
		r.system = *rc.system
	}
	if r.path == "" {
		r.path = a.name
	}
	if r.maxSteps == 0 {
		r.maxSteps = a.cfg.MaxSteps
	}
	if r.maxSteps == 0 {
		r.maxSteps = DefaultMaxSteps
	}
	r.state.Messages = slices.Clip(slices.Clone(in.Messages))
	switch {
	case in.Backend != nil:
		r.backend = in.Backend
	case a.cfg.Backend != nil:
		r.backend = a.cfg.Backend
	default:
		r.mem = vfs.NewMemory(in.Files)
		r.backend = r.mem
	}
	if r.task == "" {
		for _, m := range in.Messages {
			if m.Role == llm.RoleUser {
				r.task = m.Content
				break
			}
		}
	}
	return r
}

// emit sends ev to the consumer. Called only on the loop's goroutine.
func (r *run) emit(ev Event) {
	if ev.Agent == "" {
		ev.Agent = r.path
	}
	if ev.Agent == r.path && ev.TaskCall == "" {
		ev.TaskCall = r.instance
	}
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	r.observe(ev)
	if r.stopped {
		return
	}
	if !r.yield(ev, nil) {
		r.stopped = true
		r.cancel()
	}
}

// observe folds the results of direct subagent runs into this run.
func (r *run) observe(ev Event) {
	if ev.Type != SubagentEnd || ev.Agent != r.path || ev.Subagent == nil || ev.Subagent.Run == nil {
		return
	}
	child := ev.Subagent.Run
	if r.children == nil {
		r.children = map[string]*Result{}
	}
	r.children[ev.Subagent.CallID] = child
	if r.tree == nil {
		r.tree = map[string]llm.Usage{}
	}
	for p, u := range child.UsageByAgent {
		r.tree[p] = r.tree[p].Add(u)
	}
}

func (r *run) totalUsage() llm.Usage {
	total := r.usage
	for _, c := range r.children {
		total = total.Add(c.Usage)
	}
	return total
}

func (r *run) loop(parent context.Context) {
	ctx, cancel := context.WithCancel(parent)
	r.cancel = cancel
	defer cancel()
	if r.timeout > 0 {
		var stop context.CancelFunc
		ctx, stop = context.WithTimeoutCause(ctx, r.timeout, &timeoutError{r.timeout})
		defer stop()
	}
	r.emit(Event{Type: RunStart, Run: &RunInfo{}})
	if len(r.a.dropped) > 0 {
		r.emit(Event{Type: Warning, Warning: &WarningInfo{Source: "settings", Dropped: slices.Clone(r.a.dropped),
			Text: fmt.Sprintf("the model does not take %s, so %s not sent with its requests",
				strings.Join(r.a.dropped, ", "), isAre(len(r.a.dropped)))}})
	}
	status, err := r.steps(ctx)
	if status == StatusCancelled {
		if err == nil {
			err = context.Cause(ctx)
		}
		// The run's own time budget is a limit, not a cancellation by the caller.
		var te *timeoutError
		if parent.Err() == nil && errors.As(err, &te) {
			status = StatusLimit
		}
	}
	res := r.result(status, err)
	ev := Event{Type: RunEnd, Agent: r.path, TaskCall: r.instance, Time: time.Now(),
		Run: &RunInfo{Status: status, Error: res.Error, Rounds: r.rounds, Usage: res.Usage, Result: res}}
	if !r.stopped {
		r.yield(ev, res.Err())
	}
}

func isAre(n int) string {
	if n == 1 {
		return "it is"
	}
	return "they are"
}

func (r *run) result(status Status, err error) *Result {
	res := &Result{Agent: r.path, Status: status, State: r.state, Rounds: r.rounds, Children: r.children}
	var re *refusalError
	if errors.As(err, &re) {
		res.Refusal = re.text
	}
	if status != StatusOK {
		res.err = &RunError{Agent: r.path, Status: status, Err: err}
		res.Error = res.err.Error()
	}
	if r.mem != nil {
		res.State.Files = r.mem.Files()
	}
	if r.output != nil {
		res.Output = r.output
	}
	res.Usage = r.totalUsage()
	res.UsageByAgent = map[string]llm.Usage{r.path: r.usage}
	maps.Copy(res.UsageByAgent, r.tree)
	for p := range r.changed {
		res.Changed = append(res.Changed, p)
	}
	slices.Sort(res.Changed)
	return res
}

func (r *run) steps(ctx context.Context) (Status, error) {
	a := r.a
	for {
		if err := ctx.Err(); err != nil {
			return StatusCancelled, context.Cause(ctx)
		}
		if r.rounds >= r.maxSteps {
			calls := "model calls"
			if r.maxSteps == 1 {
				calls = "model call"
			}
			return StatusLimit, fmt.Errorf("stopped after %d %s (the step limit)", r.maxSteps, calls)
		}
		n := len(r.state.Messages)
		req := &llm.Request{System: r.system, Messages: r.state.Messages[:n:n], Tools: a.specs, Settings: a.settings}
		for _, m := range a.cfg.Middleware {
			if m.BeforeModel != nil {
				if err := m.BeforeModel(ctx, StepInfo{Agent: r.path, Round: r.rounds, State: &r.state, Files: r.backend, Emit: r.emit}, req); err != nil {
					return StatusError, fmt.Errorf("middleware %s: %w", m.Name, err)
				}
			}
		}
		r.emit(Event{Type: ModelRequest, Request: &RequestInfo{
			Round: r.rounds, MessageCount: len(req.Messages), SystemChars: tokens.Chars(req.System),
			Tools: r.toolNames(req), ToolTokens: r.toolTokens(req),
		}})
		start := time.Now()
		round := r.rounds
		mctx := llm.WithCallInfo(ctx, llm.CallInfo{Agent: a.name, Instance: r.instance, Path: r.path, Task: r.task, Round: round,
			OnRetry: func(rt llm.Retry) { r.emit(retryEvent(round, rt)) }})
		resp, err := r.callModel(mctx, req)
		r.rounds++
		if err != nil {
			if ctx.Err() != nil {
				return StatusCancelled, context.Cause(ctx)
			}
			return StatusError, fmt.Errorf("model call %d of %s failed: %w", r.rounds, r.path, err)
		}
		msg := resp.Message
		msg.Role = llm.RoleAssistant
		// A refusal is its stop reason or its text: either one ends the run.
		refused := resp.StopReason == llm.StopRefusal || resp.Refusal != ""
		if refused {
			// Nothing the model asked for runs, and the history keeps what it
			// said: its text, or else the refusal itself.
			msg.ToolCalls = nil
			if !msg.HasText() && resp.Refusal != "" {
				msg.SetParts(append(slices.Clone(msg.AllParts()), llm.TextPart(resp.Refusal)))
			}
		}
		if len(msg.ToolCalls) > 0 {
			msg.ToolCalls = slices.Clone(msg.ToolCalls)
			for i := range msg.ToolCalls {
				if msg.ToolCalls[i].ID == "" {
					msg.ToolCalls[i].ID = fmt.Sprintf("call_%d_%d", r.rounds-1, i)
				}
				if len(msg.ToolCalls[i].Args) == 0 {
					msg.ToolCalls[i].Args = []byte("{}")
				}
			}
		}
		r.usage = r.usage.Add(resp.Usage)
		r.state.Messages = append(r.state.Messages, msg)
		info := &ResponseInfo{Round: r.rounds - 1, Usage: resp.Usage, StopReason: resp.StopReason, Text: msg.Content,
			Refusal: resp.Refusal, DurationMS: ms(time.Since(start)), Message: &r.state.Messages[len(r.state.Messages)-1]}
		for _, c := range msg.ToolCalls {
			info.ToolCalls = append(info.ToolCalls, c.Name)
		}
		r.emit(Event{Type: ModelResponse, Response: info})
		if refused {
			text := resp.Refusal
			if text == "" {
				text = strings.TrimSpace(msg.Content)
			}
			return StatusRefused, &refusalError{text: text}
		}

		if len(msg.ToolCalls) == 0 {
			if a.respTool == nil || r.output != nil {
				return StatusOK, nil
			}
			if r.respRepaired {
				return StatusError, fmt.Errorf("%w: it answered in text instead of calling %s", ErrNoStructuredResponse, a.respTool.spec.Name)
			}
			r.respRepaired = true
			r.state.Messages = append(r.state.Messages, llm.User(fmt.Sprintf(
				"Your final answer must be a call of the %s tool with arguments matching its schema; plain text is not accepted. Call %s now.",
				a.respTool.spec.Name, a.respTool.spec.Name)))
			continue
		}
		stop, err := r.runTools(ctx, req, msg.ToolCalls)
		if err != nil {
			if ctx.Err() != nil {
				return StatusCancelled, context.Cause(ctx)
			}
			return StatusError, err
		}
		if stop {
			return StatusOK, nil
		}
		if r.respFailures >= 2 {
			return StatusError, fmt.Errorf("%w: %s", ErrNoStructuredResponse, r.lastRespError)
		}
	}
}

func (r *run) toolNames(req *llm.Request) []string {
	if sameSpecs(req.Tools, r.a.specs) {
		return r.a.names
	}
	names := make([]string, len(req.Tools))
	for i, t := range req.Tools {
		names[i] = t.Name
	}
	return names
}

func (r *run) toolTokens(req *llm.Request) int {
	if sameSpecs(req.Tools, r.a.specs) {
		return r.a.toolTokens()
	}
	return tokens.ToolsO200k(req.Tools)
}

func sameSpecs(a, b []llm.ToolSpec) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

func (a *Agent) toolTokens() int {
	a.tokOnce.Do(func() { a.tokTotal = tokens.ToolsO200k(a.specs) })
	return a.tokTotal
}

func (r *run) callModel(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	model := r.a.cfg.Model
	next := ModelFunc(func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
		if !r.a.cfg.Stream {
			return model.Generate(ctx, req)
		}
		var acc llm.Accumulator
		for ev, err := range model.Stream(ctx, req) {
			if err != nil {
				return nil, err
			}
			if resp := acc.Add(ev); resp != nil {
				return resp, nil
			}
			d := ev
			r.emit(Event{Type: ModelDelta, Delta: &d})
		}
		return nil, llm.ErrStreamIncomplete
	})
	mws := r.a.cfg.Middleware
	for i := len(mws) - 1; i >= 0; i-- {
		if w := mws[i].WrapModel; w != nil {
			inner := next
			next = func(ctx context.Context, req *llm.Request) (*llm.Response, error) { return w(ctx, req, inner) }
		}
	}
	resp, err := next(ctx, req)
	if err == nil && resp == nil {
		err = errors.New("the model returned no response")
	}
	return resp, err
}

// batch is one step's tool calls in flight.
type batch struct {
	ch        chan item
	abandoned chan struct{}
	once      sync.Once
}

type item struct {
	ev   *Event
	done *callDone
}

type callDone struct {
	i     int
	res   tool.Result
	fatal error
	panic string
	dur   time.Duration
}

func (b *batch) send(it item) {
	select {
	case b.ch <- it:
	case <-b.abandoned:
	}
}

func (b *batch) abandon() { b.once.Do(func() { close(b.abandoned) }) }

type brancher interface {
	Branch() *vfs.Layer
	Apply(vfs.Delta)
}

// runTools runs one AI message's tool calls concurrently (bounded), appends
// their results in call order and merges their file changes in call order.
func (r *run) runTools(ctx context.Context, req *llm.Request, calls []llm.ToolCall) (stop bool, err error) {
	n := len(calls)
	results := make([]tool.Result, n)
	finished := make([]bool, n)
	var fatal error
	b := &batch{ch: make(chan item, 32), abandoned: make(chan struct{})}
	defer b.abandon()

	limit := r.a.cfg.MaxParallel
	if limit == 0 {
		limit = DefaultMaxParallel
	}
	sem := make(chan struct{}, limit)
	br, branching := r.backend.(brancher)
	layers := make([]*vfs.Layer, n)
	tracked := make([]*vfs.Tracked, n)

	for i, c := range calls {
		var files vfs.Backend
		if branching {
			layers[i] = br.Branch()
			files = layers[i]
		} else {
			tracked[i] = vfs.Track(r.backend)
			files = tracked[i]
		}
		env := &tool.Env{CallID: c.ID, Agent: r.path, Files: files, Request: req, Capabilities: r.a.caps}
		env.Progress = func(text string) {
			b.send(item{ev: &Event{Type: ToolProgress, Agent: r.path, TaskCall: r.instance, Time: time.Now(),
				Tool: &ToolInfo{CallID: c.ID, Name: c.Name, Text: text}}})
		}
		tc := &ToolCall{Call: c, Tool: r.a.byName[c.Name], Env: env}
		r.emit(Event{Type: ToolStart, Tool: &ToolInfo{CallID: c.ID, Name: c.Name, Args: c.Args}})
		r.spawn(func() {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				b.send(item{done: &callDone{i: i, fatal: context.Cause(ctx)}})
				return
			}
			start := time.Now()
			res, ferr, stack := r.invoke(ctx, tc, Host{Emit: func(ev Event) { b.send(item{ev: &ev}) }})
			<-sem
			b.send(item{done: &callDone{i: i, res: res, fatal: ferr, panic: stack, dur: time.Since(start)}})
		})
	}

	for pending := n; pending > 0; {
		select {
		case it := <-b.ch:
			if it.ev != nil {
				r.emit(*it.ev)
				continue
			}
			d := it.done
			pending--
			finished[d.i] = true
			results[d.i] = d.res
			if d.fatal != nil {
				if ctx.Err() != nil {
					results[d.i] = tool.Errorf("Error: cancelled before %s finished.", calls[d.i].Name)
				} else {
					if fatal == nil {
						fatal = fmt.Errorf("tool %s (call %s) failed fatally: %w", calls[d.i].Name, calls[d.i].ID, d.fatal)
					}
					results[d.i] = tool.Errorf("Error: %v", d.fatal)
				}
			}
			r.emit(Event{Type: ToolEnd, Tool: &ToolInfo{CallID: calls[d.i].ID, Name: calls[d.i].Name,
				Result: results[d.i].Content, IsError: results[d.i].IsError, Panic: d.panic, DurationMS: ms(d.dur)}})
		case <-ctx.Done():
			b.abandon()
			for i := range results {
				if !finished[i] {
					results[i] = tool.Errorf("Error: cancelled before %s finished.", calls[i].Name)
				}
			}
			r.appendResults(calls, results)
			return false, context.Cause(ctx)
		}
	}

	// Merge file changes in call order.
	if branching {
		deltas := make([]vfs.Delta, n)
		owners := make([]string, n)
		for i := range calls {
			deltas[i] = layers[i].Delta()
			owners[i] = calls[i].ID
		}
		net, conflicts := vfs.Merge(ctx, br.(vfs.Applier), deltas, owners)
		r.fileEvents(net)
		for _, cf := range conflicts {
			for i := range calls {
				if calls[i].ID == cf.Kept {
					results[i].Content += "\n\n[Note: " + cf.String() + ".]"
				}
			}
			c := cf
			r.emit(Event{Type: FileConflict, Conflict: &c})
		}
	} else {
		for i, t := range tracked {
			d := t.Changes()
			for j := range d {
				d[j].By = calls[i].ID
			}
			r.fileEvents(d)
		}
	}

	r.appendResults(calls, results)
	for i, c := range calls {
		if r.a.respTool != nil && c.Name == r.a.respTool.spec.Name {
			if results[i].IsError {
				r.respFailures++
				r.lastRespError = results[i].Content
			} else if r.output == nil {
				r.output = results[i].Structured
			}
		}
		if results[i].Stop && !results[i].IsError {
			stop = true
		}
	}
	return stop, fatal
}

func (r *run) appendResults(calls []llm.ToolCall, results []tool.Result) {
	for i, c := range calls {
		r.state.Messages = append(r.state.Messages, results[i].Message(c))
	}
}

func (r *run) fileEvents(d vfs.Delta) {
	for _, c := range d {
		if r.changed == nil {
			r.changed = map[string]bool{}
		}
		r.changed[c.Path] = true
		if c.File == nil {
			r.emit(Event{Type: FileDelete, File: &FileInfo{Path: c.Path, CallID: c.By}})
		} else {
			r.emit(Event{Type: FileWrite, File: &FileInfo{Path: c.Path, Bytes: len(c.File.Content), CallID: c.By}})
		}
	}
}

// invoke runs one tool call through the middleware chain. A Go error becomes
// an error result; a panic becomes an error result plus its stack; only
// ErrFatal and cancellation come back as fatal.
func (r *run) invoke(ctx context.Context, tc *ToolCall, host Host) (res tool.Result, fatal error, stack string) {
	defer func() {
		if p := recover(); p != nil {
			res = tool.Errorf("Error: the %s tool crashed (%v). This is a fault in the tool, not in your call; try another way.", tc.Call.Name, p)
			stack = string(debug.Stack())
			fatal = nil
		}
	}()
	next := ToolFunc(func(ctx context.Context, tc *ToolCall) (tool.Result, error) {
		if tc.Tool == nil {
			return tool.Errorf("Error: there is no tool named %q. Available tools: %s.", tc.Call.Name, strings.Join(r.a.names, ", ")), nil
		}
		if n, ok := tc.Tool.(Nested); ok {
			return n.RunNested(ctx, tc.Env, tc.Call.Args, host)
		}
		return tc.Tool.Run(ctx, tc.Env, tc.Call.Args)
	})
	mws := r.a.cfg.Middleware
	for i := len(mws) - 1; i >= 0; i-- {
		if w := mws[i].WrapTool; w != nil {
			inner := next
			next = func(ctx context.Context, tc *ToolCall) (tool.Result, error) { return w(ctx, tc, inner) }
		}
	}
	res, err := next(ctx, tc)
	if err != nil {
		if errors.Is(err, tool.ErrFatal) {
			return res, err, ""
		}
		if ctx.Err() != nil {
			return res, context.Cause(ctx), ""
		}
		return tool.Errorf("Error: %v", err), nil, ""
	}
	return res, nil, ""
}

func retryEvent(round int, rt llm.Retry) Event {
	info := &RetryInfo{Round: round, Attempt: rt.Attempt, WaitMS: ms(rt.Wait)}
	if rt.Err != nil {
		info.Error = rt.Err.Error()
	}
	var ae *llm.APIError
	if errors.As(rt.Err, &ae) {
		info.Kind = ae.Kind
	}
	return Event{Type: ModelRetry, Retry: info}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// workerIdle is how long a worker goroutine waits for its agent's next tool
// call before it ends.
const workerIdle = time.Second

// spawn runs f on one of the agent's idle worker goroutines if one is
// waiting, else on a new one that then stays around briefly for the next
// call. Reusing workers keeps their grown stacks, which tool calls (JSON
// decoding, reflection) need. The pool is per Agent, not global, so the
// workers of an agent assembled inside a testing/synctest bubble stay in it.
func (r *run) spawn(f func()) {
	select {
	case r.a.idle <- f:
	default:
		go r.a.worker(f)
	}
}

func (a *Agent) worker(f func()) {
	t := time.NewTimer(workerIdle)
	defer t.Stop()
	for {
		f()
		t.Reset(workerIdle)
		select {
		case f = <-a.idle:
		case <-t.C:
			return
		}
	}
}
