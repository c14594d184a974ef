package agent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/tool"
	"github.com/deepagents-go/deepagents/vfs"
)

// This file is the batch of one step's tool calls: running them concurrently
// through the run's Runtime, forwarding their events, merging their file
// changes in call order and appending their results. It schedules with the
// Runtime's primitives only (Fanout, Queue, Semaphore, Timeout), so that a
// runtime which allows no goroutine, channel or select can drive it.

// batch is one step's tool calls in flight. Its queue carries what they
// report: an *Event to forward, or a *callDone when a call ends.
type batch struct {
	q Queue
	// direct, when set, takes the events of a call run on the loop's own
	// goroutine (see runTools), which cannot wait for itself to read them.
	direct func(Event)
}

type callDone struct {
	i     int
	res   tool.Result
	fatal error
	panic string
	dur   time.Duration
	child *Result // the run a nested tool started, if any
}

// event reports an event of a running call.
func (b *batch) event(ev *Event) {
	if b.direct != nil {
		b.direct(*ev)
		return
	}
	b.q.Put(ev)
}

type brancher interface {
	Branch() *vfs.Layer
	Apply(vfs.Delta)
}

// runTools runs one AI message's tool calls concurrently (bounded), appends
// their results in call order and merges their file changes in call order.
// pending, for a resumed step, holds the calls that finished before and the
// decisions taken: those calls are not run again. Calls that need a person's
// decision and have none are not run; the step then stays in progress
// (r.rs.Loop.Interrupts lists them) and nothing is appended.
func (r *run) runTools(ctx context.Context, req *llm.Request, calls []llm.ToolCall, pending *StepState) (stop bool, err error) {
	n := len(calls)
	results := make([]tool.Result, n)
	finished := make([]bool, n)
	deltas := make([]vfs.Delta, n)
	var fatal error
	b := &batch{q: r.rt.Queue()}
	defer b.q.Close()
	// News of background runs wakes the loop while the calls run, so that
	// their events are shown as they come.
	bgw := r.bg.watch(b.q)
	defer r.bg.unwatch(bgw)

	limit := r.a.cfg.MaxParallel
	if limit == 0 {
		limit = DefaultMaxParallel
	}
	sem := r.rt.Semaphore(limit)
	br, branching := r.backend.(brancher)
	layers := make([]*vfs.Layer, n)
	tracked := make([]*vfs.Tracked, n)
	fanout := make([]func(), 0, n)
	r.rs.Loop.Interrupts = nil
	host := Host{Path: r.path, Runtime: r.custom, Options: r.nestedOptions(), Emit: func(ev Event) { b.event(&ev) }}
	running := 0
	// nested marks the calls of Nested tools (subagents): a cut step waits
	// for them (see below); nestedLeft counts those still running.
	nested := make([]bool, n)
	nestedLeft := 0
	inline := true // every call to run is of an Inline tool
	parts := r.claims.systemParts(req)
	// reports are what Admit hooks asked to be told once the calls ran
	// (ToolCall.OnRan), by call index; nil when none asked.
	var reports [][]func(func(Event), func(string))
	// asks are the waiting calls the person decided to run, by call index,
	// for a call whose tool asks again once it started.
	var asks []*Interrupt

	for i, c := range calls {
		if oc, ok := pending.done(c.ID); ok {
			finished[i] = true
			results[i] = tool.Result{Content: oc.Content, IsError: oc.IsError, Structured: oc.Structured, Stop: oc.Stop, Parts: oc.Parts, State: oc.State}
			deltas[i] = oc.Files
			if oc.Child != nil {
				r.addChild(c.ID, oc.Child)
			}
			if oc.Background != nil {
				r.restartBackground(ctx, *oc.Background)
			}
			if dc, ok := pending.decided(c.ID); ok && dc.Type == Reject {
				// Saved before the step's checkpoint that would have
				// remembered the rejection: remember it now, so that the
				// same call is not put to the person again.
				if r.rs.Loop.Rejected == nil {
					r.rs.Loop.Rejected = map[string]string{}
				}
				if key := callKey(c.Name, c.Args); !hasKey(r.rs.Loop.Rejected, key) {
					r.rs.Loop.Rejected[key] = dc.Message
				}
			}
			continue
		}
		t := r.a.byName[c.Name]
		if t == nil {
			t = r.stepTools[c.Name]
		}
		tc := &ToolCall{Call: c, Tool: t}
		bf, err := r.beforeStart(ctx, c, tc, pending)
		if err != nil {
			return false, err
		}
		if bf.answer != nil {
			finished[i] = true
			results[i] = *bf.answer
			if err := r.saveOutcome(ctx, c, results[i], nil, nil, 0, bf.rejected); err != nil {
				return false, err
			}
			r.emit(Event{Type: ToolEnd, Tool: &ToolInfo{CallID: c.ID, Name: c.Name, Result: results[i].Content, IsError: results[i].IsError}})
			continue
		}
		if bf.wait != nil {
			r.rs.Loop.Interrupts = append(r.rs.Loop.Interrupts, *bf.wait)
			r.emit(Event{Type: InterruptEvent, Interrupt: bf.wait})
			continue
		}
		// approved: a person approved the call or edited it.
		approved := bf.decision != nil
		var note string
		if bf.decision != nil {
			if bf.decision.Type == Edit {
				c.Args = bf.decision.Args
				tc.Call.Args = bf.decision.Args
				note = editedNote(bf.decision.Args)
			}
			if asks == nil {
				asks = make([]*Interrupt, n)
			}
			asks[i] = bf.told
		}
		var files vfs.Backend
		if branching {
			layers[i] = br.Branch()
			files = layers[i]
		} else {
			tracked[i] = vfs.Track(r.backend)
			files = tracked[i]
		}
		env := &tool.Env{CallID: c.ID, Agent: r.where, Files: files, Request: req, Capabilities: r.a.caps,
			Calls: calls, State: r.state.Values, SystemParts: parts}
		env.Progress = func(text string) {
			b.event(&Event{Type: ToolProgress, Agent: r.path, TaskCall: r.instance, Time: r.rt.Now(),
				Tool: &ToolInfo{CallID: c.ID, Name: c.Name, Text: text}})
		}
		tc.Env = env
		r.emit(Event{Type: ToolStart, Tool: &ToolInfo{CallID: c.ID, Name: c.Name, Args: c.Args}})
		running++
		if _, ok := t.(Nested); ok {
			nested[i] = true
			nestedLeft++
			// A person's approval of a task call is not one of the calls
			// its subagent makes.
			approved = false
		}
		if len(tc.ran) > 0 {
			if reports == nil {
				reports = make([][]func(func(Event), func(string)), n)
			}
			reports[i] = tc.ran
		}
		// The decision, like the approval, is the task call's, not one of
		// its subagent's calls.
		decision := bf.decision
		if nested[i] {
			decision = nil
		}
		callCtx := withApproved(withDecision(ctx, decision), approved)
		if in, ok := t.(tool.Inline); !ok || !in.Inline() {
			inline = false
		}
		fanout = append(fanout, func() {
			if err := sem.Acquire(ctx); err != nil {
				b.q.Put(&callDone{i: i, fatal: err})
				return
			}
			start := r.rt.Now()
			res, child, ferr, stack := r.invoke(callCtx, tc, host)
			sem.Release()
			if note != "" && ferr == nil {
				res.Content = note + res.Content
			}
			b.q.Put(&callDone{i: i, res: res, fatal: ferr, panic: stack, dur: r.rt.Now().Sub(start), child: child})
		})
	}
	if _, own := r.rt.(inProcess); own && inline && len(fanout) == 1 {
		// A lone call of an Inline tool runs here: handing it to a worker
		// and waiting costs more than many calls do. Its events are
		// emitted as they come; its end waits in the queue.
		b.direct = r.emit
		fanout[0]()
		b.direct = nil
	} else if len(fanout) > 0 {
		r.rt.Fanout(fanout)
	}

	held := false
	// heldWaits are the waiting calls of subagents that stopped for a
	// person, by their task call's index: they join r.rs.Loop.Interrupts in call
	// order, not in the order the subagents happened to stop.
	var heldWaits map[int][]Interrupt
	joinHeld := func() {
		for _, i := range slices.Sorted(maps.Keys(heldWaits)) {
			r.rs.Loop.Interrupts = append(r.rs.Loop.Interrupts, heldWaits[i]...)
		}
		heldWaits = nil
	}
	// take handles one thing the batch's queue carried: an event, or a
	// call's end.
	take := func(v any) {
		if _, ok := v.(bgWake); ok {
			r.bg.woke(bgw)
			events, _ := r.bg.take(false)
			for _, ev := range events {
				r.emit(ev)
			}
			return
		}
		d, end := v.(*callDone)
		if !end {
			r.emit(*v.(*Event))
			return
		}
		c := calls[d.i]
		rejected := false
		if q, ok := askedOf(d.fatal); ok {
			// The call asked for a person's decision once it had started:
			// what it did is dropped, and it waits unless it was decided
			// on already or rejected before.
			var told *Interrupt
			if asks != nil {
				told = asks[d.i]
			}
			if told == nil && !hasKey(r.rs.Loop.Rejected, callKey(c.Name, c.Args)) {
				in := r.question(c, q)
				if err := r.recordCall(ctx, &CallRecord{ID: in.CallID, Waiting: &in}); err != nil && fatal == nil {
					fatal = err
				}
				r.emit(Event{Type: InterruptEvent, Interrupt: &in})
				if heldWaits == nil {
					heldWaits = map[int][]Interrupt{}
				}
				heldWaits[d.i] = []Interrupt{in}
				return
			}
			d.fatal = nil
			switch {
			case told == nil:
				d.res, rejected = r.rejectCall(c, callKey(c.Name, c.Args), "", true), true
			case q.Reason != "" && q.Reason != told.Reason:
				d.res = tool.Errorf("%s", staleApprovalText(c.Name, q.Reason))
			default:
				d.res = tool.Errorf("Error: the %s call asked a person again about what they had decided already, so it did not finish.", c.Name)
			}
			if branching {
				layers[d.i] = br.Branch() // what it did is dropped
			}
		}
		if d.child != nil && d.child.Status == StatusInterrupted && d.fatal == nil {
			// The subagent waits for a person: the call is not finished,
			// and resuming the thread resumes the subagent.
			held = true
			if heldWaits == nil {
				heldWaits = map[int][]Interrupt{}
			}
			heldWaits[d.i] = d.child.Interrupts
			if r.held == nil {
				r.held = map[string]*Result{}
			}
			r.held[c.ID] = d.child
			return
		}
		finished[d.i] = true
		results[d.i] = d.res
		if d.child != nil {
			r.addChild(c.ID, d.child)
		}
		if d.fatal != nil {
			if ctx.Err() != nil {
				results[d.i] = tool.Errorf("Error: cancelled before %s finished.", c.Name)
			} else {
				if fatal == nil {
					fatal = fmt.Errorf("tool %s (call %s) failed fatally: %w", c.Name, c.ID, d.fatal)
				}
				results[d.i] = tool.Errorf("Error: %v", d.fatal)
			}
		}
		switch {
		case branching && d.fatal != nil && ctx.Err() != nil:
			// Cut off by the cancellation: its changes go with it.
		case branching:
			deltas[d.i] = layers[d.i].Delta()
		default:
			deltas[d.i] = tracked[d.i].Changes()
		}
		if d.fatal == nil {
			if err := r.saveOutcome(ctx, c, results[d.i], deltas[d.i], d.child, d.dur, rejected); err != nil && fatal == nil {
				fatal = err
			}
		}
		r.emit(Event{Type: ToolEnd, Tool: &ToolInfo{CallID: c.ID, Name: c.Name,
			Result: results[d.i].Content, IsError: results[d.i].IsError, Panic: d.panic, DurationMS: ms(d.dur)}})
		if reports != nil && d.fatal == nil && !results[d.i].IsError {
			for _, f := range reports[d.i] {
				f(r.emit, r.markChanged)
			}
		}
	}
	left := running
	got := func(v any) {
		if d, end := v.(*callDone); end {
			left--
			if nested[d.i] {
				nestedLeft--
			}
		}
		take(v)
	}
	for left > 0 && ctx.Err() == nil {
		if v := b.q.Next(ctx); v != nil {
			got(v)
		}
	}
	if left > 0 {
		// Calls that ended before the cancellation was seen keep their
		// results: a resume must not run them again. Subagents still
		// running stop as soon as they see the cancellation: they are
		// waited for (a while at most), so that what they did and spent is
		// in this run's result.
		grace, stop := r.rt.Timeout(context.WithoutCancel(ctx), nestedGrace, nil)
		for waiting := true; left > 0; {
			// ctx is done: Next takes only what is there already.
			if v := b.q.Next(ctx); v != nil {
				got(v)
				continue
			}
			if !waiting || nestedLeft == 0 {
				break
			}
			if v := b.q.Next(grace); v != nil {
				got(v)
			} else {
				waiting = false
			}
		}
		stop()
		b.q.Close()
		joinHeld()
		// The calls that finished keep their file changes as well as their
		// results, so that the state the run ends with holds what its
		// history says was done; those cut off leave none.
		for i := range results {
			if !finished[i] {
				results[i] = tool.Errorf("Error: cancelled before %s finished.", calls[i].Name)
				deltas[i] = nil
			}
		}
		r.mergeCalls(context.WithoutCancel(ctx), calls, deltas, results, br, branching)
		r.appendResults(calls, results)
		return false, context.Cause(ctx)
	}
	joinHeld()
	if fatal != nil || held || len(r.rs.Loop.Interrupts) > 0 {
		if fatal == nil {
			// The step stays in progress until every call has an answer.
			return false, nil
		}
		for i := range results {
			if !finished[i] {
				results[i] = tool.Errorf("Error: %s did not run because another call of the step failed fatally.", calls[i].Name)
			}
		}
		r.rs.Loop.Interrupts = nil
	}

	r.mergeCalls(ctx, calls, deltas, results, br, branching)
	r.appendResults(calls, results)
	r.applyState(results)
	for i, c := range calls {
		if r.a.respTool != nil && c.Name == r.a.respTool.spec.Name {
			if results[i].IsError {
				r.rs.Loop.RespFailures++
				r.rs.Loop.LastRespError = results[i].Content
			} else if r.rs.Loop.Output == nil {
				r.rs.Loop.Output = results[i].Structured
			}
		}
		if results[i].Stop && !results[i].IsError {
			stop = true
		}
	}
	return stop, fatal
}

