package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/vfs"
)

// Names of the loop's own values in a checkpoint's state. Each finished
// subagent run of the current turn is kept under childValue and its call id,
// saved once with the checkpoint after it finished; childrenValue is how
// databases written before kept all of them, rewritten with every
// checkpoint (still read).
const (
	loopValue     = "agent.loop"
	childValue    = "agent.child/"
	childrenValue = "agent.children"
)

// sourceInput is the "source" metadata of a checkpoint holding a run's input.
const sourceInput = "input"

// Kinds of the writes a step in progress keeps besides results.
const (
	kindWaiting  = "interrupt"
	kindDecision = "decision"
)

// nsOf is the checkpoint namespace of the run at p: "" for a top-level run.
func nsOf(p agent.Path) string {
	if !p.IsNested() {
		return ""
	}
	return p.String()
}

// thread is a thread of a checkpoint store as a run reads it (agent.Thread).
type thread struct {
	saver checkpoint.Reader
	id    string
	// acceptEnded: a resume of an ended run gives its result
	// (WithEndedResult).
	acceptEnded bool
}

// Open reads the run at path and decides how it starts: the resume
// matrix. A thread with no run at path starts one from the run's input; a
// subagent's namespace holds its own run when its parent's step started it
// (resumed, or ended already), else another's under a call id used again;
// on a top-level run, input on an unfinished run closes its step and starts
// a new turn, no input resumes it with the decisions given (checked first),
// no input on a run that stopped at a limit continues its turn, and input
// on an ended run starts a new turn.
func (t thread) Open(ctx context.Context, path agent.Path, o agent.Opening) (agent.StartHow, *agent.RunState, error) {
	rs, err := LoadRunState(ctx, t.saver, t.id, path, false)
	if errors.Is(err, checkpoint.ErrNotFound) {
		if !o.Input {
			return 0, nil, fmt.Errorf("thread %q has no run to resume; start it with a message (%w)", t.id, err)
		}
		if len(o.Decisions) > 0 && !o.Nested {
			return 0, nil, &agent.DecisionError{Msg: fmt.Sprintf("thread %q has no calls waiting for a decision", t.id)}
		}
		return agent.StartFresh, nil, nil
	}
	if err != nil {
		return 0, nil, fmt.Errorf("reading thread %q: %w", t.id, err)
	}
	if rs.V > agent.RunStateVersion {
		return 0, nil, fmt.Errorf("thread %q was saved by a newer version (state v%d; this one reads v%d)", t.id, rs.V, agent.RunStateVersion)
	}
	unfinished := rs.Status == "" || rs.Status == agent.StatusInterrupted
	switch {
	case o.Nested && rs.Loop.ParentStep != o.ParentStep:
		// The call id was used by an earlier step of the thread (models and
		// servers that number calls per response do that): this is another
		// run, with a history of its own in the same namespace.
		return agent.StartFresh, rs, nil
	case o.Nested && !unfinished:
		// A subagent's namespace is its call's, and the step that started it
		// is this one: whatever it holds is this very run, started before a
		// crash or an interrupt.
		return agent.StartEnded, rs, nil
	case o.Nested:
		return agent.StartResume, rs, nil
	case unfinished && o.Input && len(o.Decisions) > 0:
		return 0, nil, &agent.DecisionError{Msg: fmt.Sprintf("thread %q: decisions go with a resume, which sends no message; "+
			"a new message instead closes the waiting calls unanswered. Send one or the other", t.id)}
	case unfinished && o.Input:
		// New input on a run that was cut off or waits for approval: the
		// person moved on. The step in progress is closed (finished calls
		// keep their results, the others are told they did not run) and the
		// input starts a new turn.
		return agent.StartCloseStep, rs, nil
	case unfinished:
		if o.Check != nil {
			if err := o.Check(o.Decisions, rs.Loop.Interrupts); err != nil {
				return agent.StartRefused, rs, err
			}
		}
		return agent.StartResume, rs, nil
	case len(o.Decisions) > 0:
		return 0, nil, &agent.DecisionError{Msg: fmt.Sprintf("thread %q has no calls waiting for a decision (its last run ended %s)", t.id, rs.Status)}
	case !o.Input && t.acceptEnded && rs.Status != "":
		return agent.StartEnded, rs, nil
	case !o.Input && rs.Status == agent.StatusLimit:
		// A run stopped at a limit (its steps, its time, a budget) goes on
		// where it stopped, in the same turn: with the limit raised it
		// continues, else it stops again at once.
		return agent.StartResume, rs, nil
	case !o.Input:
		return 0, nil, fmt.Errorf("thread %q has no unfinished run to resume (its last run ended %s); send a new message instead", t.id, rs.Status)
	}
	return agent.StartNewTurn, rs, nil
}

