package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	sdktemporal "go.temporal.io/sdk/temporal"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/temporal"
)

// callTimeout bounds each call to Temporal that is not a wait for a run.
const callTimeout = 30 * time.Second

const runSynopsis = `
run --thread T [--agent NAME] [--detach] [--address ...] "prompt"

Starts a RunAgent workflow (workflow id deepagents-thread-T) that runs the agent on the
thread with the prompt, follows it and prints its final text. While a run of the thread
is open (running, or waiting for an approval) a second one is refused. Exit status: 0 the
run ended ok, 1 it ended otherwise (its status and error on stderr), 3 it waits for
decisions (see "approve").
`

const resumeSynopsis = `
resume --thread T [--agent NAME] [--detach] [--address ...]

Starts a RunAgent workflow on the thread with no input: it resumes the thread's
unfinished run (cut off, or whose wait for decisions timed out), and follows it as
"run" does.
`

// startFlags are the flags of the commands that start a run.
type startFlags struct {
	conn
	thread, agentName string
	detach            bool
}

func (f *startFlags) flags(fs *flag.FlagSet) {
	f.conn.flags(fs)
	fs.StringVar(&f.thread, "thread", "", "the `thread` the run belongs to (required)")
	fs.StringVar(&f.agentName, "agent", "main", "the `name` of the agent, as the workers registered it (the demo worker's is demo)")
	fs.BoolVar(&f.detach, "detach", false, "print the workflow id and return, without following the run")
}

func runCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return startCmd(ctx, "run", runSynopsis, args, stdout, stderr)
}

func resumeCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return startCmd(ctx, "resume", resumeSynopsis, args, stdout, stderr)
}

// startCmd starts a run (a prompt) or a resume (none) on a thread.
func startCmd(ctx context.Context, name, synopsis string, args []string, stdout, stderr io.Writer) int {
	var f startFlags
	fs := newFlags(name, synopsis, stderr)
	f.flags(fs)
	if st, ok := parse(fs, args); !ok {
		return st
	}
	var input string
	switch {
	case name == "run" && fs.NArg() != 1:
		return fail(stderr, name, exitUsage, errors.New(`give the prompt as one argument (quote it): run --thread T "prompt"`))
	case name == "run":
		input = fs.Arg(0)
		if strings.TrimSpace(input) == "" {
			return fail(stderr, name, exitUsage, errors.New("the prompt is empty; to resume a thread's unfinished run use resume"))
		}
	case fs.NArg() != 0:
		return fail(stderr, name, exitUsage, fmt.Errorf("resume takes no prompt (got %q)", fs.Args()))
	}
	if f.thread == "" {
		return fail(stderr, name, exitUsage, errors.New("--thread is required"))
	}
	c, err := f.dial(ctx)
	if err != nil {
		return fail(stderr, name, exitFailed, err)
	}
	defer c.Close()
	id := workflowID(f.thread)
	sctx, cancel := context.WithTimeout(ctx, callTimeout)
	run, err := c.ExecuteWorkflow(sctx, client.StartWorkflowOptions{
		ID: id, TaskQueue: f.taskQueue,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
	}, temporal.RunAgentWorkflow, temporal.RunInput{Agent: f.agentName, Thread: f.thread, Input: input})
	cancel()
	if err != nil {
		var started *serviceerror.WorkflowExecutionAlreadyStarted
		if errors.As(err, &started) {
			return fail(stderr, name, exitFailed, fmt.Errorf("thread %s has a run in progress (workflow %s): follow it, decide on its waiting calls with approve, or cancel it before starting another", f.thread, id))
		}
		return fail(stderr, name, exitFailed, fmt.Errorf("starting workflow %s: %w", id, err))
	}
	warnNoWorker(ctx, c, f.taskQueue, name, stderr)
	if f.detach {
		fmt.Fprintln(stdout, id)
		return 0
	}
	fmt.Fprintf(stderr, "deepagents-temporal %s: thread %s, workflow %s (run %s)\n", name, f.thread, id, run.GetRunID())
	return follow(ctx, c, run, name, f.thread, nil, stdout, stderr)
}

