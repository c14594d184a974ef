package scenario

import (
	"context"
	"iter"
	"maps"
	"sync"

	compaction "github.com/deepagents-go/deepagents/compact"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
)

// replayModel is the scripted model as a scenario's agent calls it. The
// scripted model gives an agent instance's n-th round its n-th step, so a
// call that a resumed run makes again gets the step the crashed process got.
// Two kinds of calls are numbered by what happened before them instead: the
// summariser's (in call order across the run tree) and a round sent again
// after a context overflow (which shifts the instance's later rounds by a
// step). replayModel numbers those itself and, after a crash, forgets the
// ones the crashed process made after its last write that reached the
// saver: the resumed run makes them again, and gets the same steps, as it
// would had the process never crashed. It also refuses every call of a
// process that has crashed, whatever path the call took (a summariser call
// or a resent round does not go through the runtime's model hook).
type replayModel struct {
	*scripted.Model

	mu sync.Mutex
	// cur is how the calls are numbered now; kept is cur at the last write
	// of the current process that reached the saver.
	cur, kept numbering
}

// numbering counts the summariser's calls and, by scripted instance key
// (agent#instance), the rounds sent again.
type numbering struct {
	summarizer int
	resent     map[string]int
}

func (n numbering) clone() numbering {
	return numbering{summarizer: n.summarizer, resent: maps.Clone(n.resent)}
}

func newReplayModel(m *scripted.Model) *replayModel {
	return &replayModel{Model: m, cur: numbering{resent: map[string]int{}}, kept: numbering{resent: map[string]int{}}}
}

// processKey carries the lockstep of the process a call comes from.
type processKey struct{}

func withProcess(ctx context.Context, l *lockstep) context.Context {
	if l == nil {
		return ctx
	}
	return context.WithValue(ctx, processKey{}, l)
}

// numbered returns ctx with the call's step number in its CallInfo, or
// errCrashed for a call of a crashed process.
func (m *replayModel) numbered(ctx context.Context) (context.Context, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if l, ok := ctx.Value(processKey{}).(*lockstep); ok && l.hasCrashed() {
		return nil, errCrashed
	}
	ci, ok := llm.CallInfoFrom(ctx)
	switch {
	case !ok:
		return ctx, nil
	case ci.Agent == compaction.SummarizerAgent && ci.Path == "":
		// The scripted model takes a call with a path and a round as the
		// loop's, answering it with the step of that round.
		ci.Path, ci.Round = compaction.SummarizerAgent, m.cur.summarizer
		m.cur.summarizer++
	case ci.Agent != "" && ci.Path != "":
		key := ci.Agent + "#" + ci.Instance
		if ci.Attempt > 0 {
			m.cur.resent[key]++
			ci.Attempt = 0
		}
		ci.Round += m.cur.resent[key]
	default:
		return ctx, nil
	}
	return llm.WithCallInfo(ctx, ci), nil
}

// keep marks the calls made so far as saved: a write reached the saver.
func (m *replayModel) keep() {
	m.mu.Lock()
	m.kept = m.cur.clone()
	m.mu.Unlock()
}

// forget goes back to the numbering of the last write that reached the
// saver, after a crash.
func (m *replayModel) forget() {
	m.mu.Lock()
	m.cur = m.kept.clone()
	m.mu.Unlock()
}

// Generate implements llm.Model.
func (m *replayModel) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	ctx, err := m.numbered(ctx)
	if err != nil {
		return nil, err
	}
	return m.Model.Generate(ctx, req)
}

// Stream implements llm.Model.
func (m *replayModel) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.StreamEvent, error] {
	ctx, err := m.numbered(ctx)
	if err != nil {
		return func(yield func(llm.StreamEvent, error) bool) { yield(llm.StreamEvent{}, err) }
	}
	return m.Model.Stream(ctx, req)
}
