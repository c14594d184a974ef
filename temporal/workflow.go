package temporal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
)

// RunInput is what a RunAgent workflow is started with.
type RunInput struct {
	// Agent is the name the agent was registered under on the worker.
	Agent string `json:"agent"`
	// Thread names the conversation the run belongs to. On a worker whose
	// registry has a Store, the run continues the thread saved there (as
	// runner.Checkpoints does in process) and records into it; without
	// one the thread lives in the workflow's memory, for the resume after
	// an approval wait.
	Thread string `json:"thread,omitempty"`
	// Input is the user's message; empty on a thread, the run resumes the
	// thread's unfinished run.
	Input string `json:"input"`
	// InputRef, set instead of Input by a server's Executor for any input
	// but one user message of text (which goes in Input, so that a worker
	// that predates InputRef still runs it), names the
	// served run whose input messages (any number, with content parts)
	// the Executor stored in the servers' store: the workflow reads them
	// from there (Registry.Events), not from its start request.
	InputRef string `json:"input_ref,omitempty"`
	// Waiting, WaitUntil and Continued are set when a workflow continues
	// as new on its thread: the calls its run waits on (the new workflow
	// starts at the wait, which ends at WaitUntil) and how many workflow
	// runs came before this one. The thread's store holds the rest.
	Waiting   []agent.Interrupt `json:"waiting,omitempty"`
	WaitUntil time.Time         `json:"wait_until,omitzero"`
	Continued int               `json:"continued,omitempty"`
	// Sessions is how many sessions (Registry.SessionTool) the runs
	// before this one opened: a session does not outlive its workflow
	// run, and the next call of a session tool says its state is gone.
	Sessions int `json:"sessions,omitempty"`
	// Snapshot, when set, is the skills and memory snapshot
	// (Registry.Snapshot) the run must have: a worker with another refuses
	// its workflow tasks. A workflow that continues as new sets it to its
	// own; a client may set it to run only on workers with those files.
	Snapshot string `json:"snapshot,omitempty"`
}

// Summary is what a RunAgent workflow returns: how the run ended, not its
// messages or files, so that it stays small.
type Summary struct {
	Thread   string       `json:"thread,omitempty"`
	Agent    string       `json:"agent"`
	Status   agent.Status `json:"status"`
	Error    string       `json:"error,omitempty"`
	Text     string       `json:"text,omitempty"`
	Rounds   int          `json:"rounds"`
	Usage    llm.Usage    `json:"usage"`
	Files    []string     `json:"files,omitempty"`
	Changed  []string     `json:"changed,omitempty"`
	Children []Child      `json:"children,omitempty"`
	// Interrupts are the calls still waiting for a person when the run
	// ended interrupted: its wait for decisions timed out, or the
	// workflow was cancelled while it waited.
	Interrupts []agent.Interrupt `json:"interrupts,omitempty"`
	// Continued is how many times the workflow continued as new during
	// the run (Rounds and Usage, read from the thread, count them all).
	Continued int `json:"continued,omitempty"`
}

// Child summarises a subagent run, by the task call that started it.
type Child struct {
	CallID string       `json:"call_id"`
	Agent  string       `json:"agent"`
	Status agent.Status `json:"status"`
	Text   string       `json:"text,omitempty"`
	Rounds int          `json:"rounds"`
}

// Summarize is the summary of res, a run of the agent registered as name.
func Summarize(name, thread string, res *agent.Result) *Summary {
	s := &Summary{Thread: thread, Agent: name, Status: res.Status, Error: res.Error, Text: res.FinalText(),
		Rounds: res.Rounds, Usage: res.Usage, Changed: slices.Clone(res.Changed),
		Files: slices.Sorted(maps.Keys(res.State.Files)), Interrupts: res.Interrupts}
	for _, id := range slices.Sorted(maps.Keys(res.Children)) {
		c := res.Children[id]
		s.Children = append(s.Children, Child{CallID: id, Agent: c.Agent.String(), Status: c.Status, Text: c.FinalText(), Rounds: c.Rounds})
	}
	return s
}

