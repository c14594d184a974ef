package scenario

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/tool"
)

// This file is how a replay crashes a run at an exact event. The run of a
// scenario with crash points goes through a lockstep: a runtime that runs a
// step's tool calls one after the other (agent.Sequential) and holds every
// model call, tool call and checkpoint write of a subagent until the event
// that comes just before it has reached the replay, and a saver that fails
// every write once the replay has crashed. So "after the Nth event" is the
// same point of the run every time, and nothing the crashed process does
// after that point reaches the saver or the scripted model.

// lockWait bounds how long an action waits for its event: a safety valve
// for an action this file does not know the event of. It never elapses in
// a run that works as described.
const lockWait = 30 * time.Second

// errCrashed is what the crashed process gets from everything it still tries.
var errCrashed = errors.New("replay: this process has crashed")

// countingSaver is the scenario's saver: it counts the checkpoints written.
type countingSaver struct {
	checkpoint.Saver
	inner checkpoint.Saver
	puts  atomic.Int64
	// rootPuts counts the checkpoints of the top-level run (namespace ""):
	// a process that crashed before writing one did not save its input.
	rootPuts atomic.Int64
}

func newCountingSaver(inner checkpoint.Saver) *countingSaver {
	return &countingSaver{Saver: inner, inner: inner}
}

// Put implements checkpoint.Saver.
func (c *countingSaver) Put(ctx context.Context, s checkpoint.Step) error {
	err := c.inner.Put(ctx, s)
	if err == nil {
		c.puts.Add(1)
		if s.NS == "" {
			c.rootPuts.Add(1)
		}
	}
	return err
}

// seenKey identifies an event an action waits for.
type seenKey struct {
	typ   agent.EventType
	agent string
	round int
	call  string
}

func keyOf(ev agent.Event) (seenKey, bool) {
	switch {
	case ev.Type == agent.ModelRequest && ev.Request != nil:
		return seenKey{typ: ev.Type, agent: ev.Agent.String(), round: ev.Request.Round}, true
	case ev.Type == agent.ModelResponse && ev.Response != nil:
		return seenKey{typ: ev.Type, agent: ev.Agent.String(), round: ev.Response.Round}, true
	case (ev.Type == agent.ToolStart || ev.Type == agent.ToolEnd) && ev.Tool != nil:
		return seenKey{typ: ev.Type, agent: ev.Agent.String(), call: ev.Tool.CallID}, true
	case ev.Type == agent.SubagentEnd && ev.Subagent != nil:
		return seenKey{typ: ev.Type, agent: ev.Agent.String(), call: ev.Subagent.CallID}, true
	case ev.Type == agent.InterruptEvent && ev.Interrupt != nil:
		return seenKey{typ: ev.Type, agent: ev.Agent.String(), call: ev.Interrupt.CallID}, true
	case ev.Type == agent.RunStart:
		return seenKey{typ: ev.Type, agent: ev.Agent.String()}, true
	}
	return seenKey{}, false
}

// lockstep is one process of a crash scenario: its saver and, through
// runtime, its runtime.
type lockstep struct {
	*countingSaver
	seq agent.Runtime

	mu      sync.Mutex
	changed chan struct{} // closed and replaced whenever seen or crashed changes
	seen    map[seenKey]bool
	crashed bool
	// batch holds, per agent path, the calls of its step in progress whose
	// tool.start was seen, in order; prev names the call started before
	// each, so that a call runs only once the one before it has ended.
	batch map[string][]string
	prev  map[seenKey]string
	// model, when set, is told of every write that reached the saver.
	model *replayModel
}

func newLockstep(saver *countingSaver) *lockstep {
	return &lockstep{countingSaver: saver, seq: agent.Sequential(time.Unix(0, 0).UTC()),
		changed: make(chan struct{}), seen: map[seenKey]bool{}, batch: map[string][]string{}, prev: map[seenKey]string{}}
}

// see records that the replay received ev.
func (l *lockstep) see(ev agent.Event) {
	k, ok := keyOf(ev)
	if !ok {
		return
	}
	l.mu.Lock()
	l.seen[k] = true
	switch k.typ {
	case agent.ModelResponse, agent.RunStart:
		l.batch[k.agent] = nil // a new step (or a resumed one) starts its calls afresh
	case agent.ToolStart:
		if b := l.batch[k.agent]; len(b) > 0 {
			l.prev[k] = b[len(b)-1]
		}
		l.batch[k.agent] = append(l.batch[k.agent], k.call)
	}
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
}

