package agent

import (
	"encoding/json"
	"maps"
	"math"
	"strconv"
	"strings"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/tokens"
)

// This file is the context ledger: for every model call, where the
// request's tokens come from and how much of the model's window is left,
// summed per agent and per run tree.

// ContextReport is how one model request's tokens split by source. The
// parts are fast estimates (package tokens) scaled by the agent's
// calibration ratio, so they add up to Calibrated; Free is what is left of
// the window. Memory and Skills are the parts of the system prompt those
// features add (0 while an agent has neither).
type ContextReport struct {
	System      int `json:"system"`
	Tools       int `json:"tools"`
	Messages    int `json:"messages"` // user and assistant messages
	ToolResults int `json:"tool_results"`
	Memory      int `json:"memory"`
	Skills      int `json:"skills"`
	// Free is Window − Calibrated (negative when the request does not fit);
	// left out of the JSON when the window is unknown.
	Free int `json:"free"`
	// Window is the model's context window, 0 when unknown
	// (Config.ContextWindow).
	Window int `json:"window,omitempty"`
	// Estimated is the request's uncalibrated estimate; Calibrated is the
	// sum of the parts, the estimate scaled by Ratio, the agent's ratio of
	// reported to estimated input tokens so far (1 before any report).
	Estimated  int     `json:"estimated"`
	Calibrated int     `json:"calibrated"`
	Ratio      float64 `json:"ratio"`
	// LastReported is the input plus output tokens the provider reported
	// for this agent's previous call of the run (0 before one): a floor for
	// this request, which resends all of it.
	LastReported int `json:"last_reported,omitempty"`
}

// Load is the size the request is taken to have: the calibrated estimate,
// or what the provider reported for the previous call and its answer if
// that is more. Thresholds (such as compaction's) compare against it.
func (c ContextReport) Load() int { return max(c.Calibrated, c.LastReported) }

// MarshalJSON leaves out Free when the window is unknown. Reports go with
// every model request's event and every saved subagent result, so they are
// written by hand, byte for byte as encoding/json writes them.
func (c ContextReport) MarshalJSON() ([]byte, error) {
	if math.IsNaN(c.Ratio) || math.IsInf(c.Ratio, 0) || c.Ratio != 0 && (math.Abs(c.Ratio) < 1e-6 || math.Abs(c.Ratio) >= 1e21) {
		return c.marshalSlow() // encoding/json's error, or its exponent form
	}
	b := make([]byte, 0, 192)
	b = appendIntField(b, `{"system":`, c.System)
	b = appendIntField(b, `,"tools":`, c.Tools)
	b = appendIntField(b, `,"messages":`, c.Messages)
	b = appendIntField(b, `,"tool_results":`, c.ToolResults)
	b = appendIntField(b, `,"memory":`, c.Memory)
	b = appendIntField(b, `,"skills":`, c.Skills)
	if c.Window != 0 {
		b = appendIntField(b, `,"window":`, c.Window)
	}
	b = appendIntField(b, `,"estimated":`, c.Estimated)
	b = appendIntField(b, `,"calibrated":`, c.Calibrated)
	b = append(b, `,"ratio":`...)
	b = strconv.AppendFloat(b, c.Ratio, 'f', -1, 64)
	if c.LastReported != 0 {
		b = appendIntField(b, `,"last_reported":`, c.LastReported)
	}
	if c.Window > 0 {
		b = appendIntField(b, `,"free":`, c.Free)
	}
	return append(b, '}'), nil
}

func appendIntField(b []byte, key string, v int) []byte {
	return strconv.AppendInt(append(b, key...), int64(v), 10)
}

// marshalSlow is MarshalJSON through encoding/json.
func (c ContextReport) marshalSlow() ([]byte, error) {
	type plain ContextReport
	w := struct {
		plain
		Free *int `json:"free,omitempty"`
	}{plain: plain(c)}
	if c.Window > 0 {
		w.Free = &c.Free
	}
	return json.Marshal(w)
}

// ContextPart names a part of the system prompt that middleware adds and
// the context report counts apart (Middleware.ContextPart).
type ContextPart string

// The parts middleware can claim.
const (
	ContextMemory ContextPart = "memory"
	ContextSkills ContextPart = "skills"
)

// claims is the system prompt text that middleware claimed for a request,
// estimated, with the prompt it was measured on.
type claims struct {
	system, tail   string
	memory, skills int
	// inSystem are the parts of memory and skills in the system prompt
	// itself (not its tail): what a fork inherits with the prompt.
	inSystem [2]int
}

// of returns the claims when req has the system prompt they were measured
// on (a middleware that rewrites the request later keeps the prompt).
func (c *claims) of(req *llm.Request) (memory, skills int) {
	if c == nil || req.System != c.system || req.SystemTail != c.tail {
		return 0, 0
	}
	return c.memory, c.skills
}

// claim counts what a middleware's BeforeModel added to the system prompt
// (sys and tail are the prompt before it ran) as its ContextPart.
func (c *claims) claim(part ContextPart, sys, tail string, req *llm.Request) {
	n, head := 0, 0
	if strings.HasPrefix(req.System, sys) {
		head = tokens.EstimateText(req.System[len(sys):])
		n += head
	}
	if strings.HasPrefix(req.SystemTail, tail) {
		n += tokens.EstimateText(req.SystemTail[len(tail):])
	}
	switch part {
	case ContextMemory:
		c.memory += n
		c.inSystem[0] += head
	case ContextSkills:
		c.skills += n
		c.inSystem[1] += head
	}
}

