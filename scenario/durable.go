package scenario

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/runner"
	"github.com/deepagents-go/deepagents/vfs"
)

// This file drives a scenario's run on a checkpoint saver: the first input,
// the turns after it, the resumptions with decisions each time the run stops
// for approval, and the crashes and the resumptions after them.

// validateDurable checks turns, decisions and crash points. Crash points
// may be given in any order and more than once: they are put in order,
// each once, with a warning.
func (s *Scenario) validateDurable(d *decoder, at func(...string) int) error {
	// null leaves a decoded value as it is; say so instead of calling it
	// empty or 0.
	isNull := func(p string) bool {
		off, ok := d.pos[p]
		return ok && bytes.HasPrefix(d.doc[off:], []byte("null"))
	}
	for i, turn := range s.Turns {
		p := indexPath("turns", i)
		if isNull(p) {
			return errAt(at(p), "%s must be a string, not null", p)
		}
		if strings.TrimSpace(turn) == "" {
			return errAt(at(p), "%s is empty; a turn is the text of the next user message", p)
		}
	}
	sorted := true
	for i, n := range s.CrashAfterEvents {
		p := indexPath("crash_after_events", i)
		if isNull(p) {
			return errAt(at(p), "%s must be a whole number, not null", p)
		}
		if n <= 0 {
			return errAt(at(p), "%s is %d; a crash point counts events from 1", p, n)
		}
		if i > 0 && n <= s.CrashAfterEvents[i-1] && sorted {
			sorted = false
			what := "comes after a larger one"
			if n == s.CrashAfterEvents[i-1] {
				what = "repeats the one before"
			}
			d.warn(at(p), "%s (%d) %s; crash points are taken in increasing order, each once", p, n, what)
		}
	}
	if !sorted {
		s.CrashAfterEvents = slices.Compact(slices.Sorted(slices.Values(s.CrashAfterEvents)))
	}
	// Decisions were checked for shape as they were read.
	return nil
}

var threadUnsafe = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// ThreadID is the checkpoint thread the scenario runs on: "replay-" and the
// scenario's name, so that every run of one scenario uses the same id.
func (s *Scenario) ThreadID() string {
	name := strings.Trim(threadUnsafe.ReplaceAllString(s.Name, "-"), "-")
	if name == "" {
		return "replay"
	}
	return "replay-" + name
}

// Interrupt is one call the run stopped at for approval.
type Interrupt struct {
	// Stop numbers the times the run stopped interrupted, from 1.
	Stop        int                  `json:"stop"`
	Path        string               `json:"path"`
	CallID      string               `json:"call_id"`
	Tool        string               `json:"tool"`
	Args        json.RawMessage      `json:"args"`
	Allowed     []agent.DecisionType `json:"allowed_decisions"`
	Description string               `json:"description,omitempty"`
}

// driver runs a scenario's agent on a saver through every turn, stop and
// crash, filling the transcript as it goes.
type driver struct {
	s      *Scenario
	a      *agent.Agent
	model  *replayModel
	t      *Transcript
	saver  *countingSaver
	thread string
	// crashes are the crash points still ahead; events counts the events so
	// far.
	crashes []int
	events  int
	// incarnation numbers the processes the run has lived in.
	incarnation int
}

