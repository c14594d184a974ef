package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/compact"
	"github.com/deepagents-go/deepagents/config"
	"github.com/deepagents-go/deepagents/providers"
	"github.com/deepagents-go/deepagents/tokens"
)

// This file is the context ledger in the CLI: the model's window from the
// profiles and config, and the /context table of an interactive session.

// contextWindows returns the parent model's context window and each
// subagent's by name (an agent file's context_window, else its own model's
// window, else the parent's), 0 where nothing is known.
func contextWindows(cfg *config.Config, spec providers.Spec, files []config.AgentFile) (int, map[string]int) {
	parent := cfg.Profile(spec.Provider, spec.Model).Window
	subs := map[string]int{}
	for _, af := range files {
		w := af.ContextWindow
		if w == 0 && af.Model != "" {
			if ref, err := cfg.ExpandModel(af.Model); err == nil {
				if sp, err := providers.Parse(ref); err == nil {
					w = cfg.Profile(sp.Provider, sp.Model).Window
				}
			}
		} else if w == 0 {
			w = parent
		}
		subs[af.Name] = w
	}
	return parent, subs
}

// contextLog keeps the context reports of a session's latest turn: the last
// request of the session's own agent and a ledger per agent path.
type contextLog struct {
	root    string
	last    *tokens.Report
	byAgent map[string]tokens.Ledger
	// compactions and summarizer count the session's compactions and what
	// their summariser calls used (also in each turn's usage).
	compactions int
	summarizer  tokens.Ledger
}

// startTurn forgets the previous turn's subagents (the last request of
// the agent itself stays until a new one is made).
func (l *contextLog) startTurn() { l.byAgent = nil }

// note takes in a model.request or compaction.end event.
func (l *contextLog) note(ev agent.Event) {
	if info, ok := compact.InfoOf(ev); ok && ev.Type == compact.EventEnd {
		if info.Error == "" || info.Evicted > 0 {
			l.compactions++
		}
		l.summarizer.SummarizerCalls += info.SummarizerCalls
		l.summarizer.Summarizer = l.summarizer.Summarizer.Add(info.Usage)
		return
	}
	if ev.Type != agent.ModelRequest || ev.Request == nil || ev.Request.Context == nil {
		return
	}
	rep := *ev.Request.Context
	if l.byAgent == nil {
		l.byAgent = map[string]tokens.Ledger{}
	}
	led := l.byAgent[ev.Agent.String()]
	led.Add(rep)
	l.byAgent[ev.Agent.String()] = led
	if ev.TaskCall == "" && !strings.Contains(ev.Agent.String(), " / ") {
		l.root = ev.Agent.String()
		l.last = &rep
	}
}

// write prints the table of the last request and a line per subagent.
func (l *contextLog) write(w io.Writer) {
	if l.last == nil {
		fmt.Fprintln(w, "No model call yet in this session: /context shows the last request's tokens once there is one.")
		return
	}
	writeContextTable(w, l.root, *l.last)
	if n := l.summarizer.SummarizerCalls; n > 0 {
		u := l.summarizer.Summarizer
		fmt.Fprintf(w, "Compaction in this session: %d compaction(s), %d summariser call(s) using %s input and %s output tokens (counted in the turns' usage).\n",
			l.compactions, n, thousands(u.InputTokens), thousands(u.OutputTokens))
	}
	var subs []string
	for p := range maps.Keys(l.byAgent) {
		if p != l.root {
			subs = append(subs, p)
		}
	}
	if len(subs) == 0 {
		return
	}
	slices.Sort(subs)
	fmt.Fprintln(w, "Subagents of the last turn (their largest request):")
	for _, p := range subs {
		led := l.byAgent[p]
		share := ""
		if led.Peak.Window > 0 {
			share = fmt.Sprintf(" (%s of %s)", percent(led.Peak.Calibrated, led.Peak.Window), thousands(led.Peak.Window))
		}
		calls := "calls"
		if led.Calls == 1 {
			calls = "call"
		}
		fmt.Fprintf(w, "  %s: %d %s, largest %s tokens%s, %s tokens sent in all\n",
			p, led.Calls, calls, thousands(led.Peak.Calibrated), share, thousands(led.Sent))
	}
}

// writeContextTable prints one request's tokens by source, each with its
// share of the window (of the request, when the window is unknown), and the
// free space.
func writeContextTable(w io.Writer, who string, c tokens.Report) {
	base := c.Window
	if base > 0 {
		fmt.Fprintf(w, "Context of the last model call (%s): %s of %s tokens (%s)\n",
			who, thousands(c.Calibrated), thousands(c.Window), percent(c.Calibrated, c.Window))
	} else {
		base = c.Calibrated
		fmt.Fprintf(w, "Context of the last model call (%s): %s tokens; the model's window is unknown (set context_window in a [models.\"provider:model\"] table), so shares are of the request\n",
			who, thousands(c.Calibrated))
	}
	rows := []struct {
		name string
		n    int
	}{
		{"system prompt", c.System}, {"tool definitions", c.Tools}, {"messages", c.Messages},
		{"tool results", c.ToolResults}, {"memory", c.Memory}, {"skills", c.Skills},
	}
	if c.Window > 0 {
		rows = append(rows, struct {
			name string
			n    int
		}{"free space", c.Free})
	}
	for _, r := range rows {
		fmt.Fprintf(w, "  %-17s %11s  %6s\n", r.name, thousands(r.n), percent(r.n, base))
	}
	if c.Ratio != 1 {
		fmt.Fprintf(w, "Estimated at %s tokens, scaled by %.2f to match the usage the provider reported.\n", thousands(c.Estimated), c.Ratio)
	} else {
		fmt.Fprintln(w, "Estimated; no usage reported by the provider yet to calibrate against.")
	}
}

// thousands writes n with comma separators: 200,000.
func thousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// percent is part's share of whole, one decimal: "6.2%".
func percent(part, whole int) string {
	if whole <= 0 {
		return "-"
	}
	return strconv.FormatFloat(100*float64(part)/float64(whole), 'f', 1, 64) + "%"
}