// applyState applies the state values the step's results set, in call
// order (a later call's value wins). Names reserved for the loop are
// ignored.
func (r *run) applyState(results []tool.Result) {
	for _, res := range results {
		for _, name := range slices.Sorted(maps.Keys(res.State)) {
			if name == "" || strings.HasPrefix(name, "agent.") {
				continue
			}
			r.setRaw(name, res.State[name])
		}
	}
}

func hasKey(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}

// saveOutcome saves a finished call's result under the step in progress;
// rejected marks the answer to a call a person rejected, which never ran.
func (r *run) saveOutcome(ctx context.Context, c llm.ToolCall, res tool.Result, files vfs.Delta, child *Result, dur time.Duration, rejected bool) error {
	if r.rec == nil {
		return nil
	}
	return r.recordCall(ctx, &CallRecord{ID: c.ID, Message: res.Message(c), Rejected: rejected,
		Outcome: &CallOutcome{Content: res.Content, IsError: res.IsError, Structured: res.Structured, Stop: res.Stop, Parts: res.Parts,
			State: res.State, DurationMS: ms(dur), Child: child, Files: files, Background: r.bg.takeFresh(c.ID)}})
}

func (s *StepState) done(id string) (CallOutcome, bool) {
	if s == nil {
		return CallOutcome{}, false
	}
	oc, ok := s.Done[id]
	return oc, ok
}