// run plays the scenario to its end and returns the last run's result, or
// nil with the error when no run produced one.
func (d *driver) run(ctx context.Context, files map[string]vfs.File) (*agent.Result, error) {
	s := d.s
	in := agent.Input{Messages: []llm.Message(s.Input), Files: files}
	remaining := slices.Clone(s.Decisions)
	var give []agent.Decision // decisions for the next run
	turn, stops := 0, 0
	var earlier []*agent.Result // the finished turns before the current one
	for {
		saved := d.saver.rootPuts.Load()
		res, runErr, crashed := d.once(ctx, in, give)
		if crashed && res == nil {
			// The process is gone: what it held is lost, and the next one
			// starts from the saver. Decisions it was given and did not
			// save are given again. Input it was given is sent again
			// when it crashed before saving it (the thread then has no
			// run, or only the turn before, to resume): a resume with no
			// input would find nothing to go on with.
			if len(in.Messages) > 0 && d.saver.rootPuts.Load() == saved {
				continue
			}
			in = agent.Input{}
			var err error
			if give, err = d.stillWaiting(ctx, give); err != nil {
				return nil, err
			}
			continue
		}
		if res == nil {
			return nil, runErr
		}
		if res.Status != agent.StatusInterrupted {
			give = nil
			if turn < len(s.Turns) && res.Status != agent.StatusCancelled {
				in = agent.Input{Messages: []llm.Message{llm.User(s.Turns[turn])}}
				turn++
				earlier = append(earlier, res)
				continue
			}
			d.unused(remaining)
			return acrossTurns(earlier, res), nil
		}
		var de *agent.DecisionError
		if errors.As(runErr, &de) {
			// The decisions were refused and the thread is unchanged: the
			// run still waits at the stop it was resumed from.
			d.unused(remaining)
			return acrossTurns(earlier, res), nil
		}
		stops++
		for _, w := range stopOrder(res.Interrupts) {
			d.t.Interrupts = append(d.t.Interrupts, Interrupt{Stop: stops, Path: w.Path.String(), CallID: w.CallID, Tool: w.Tool,
				Args: w.Args, Allowed: w.Allowed, Description: w.Description})
		}
		var take []Decision
		take, remaining = takeDecisions(remaining, res.Interrupts, stops)
		give = plain(take)
		if len(give) == 0 {
			d.unused(remaining)
			return acrossTurns(earlier, res), nil
		}
		in = agent.Input{}
	}
}

// stopOrder puts the calls one stop waits at in the order REPLAY.md gives
// interrupts[]: by agent path, and within one agent in the order the agent
// lists them (its calls' order). The agent itself lists a step's own
// waiting calls first, then its subagents' in the order of their task
// calls, which is as fixed but not by path.
func stopOrder(waiting []agent.Interrupt) []agent.Interrupt {
	out := slices.Clone(waiting)
	slices.SortStableFunc(out, func(a, b agent.Interrupt) int { return strings.Compare(a.Path.String(), b.Path.String()) })
	return out
}

// acrossTurns is the last turn's result with the usage, usage by agent and
// subagent runs of the earlier turns added: each turn is a run of its own,
// and a transcript covers them all.
func acrossTurns(earlier []*agent.Result, last *agent.Result) *agent.Result {
	if len(earlier) == 0 {
		return last
	}
	all := *last
	all.Usage, all.UsageByAgent, all.Children = llm.Usage{}, map[string]llm.Usage{}, map[string]*agent.Result{}
	for _, r := range append(slices.Clone(earlier), last) {
		all.Usage = all.Usage.Add(r.Usage)
		for p, u := range r.UsageByAgent {
			all.UsageByAgent[p] = all.UsageByAgent[p].Add(u)
		}
		maps.Copy(all.Children, r.Children)
	}
	return &all
}

// takeDecisions splits ds into the decisions a stop takes and the rest,
// keeping their order. In order, a decision is taken when its stop has come
// and it names a waiting call (by call id, and by path when it gives one)
// that no decision taken before it answers; a second decision for the same
// call waits for a later stop, where the model may have made a call with
// that id again.
func takeDecisions(ds []Decision, waiting []agent.Interrupt, stop int) (take, rest []Decision) {
	answered := make([]bool, len(waiting))
	for _, dc := range ds {
		var names []int // the waiting calls dc names
		for i, w := range waiting {
			if w.CallID == dc.CallID && (len(dc.Path) == 0 || dc.Path.Equal(w.Path)) {
				names = append(names, i)
			}
		}
		if dc.Stop > stop || len(names) == 0 || slices.ContainsFunc(names, func(i int) bool { return answered[i] }) {
			rest = append(rest, dc)
			continue
		}
		for _, i := range names {
			answered[i] = true
		}
		take = append(take, dc)
	}
	return take, rest
}