// RunAgent is the workflow that runs one agent run: it runs the agent
// registered as in.Agent on a Runtime, from in.Input to its end, and
// returns its summary. A run that ends interrupted waits for decisions on
// its waiting calls (see PendingQuery, DecideUpdate) and resumes with them,
// until Registry.ApprovalTimeout. A run that ends other than ok is still a
// workflow that completes: its status is in the summary. Cancelling the
// workflow cancels the run; the workflow then ends cancelled, with the
// summary as the details of its CanceledError.
func (g *Registry) RunAgent(ctx workflow.Context, in RunInput) (*Summary, error) {
	a, ok := g.agents[in.Agent]
	if !ok {
		return nil, sdktemporal.NewNonRetryableApplicationError(fmt.Sprintf("no agent %q is registered on this worker", in.Agent), "UnknownAgent", nil)
	}
	checked := g.checkSnapshot(ctx, in.Snapshot)
	if checked {
		in.Snapshot = g.Snapshot // the next run, if it continues as new, keeps it
	}
	ap, err := g.approvals(ctx, a)
	if err != nil {
		return nil, err
	}
	rt := NewRuntime(ctx)
	defer rt.Close()
	rt.sess.opened = in.Sessions
	rt.runsChildren(g, in.Agent, leaseHolder(workflow.GetInfo(ctx).WorkflowExecution.ID))
	rt.host.snapshot, rt.host.unchecked = in.Snapshot, !checked
	rctx, cancel := rt.Context()
	defer cancel()
	// Anything of the run that reaches a registered directory outside a
	// model or tool call (a middleware reading a file) goes through an
	// activity too.
	rctx = context.WithValue(rctx, runtimeKey{}, rt)
	input, opts := agent.Prompt(in.Input), []agent.RunOption{agent.WithRuntime(rt)}
	if in.InputRef != "" {
		msgs, err := g.servedInput(ctx, in.InputRef)
		if err != nil {
			return nil, err
		}
		input = agent.Input{Messages: msgs}
	}
	if in.Thread != "" && g.Store != nil {
		info := workflow.GetInfo(ctx)
		th := newWFThread(g, rt, in.Thread, leaseHolder(info.WorkflowExecution.ID))
		ap.continues, ap.rt = true, rt
		th.root = dirOf(a.Config().Backend)
		rctx = withThread(rctx, th)
		opts = append(opts, agent.WithThread(in.Thread, th))
		if in.Input == "" && in.InputRef == "" {
			input = agent.Input{}
		}
	} else {
		// Without a store the thread lives in the workflow's memory (see
		// docs/TEMPORAL.md): a resume after the wait needs it.
		thread := in.Thread
		if thread == "" {
			thread = workflow.GetInfo(ctx).WorkflowExecution.ID
		}
		opts = append(opts, memoryThread(thread))
	}
	var res *agent.Result
	if len(in.Waiting) > 0 && ap.continues {
		// Continued as new at the wait: the run waits on these calls,
		// here (continuing again at once would never end).
		res, ap.until, ap.started = &agent.Result{Status: agent.StatusInterrupted, Interrupts: in.Waiting}, in.WaitUntil, true
	} else {
		res, err = a.Invoke(rctx, input, opts...)
	}
	res, err = g.await(ctx, ap, res, err, func(ds []agent.Decision) (*agent.Result, error) {
		return a.Invoke(rctx, agent.Input{}, append(slices.Clip(opts), agent.WithDecisions(ds...))...)
	})
	if errors.Is(err, errContinue) && ctx.Err() == nil {
		var waiting []agent.Interrupt
		if ap.pending != nil {
			waiting = res.Interrupts
		}
		return nil, continueAsNew(ctx, in, rt, waiting, ap.until)
	}
	if res == nil {
		return nil, err
	}
	s := Summarize(in.Agent, in.Thread, res)
	s.Continued = in.Continued
	if ctx.Err() != nil {
		return nil, sdktemporal.NewCanceledError(*s)
	}
	return s, nil
}

// leaseHolder names a workflow in a thread's lease: by its workflow id
// alone (one run of a workflow id is open at a time, and a reset keeps the
// id), hashed so that any id fits the store's limit, and in a form no
// process is ever taken for.
func leaseHolder(workflowID string) string {
	sum := sha256.Sum256([]byte(workflowID))
	return "temporal:" + hex.EncodeToString(sum[:16])
}