func (s *StepState) decided(id string) (Decision, bool) {
	if s == nil {
		return Decision{}, false
	}
	d, ok := s.Decided[id]
	return d, ok
}

func (s *StepState) waits(id string) (Interrupt, bool) {
	if s == nil {
		return Interrupt{}, false
	}
	in, ok := s.Waiting[id]
	return in, ok
}

// mergeCalls merges the file changes of a step's calls (deltas, nil for a
// call that changed nothing or did not finish) in call order and reports
// them; a conflict between two calls is noted in the result of the call
// whose change was kept. Without a branching backend the changes were made
// as the calls ran, and are only reported.
func (r *run) mergeCalls(ctx context.Context, calls []llm.ToolCall, deltas []vfs.Delta, results []tool.Result, br brancher, branching bool) {
	if branching {
		owners := make([]string, len(calls))
		for i := range calls {
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
		return
	}
	for i := range calls {
		d := slices.Clone(deltas[i])
		for j := range d {
			d[j].By = calls[i].ID
		}
		r.fileEvents(d)
	}
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
		r.bg.touch(c.Path, c.By)
		if c.File == nil {
			r.emit(Event{Type: FileDelete, File: &FileInfo{Path: c.Path, CallID: c.By}})
		} else {
			r.emit(Event{Type: FileWrite, File: &FileInfo{Path: c.Path, Bytes: len(c.File.Content), CallID: c.By}})
		}
	}
}

