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
// which tool it runs, and the running token count; subagents as they start
// and finish.
type progressPrinter struct {
	w       io.Writer
	start   time.Time
	in, out int
}

func (p *progressPrinter) stamp() string {
	return fmt.Sprintf("[%5.1fs]", time.Since(p.start).Seconds())
}

func (p *progressPrinter) event(ev agent.Event) {
	switch ev.Type {
	case agent.ModelRequest:
		fmt.Fprintf(p.w, "%s %s · round %d · %d messages\n", p.stamp(), ev.Agent, ev.Request.Round+1, ev.Request.MessageCount)
	case agent.ModelResponse:
		p.in += ev.Response.Usage.InputTokens
		p.out += ev.Response.Usage.OutputTokens
		what := "answered"
		if n := len(ev.Response.ToolCalls); n > 0 {
			what = fmt.Sprintf("asked for %s", strings.Join(ev.Response.ToolCalls, ", "))
		}
		fmt.Fprintf(p.w, "%s %s %s · %s tokens in, %s out so far\n", p.stamp(), ev.Agent, what, short(p.in), short(p.out))
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
		fmt.Fprintf(p.w, "%s %s ⇢ subagent %s (%s) started: %s\n", p.stamp(), ev.Agent, ev.Subagent.Name, ev.Subagent.CallID, clip(ev.Subagent.Task, 70))
	case agent.SubagentEnd:
		fmt.Fprintf(p.w, "%s %s ⇠ subagent %s (%s) %s after %d rounds, %s tokens\n", p.stamp(), ev.Agent, ev.Subagent.Name,
			ev.Subagent.CallID, ev.Subagent.Status, ev.Subagent.Rounds, short(ev.Subagent.Usage.Total()))
	}
}

func (p *progressPrinter) summary(res *agent.Result, transcript string) {
	fmt.Fprintf(p.w, "%s done: %s · %d rounds · %s tokens in, %s out", p.stamp(), res.Status, res.Rounds, short(res.Usage.InputTokens), short(res.Usage.OutputTokens))
	if len(res.Changed) > 0 {
		fmt.Fprintf(p.w, " · changed %s", strings.Join(res.Changed, ", "))
	}
	if transcript != "" {
		fmt.Fprintf(p.w, "\n         transcript: %s", transcript)
	}
	fmt.Fprintln(p.w)
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
