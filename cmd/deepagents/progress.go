package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
)

// progressPrinter shows on stderr which agent is working, on which round,
// which tool it runs, and the running token count (thinking tokens
// included, and a mark when a call reported no usage); subagents as they
// start and finish. A model's thinking itself is never printed.
type progressPrinter struct {
	w     io.Writer
	start time.Time
	usage llm.Usage
	// cost is the turn's running cost (nil: not shown).
	cost *costMeter
}

// costSoFar is " · COST" for a progress line, or "".
func (p *progressPrinter) costSoFar() string {
	if p.cost == nil {
		return ""
	}
	return " · " + p.cost.now()
}

func (p *progressPrinter) stamp() string {
	return fmt.Sprintf("[%5.1fs]", time.Since(p.start).Seconds())
}

func (p *progressPrinter) event(ev agent.Event) {
	switch ev.Type {
	case agent.ModelRequest:
		fmt.Fprintf(p.w, "%s %s · round %d · %s\n", p.stamp(), ev.Agent, ev.Request.Round+1, count(ev.Request.MessageCount, "message"))
	case agent.ModelResponse:
		r := ev.Response
		p.usage = p.usage.Add(r.Usage)
		what := "answered"
		switch {
		case r.StopReason == llm.StopRefusal:
			what = "refused to answer"
		case len(r.ToolCalls) > 0:
			what = fmt.Sprintf("asked for %s", strings.Join(r.ToolCalls, ", "))
		}
		if r.Usage.ReasoningTokens > 0 || (r.Message != nil && r.Message.HasParts(llm.PartReasoning)) {
			what = "thought, then " + what
		}
		fmt.Fprintf(p.w, "%s %s %s · %s so far%s\n", p.stamp(), ev.Agent, what, tokensText(p.usage), p.costSoFar())
	case agent.ToolStart:
		if ev.Tool.Name != "task" {
			fmt.Fprintf(p.w, "%s %s → %s %s\n", p.stamp(), ev.Agent, ev.Tool.Name, clip(string(ev.Tool.Args), 80))
		}
	case agent.ToolProgress:
		fmt.Fprintf(p.w, "%s %s … %s: %s\n", p.stamp(), ev.Agent, ev.Tool.Name, clip(ev.Tool.Text, 100))
	case agent.ToolEnd:
		if ev.Tool.IsError {
			fmt.Fprintf(p.w, "%s %s ✗ %s: %s\n", p.stamp(), ev.Agent, ev.Tool.Name, clip(ev.Tool.Result, 100))
		}
	case agent.ModelRetry:
		if r := ev.Retry; r != nil {
			fmt.Fprintf(p.w, "%s %s %s; retrying in %s (retry %d): %s\n", p.stamp(), ev.Agent, retryReason(r), waitText(r.WaitMS), r.Attempt, clip(r.Error, 100))
		}
	case agent.FileConflict:
		fmt.Fprintf(p.w, "%s %s ! %s\n", p.stamp(), ev.Agent, ev.Conflict.String())
	case agent.SubagentStart:
		fmt.Fprintf(p.w, "%s %s ⇢ subagent %s (%s) started%s: %s\n", p.stamp(), ev.Agent, ev.Subagent.Name, ev.Subagent.CallID,
			backgroundMark(ev.Subagent, " in the background"), clip(ev.Subagent.Task, 70))
	case agent.SubagentNotify:
		fmt.Fprintf(p.w, "%s %s ⇠ background task %s (%s) reported to the model\n", p.stamp(), ev.Agent, ev.Subagent.CallID, ev.Subagent.Name)
	case agent.SubagentEnd:
		u := ev.Subagent.Usage
		unknown := ""
		if u.Unknown {
			unknown = " or more: a model reported no usage"
		}
		fmt.Fprintf(p.w, "%s %s ⇠ %ssubagent %s (%s) %s after %s, %s tokens%s\n", p.stamp(), ev.Agent, backgroundMark(ev.Subagent, "background "),
			ev.Subagent.Name, ev.Subagent.CallID, endWord(ev.Subagent), count(ev.Subagent.Rounds, "round"), short(u.Total()), unknown)
	}
}

