package agent

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/tokens"
)

// This file is the loop's side of the context ledger (package ledger): the
// system prompt parts middleware tag, the report of each request that a
// middleware measures, the values such middleware keep out of the run's
// state, and the ledgers of a run and its subagents.

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

// report measures req as it is about to be sent, through the last
// middleware that measures requests (Middleware.Measure), with the parts
// of its system prompt middleware tagged. ok is false when none does.
func (r *run) report(req *llm.Request) (rep tokens.Report, ok bool) {
	mws := r.a.cfg.Middleware
	for i := len(mws) - 1; i >= 0; i-- {
		if m := mws[i].Measure; m != nil {
			return m(r.stepInfo(), req, maps.Clone(r.claims.of(req))), true
		}
	}
	return rep, false
}

// measure is StepInfo.Measure: the report of a middleware that measures,
// else the plain estimate against the window.
func (r *run) measure(req *llm.Request) tokens.Report {
	if rep, ok := r.report(req); ok {
		return rep
	}
	return tokens.NewReport(r.estimates.Estimate(req), r.claims.of(req), 1, r.a.cfg.ContextWindow)
}

// keep saves a middleware's value under a reserved name (StepInfo.Keep)
// with the next checkpoint, out of the run's State.Values.
func (r *run) keep(name string, v any) error {
	if !ReservedValue(name) {
		return fmt.Errorf("kept value name %q is not reserved", name)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("kept value %q: %w", name, err)
	}
	if r.kept == nil {
		r.kept = map[string]json.RawMessage{}
	}
	r.kept[name] = b
	if r.rec != nil {
		if r.rec.values == nil {
			r.rec.values = map[string]json.RawMessage{}
		}
		r.rec.values[name] = b
	}
	return nil
}

// keptValue is StepInfo.Kept.
func (r *run) keptValue(name string) json.RawMessage { return r.kept[name] }

// takeKept takes the reserved values a resumed run was saved with out of
// its state's values, where results and middleware would see them, and
// keeps them for StepInfo.Kept. Like the loop's own value they are saved
// with the steps but are no part of the run's State.
func (r *run) takeKept() {
	taken := false
	for name, raw := range r.state.Values {
		if ReservedValue(name) {
			if r.kept == nil {
				r.kept = map[string]json.RawMessage{}
			}
			r.kept[name] = raw
			delete(r.state.Values, name)
			taken = true
		}
	}
	if taken && len(r.state.Values) == 0 {
		r.state.Values = nil
	}
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

// addChildContext rolls a finished child's ledgers up into the tree.
func (r *run) addChildContext(child *Result) {
	if len(child.ContextByAgent) == 0 {
		return
	}
	if r.ctxTree == nil {
		r.ctxTree = map[string]tokens.Ledger{}
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
	res.ContextByAgent = map[string]tokens.Ledger{}
	maps.Copy(res.ContextByAgent, r.ctxTree)
	if r.ledger.Calls > 0 || r.ledger.SummarizerCalls > 0 {
		own := r.ledger
		res.Context = &own
		res.ContextByAgent[r.where] = res.ContextByAgent[r.where].Merge(own)
	}
}