func (t thread) FilesAt(ctx context.Context, path agent.Path, id string) (map[string]vfs.File, error) {
	cp, err := t.saver.Get(ctx, checkpoint.Ref{ThreadID: t.id, NS: nsOf(path), ID: id})
	if err != nil {
		return nil, err
	}
	return cp.State.Files, nil
}

func (t thread) Changed(ctx context.Context, rs *agent.RunState, finished bool) ([]string, error) {
	ns := nsOf(rs.Path)
	var paths []string
	if finished {
		var err error
		if paths, err = changedByCalls(ctx, t.saver, t.id, ns, rs); err != nil {
			return nil, err
		}
	}
	kids, err := changedByKidsInFlight(ctx, t.saver, t.id, ns, rs)
	if err != nil {
		return nil, err
	}
	return append(paths, kids...), nil
}

// LoadRunState reads the state of the run at path in thread as of its latest
// checkpoint. With deep set, the states of subagents started by the step in
// progress are read too (agent.RunState.Children). It returns checkpoint.ErrNotFound
// when the run has no checkpoint.
func LoadRunState(ctx context.Context, saver checkpoint.Reader, thread string, path agent.Path, deep bool) (*agent.RunState, error) {
	ns := nsOf(path)
	cp, err := saver.Get(ctx, checkpoint.Ref{ThreadID: thread, NS: ns})
	if err != nil {
		return nil, err
	}
	rs := &agent.RunState{V: agent.RunStateVersion, Thread: thread, Path: path, StepID: cp.ID, Step: cp.Step,
		Messages: cp.State.Messages, Files: cp.State.Files, Values: map[string]json.RawMessage{}}
	for k, v := range cp.State.Values {
		switch k {
		case loopValue:
			if err := json.Unmarshal(v, &rs.Loop); err != nil {
				return nil, fmt.Errorf("checkpoint %s of thread %q: the loop's value: %w", cp.ID, thread, err)
			}
		case childrenValue:
			rs.LegacyChildren = true
		default:
			if id, ok := strings.CutPrefix(k, childValue); ok {
				var kid *agent.Result
				if err := json.Unmarshal(v, &kid); err != nil {
					return nil, fmt.Errorf("checkpoint %s of thread %q: subagent run %s: %w", cp.ID, thread, id, err)
				}
				if kid == nil {
					continue
				}
				if rs.Finished == nil {
					rs.Finished = map[string]*agent.Result{}
				}
				rs.Finished[id] = kid
				continue
			}
			rs.Values[k] = v // the calibration too: a resumed run takes it out
		}
	}
	if len(rs.Values) == 0 {
		rs.Values = nil
	}
	rs.Status = rs.Loop.Status
	rs.Deleted = rs.Loop.Deleted
	if rs.Status == "" && cp.Status != checkpoint.StatusRunning && cp.Status != "" {
		rs.Status = agent.StatusError
	}
	// The step in progress: the last assistant message with calls that have
	// no results after it.
	if n := len(rs.Messages); n > 0 && rs.Messages[n-1].Role == llm.RoleAssistant && len(rs.Messages[n-1].ToolCalls) > 0 &&
		rs.Status != agent.StatusOK && rs.Status != agent.StatusError && rs.Status != agent.StatusLimit && rs.Status != agent.StatusRefused {
		sc := rs.Loop.StepInProgress
		if sc == "" {
			sc = cp.ID
		}
		ss := &agent.StepState{ID: sc, Calls: rs.Messages[n-1].ToolCalls}
		pending := cp.Pending
		if sc != cp.ID {
			at, err := saver.Get(ctx, checkpoint.Ref{ThreadID: thread, NS: ns, ID: sc})
			if err != nil {
				return nil, fmt.Errorf("thread %q: the checkpoint of the step in progress: %w", thread, err)
			}
			pending = at.Pending
		}
		for _, w := range pending {
			var err error
			switch w.Kind {
			case checkpoint.KindResult, "":
				err = decodeOutcome(&ss.Done, w)
			case kindWaiting:
				err = decodeInto(&ss.Waiting, w)
			case kindDecision:
				err = decodeInto(&ss.Decided, w)
			}
			if err != nil {
				return nil, fmt.Errorf("thread %q: the saved %s of call %s: %w", thread, w.Kind, w.CallID, err)
			}
		}
		rs.InProgress = ss
		if deep {
			kids, err := saver.List(ctx, checkpoint.ListOptions{ThreadID: thread, AllNamespaces: true})
			if err != nil {
				return nil, err
			}
			seen := map[string]bool{}
			for _, k := range kids {
				kp, err := agent.ParsePath(k.NS)
				// The parent is known by its namespace: a top-level run's is
				// "" whatever name the path gives the root.
				if k.NS == "" || err != nil || nsOf(kp.Parent()) != ns || seen[k.NS] {
					continue
				}
				seen[k.NS] = true
				if _, done := ss.Done[kp.Last().CallID]; done {
					continue
				}
				child, err := LoadRunState(ctx, saver, thread, kp, true)
				if err != nil {
					return nil, err
				}
				if rs.Children == nil {
					rs.Children = map[string]*agent.RunState{}
				}
				rs.Children[kp.Last().CallID] = child
			}
		}
	}
	if rs.Status == agent.StatusInterrupted {
		if err := dropAnswered(ctx, saver, rs, path); err != nil {
			return nil, err
		}
	}
	// Databases written before kept the turn's finished children in one
	// value and their usage in the loop's Tree, which a new turn emptied
	// while the children stayed until replaced: children without a Tree
	// are the turn before's.
	if raw, ok := cp.State.Values[childrenValue]; ok && rs.Loop.Tree != nil {
		var kids map[string]*agent.Result
		if err := json.Unmarshal(raw, &kids); err == nil {
			for id, kid := range kids {
				if _, newer := rs.Finished[id]; !newer && kid != nil {
					if rs.Finished == nil {
						rs.Finished = map[string]*agent.Result{}
					}
					rs.Finished[id] = kid
				}
			}
		}
	}
	return rs, nil
}