// systemParts returns the claims of req's system prompt (not its tail) by
// part, or nil when there are none: what a fork inherits (see
// tool.Env.SystemParts).
func (c *claims) systemParts(req *llm.Request) map[string]int {
	if c == nil || req.System != c.system || c.inSystem == [2]int{} {
		return nil
	}
	return map[string]int{string(ContextMemory): c.inSystem[0], string(ContextSkills): c.inSystem[1]}
}

// newContextReport splits b's estimate scaled by ratio, memory and skills
// (estimated parts of its system prompt) counted apart. Each part is
// rounded on its own and Calibrated is their sum, so that the parts and
// Free always add up to the window.
func newContextReport(b tokens.Breakdown, memory, skills int, ratio float64, window int) ContextReport {
	scale := func(n int) int { return int(float64(n)*ratio + 0.5) }
	memory, skills = min(memory, b.System), min(skills, max(b.System-memory, 0))
	c := ContextReport{System: scale(b.System - memory - skills), Tools: scale(b.Tools), Messages: scale(b.Messages),
		ToolResults: scale(b.ToolResults), Memory: scale(memory), Skills: scale(skills), Window: window, Estimated: b.Total, Ratio: ratio}
	c.Calibrated = c.System + c.Tools + c.Messages + c.ToolResults + c.Memory + c.Skills
	if window > 0 {
		c.Free = window - c.Calibrated
	}
	return c
}

// ContextLedger sums the model requests of one agent (or, merged, of a run
// tree): how many there were, their calibrated tokens together, the last
// one and the largest one.
type ContextLedger struct {
	Calls int `json:"calls"`
	// Sent is the calibrated tokens of all the requests together.
	Sent int           `json:"sent"`
	Last ContextReport `json:"last"`
	// Peak is the request with the most calibrated tokens.
	Peak ContextReport `json:"peak"`
	// SummarizerCalls and Summarizer are the calls compaction made to
	// summarise this agent's history and what they used as the provider
	// reported it. That usage is also in the run's (Result.Usage).
	SummarizerCalls int       `json:"summarizer_calls,omitempty"`
	Summarizer      llm.Usage `json:"summarizer,omitzero"`
}

// Add counts one request.
func (l *ContextLedger) Add(c ContextReport) {
	l.Calls++
	l.Sent += c.Calibrated
	l.Last = c
	if l.Calls == 1 || c.Calibrated > l.Peak.Calibrated {
		l.Peak = c
	}
}

// Merge returns l and o together: calls and tokens summed, the larger peak;
// Last stays l's unless l has no calls.
func (l ContextLedger) Merge(o ContextLedger) ContextLedger {
	out := l
	if l.Calls == 0 {
		out.Last, out.Peak = o.Last, o.Peak
	} else if o.Calls > 0 && o.Peak.Calibrated > l.Peak.Calibrated {
		out.Peak = o.Peak
	}
	out.Calls += o.Calls
	out.Sent += o.Sent
	out.SummarizerCalls += o.SummarizerCalls
	out.Summarizer = out.Summarizer.Add(o.Summarizer)
	return out
}

// ContextTotal is the ledger of the whole run tree: this run's requests
// and every subagent's below it (ContextByAgent merged, this run's Last).
func (r *Result) ContextTotal() ContextLedger {
	var total ContextLedger
	if own, ok := r.ContextByAgent[r.Agent.String()]; ok {
		total = own
	}
	for p, l := range r.ContextByAgent {
		if p != r.Agent.String() {
			total = total.Merge(l)
		}
	}
	return total
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
func (r *run) contextReport(req *llm.Request) (ContextReport, tokens.Breakdown) {
	a := r.a
	b := r.estimates.Estimate(req)
	memory, skills := r.claims.of(req)
	rep := newContextReport(b, memory, skills, a.calib.Ratio(a.calibKey), a.cfg.ContextWindow)
	rep.LastReported = r.lastReported
	return rep, b
}

func (r *run) measure(req *llm.Request) ContextReport {
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
	if r.rec != nil {
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
	if r.rec.values == nil {
		r.rec.values = map[string]json.RawMessage{}
	}
	r.rec.values[calibrationValue] = b
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
	if r.rec != nil {
		r.rec.usage = r.rec.usage.Add(u)
	}
	r.ledger.SummarizerCalls += calls
	r.ledger.Summarizer = r.ledger.Summarizer.Add(u)
}

// addContext counts a request in this run's ledger.
func (r *run) addContext(c ContextReport) {
	r.ledger.Add(c)
}

// addChildContext rolls a finished child's ledgers up into the tree.
func (r *run) addChildContext(child *Result) {
	if len(child.ContextByAgent) == 0 {
		return
	}
	if r.ctxTree == nil {
		r.ctxTree = map[string]ContextLedger{}
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
	res.ContextByAgent = map[string]ContextLedger{}
	maps.Copy(res.ContextByAgent, r.ctxTree)
	if r.ledger.Calls > 0 || r.ledger.SummarizerCalls > 0 {
		own := r.ledger
		res.Context = &own
		res.ContextByAgent[r.where] = res.ContextByAgent[r.where].Merge(own)
	}
}
