package subagent

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/budget"
	"github.com/deepagents-go/deepagents/tool"
)

// Defaults of the caps every background run of a subagent has (see
// BackgroundLimits).
const (
	DefaultBackgroundSteps   = 50
	DefaultBackgroundTokens  = 200_000
	DefaultBackgroundTimeout = 30 * time.Minute
	DefaultBackgroundRunning = agent.DefaultBackgroundRunning
)

// BackgroundLimits cap background runs: a run that reaches one ends with
// status limit, and its receipt says so. A zero field takes its default;
// a negative one is refused.
type BackgroundLimits struct {
	// MaxSteps bounds each run's model calls (default 50).
	MaxSteps int
	// MaxTokens bounds each run's tokens, input and output, its own
	// subagents' included (default 200,000).
	MaxTokens int
	// MaxCost bounds each run's cost in US dollars, its own subagents'
	// included, at the budget middleware's prices (deepagents.Config.Budget;
	// without one nothing is priced and it stops nothing). 0: no cap.
	MaxCost float64
	// Timeout bounds each run's wall time (default 30 minutes).
	Timeout time.Duration
	// MaxRunning bounds how many run at once per parent (default 4); a
	// start past it is refused with an error result. Only Config's counts.
	MaxRunning int
}

// orDefaults fills the zero fields of l from def.
func (l BackgroundLimits) or(def BackgroundLimits) BackgroundLimits {
	if l.MaxSteps == 0 {
		l.MaxSteps = def.MaxSteps
	}
	if l.MaxTokens == 0 {
		l.MaxTokens = def.MaxTokens
	}
	if l.MaxCost == 0 {
		l.MaxCost = def.MaxCost
	}
	if l.Timeout == 0 {
		l.Timeout = def.Timeout
	}
	if l.MaxRunning == 0 {
		l.MaxRunning = def.MaxRunning
	}
	return l
}

// DefaultBackgroundLimits are the caps of a background run nobody set.
func DefaultBackgroundLimits() BackgroundLimits {
	return BackgroundLimits{MaxSteps: DefaultBackgroundSteps, MaxTokens: DefaultBackgroundTokens,
		Timeout: DefaultBackgroundTimeout, MaxRunning: DefaultBackgroundRunning}
}

func (l BackgroundLimits) check(who string) error {
	switch {
	case l.MaxSteps < 0:
		return fmt.Errorf("%s: the background step limit is %d; it must be 0 (the default, %d) or more", who, l.MaxSteps, DefaultBackgroundSteps)
	case l.MaxTokens < 0:
		return fmt.Errorf("%s: the background token limit is %d; it must be 0 (the default, %d) or more", who, l.MaxTokens, DefaultBackgroundTokens)
	case l.MaxCost < 0 || math.IsNaN(l.MaxCost):
		return fmt.Errorf("%s: the background cost limit is %v; it must be 0 (none) or more", who, l.MaxCost)
	case l.Timeout < 0:
		return fmt.Errorf("%s: the background timeout is %s; it must be 0 (the default, %s) or more", who, l.Timeout, DefaultBackgroundTimeout)
	case l.MaxRunning < 0:
		return fmt.Errorf("%s: the most background tasks running at once is %d; it must be 0 (the default, %d) or more", who, l.MaxRunning, DefaultBackgroundRunning)
	}
	return nil
}

// TemporalText answers a background task call on a runtime that runs
// subagents elsewhere (a durable-execution engine's child workflows), where
// a run that outlives its call is not built yet.
const TemporalText = "Error: background subagents do not run on this runtime (Temporal) yet. Call task again without run_in_background; it then runs in the foreground and its report is this tool's result."

// StartedText is the result of a task call that started its subagent in
// the background.
func StartedText(id, name string) string {
	return fmt.Sprintf("Started subagent %s in the background as task %s. Go on with other work: its report arrives as a message when it ends. "+
		"See it with task_status, wait for it with task_wait and stop it with task_cancel, giving task_id %q.", name, id, id)
}

// startBackground starts the child c in the background for the task call
// described by env and raw, and answers the call at once.
func (t *Task) startBackground(ctx context.Context, env *tool.Env, raw json.RawMessage, host agent.Host, c *child,
	in agent.Input, ch agent.Child, desc string) tool.Result {
	if _, ok := host.Runtime.(agent.ChildRunner); ok {
		return tool.Errorf("%s", TemporalText)
	}
	bg := agent.BackgroundOf(ctx)
	if bg == nil {
		return tool.Errorf("Error: background subagents need an agent run to host them. Call task without run_in_background.")
	}
	lim := c.background
	opts := []agent.RunOption{agent.WithTimeout(lim.Timeout), agent.WithMaxSteps(lim.MaxSteps)}
	if len(host.Options) > 0 {
		opts = append(opts, host.Options...)
	} else if host.Runtime != nil {
		opts = append(opts, agent.WithRuntime(host.Runtime))
	}
	opts = append(opts, agent.AsChild(ch))
	a := c.agent
	if c.bgAgent != nil {
		a = c.bgAgent
	}
	var tally *budget.Tally
	info, err := bg.Start(ctx, agent.BackgroundRun{Agent: a, Name: c.name, Mode: string(c.mode), Brief: desc, Path: ch.Path,
		Input: in, Options: opts, MaxRunning: t.maxRunning,
		// The child counts towards its parent's budgets through a tally
		// its receipt closes, besides its own cap.
		Context: func(cctx context.Context) context.Context {
			cctx, tally = budget.Background(ctx, cctx, ch.Path.Last().CallID)
			return budget.WithLimits(cctx, budget.Limits{Tokens: lim.MaxTokens, Cost: lim.MaxCost})
		},
		Receipt: func(res *agent.Result) tool.Result {
			r, _ := receiptOf(c.name, ch.Path, res)
			_ = tally.HandOver(&r) // a Spent always encodes
			return r
		},
		Saved: agent.BackgroundTask{Tool: TaskToolName, Args: raw, ParentStep: host.Nesting().ParentStep}})
	if err != nil {
		return tool.Errorf("Error: %v.", err)
	}
	return tool.Text(StartedText(info.ID, c.name))
}