// backgroundMark is mark for a background subagent's events, else "".
func backgroundMark(s *agent.SubagentInfo, mark string) string {
	if s.Background {
		return mark
	}
	return ""
}

// endWord says how a subagent ended: its status, or for a background one
// "done" and "cancelled" in words.
func endWord(s *agent.SubagentInfo) string {
	switch {
	case !s.Background:
		return string(s.Status)
	case s.Status == agent.StatusOK:
		return "done"
	}
	return string(s.Status)
}

// notice shows a warning or notice event (text is its payload's text).
func (p *progressPrinter) notice(ev agent.Event, text string) {
	mark := "note:"
	if ev.Type == agent.Warning {
		mark = "⚠ warning:"
	}
	fmt.Fprintf(p.w, "%s %s %s %s\n", p.stamp(), ev.Agent, mark, clip(text, 200))
}

func (p *progressPrinter) summary(res *agent.Result, transcript string) {
	fmt.Fprintf(p.w, "%s done: %s · %s · %s%s", p.stamp(), res.Status, count(res.Rounds, "round"), tokensText(res.Usage), p.costSoFar())
	if len(res.Changed) > 0 {
		fmt.Fprintf(p.w, " · changed %s", strings.Join(res.Changed, ", "))
	}
	if transcript != "" {
		fmt.Fprintf(p.w, "\n         transcript: %s", transcript)
	}
	fmt.Fprintln(p.w)
}

// tokensText renders usage for people: "12k tokens in (10k cached), 800
// out (600 thinking)", marked when some call reported no usage, so that
// its counts read as a lower bound rather than a measurement.
func tokensText(u llm.Usage) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s tokens in", short(u.InputTokens))
	if u.CachedInputTokens > 0 || u.CacheWriteTokens > 0 {
		var parts []string
		if u.CachedInputTokens > 0 {
			parts = append(parts, short(u.CachedInputTokens)+" cached")
		}
		if u.CacheWriteTokens > 0 {
			parts = append(parts, short(u.CacheWriteTokens)+" written to the cache")
		}
		fmt.Fprintf(&b, " (%s)", strings.Join(parts, ", "))
	}
	fmt.Fprintf(&b, ", %s out", short(u.OutputTokens))
	if u.ReasoningTokens > 0 {
		fmt.Fprintf(&b, " (%s thinking)", short(u.ReasoningTokens))
	}
	if u.Unknown {
		b.WriteString(", or more: a model reported no usage")
	}
	return b.String()
}

// noticeText is what a notice or warning event says.
func noticeText(ev agent.Event) string {
	var source, text string
	switch {
	case ev.Notice != nil:
		source, text = ev.Notice.Source, ev.Notice.Text
	case ev.Warning != nil:
		source, text = ev.Warning.Source, ev.Warning.Text
	default:
		return string(ev.Type)
	}
	if source != "" && text != "" {
		return source + ": " + text
	}
	return source + text
}

// count is n with the noun, in the plural unless n is 1: "1 round",
// "3 rounds".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func short(n int) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 10_000:
		return fmt.Sprintf("%.0fk", float64(n)/1e3)
	case n >= 1000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

// retryReason says in words why a model call is being retried.
func retryReason(r *agent.RetryInfo) string {
	switch r.Kind {
	case llm.ErrKindRateLimit:
		return "rate limited"
	case llm.ErrKindServer:
		return "server error"
	case "timeout":
		return "timed out"
	case llm.ErrKindNetwork:
		low := strings.ToLower(r.Error)
		if strings.Contains(low, "timeout") || strings.Contains(low, "timed out") || strings.Contains(low, "deadline exceeded") {
			return "timed out"
		}
		return "connection failed"
	}
	return "model call failed"
}

// waitText renders a wait in milliseconds for people: "30 s", "1.5 s",
// "250 ms".
func waitText(ms float64) string {
	switch {
	case ms >= 10_000:
		return fmt.Sprintf("%.0f s", ms/1000)
	case ms >= 1000:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", ms/1000), ".0") + " s"
	}
	return fmt.Sprintf("%.0f ms", ms)
}
