package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/hitl"
	"github.com/deepagents-go/deepagents/internal/safefile"
	"github.com/deepagents-go/deepagents/runner"
)

const resumeHelp = `usage: deepagents resume --thread ID [decisions] [flags]

Continues the unfinished run of a thread from its last checkpoint: one that
stopped for approval (status interrupted), or one cut off by a crash or a
kill. No model call or tool call that finished is made again; calls that
were running when the process stopped run again (docs/RUN.md lists which
built-in tools are safe to repeat).

Calls waiting for approval are answered with decisions, in the order given:
  --approve CALL_ID                 run the call as the model asked
  --reject CALL_ID [--message WHY]  do not run it; the model is told why
  --edit CALL_ID --args JSON        run it with these arguments instead
  --respond CALL_ID --message TEXT  do not run it; TEXT is its result, as
                                    if the tool had answered (only for
                                    calls that allow respond)
  --decisions FILE                  a JSON list of decisions, or
                                    {"decisions": [...]}; "-" reads stdin;
                                    one without a call_id answers the
                                    waiting call at its position
Calls left without a decision keep waiting. Decisions that answer no
waiting call, take a decision the call does not allow, or edit a call with
arguments its tool does not take, are refused (exit status 2) and nothing
runs.

The agent is built as 'deepagents run' built it: the thread remembers the
flags its turn was started with (--root, --model, --interrupt-on, …) and
resume takes those it is not given; a flag given here replaces the
remembered one (with a warning). Config files are read again.

Exit status:
  0  the run ended with status ok
  1  it ended with status error, limit, cancelled or refused, the thread
     has nothing to resume, or it is held by another run
  2  bad usage or configuration, or decisions that do not fit the waiting
     calls (the thread is unchanged)
  3  calls still wait for approval
`

// maxDecisionsFile caps a --decisions file.
const maxDecisionsFile = 4 << 20

// decisionFlags collects --approve, --reject, --respond, --message, --edit
// and --args in the order given: --message belongs to the --reject or
// --respond before it and --args to the --edit before it.
type decisionFlags struct {
	ds []agent.Decision
}

func (d *decisionFlags) add(t agent.DecisionType, callID string) error {
	callID = strings.TrimSpace(callID)
	if callID == "" {
		return fmt.Errorf("needs a call id")
	}
	d.ds = append(d.ds, agent.Decision{Type: t, CallID: callID})
	return nil
}

func (d *decisionFlags) message(text string) error {
	n := len(d.ds)
	if n == 0 || d.ds[n-1].Type != agent.Reject && d.ds[n-1].Type != agent.Respond {
		return errors.New("must follow the --reject CALL_ID it explains or the --respond CALL_ID it answers")
	}
	if d.ds[n-1].Message != "" {
		return fmt.Errorf("call %s already has a message", d.ds[n-1].CallID)
	}
	d.ds[n-1].Message = text
	return nil
}

func (d *decisionFlags) args(text string) error {
	n := len(d.ds)
	if n == 0 || d.ds[n-1].Type != agent.Edit {
		return errors.New("must follow the --edit CALL_ID it gives the arguments of")
	}
	if d.ds[n-1].Args != nil {
		return fmt.Errorf("call %s already has arguments", d.ds[n-1].CallID)
	}
	a, err := editArgs(text)
	if err != nil {
		return fmt.Errorf("call %s: %v", d.ds[n-1].CallID, err)
	}
	d.ds[n-1].Args = a
	return nil
}

// done checks that every edit got its arguments and every respond its
// message.
func (d *decisionFlags) done() error {
	for _, x := range d.ds {
		if x.Type == agent.Edit && x.Args == nil {
			return fmt.Errorf("--edit %s needs --args JSON after it", x.CallID)
		}
		if x.Type == agent.Respond && strings.TrimSpace(x.Message) == "" {
			return fmt.Errorf("--respond %s needs --message TEXT after it: the answer given in the tool's place", x.CallID)
		}
	}
	return nil
}