// hasCrashed reports whether the process has crashed.
func (l *lockstep) hasCrashed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.crashed
}

// saved tells the model that a write reached the saver (err is nil).
func (l *lockstep) saved(err error) error {
	if err == nil && l.model != nil {
		l.model.keep()
	}
	return err
}

// crash throws the process away after ev: from now on every write fails.
func (l *lockstep) crash(ev agent.Event) {
	l.mu.Lock()
	l.crashed = true
	if k, ok := keyOf(ev); ok {
		l.seen[k] = true
	}
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
}

// wait blocks until the replay has received the event k (when given) and
// says whether the process has crashed by then.
func (l *lockstep) wait(ctx context.Context, k *seenKey) error {
	if k == nil {
		return l.waitAny(ctx)
	}
	return l.waitAny(ctx, *k)
}

// waitAny blocks until the replay has received one of the events ks (any
// time, when there are none) and says whether the process has crashed by
// then.
func (l *lockstep) waitAny(ctx context.Context, ks ...seenKey) error {
	timer := time.NewTimer(lockWait)
	defer timer.Stop()
	for {
		l.mu.Lock()
		crashed, ready, changed := l.crashed, len(ks) == 0, l.changed
		for _, k := range ks {
			ready = ready || l.seen[k]
		}
		l.mu.Unlock()
		if crashed {
			return errCrashed
		}
		if ready {
			return nil
		}
		select {
		case <-changed:
		case <-timer.C:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// Put implements checkpoint.Saver: a subagent's checkpoint waits for the
// event it follows (its run.start for the first, the model request whose
// response it saves for a step or an end after a reply).
func (l *lockstep) Put(ctx context.Context, s checkpoint.Step) error {
	var k *seenKey
	if s.NS != "" {
		switch s.Metadata["source"] {
		case "input":
			k = &seenKey{typ: agent.RunStart, agent: s.NS}
		case "loop", "end":
			n := len(s.Messages)
			var loop struct {
				Rounds     int               `json:"rounds"`
				Interrupts []agent.Interrupt `json:"interrupts"`
			}
			if json.Unmarshal(s.Values["agent.loop"], &loop) != nil {
				break
			}
			var own []agent.Interrupt
			for _, in := range loop.Interrupts {
				if in.Path.String() == s.NS {
					own = append(own, in)
				}
			}
			switch {
			case s.Status == checkpoint.StatusInterrupted && len(own) > 0:
				// A run that stops for approval ends after its last own
				// interrupt event (when the step has no other calls).
				k = &seenKey{typ: agent.InterruptEvent, agent: s.NS, call: own[len(own)-1].CallID}
			case n > 0 && s.Messages[n-1].Role == llm.RoleAssistant && loop.Rounds > 0:
				// A response is saved before its model.response event is
				// sent, so the event before the save is the request's.
				k = &seenKey{typ: agent.ModelRequest, agent: s.NS, round: loop.Rounds - 1}
			}
		}
	}
	if err := l.wait(ctx, k); err != nil {
		return err
	}
	return l.saved(l.countingSaver.Put(ctx, s))
}

// PutWrite implements checkpoint.Saver: a subagent's call result waits for
// the call's tool.start and, for a call that ran a subagent of its own, for
// that subagent's subagent.end; the answer to a rejected call, which never
// starts, waits for nothing.
func (l *lockstep) PutWrite(ctx context.Context, ref checkpoint.Ref, w checkpoint.Write) error {
	var k *seenKey
	if ref.NS != "" && w.Kind == checkpoint.KindResult {
		k = &seenKey{typ: agent.ToolStart, agent: ref.NS, call: w.CallID}
		var outcome struct {
			Child    json.RawMessage `json:"child"`
			Rejected bool            `json:"rejected"`
		}
		ok := json.Unmarshal(w.Data, &outcome) == nil
		if ok && outcome.Rejected {
			// A rejected call never starts: its answer follows the step's
			// model response (or the resume), which came before.
			k = nil
		} else if ok && len(outcome.Child) > 0 && string(outcome.Child) != "null" {
			if err := l.wait(ctx, k); err != nil {
				return err
			}
			k = &seenKey{typ: agent.SubagentEnd, agent: ref.NS, call: w.CallID}
		}
	}
	if err := l.wait(ctx, k); err != nil {
		return err
	}
	return l.saved(l.countingSaver.PutWrite(ctx, ref, w))
}

// The other writes fail once the process has crashed.

func (l *lockstep) DeleteThread(ctx context.Context, thread string) error {
	if err := l.wait(ctx, nil); err != nil {
		return err
	}
	return l.saved(l.countingSaver.DeleteThread(ctx, thread))
}

func (l *lockstep) CopyThread(ctx context.Context, src checkpoint.Ref, dst string) error {
	if err := l.wait(ctx, nil); err != nil {
		return err
	}
	return l.saved(l.countingSaver.CopyThread(ctx, src, dst))
}

func (l *lockstep) Prune(ctx context.Context, thread string, opts checkpoint.PruneOptions) error {
	if err := l.wait(ctx, nil); err != nil {
		return err
	}
	return l.saved(l.countingSaver.Prune(ctx, thread, opts))
}

func (l *lockstep) Acquire(ctx context.Context, thread, holder string, now time.Time, ttl time.Duration) (checkpoint.Lease, error) {
	if err := l.wait(ctx, nil); err != nil {
		return checkpoint.Lease{}, err
	}
	return l.countingSaver.Acquire(ctx, thread, holder, now, ttl)
}

func (l *lockstep) Renew(ctx context.Context, thread, holder string, now time.Time, ttl time.Duration) (checkpoint.Lease, error) {
	if err := l.wait(ctx, nil); err != nil {
		return checkpoint.Lease{}, err
	}
	return l.countingSaver.Renew(ctx, thread, holder, now, ttl)
}

func (l *lockstep) Release(ctx context.Context, thread, holder string) error {
	if err := l.wait(ctx, nil); err != nil {
		return err
	}
	return l.countingSaver.Release(ctx, thread, holder)
}

func (l *lockstep) runtime() agent.Runtime { return lockRuntime{l} }

// lockRuntime is the lockstep's runtime: the Sequential runtime's clock, ids
// and one-by-one tool calls, with model and tool calls held until their
// event has reached the replay.
type lockRuntime struct{ l *lockstep }

func (r lockRuntime) Now() time.Time                 { return r.l.seq.Now() }
func (r lockRuntime) CallID(round, index int) string { return r.l.seq.CallID(round, index) }
func (r lockRuntime) Fanout(calls []func())          { r.l.seq.Fanout(calls) }
func (r lockRuntime) Queue() agent.Queue             { return r.l.seq.Queue() }
func (r lockRuntime) Semaphore(n int) agent.Semaphore {
	return r.l.seq.Semaphore(n)
}
func (r lockRuntime) Timeout(ctx context.Context, d time.Duration, cause error) (context.Context, context.CancelFunc) {
	return r.l.seq.Timeout(ctx, d, cause)
}

// Model waits for the call's model.request.
func (r lockRuntime) Model(ctx context.Context, req *llm.Request, next agent.ModelFunc) (*llm.Response, error) {
	var k *seenKey
	if ci, ok := llm.CallInfoFrom(ctx); ok {
		k = &seenKey{typ: agent.ModelRequest, agent: ci.Path, round: ci.Round}
	}
	if err := r.l.wait(ctx, k); err != nil {
		return nil, err
	}
	return next(ctx, req)
}

// Tool waits for the call's tool.start and for the end of the call of the
// same step that ran before it (its tool.end, or the subagent.end of a
// subagent that stopped for approval), so that a crash between two calls
// of a step falls between them on every replay.
func (r lockRuntime) Tool(ctx context.Context, call *agent.ToolCall, next agent.ToolFunc) (tool.Result, error) {
	var k *seenKey
	if call.Env != nil {
		k = &seenKey{typ: agent.ToolStart, agent: call.Env.Agent, call: call.Call.ID}
	}
	if err := r.l.wait(ctx, k); err != nil {
		return tool.Result{}, err
	}
	if k != nil {
		r.l.mu.Lock()
		prev := r.l.prev[*k]
		r.l.mu.Unlock()
		if prev != "" {
			if err := r.l.waitAny(ctx, seenKey{typ: agent.ToolEnd, agent: k.agent, call: prev},
				seenKey{typ: agent.SubagentEnd, agent: k.agent, call: prev}); err != nil {
				return tool.Result{}, err
			}
		}
	}
	return next(ctx, call)
}