// dropAnswered leaves out of an interrupted run's waiting calls those that
// have been answered since it stopped: a resume that took their decisions
// was cut off before the run's next checkpoint. Such a run is no longer
// waiting for them; with none left it is unfinished, and resuming it
// continues without decisions.
func dropAnswered(ctx context.Context, saver checkpoint.Reader, rs *agent.RunState, path agent.Path) error {
	// Paths are compared by namespace: a top-level run's is "" whatever
	// name its root is read under.
	own := nsOf(path)
	states := map[string]*agent.RunState{} // the subagents' own states, by path
	waiting := rs.Loop.Interrupts[:0:0]
	for _, in := range rs.Loop.Interrupts {
		st := rs.InProgress
		p := in.Path
		if len(p) == 0 {
			waiting = append(waiting, in) // not a path this run can read
			continue
		}
		if nsOf(p) != own {
			at, ok := states[in.Path.String()]
			if !ok {
				if len(p) <= len(path) || nsOf(p[:len(path)]) != own {
					waiting = append(waiting, in) // not below this run
					continue
				}
				var err error
				switch at, err = LoadRunState(ctx, saver, rs.Thread, p, false); {
				case errors.Is(err, checkpoint.ErrNotFound):
					at = nil
				case err != nil:
					return err
				}
				states[in.Path.String()] = at
			}
			if at == nil {
				waiting = append(waiting, in)
				continue
			}
			if at.Status != agent.StatusInterrupted {
				continue // the subagent went on, or finished
			}
			st = at.InProgress
		}
		if st != nil {
			if _, decided := st.Decided[in.CallID]; decided {
				continue
			}
			if _, done := st.Done[in.CallID]; done {
				continue
			}
		}
		waiting = append(waiting, in)
	}
	if len(waiting) == len(rs.Loop.Interrupts) {
		return nil
	}
	rs.Loop.Interrupts = waiting
	if len(waiting) == 0 {
		rs.Loop.Interrupts = nil
		rs.Status, rs.Loop.Status = "", ""
	}
	return nil
}

// ChangedByFinishedSteps lists, sorted, the paths that the finished steps of
// an unfinished run changed, as its Result would list them, read back from
// the file changes saved with its calls' results (checkpoint.Write.Files).
// rs is the run's state as LoadRunState reads it; the calls of its step in
// progress (rs.InProgress) are left out. A run that stops saves its list
// (rs.Loop.Changed), and one whose files are in its state can compare them
// with its input's; one cut off on a real directory has only this.
func ChangedByFinishedSteps(ctx context.Context, saver checkpoint.Reader, rs *agent.RunState) ([]string, error) {
	return changedByCalls(ctx, saver, rs.Thread, nsOf(rs.Path), rs)
}