// invoke runs one tool call through the middleware chain. A Go error becomes
// an error result; a panic becomes an error result plus its stack; only
// ErrFatal and cancellation come back as fatal. child is the run a nested
// tool started (the last one, should a middleware call the tool twice).
func (r *run) invoke(ctx context.Context, tc *ToolCall, host Host) (res tool.Result, child *Result, fatal error, stack string) {
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
			res, c, err := n.RunNested(ctx, tc.Env, tc.Call.Args, host)
			if c != nil {
				child = c
			}
			return res, err
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
	res, err := r.rt.Tool(ctx, tc, next)
	if err == nil && child != nil && child.Status == StatusCancelled && ctx.Err() != nil {
		// The subagent stopped because this run was cancelled: the call did
		// not finish, and resuming the thread resumes the subagent.
		return res, child, context.Cause(ctx), ""
	}
	if err != nil {
		if _, ok := askedOf(err); ok {
			return res, child, err, ""
		}
		if errors.Is(err, tool.ErrFatal) {
			return res, child, err, ""
		}
		if ctx.Err() != nil {
			return res, child, context.Cause(ctx), ""
		}
		return tool.Errorf("Error: %v", err), child, nil, ""
	}
	return res, child, nil, ""
}

// nestedGrace bounds how long a cut step waits for its subagents to stop,
// should one of them not heed its context.
const nestedGrace = 5 * time.Second