// register adds the decision flags to fs.
func (d *decisionFlags) register(fs *flag.FlagSet) {
	fs.Func("approve", "approve the waiting call CALL_ID (repeatable)", func(v string) error { return d.add(agent.Approve, v) })
	fs.Func("reject", "reject the waiting call CALL_ID (repeatable); --message after it says why", func(v string) error { return d.add(agent.Reject, v) })
	fs.Func("respond", "answer the waiting call CALL_ID in its tool's place (repeatable); --message after it is the answer", func(v string) error { return d.add(agent.Respond, v) })
	fs.Func("message", "the reason for the --reject before it, or the answer of the --respond before it, told to the model", d.message)
	fs.Func("edit", "run the waiting call CALL_ID with other arguments (repeatable); --args after it gives them", func(v string) error { return d.add(agent.Edit, v) })
	fs.Func("args", "the new arguments, a JSON object, for the --edit before it", d.args)
}

func cmdResume(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var f runFlags
	var dflags decisionFlags
	var decisionsFile string
	fs := flag.NewFlagSet("resume", flag.ContinueOnError)
	fs.StringVar(&f.thread, "thread", "", "the thread to resume (required)")
	dflags.register(fs)
	fs.StringVar(&decisionsFile, "decisions", "", `a file of decisions: a JSON list, or {"decisions": [...]}; "-" reads standard input`)
	agentFlags(fs, &f)
	modeFlag(fs, &f)
	operands, code, ok := parseFlags(fs, args, resumeHelp, stdout, stderr)
	if !ok {
		return code
	}
	if len(operands) > 0 {
		return usageError(stderr, "resume", fmt.Sprintf("unexpected argument %q", operands[0]))
	}
	if err := f.check(fs); err != nil {
		fmt.Fprintf(stderr, "deepagents resume: %v\n", err)
		return exitUsage
	}
	if !f.set["thread"] {
		return usageError(stderr, "resume", "--thread ID is required (list threads with 'deepagents threads')")
	}
	f.notices = &noticeLog{}
	f.shell.notices = f.notices
	f.shell.unguarded = &unguardedLog{}
	if _, err := applyTurnSettings(ctx, "resume", fs, args, &f, stderr); err != nil {
		fmt.Fprintf(stderr, "deepagents resume: %v\n", err)
		if _, ok := errors.AsType[*unknownThreadError](err); ok {
			return exitFailed // nothing to resume, as the exit statuses say
		}
		return exitUsage
	}
	if err := f.check(fs); err != nil {
		fmt.Fprintf(stderr, "deepagents resume: %v\n", err)
		return exitUsage
	}
	if err := dflags.done(); err != nil {
		fmt.Fprintf(stderr, "deepagents resume: %v\n", err)
		return exitUsage
	}
	f.decisions = dflags.ds
	f.resume = true
	var fileDecisions []json.RawMessage
	if decisionsFile != "" {
		var err error
		if fileDecisions, err = readDecisions(decisionsFile, stdin); err != nil {
			fmt.Fprintf(stderr, "deepagents resume: --decisions %s: %v\n", decisionsFile, err)
			return exitUsage
		}
	}
	if isTerminal(stdin) && isTerminal(stderr) && decisionsFile != "-" {
		f.confirm = askOnTerminal(stdin, stderr)
	}
	setup, err := assemble(ctx, f, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "deepagents resume: %v\n", err)
		return exitUsage
	}
	defer setup.close()
	if err := flagsTellCallsApart(ctx, setup, f, dflags.ds); err != nil {
		fmt.Fprintf(stderr, "deepagents resume: %v; nothing ran, and thread %s is unchanged\n", err, f.thread)
		return exitUsage
	}
	if fileDecisions != nil {
		ds, err := answerInOrder(ctx, setup, f.thread, fileDecisions)
		if err != nil {
			fmt.Fprintf(stderr, "deepagents resume: --decisions %s: %v; nothing ran, and thread %s is unchanged\n", decisionsFile, err, f.thread)
			return exitUsage
		}
		f.decisions = append(f.decisions, ds...)
	}
	progress := !f.quiet && isTerminal(stderr)
	sess := &session{setup: setup, flags: f, stdout: stdout, stderr: stderr, progress: progress, thread: f.thread, cmd: "resume"}
	return sess.drive(ctx, agent.Input{}, f.decisions)
}

