package agent

import (
	"encoding/json"
	"maps"
	"strings"

	"github.com/deepagents-go/deepagents/ledger"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/tokens"
)

// This file is the loop's side of the context ledger (package ledger):
// measuring each request, the calibration learnt from the usage providers
// report, and the ledgers of a run and its subagents.

// claims is the system prompt text that middleware tagged for a request
// (Middleware.SystemPart), estimated by tag, with the prompt it was
// measured on.
type claims struct {
	system, tail string
	parts        map[string]int
	// inSystem are the tagged parts in the system prompt itself (not its
	// tail): what a fork inherits with the prompt.
	inSystem map[string]int
}

// of returns the claims when req has the system prompt they were measured
// on (a middleware that rewrites the request later keeps the prompt).
func (c *claims) of(req *llm.Request) map[string]int {
	if c == nil || req.System != c.system || req.SystemTail != c.tail {
		return nil
	}
	return c.parts
}

// add counts n tokens of the tagged part, head of them in the system
// prompt itself.
func (c *claims) add(part string, n, head int) {
	if c.parts == nil {
		c.parts, c.inSystem = map[string]int{}, map[string]int{}
	}
	c.parts[part] += n
	c.inSystem[part] += head
}

// claim counts what a middleware's BeforeModel added to the system prompt
// (sys and tail are the prompt before it ran) as its part.
func (c *claims) claim(part, sys, tail string, req *llm.Request) {
	n, head := 0, 0
	if strings.HasPrefix(req.System, sys) {
		head = tokens.EstimateText(req.System[len(sys):])
		n += head
	}
	if strings.HasPrefix(req.SystemTail, tail) {
		n += tokens.EstimateText(req.SystemTail[len(tail):])
	}
	c.add(part, n, head)
}

// systemParts returns the claims of req's system prompt (not its tail) by
// part, or nil when there are none: what a fork inherits (see
// tool.Env.SystemParts).
func (c *claims) systemParts(req *llm.Request) map[string]int {
	if c == nil || req.System != c.system {
		return nil
	}
	for _, n := range c.inSystem {
		if n != 0 {
			return maps.Clone(c.inSystem)
		}
	}
	return nil
}

// Calibrator returns the agent's calibration: per model, the ratio between
// the input tokens its provider reported and the loop's estimate of the
// same requests. Every run of the agent feeds it after each response.
func (a *Agent) Calibrator() *tokens.Calibrator { return &a.calib }

// CalibrationKey is the key the agent's calibration is kept under: the
// model's name when the model tells it (a Name() string method, as the
// providers' models have), else the agent's name.
func (a *Agent) CalibrationKey() string { return a.calibKey }

// ContextWindow is the window the agent's ledger measures against
// (Config.ContextWindow; 0 when unknown).
func (a *Agent) ContextWindow() int { return a.cfg.ContextWindow }

func calibrationKey(m llm.Model, agentName string) string {
	if n, ok := m.(interface{ Name() string }); ok {
		if name := n.Name(); name != "" {
			return name
		}
	}
	return agentName
}

// contextReport measures req as it is about to be sent.
func (r *run) contextReport(req *llm.Request) (ledger.Report, tokens.Breakdown) {
	a := r.a
	b := r.estimates.Estimate(req)
	rep := ledger.NewReport(b, r.claims.of(req), a.calib.Ratio(a.calibKey), a.cfg.ContextWindow)
	rep.LastReported = r.lastReported
	return rep, b
}

func (r *run) measure(req *llm.Request) ledger.Report {
	rep, _ := r.contextReport(req)
	return rep
}

// observe feeds a response's reported usage to the calibration and the
// ledger's floor for the next request. A checkpointed run also keeps the
// new ratio in its state, so that a resumed run (in a process whose agent
// has seen no response yet) measures with it from its first request.
func (r *run) observe(est int, u llm.Usage) {
	if u.Unknown || u.InputTokens <= 0 {
		r.lastReported = 0
		return
	}
	r.a.calib.Observe(r.a.calibKey, est, u.InputTokens)
	r.lastReported = u.InputTokens + u.OutputTokens
	if r.ck != nil {
		r.saveCalibration()
	}
}

// calibrationValue is the checkpointed value that keeps the agent's
// calibration ratio across a resume. Like the loop's own value it is saved
// with the step but kept out of the run's State.Values, so results and
// transcripts show only what middleware stored.
const calibrationValue = "agent.calibration"

// savedCalibration is the calibrationValue: the ratio and the model it was
// measured for.
type savedCalibration struct {
	Model string  `json:"model"`
	Ratio float64 `json:"ratio"`
}

// saveCalibration marks the agent's current ratio for the next checkpoint
// when it differs from the one saved last.
func (r *run) saveCalibration() {
	ratio := r.a.calib.Ratio(r.a.calibKey)
	if ratio == r.calibSaved {
		return
	}
	b, err := json.Marshal(savedCalibration{Model: r.a.calibKey, Ratio: ratio})
	if err != nil {
		return
	}
	if r.ck.values == nil {
		r.ck.values = map[string]json.RawMessage{}
	}
	r.ck.values[calibrationValue] = b
	r.calibSaved = ratio
}

// restoreCalibration takes the saved ratio out of a resumed run's values
// and gives it to the agent, unless the agent has measured this model
// itself already (its ratio is newer) or the run now has another model.
func (r *run) restoreCalibration() {
	raw, ok := r.state.Values[calibrationValue]
	if !ok {
		return
	}
	delete(r.state.Values, calibrationValue)
	if len(r.state.Values) == 0 {
		r.state.Values = nil
	}
	var saved savedCalibration
	if json.Unmarshal(raw, &saved) != nil || saved.Model != r.a.calibKey {
		return
	}
	r.calibSaved = saved.Ratio
	r.a.calib.Seed(saved.Model, saved.Ratio)
}

// addUsage adds what model calls a middleware made for this agent (a
// summariser's, StepInfo.AddUsage) used to the run's usage, the step's
// checkpointed usage and the ledger: they are paid like the agent's own.
func (r *run) addUsage(calls int, u llm.Usage) {
	if calls == 0 && u == (llm.Usage{}) {
		return
	}
	r.rs.Loop.Usage = r.rs.Loop.Usage.Add(u)
	if r.ck != nil {
		r.ck.usage = r.ck.usage.Add(u)
	}
	r.ledger.SummarizerCalls += calls
	r.ledger.Summarizer = r.ledger.Summarizer.Add(u)
}

// addContext counts a request in this run's ledger.
func (r *run) addContext(c ledger.Report) {
	r.ledger.Add(c)
}

// addChildContext rolls a finished child's ledgers up into the tree.
func (r *run) addChildContext(child *Result) {
	if len(child.ContextByAgent) == 0 {
		return
	}
	if r.ctxTree == nil {
		r.ctxTree = map[string]ledger.Ledger{}
	}
	for p, l := range child.ContextByAgent {
		r.ctxTree[p] = r.ctxTree[p].Merge(l)
	}
}

// contextResult fills the ledger fields of a finished run's result.
func (r *run) contextResult(res *Result) {
	if r.ledger.Calls == 0 && r.ledger.SummarizerCalls == 0 && len(r.ctxTree) == 0 {
		return
	}
	res.ContextByAgent = map[string]ledger.Ledger{}
	maps.Copy(res.ContextByAgent, r.ctxTree)
	if r.ledger.Calls > 0 || r.ledger.SummarizerCalls > 0 {
		own := r.ledger
		res.Context = &own
		res.ContextByAgent[r.where] = res.ContextByAgent[r.where].Merge(own)
	}
}