// admit puts call to every middleware's Admit hooks before it starts,
// outermost first. A refusal (an error that is not an Ask) refuses the
// call, whatever the others said; when several hooks ask, the person is
// asked once, with all their reasons and only the decisions every one of
// them allows.
func (r *run) admit(ctx context.Context, call *ToolCall) (ask *Question, refused error) {
	// A hook may emit events and record state values (StepFrom) about the
	// calls it decides on.
	ctx = withStep(ctx, r.stepInfo())
	for _, m := range r.a.cfg.Middleware {
		if m.Admit == nil {
			continue
		}
		err := m.Admit(ctx, call)
		if err == nil {
			continue
		}
		q, ok := askedOf(err)
		if !ok {
			return nil, err
		}
		ask = bothQuestions(ask, q)
	}
	return ask, nil
}

// bothQuestions is what a person is asked when two hooks ask about one
// call: both reasons and descriptions, and the decisions both allow (a
// rejection when they allow none in common, so the person can still
// answer).
func bothQuestions(a, b *Question) *Question {
	if a == nil {
		q := *b
		return &q
	}
	allowedOf := func(q *Question) []DecisionType {
		if len(q.Allowed) == 0 {
			return AllDecisions
		}
		return q.Allowed
	}
	var allowed []DecisionType
	for _, d := range allowedOf(a) {
		if slices.Contains(allowedOf(b), d) {
			allowed = append(allowed, d)
		}
	}
	if len(allowed) == 0 {
		allowed = []DecisionType{Reject}
	}
	return &Question{Allowed: allowed, Description: joinSentences(a.Description, b.Description),
		Reason: joinSentences(a.Reason, b.Reason)}
}

// joinSentences joins two texts for a person, either of which may be
// empty; the same text twice is said once.
func joinSentences(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "" || a == b:
		return a
	}
	return strings.TrimRight(a, ". ") + ". " + b
}

// rejectCall is the result of call c (key names it) that a person rejected
// with message, which is remembered so that the same call is rejected
// again without asking; again marks such a call, answered with the reason
// of the earlier rejection.
func (r *run) rejectCall(c llm.ToolCall, key, message string, again bool) tool.Result {
	if again {
		message = r.rs.Loop.Rejected[key]
	} else {
		if r.rs.Loop.Rejected == nil {
			r.rs.Loop.Rejected = map[string]string{}
		}
		r.rs.Loop.Rejected[key] = message
	}
	return tool.Errorf("%s", rejectedText(c.Name, message, again))
}