func plain(ds []Decision) []agent.Decision {
	var out []agent.Decision
	for _, dc := range ds {
		out = append(out, dc.Decision)
	}
	return out
}

// unused lists the decisions that were never given to the run.
func (d *driver) unused(ds []Decision) {
	if len(ds) == 0 {
		return
	}
	d.t.UnusedDecisions = slices.Clone(ds)
}

// stillWaiting returns the decisions of ds that answer calls the thread's
// last checkpoint still has waiting: a crash may have come before the run
// that was given them saved them.
func (d *driver) stillWaiting(ctx context.Context, ds []agent.Decision) ([]agent.Decision, error) {
	if len(ds) == 0 {
		return nil, nil
	}
	rs, err := runner.LoadRunState(ctx, d.saver.inner, d.thread, agent.RootPath(d.a.Name()), false)
	if err != nil {
		return nil, fmt.Errorf("reading thread %q after a crash: %w", d.thread, err)
	}
	if rs.Status != agent.StatusInterrupted {
		return nil, nil
	}
	var asked []Decision
	for _, dc := range ds {
		asked = append(asked, Decision{Decision: dc})
	}
	take, _ := takeDecisions(asked, rs.Loop.Interrupts, 0)
	return plain(take), nil
}

// once runs the agent once on the thread, as one process would: until the
// run ends, or until a crash point, after which it throws the process away.
// crashed says a crash point was reached; res is then the run's result only
// if the crash came with the run's own end event.
func (d *driver) once(ctx context.Context, in agent.Input, ds []agent.Decision) (res *agent.Result, runErr error, crashed bool) {
	d.incarnation++
	holder := fmt.Sprintf("replay-process-%d", d.incarnation)
	var lock *lockstep
	saver := checkpoint.Saver(d.saver)
	var opts []agent.RunOption
	if len(d.s.CrashAfterEvents) > 0 {
		lock = newLockstep(d.saver)
		lock.model = d.model
		saver = lock
		opts = append(opts, agent.WithRuntime(lock.runtime()))
		// What the processes before this one did is as final as it gets.
		d.model.keep()
		ctx = withProcess(ctx, lock)
	}
	var ropts []runner.Option
	if len(in.Messages) == 0 {
		// After a crash: the process that died may have saved the run's
		// end before showing its last response.
		ropts = append(ropts, runner.WithEndedResult())
	}
	ropts = append(ropts, runner.Lease(holder, 0))
	opts = append(opts, runner.Checkpoints(saver, d.thread, ropts...))
	if len(ds) > 0 {
		opts = append(opts, agent.WithDecisions(ds...))
	}
	for ev, err := range d.a.Run(ctx, in, opts...) {
		if err != nil {
			runErr = err
		}
		if ev.Type == "" {
			continue
		}
		d.t.Events = append(d.t.Events, ev)
		d.events++
		top := ev.Type == agent.RunEnd && ev.TaskCall == "" && ev.Run != nil && ev.Run.Result != nil
		if top {
			res = ev.Run.Result
		}
		if len(d.crashes) > 0 && d.events == d.crashes[0] {
			d.crashes = d.crashes[1:]
			d.t.Crashes++
			crashed = true
			lock.crash(ev)
			// The calls the process made since its last write are made
			// again by the next one, which must get the same steps.
			d.model.forget()
			break
		}
		if lock != nil {
			lock.see(ev)
		}
	}
	if crashed {
		// A lease is not given back by a process that died; it would run
		// out. Here it is ended at once, as if its time had passed.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lockWait)
		defer cancel()
		if err := d.saver.inner.Release(rctx, d.thread, holder); err != nil {
			return nil, fmt.Errorf("ending the lease of the crashed run: %w", err), true
		}
	}
	if res == nil && runErr == nil && !crashed {
		runErr = errors.New("agent: the run ended without a result")
	}
	return res, runErr, crashed
}