// changedByCalls gathers the paths in the file deltas of the result writes
// of the run's finished steps: the step checkpoints from its latest back to
// its input, but for the step in progress. A finished step merged every
// such delta, so these are the paths it changed. Only a run cut off pays
// for reading them, once, when it is read back (saving the list with each
// step would cost every step): a saver that reads a namespace's writes
// alone (checkpoint.PendingReader) does it in one read; with any other,
// each step's checkpoint is read whole.
func changedByCalls(ctx context.Context, saver checkpoint.Reader, thread, ns string, rs *agent.RunState) ([]string, error) {
	cps, err := saver.List(ctx, checkpoint.ListOptions{ThreadID: thread, NS: ns})
	if err != nil {
		return nil, fmt.Errorf("thread %q: listing the run's checkpoints: %w", thread, err)
	}
	var pending map[string][]checkpoint.Write
	if pr, ok := saver.(checkpoint.PendingReader); ok {
		switch pending, err = pr.PendingWrites(ctx, thread, ns); {
		case errors.Is(err, errors.ErrUnsupported):
			pending = nil
		case err != nil:
			return nil, fmt.Errorf("thread %q: the run's call results: %w", thread, err)
		}
	}
	byID := make(map[string]*checkpoint.Checkpoint, len(cps))
	for i := range cps {
		byID[cps[i].ID] = &cps[i]
	}
	inProgress := ""
	if rs.InProgress != nil {
		inProgress = rs.InProgress.ID
	}
	changed := map[string]bool{}
	seen := map[string]bool{}
	for id := rs.StepID; id != "" && !seen[id]; {
		seen[id] = true
		cp, ok := byID[id]
		if !ok {
			break
		}
		// The results of a step's calls are saved under the checkpoint
		// of its model response (source "loop"); a subagent's first one
		// is also its input.
		if source := cp.Metadata["source"]; source == "loop" && id != inProgress {
			writes := pending[id]
			if pending == nil {
				at, err := saver.Get(ctx, checkpoint.Ref{ThreadID: thread, NS: ns, ID: id})
				if err != nil {
					return nil, fmt.Errorf("thread %q: checkpoint %s of the run: %w", thread, id, err)
				}
				writes = at.Pending
			}
			for _, w := range writes {
				if w.Kind != checkpoint.KindResult && w.Kind != "" {
					continue
				}
				for _, c := range w.Files {
					changed[c.Path] = true
				}
			}
		}
		if id == rs.Loop.Input || rs.Loop.Input == "" && cp.Metadata["source"] == sourceInput {
			break
		}
		id = cp.ParentID
	}
	return slices.Sorted(maps.Keys(changed)), nil
}

// changedByKidsInFlight lists the paths that the subagent runs started by
// the calls of rs's step in progress that have not finished changed so far,
// theirs and their own subagents'.
func changedByKidsInFlight(ctx context.Context, saver checkpoint.Reader, thread, ns string, rs *agent.RunState) ([]string, error) {
	st := rs.InProgress
	if st == nil {
		return nil, nil
	}
	open := map[string]bool{}
	for _, c := range st.Calls {
		if _, done := st.Done[c.ID]; !done {
			open[c.ID] = true
		}
	}
	if len(open) == 0 {
		return nil, nil
	}
	cps, err := saver.List(ctx, checkpoint.ListOptions{ThreadID: thread, AllNamespaces: true})
	if err != nil {
		return nil, fmt.Errorf("thread %q: listing its runs: %w", thread, err)
	}
	step := ns + "@" + st.ID
	seen := map[string]bool{}
	var out []string
	for _, k := range cps {
		if k.NS == "" || seen[k.NS] {
			continue
		}
		seen[k.NS] = true
		kp, err := agent.ParsePath(k.NS)
		if err != nil || nsOf(kp.Parent()) != ns || !open[kp.Last().CallID] {
			continue
		}
		kid, err := LoadRunState(ctx, saver, thread, kp, false)
		if err != nil {
			return nil, err
		}
		if kid.Loop.ParentStep != step {
			continue // an earlier run under a call id used again
		}
		paths := kid.Loop.Changed
		if paths == nil && kid.Status == "" {
			if paths, err = changedByCalls(ctx, saver, thread, k.NS, kid); err != nil {
				return nil, err
			}
		}
		out = append(out, paths...)
		if st := kid.InProgress; st != nil && (kid.Status == "" || kid.Status == agent.StatusInterrupted) {
			// Its step in progress merges these only when it completes.
			for _, oc := range st.Done {
				for _, c := range oc.Files {
					out = append(out, c.Path)
				}
			}
			more, err := changedByKidsInFlight(ctx, saver, thread, k.NS, kid)
			if err != nil {
				return nil, err
			}
			out = append(out, more...)
		}
	}
	return out, nil
}

// threadOf is thread id of store as a run reads it back and records into
// it, held by a lease when the store takes leases, as c says.
func threadOf(store checkpoint.RunStore, id string, c config) agent.Thread {
	if store == nil {
		return nil
	}
	th := recordedThread{thread: thread{saver: store, id: id, acceptEnded: c.ended},
		Recorder: retrying{rec: &ckRecorder{saver: store, thread: id, metadata: c.metadata}, budget: c.saveRetry}}
	if l, ok := store.(checkpoint.Leaser); ok {
		return heldThread{recordedThread: th, lease: &lease{saver: l, thread: id, holder: c.holder, ttl: c.ttl}}
	}
	return th
}

// recordedThread is a thread that records a run's steps (agent.Thread).
type recordedThread struct {
	thread
	agent.Recorder
}

// heldThread is a recorded thread that a run holds by its lease
// (agent.Hold).
type heldThread struct {
	recordedThread
	*lease
}
