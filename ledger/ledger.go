// Package ledger is the context ledger of an agent as a middleware: it
// measures every model request (tokens.Report: where its tokens come from
// and how much of the model's window is left) and calibrates the estimate
// against the input tokens the provider reports, as it sees them at the end
// of each model call's stream. The loop sums the reports per agent and per
// run tree (agent.Result.Context and ContextByAgent).
package ledger

import (
	"context"
	"encoding/json"
	"iter"
	"sync"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/tokens"
)

// calibrationValue is the reserved value that keeps an agent's calibration
// ratio across a resume (agent.StepInfo.Keep): threads saved since it was
// the loop's own have it under this name and shape.
const calibrationValue = "agent.calibration"

// savedCalibration is the calibrationValue: the ratio and the model it was
// measured for.
type savedCalibration struct {
	Model string  `json:"model"`
	Ratio float64 `json:"ratio"`
}

// Meter is one agent's ledger: its calibration, learnt over all of its
// runs, and what each run in progress needs to measure its requests. Safe
// for concurrent runs.
type Meter struct {
	key    string
	window int
	calib  tokens.Calibrator

	mu   sync.Mutex
	runs map[*agent.State]*runMeter
}

// runMeter is what one run's measures need: runs are told apart by their
// state, which the loop hands every hook of the run.
type runMeter struct {
	estimates tokens.Cache
	// lastReported is the previous call's reported input+output, a floor
	// for the next request; saved is the ratio last kept for a resume.
	lastReported int
	saved        float64
}

// New returns the ledger of an agent with the configuration cfg: it
// measures against cfg.ContextWindow, and calibrates under the model's
// name when the model tells it (a Name() string method, as the providers'
// models have), else the agent's name.
func New(cfg agent.Config) *Meter {
	key := cfg.Name
	if key == "" {
		key = agent.DefaultName
	}
	if n, ok := cfg.Model.(interface{ Name() string }); ok {
		if name := n.Name(); name != "" {
			key = name
		}
	}
	return &Meter{key: key, window: cfg.ContextWindow, runs: map[*agent.State]*runMeter{}}
}

// Middleware is the meter as the agent's middleware. It must come last in
// the agent's list, so that it sees each request as it reaches the model,
// after every other middleware has rewritten it.
func (m *Meter) Middleware() agent.Middleware {
	return agent.Middleware{Name: "ledger", Measure: m.measure, WrapStream: m.wrapStream, AfterRun: m.afterRun}
}

// Ratio is the agent's calibration so far: the ratio of the input tokens
// its provider reported to the estimate of the same requests (1 before any
// report).
func (m *Meter) Ratio() float64 { return m.calib.Ratio(m.key) }

// run returns the run's meter, made on the run's first measure; a resumed
// run starts from the ratio it was saved with, unless the agent has
// measured this model itself already (its ratio is newer).
func (m *Meter) run(step agent.StepInfo) *runMeter {
	m.mu.Lock()
	defer m.mu.Unlock()
	rm, ok := m.runs[step.State]
	if ok {
		return rm
	}
	rm = &runMeter{}
	m.runs[step.State] = rm
	if step.Kept == nil {
		return rm
	}
	var saved savedCalibration
	if raw := step.Kept(calibrationValue); raw != nil && json.Unmarshal(raw, &saved) == nil && saved.Model == m.key {
		rm.saved = saved.Ratio
		m.calib.Seed(saved.Model, saved.Ratio)
	}
	return rm
}

// measure is the Measure hook: req's estimate split by source, scaled by
// the calibration, against the window, with the previous call's reported
// usage as its floor.
func (m *Meter) measure(step agent.StepInfo, req *llm.Request, parts map[string]int) tokens.Report {
	rm := m.run(step)
	rep := tokens.NewReport(rm.estimates.Estimate(req), parts, m.calib.Ratio(m.key), m.window)
	rep.LastReported = rm.lastReported
	return rep
}

// wrapStream passes the model call's events on as they come and, at its
// end, feeds the usage the provider reported to the calibration, against
// the request as it reached the model.
func (m *Meter) wrapStream(ctx context.Context, req *llm.Request, next agent.StreamFunc) iter.Seq2[llm.StreamEvent, error] {
	return func(yield func(llm.StreamEvent, error) bool) {
		for ev, err := range next(ctx, req) {
			if err == nil && ev.Type == llm.EventDone && ev.Response != nil {
				if step, ok := ownCall(ctx); ok {
					m.observe(step, req, ev.Response.Usage)
				}
			}
			if !yield(ev, err) {
				return
			}
		}
	}
}

// ownCall returns the step of a model call the loop makes for its agent.
// A middleware's calls through the chain on its own behalf (compaction's
// summariser, when it has no model of its own) carry a CallInfo of their
// own, without the agent's path: their usage calibrates nothing and sets
// no floor, as it did when the loop calibrated from the step's response.
func ownCall(ctx context.Context) (agent.StepInfo, bool) {
	step, ok := agent.StepFrom(ctx)
	if !ok || step.State == nil {
		return step, false
	}
	ci, ok := llm.CallInfoFrom(ctx)
	return step, ok && ci.Path == step.Path.String()
}

// observe feeds a response's reported usage to the calibration and the
// floor for the run's next request. A checkpointed run also keeps the new
// ratio, so that a resumed run (in a process whose agent has seen no
// response yet) measures with it from its first request.
func (m *Meter) observe(step agent.StepInfo, req *llm.Request, u llm.Usage) {
	rm := m.run(step)
	if u.Unknown || u.InputTokens <= 0 {
		rm.lastReported = 0
		return
	}
	m.calib.Observe(m.key, rm.estimates.Estimate(req).Total, u.InputTokens)
	rm.lastReported = u.InputTokens + u.OutputTokens
	ratio := m.calib.Ratio(m.key)
	if ratio == rm.saved || step.Keep == nil {
		return
	}
	if step.Keep(calibrationValue, savedCalibration{Model: m.key, Ratio: ratio}) == nil {
		rm.saved = ratio
	}
}

// afterRun forgets the run.
func (m *Meter) afterRun(_ context.Context, step agent.StepInfo, _ agent.Status) {
	m.mu.Lock()
	delete(m.runs, step.State)
	m.mu.Unlock()
}