// follow waits for run to end and prints its final text; a run that waits
// for decisions on calls other than answered is listed instead, with how
// to decide.
func follow(ctx context.Context, c client.Client, run client.WorkflowRun, name, thread string, answered []string, stdout, stderr io.Writer) int {
	type result struct {
		s   temporal.Summary
		err error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		r.err = run.Get(ctx, &r.s)
		done <- r
	}()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case r := <-done:
			return report(r.s, r.err, name, stdout, stderr)
		case <-ctx.Done():
			fmt.Fprintf(stderr, "deepagents-temporal %s: stopped following; the run goes on (workflow %s)\n", name, run.GetID())
			return exitFailed
		case <-tick.C:
			pending, err := queryPending(ctx, c, run.GetID())
			if err != nil || len(pending) == 0 || slices.ContainsFunc(pending, func(in agent.Interrupt) bool { return slices.Contains(answered, in.CallID) }) {
				continue
			}
			printPending(stdout, pending)
			fmt.Fprintf(stderr, "deepagents-temporal %s: the run waits for decisions: deepagents-temporal approve --thread %s (--approve | --reject [--message M] | --decisions FILE)\n", name, thread)
			return exitWaiting
		}
	}
}

// report prints how a run ended and returns the exit status.
func report(s temporal.Summary, err error, name string, stdout, stderr io.Writer) int {
	if err != nil {
		var ce *sdktemporal.CanceledError
		if !errors.As(err, &ce) || ce.Details(&s) != nil {
			return fail(stderr, name, exitFailed, fmt.Errorf("the workflow failed: %w", err))
		}
	}
	if s.Text != "" {
		fmt.Fprintln(stdout, s.Text)
	}
	if s.Status != agent.StatusOK {
		msg := fmt.Sprintf("the run ended %s", s.Status)
		if s.Error != "" {
			msg += ": " + s.Error
		}
		if len(s.Interrupts) > 0 {
			msg += fmt.Sprintf(" (%d call(s) still wait; resume the thread to decide on them)", len(s.Interrupts))
		}
		fmt.Fprintf(stderr, "deepagents-temporal %s: %s\n", name, msg)
		return exitFailed
	}
	return 0
}

// queryPending asks the thread's workflow which calls wait for decisions.
func queryPending(ctx context.Context, c client.Client, id string) ([]agent.Interrupt, error) {
	qctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	v, err := c.QueryWorkflow(qctx, id, "", temporal.PendingQuery)
	if err != nil {
		return nil, err
	}
	var pending []agent.Interrupt
	if err := v.Get(&pending); err != nil {
		return nil, err
	}
	return pending, nil
}

func printPending(w io.Writer, pending []agent.Interrupt) {
	fmt.Fprintf(w, "%d call(s) wait for a decision:\n", len(pending))
	for _, in := range pending {
		fmt.Fprintf(w, "  %s  %s %s  (agent %s; allowed: %s)\n", in.CallID, in.Tool, clip(string(in.Args), 200), in.Path, joinTypes(in.Allowed))
	}
}

func joinTypes(ts []agent.DecisionType) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = string(t)
	}
	return strings.Join(s, ", ")
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

const approveSynopsis = `
approve --thread T (--approve | --reject [--message M] | --decisions FILE|-) [--detach] [--address ...]
approve --thread T --list

Lists the calls the thread's run waits on (the workflow's pending query) and sends
decisions on them through its decide update: --approve approves every waiting call,
--reject rejects them all (--message tells the model why), --decisions reads a list of
decisions (or {"decisions": [...]}) in the shapes the server takes from FILE, or stdin
for -. The workflow's validator refuses decisions that do not fit; the refusal is printed
and nothing changes. Accepted decisions resume the run, which is then followed as "run"
does (--detach returns at once).
`

func approveCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var f conn
	var thread, message, file string
	var approveAll, rejectAll, list, detach bool
	fs := newFlags("approve", approveSynopsis, stderr)
	f.flags(fs)
	fs.StringVar(&thread, "thread", "", "the `thread` whose run waits (required)")
	fs.BoolVar(&approveAll, "approve", false, "approve every waiting call")
	fs.BoolVar(&rejectAll, "reject", false, "reject every waiting call")
	fs.StringVar(&message, "message", "", "with --reject, what the model is told")
	fs.StringVar(&file, "decisions", "", "a JSON `file` of decisions, - for stdin")
	fs.BoolVar(&list, "list", false, "list the waiting calls only")
	fs.BoolVar(&detach, "detach", false, "return once the decisions are taken, without following the run")
	if st, ok := parse(fs, args); !ok {
		return st
	}
	n := 0
	for _, b := range []bool{approveAll, rejectAll, file != "", list} {
		if b {
			n++
		}
	}
	switch {
	case thread == "":
		return fail(stderr, "approve", exitUsage, errors.New("--thread is required"))
	case fs.NArg() > 0:
		return fail(stderr, "approve", exitUsage, fmt.Errorf("unexpected arguments %q", fs.Args()))
	case n != 1:
		return fail(stderr, "approve", exitUsage, errors.New("give exactly one of --approve, --reject, --decisions or --list"))
	case message != "" && !rejectAll:
		return fail(stderr, "approve", exitUsage, errors.New("--message goes with --reject"))
	}
	var raw json.RawMessage
	if file != "" {
		var b []byte
		var err error
		if file == "-" {
			b, err = io.ReadAll(os.Stdin)
		} else {
			b, err = os.ReadFile(file)
		}
		if err != nil {
			return fail(stderr, "approve", exitUsage, fmt.Errorf("--decisions: %w", err))
		}
		if !json.Valid(b) {
			return fail(stderr, "approve", exitUsage, fmt.Errorf("--decisions: %s is not JSON", file))
		}
		raw = b
	}

	c, err := f.dial(ctx)
	if err != nil {
		return fail(stderr, "approve", exitFailed, err)
	}
	defer c.Close()
	id := workflowID(thread)
	pending, err := queryPending(ctx, c, id)
	if err != nil {
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			return fail(stderr, "approve", exitFailed, fmt.Errorf("thread %s has no run on Temporal (no workflow %s)", thread, id))
		}
		return fail(stderr, "approve", exitFailed, fmt.Errorf("asking workflow %s what waits: %w", id, err))
	}
	if len(pending) == 0 {
		fmt.Fprintf(stdout, "no call of thread %s waits for a decision\n", thread)
		if list {
			return 0
		}
		return exitFailed
	}
	printPending(stdout, pending)
	if open, err := isOpen(ctx, c, id); err != nil {
		return fail(stderr, "approve", exitFailed, fmt.Errorf("describing workflow %s: %w", id, err))
	} else if !open {
		err := fmt.Errorf("the run of thread %s has ended (its wait for decisions timed out, or it was cancelled): resume it with deepagents-temporal resume --thread %s, which waits for the decisions again", thread, thread)
		if list {
			fmt.Fprintf(stderr, "deepagents-temporal approve: %v\n", err)
			return 0
		}
		return fail(stderr, "approve", exitFailed, err)
	}
	if list {
		return 0
	}
	if raw == nil {
		var ds []agent.Decision
		for _, in := range pending {
			d := agent.Decision{Type: agent.Approve, CallID: in.CallID, Path: in.Path}
			if rejectAll {
				d.Type, d.Message = agent.Reject, message
			}
			ds = append(ds, d)
		}
		raw, _ = json.Marshal(ds)
	}
	uctx, cancel := context.WithTimeout(ctx, callTimeout)
	h, err := c.UpdateWorkflow(uctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: temporal.DecideUpdate,
		Args: []any{raw}, WaitForStage: client.WorkflowUpdateStageCompleted})
	var taken []agent.Decision
	if err == nil {
		err = h.Get(uctx, &taken)
	}
	cancel()
	if err != nil {
		var appErr *sdktemporal.ApplicationError
		if errors.As(err, &appErr) {
			return fail(stderr, "approve", exitFailed, fmt.Errorf("the workflow refused the decisions: %s", appErr.Message()))
		}
		return fail(stderr, "approve", exitFailed, fmt.Errorf("sending the decisions to workflow %s: %w", id, err))
	}
	for _, d := range taken {
		fmt.Fprintf(stdout, "%s %s\n", d.Type, d.CallID)
	}
	if detach {
		return 0
	}
	var answered []string
	for _, in := range pending {
		answered = append(answered, in.CallID)
	}
	return follow(ctx, c, c.GetWorkflow(ctx, id, ""), "approve", thread, answered, stdout, stderr)
}

// isOpen reports whether the latest workflow of id is still running.
func isOpen(ctx context.Context, c client.Client, id string) (bool, error) {
	dctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	d, err := c.DescribeWorkflowExecution(dctx, id, "")
	if err != nil {
		return false, err
	}
	return d.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, nil
}

// warnNoWorker says on stderr when no worker polls the task queue: the run
// then waits until one starts.
func warnNoWorker(ctx context.Context, c client.Client, queue, name string, stderr io.Writer) {
	dctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	d, err := c.DescribeTaskQueue(dctx, queue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
	if err == nil && len(d.GetPollers()) == 0 {
		fmt.Fprintf(stderr, "deepagents-temporal %s: no worker polls task queue %s: the run waits until one starts (deepagents-temporal worker --task-queue %s ...)\n", name, queue, queue)
	}
}
