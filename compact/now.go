package compact

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/tokens"
)

// ErrNothingToCompact is returned by Compact when everything before the
// part of the conversation that is always kept is already summarised.
var ErrNothingToCompact = errors.New("nothing to compact: the conversation has too few messages before the part that is always kept")

// Manual is a compaction made between two runs of a thread, as a person's
// /compact asks for: the summary is written at once (Compact), and the next
// run of the thread given the Manual (WithManual) records it before its
// first model call — the state value, the history file's new section and
// the compaction events, whose usage then counts in that run's usage.
type Manual struct {
	agent string
	base  int // the thread's compaction count it was made on
	// prefix fingerprints the thread's messages before the cutoff, so
	// that only a run of that same conversation records it.
	prefix  [32]byte
	next    State
	evicted []llm.Message
	info    Info
}

// Info describes the compaction: tokens before and after (estimates of the
// conversation's messages), messages summarised, summariser calls and
// their usage, the history file and the cutoff.
func (m *Manual) Info() Info {
	info := m.info
	info.Verbatim = slices.Clone(info.Verbatim)
	return info
}

// Compact summarises the conversation of rs (a thread's saved run state,
// runner.LoadRunState) now, with focus (optional) telling the summariser
// what to keep in detail. It keeps what automatic compaction keeps
// (Config.KeepMessages, or the newest tenth of the window, or 6 messages)
// and needs no threshold: a person asked. cfg.Model writes the summary and
// must be set. The thread is not changed until a run of it is given the
// result with WithManual.
func Compact(ctx context.Context, cfg Config, rs *agent.RunState, focus string) (*Manual, error) {
	if cfg.Model == nil {
		return nil, errors.New("compaction: no model to write the summary")
	}
	if rs == nil || len(rs.Messages) == 0 {
		return nil, ErrNothingToCompact
	}
	c := &compactor{cfg: cfg}
	st := &agent.State{Messages: rs.Messages, Values: rs.Values}
	prior, err := loadState(st)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCompactionFailed, err)
	}
	eff := aligned(prior, nil, rs.Messages)
	before := tokens.Estimate(&llm.Request{Messages: eff}).Total
	next, info, res, cerr := c.compact(ctx, compactInput{prior: prior, eff: eff, raw: rs.Messages, agent: rs.Path.String(),
		gen: limited(cfg.Model), trigger: "manual", before: before, emit: func(agent.Event) {}, state: st,
		focus: focus, deferHistory: true})
	switch res {
	case notNeeded:
		return nil, ErrNothingToCompact
	case vetoed:
		return nil, fmt.Errorf("%w: %v", ErrVetoed, cerr)
	case failed:
		return nil, fmt.Errorf("%w: %v; nothing was changed", ErrCompactionFailed, cerr)
	}
	start := 0
	if prior.Summary != "" {
		start = 1
	}
	info.TokensAfter = tokens.Estimate(&llm.Request{Messages: rewrite(next, eff)}).Total
	c.postCompact(ctx, rs.Path.String(), next, info, eff[start:next.kept])
	return &Manual{agent: rs.Path.String(), base: prior.Count, next: next, prefix: fingerprint(rs.Messages[:next.Cutoff]),
		evicted: slices.Clone(eff[start:next.kept]), info: *info}, nil
}

type manualKey struct{}

// WithManual returns a context whose run records m before its first model
// call, when the run is of the agent and thread state m was made from and
// no other compaction happened since; otherwise m is left out. Give it to
// the next run of the thread (a new turn or a resume).
func WithManual(ctx context.Context, m *Manual) context.Context {
	if m == nil {
		return ctx
	}
	return context.WithValue(ctx, manualKey{}, m)
}

// Done reports whether st (the state of a run given m with WithManual, or
// of its thread as saved) has moved past m: m was recorded, or another
// compaction came first and m no longer applies. Either way m is not needed
// any more.
func (m *Manual) Done(st *agent.State) bool {
	if st == nil {
		return false
	}
	s, _, err := agent.GetValue[State](st, StateKey)
	return err == nil && s.Count > m.base
}

// takeManual records a Manual of the context into the run's state when it
// belongs to this run, and returns the state to go on with.
func (c *compactor) takeManual(ctx context.Context, step agent.StepInfo, s State) (State, error) {
	m, _ := ctx.Value(manualKey{}).(*Manual)
	if m == nil || m.agent != step.Path.String() || s.Count != m.base || step.State == nil ||
		m.next.Cutoff > len(step.State.Messages) || step.SetValue == nil ||
		fingerprint(step.State.Messages[:m.next.Cutoff]) != m.prefix {
		return s, nil
	}
	next := cloneState(m.next)
	info := m.Info()
	if err := appendHistory(ctx, step.Files, next.File, c.cfg.now(), m.evicted); err != nil {
		info.Error = fmt.Sprintf("the summarised messages could not be saved to %s: %v", next.File, err)
		next.File, info.File = "", ""
	}
	if err := step.SetValue(StateKey, next); err != nil {
		return s, err
	}
	announce(step, &info)
	return next, nil
}

// fingerprint hashes msgs as JSON.
func fingerprint(msgs []llm.Message) [32]byte {
	h := sha256.New()
	enc := json.NewEncoder(h)
	for _, m := range msgs {
		_ = enc.Encode(m)
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}