// before is what becomes of a call before it starts: answered without
// running (a person rejected it, now or before, or answered it; a hook
// refused it; what the person approved no longer holds), waiting for a
// person, or run, with the person's decision when they took one.
type before struct {
	answer   *tool.Result
	rejected bool // answer is a person's rejection
	wait     *Interrupt
	decision *Decision // approve or edit, of the waiting call told
	told     *Interrupt
}

// beforeStart decides what becomes of call c (tc as middleware see it)
// before it starts: it applies the decision taken on it when it was saved
// as waiting (pending), else puts it to the middleware's Admit hooks. A
// call that waits for the first time, or gets a decision, is recorded.
func (r *run) beforeStart(ctx context.Context, c llm.ToolCall, tc *ToolCall, pending *StepState) (before, error) {
	saved, told := pending.waits(c.ID)
	dc, decided := pending.decided(c.ID)
	// A decision answers only a call that was put to the person and saved
	// as waiting: the model chooses call ids, so a later call that reuses
	// an answered one's id must be asked about anew.
	if !decided && told {
		if dc, decided = r.decisionFor(c.ID); decided {
			if err := r.recordCall(ctx, &CallRecord{ID: c.ID, Decision: &dc}); err != nil {
				return before{}, err
			}
		}
	}
	// ask is the question the call waits with, if it does; for a call the
	// person approved or edited, what the hooks say now.
	var ask *Question
	var refused error
	switch {
	case decided && (dc.Type == Reject || dc.Type == Respond):
	case decided:
		// Admitted again as the model made it, with the decision.
		ask, refused = r.admit(withDecision(ctx, &dc), tc)
		if refused == nil && dc.Type == Edit {
			// What runs is the person's arguments: a hook that refuses
			// them refuses the call (a hook that would ask about them is
			// answered by the person's own edit). What the hooks note on
			// this look at the call is not kept: the look above did that.
			edited := *tc
			edited.Call.Args = dc.Args
			edited.ran = nil
			_, refused = r.admit(withDecision(ctx, &dc), &edited)
		}
	case told:
		// The call waited when the run stopped: it keeps waiting with what
		// it was put to the person with, whatever the resuming agent's
		// configuration says.
		ask = &Question{Allowed: saved.Allowed, Description: saved.Description, Reason: saved.Reason}
	default:
		ask, refused = r.admit(withDecision(ctx, nil), tc)
	}
	answer := func(res tool.Result) (before, error) { return before{answer: &res}, nil }
	key := callKey(c.Name, c.Args)
	switch rejected, again := decided && dc.Type == Reject, !decided && ask != nil && hasKey(r.rs.Loop.Rejected, key); {
	case rejected || again:
		return before{answer: new(r.rejectCall(c, key, dc.Message, again)), rejected: true}, nil
	case decided && dc.Type == Respond:
		// The person answered in the tool's place: it does not run.
		return answer(respondedResult(dc))
	case refused != nil:
		return answer(tool.Errorf("Error: %v", refused))
	case decided && ask != nil && ask.Reason != "" && ask.Reason != saved.Reason:
		// What the call would change is no longer what the person was told
		// when they decided (a symbolic link made since then leads the path
		// elsewhere, say): their decision, an approval or an edit made on
		// that view, does not cover it. The call does not run; made again,
		// it is put to them with what it changes now. (An edit that names
		// another place is the person's own choice and runs.)
		return answer(tool.Errorf("%s", staleApprovalText(c.Name, ask.Reason)))
	case decided:
		return before{decision: &dc, told: &saved}, nil
	case ask == nil:
		return before{}, nil
	case told:
		ask.Reason = "" // the saved description opens with it already
		in := r.question(c, ask)
		in.Reason = saved.Reason
		return before{wait: &in}, nil
	}
	in := r.question(c, ask)
	if err := r.recordCall(ctx, &CallRecord{ID: in.CallID, Waiting: &in}); err != nil {
		return before{}, err
	}
	return before{wait: &in}, nil
}