// readDecisions reads a --decisions file ("-" for stdin): a list of
// decisions, or {"decisions": [...]}. They are checked once the thread's
// waiting calls are known (answerInOrder).
func readDecisions(name string, stdin io.Reader) ([]json.RawMessage, error) {
	var data []byte
	var err error
	if name == "-" {
		data, err = safefile.ReadFrom(stdin, "stdin", maxDecisionsFile)
	} else {
		data, err = safefile.Read(name, maxDecisionsFile)
	}
	if err != nil {
		return nil, err
	}
	const shape = `write a list of decisions, or {"decisions": [...]}`
	if !json.Valid(data) {
		return nil, errors.New("not JSON: " + shape)
	}
	data = bytes.TrimSpace(data)
	list := []json.RawMessage{}
	if data[0] == '{' {
		var wrap struct {
			Decisions *[]json.RawMessage `json:"decisions"`
		}
		if err := json.Unmarshal(data, &wrap); err != nil {
			return nil, fmt.Errorf("decisions: %w", err)
		}
		if wrap.Decisions == nil {
			return nil, errors.New(`decisions: the object has no "decisions" list`)
		}
		list = *wrap.Decisions
	} else if err := json.Unmarshal(data, &list); err != nil {
		return nil, fmt.Errorf("decisions: %s: %w", shape, err)
	}
	return list, nil
}

// answerInOrder reads decisions from a --decisions file against the
// thread's waiting calls (hitl.InOrder): one that names no call
// answers the waiting call at its position, which is the order of
// action_requests in the JSON result of the run that stopped.
func answerInOrder(ctx context.Context, setup *setup, thread string, list []json.RawMessage) ([]agent.Decision, error) {
	var waiting []agent.Interrupt
	if rs, err := runner.LoadRunState(ctx, setup.saver, thread, agent.RootPath(setup.agent.Name()), false); err == nil {
		waiting = rs.Loop.Interrupts
	}
	return hitl.InOrder(list, waiting)
}

// flagsTellCallsApart refuses a decision flag whose call id more than one
// waiting call has (subagents' models may number their calls alike): the
// flags carry no path, so it says how to answer each one with --decisions.
func flagsTellCallsApart(ctx context.Context, setup *setup, f runFlags, ds []agent.Decision) error {
	if len(ds) == 0 {
		return nil
	}
	rs, err := runner.LoadRunState(ctx, setup.saver, f.thread, agent.RootPath(setup.agent.Name()), false)
	if err != nil {
		return nil // the run says what is wrong with the thread
	}
	db := ""
	if f.set["db"] {
		d, _ := dbWithoutPassword(f.db)
		db = " --db " + shellWord(d)
	}
	for _, d := range ds {
		var same []agent.Interrupt
		for _, in := range rs.Loop.Interrupts {
			if in.CallID == d.CallID {
				same = append(same, in)
			}
		}
		if len(same) < 2 {
			continue
		}
		slices.SortFunc(same, func(a, b agent.Interrupt) int { return strings.Compare(a.Path.String(), b.Path.String()) })
		paths := make([]string, len(same))
		for i, in := range same {
			paths[i] = in.Path.String()
		}
		return fmt.Errorf("call id %q is waiting in more than one agent (%s), and --%s cannot say which: answer with --decisions, naming the call's \"path\" too, such as %s | deepagents resume --thread %s%s --decisions -",
			d.CallID, strings.Join(paths, "; "), d.Type, echoDecision(d, same[0]), shellWord(f.thread), db)
	}
	return nil
}
