package tokens

import (
	"encoding/json"

	"github.com/deepagents-go/deepagents/llm"
)

// This file is what the context ledger (package ledger) reports: for a
// model request, where its tokens come from and how much of the model's
// window is left, and the sums of such reports per agent and run tree.

// The system prompt parts a report counts apart: the tags memory and skills
// middleware give the text they add to the prompt
// (agent.Middleware.SystemPart). Text with any other tag counts as System.
const (
	MemoryPart = "memory"
	SkillsPart = "skills"
)

// Report is how one model request's tokens split by source. The parts are
// fast estimates (Estimate) scaled by the agent's calibration ratio, so
// they add up to Calibrated; Free is what is left of the window. Memory
// and Skills are the parts of the system prompt those features add (0 while
// an agent has neither).
type Report struct {
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
	// (agent.Config.ContextWindow).
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
func (c Report) Load() int { return max(c.Calibrated, c.LastReported) }

// MarshalJSON writes Free last, and only when the window is known.
func (c Report) MarshalJSON() ([]byte, error) {
	type plain Report
	w := struct {
		plain
		Free *int `json:"free,omitempty"`
	}{plain: plain(c)}
	if c.Window > 0 {
		w.Free = &c.Free
	}
	return json.Marshal(w)
}

// NewReport splits b's estimate scaled by ratio against window. parts are
// the estimated tokens of the tagged parts of b's system prompt: MemoryPart
// and SkillsPart are counted apart, other tags stay System. Each part is rounded on
// its own and Calibrated is their sum, so that the parts and Free always add
// up to the window.
func NewReport(b Breakdown, parts map[string]int, ratio float64, window int) Report {
	scale := func(n int) int { return int(float64(n)*ratio + 0.5) }
	memory := min(parts[MemoryPart], b.System)
	skills := min(parts[SkillsPart], max(b.System-memory, 0))
	c := Report{System: scale(b.System - memory - skills), Tools: scale(b.Tools), Messages: scale(b.Messages),
		ToolResults: scale(b.ToolResults), Memory: scale(memory), Skills: scale(skills), Window: window, Estimated: b.Total, Ratio: ratio}
	c.Calibrated = c.System + c.Tools + c.Messages + c.ToolResults + c.Memory + c.Skills
	if window > 0 {
		c.Free = window - c.Calibrated
	}
	return c
}

// Ledger sums the model requests of one agent (or, merged, of a run tree):
// how many there were, their calibrated tokens together, the last one and
// the largest one.
type Ledger struct {
	Calls int `json:"calls"`
	// Sent is the calibrated tokens of all the requests together.
	Sent int    `json:"sent"`
	Last Report `json:"last"`
	// Peak is the request with the most calibrated tokens.
	Peak Report `json:"peak"`
	// SummarizerCalls and Summarizer are the calls compaction made to
	// summarise this agent's history and what they used as the provider
	// reported it. That usage is also in the run's (agent.Result.Usage).
	SummarizerCalls int       `json:"summarizer_calls,omitempty"`
	Summarizer      llm.Usage `json:"summarizer,omitzero"`
}

// Add counts one request.
func (l *Ledger) Add(c Report) {
	l.Calls++
	l.Sent += c.Calibrated
	l.Last = c
	if l.Calls == 1 || c.Calibrated > l.Peak.Calibrated {
		l.Peak = c
	}
}

// Merge returns l and o together: calls and tokens summed, the larger peak;
// Last stays l's unless l has no calls.
func (l Ledger) Merge(o Ledger) Ledger {
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

// LedgerTree is the ledger of a whole run tree from its ledgers by agent
// path: own's, with every other path's merged in (so Last is own's).
func LedgerTree(own string, byAgent map[string]Ledger) Ledger {
	total := byAgent[own]
	for p, l := range byAgent {
		if p != own {
			total = total.Merge(l)
		}
	}
	return total
}
