package main

import (
	"bytes"
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
	"unicode"
	"unicode/utf8"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/approve"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/compact"
	"github.com/deepagents-go/deepagents/config"
	"github.com/deepagents-go/deepagents/hitl"
	"github.com/deepagents-go/deepagents/internal/safefile"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/providers"
	"github.com/deepagents-go/deepagents/runner"
	"github.com/deepagents-go/deepagents/tokens"
)

// runFlags are the flags of `deepagents run`.
type runFlags struct {
	prompt       string
	model        string
	output       string
	root         string
	system       string
	subagents    string
	maxSteps     int
	maxParallel  int
	maxCost      float64
	saveRetry    time.Duration
	reasoning    string
	threadDir    string
	db           string
	thread       string
	interruptOn  string
	quiet        bool
	trustProject bool
	// claudeSkills, noSkills and noMemory are the flags of skills.go.
	claudeSkills, noSkills, noMemory bool
	shell                            shellOptions    // --allow, --no-sandbox, --sandbox-network (shell.go)
	backends                         backendFlags    // --no-store, --store-namespace, --permission (backends.go)
	set                              map[string]bool // flags given on the command line
	// maxResponseBytes and maxToolCalls are --max-response-bytes and
	// --max-tool-calls.
	maxResponseBytes int64
	maxToolCalls     int
	// gates is --interrupt-on, parsed; nil when the flag is not given.
	gates map[string]approve.Policy
	// decisions are resume's --approve, --reject, --edit and --decisions,
	// in the order given.
	decisions []agent.Decision
	// resume is set for 'deepagents resume'.
	resume bool
	// reasoningCfg is --reasoning, parsed; nil when the flag is not given.
	reasoningCfg *llm.ReasoningConfig
	// confirm asks the user a yes/no question on the terminal; nil when
	// there is no terminal to ask on.
	confirm func(question string) bool
	// mcp are the MCP flags (cmd/deepagents/mcp.go).
	mcp mcpFlags
	// given are the agent's flags of the turn, saved with it so that
	// 'resume' and the next 'run --thread' build the same agent
	// (remember.go): those given to 'run', after those it took from the
	// thread's turn before.
	given [][2]string
	// newThread is --new-thread: --thread names a thread to make.
	newThread bool
	// notices shows the endpoint and sandbox notices once per thread.
	notices *noticeLog
	// approvalMode is --approval-mode (modes.go).
	approvalMode approve.Mode
}

// modelError is err, the error of the model reference ref, or, when ref
// is a model name of a built-in provider's family written without its
// provider ("gpt-4.1"), an error that says how to write it.
func modelError(err error, ref string) error {
	if hint := providers.Suggest(ref); hint != "" {
		return fmt.Errorf("%q is a model name without its provider: write %s", strings.TrimSpace(ref), hint)
	}
	return err
}

// errInterrupted is the cause of a run stopped by Ctrl-C, so that the user
// reads that they interrupted it rather than "context canceled".
var errInterrupted = errors.New("interrupted by the user (Ctrl-C)")

const runHelp = `usage: deepagents run [flags] [-p PROMPT]

Runs the deep agent on a real model. Without -p the prompt is read from
stdin, or an interactive session starts when stdin is a terminal. Settings
come from the flags, then the project's deepagents.toml, then
~/.deepagents/config.toml; subagents from the agent files in
~/.deepagents/agents and .deepagents/agents. See docs/RUN.md.

Every run is saved step by step in a thread of the thread database (--db;
default .deepagents/state.db in a project, else ~/.deepagents/state.db).
Without --thread a new thread is made and its id printed on stderr before
the run starts (with --output stream-json, as thread_id in the first line,
run.start, instead); --thread ID sends the prompt as a new turn of that
thread, whose agent is built with the flags the thread's turn was started
with (--root, --model, --permission, ...), unless given again. An id no
thread has is an error naming the nearest ids; --new-thread makes a thread
with that id. 'deepagents resume' continues a run that stopped.

Tools named by --interrupt-on or interrupt_on wait for a person before
they run. On a terminal (text output) you are asked at the prompt: approve,
edit the arguments, or reject with a reason. Otherwise the run stops with
status interrupted and exit status 3, listing the waiting calls; answer
them with 'deepagents resume --thread ID --approve CALL_ID' (or --reject,
--edit).

The answer goes to stdout (never the model's thinking); progress, notices
and warnings to stderr. A refusal is printed on stderr, not as an answer.

Exit status:
  0  the run ended with status ok
  1  it ended with status error, limit, cancelled or refused (the answer so
     far is printed and the transcript saved), or the thread is held by
     another run
  2  bad usage or configuration, an untrusted project file, an unknown
     --thread, or no prompt
  3  the run is interrupted: tool calls wait for approval (see above)
An interactive session exits with its last turn's status; a turn stopped
with Ctrl-C counts as 0.
`

// parseRunFlags reads the flags of `deepagents run`, reporting a bad one on
// stderr. When the command must stop (help shown, bad flag), ok is false
// and code is its exit status.
//
// With --thread, the flags the thread's turn was started with that the
// command line does not give are taken (applyTurnSettings), and the
// thread must exist unless --new-thread.
func parseRunFlags(ctx context.Context, args []string, stdout, stderr io.Writer) (f runFlags, code int, ok bool) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.StringVar(&f.prompt, "p", "", "the prompt; without it, read it from stdin, or start an interactive session on a terminal")
	fs.StringVar(&f.thread, "thread", "", "continue this thread: the prompt is a new turn of its conversation, with its files and the flags it was started with (default: a new thread)")
	fs.BoolVar(&f.newThread, "new-thread", false, "with --thread ID: make a new thread with this id (without it, an id no thread has is an error)")
	agentFlags(fs, &f)
	modeFlag(fs, &f)
	operands, code, ok := parseFlags(fs, args, runHelp, stdout, stderr)
	if !ok {
		return f, code, false
	}
	if len(operands) > 0 {
		fmt.Fprintf(stderr, "deepagents run: unexpected argument %q (put the prompt after -p)\n", operands[0])
		return f, 2, false
	}
	if err := f.check(fs); err != nil {
		fmt.Fprintf(stderr, "deepagents run: %v\n", err)
		return f, 2, false
	}
	if f.newThread && !f.set["thread"] {
		fmt.Fprintln(stderr, "deepagents run: --new-thread needs --thread ID, the id to give the new thread (without --thread every run makes a new thread)")
		return f, 2, false
	}
	f.notices = &noticeLog{}
	f.shell.notices = f.notices
	f.shell.unguarded = &unguardedLog{}
	f.given = givenFlags(fs, args)
	if f.set["thread"] {
		given, err := applyTurnSettings(ctx, "run", fs, args, &f, stderr)
		if err == nil {
			err = f.check(fs)
		}
		if err != nil {
			fmt.Fprintf(stderr, "deepagents run: %v\n", err)
			return f, 2, false
		}
		f.given = given
	}
	return f, 0, true
}

// agentFlags are the flags run and resume share: how the agent is built,
// where its threads are, and how the outcome is shown.
func agentFlags(fs *flag.FlagSet, f *runFlags) {
	fs.StringVar(&f.db, "db", "", "the thread database: sqlite:PATH or postgres://USER@HOST/DB (default from the config, else .deepagents/state.db in a project, else ~/.deepagents/state.db)")
	fs.StringVar(&f.interruptOn, "interrupt-on", "", "TOOL[,TOOL]: calls of these tools wait for approval (approve, edit or reject), on top of interrupt_on in the config")
	fs.StringVar(&f.model, "model", "", "provider:model, e.g. openai:gpt-4.1, anthropic:claude-sonnet-4-5, gemini:gemini-2.5-flash, ollama:qwen3")
	fs.StringVar(&f.output, "output", "text", "text | json | stream-json")
	fs.StringVar(&f.root, "root", "", "expose this real directory to the file tools (confined to it) instead of an in-memory filesystem")
	fs.StringVar(&f.system, "system", "", "the agent's system prompt (@FILE reads it from a file)")
	fs.StringVar(&f.subagents, "subagents", "", "a directory of subagent files (NAME.md), read after the user's and the project's")
	fs.IntVar(&f.maxSteps, "max-steps", 0, "model calls allowed per run (default from the config, else 500)")
	fs.Float64Var(&f.maxCost, "max-cost", 0, "US dollars a run may spend, its subagents included, at the configured prices; the run stops cleanly at it (status limit) and 'resume --max-cost HIGHER' goes on (default from the config's max_cost, else none)")
	fs.DurationVar(&f.saveRetry, "save-retry", runner.DefaultSaveRetry, "how long a save the thread database cannot take (restarting, unreachable, locked) is tried again before the run fails, unfinished (0: not at all)")
	fs.IntVar(&f.maxParallel, "max-parallel", 0, "tool calls of one step that may run at once (default 16)")
	fs.Int64Var(&f.maxResponseBytes, "max-response-bytes", 0, "bytes of text, reasoning and tool-call arguments one model response may hold; past them the run ends with an error (default from the config, else 16777216, 16 MiB)")
	fs.IntVar(&f.maxToolCalls, "max-tool-calls", 0, "tool calls one model response may hold; past them the run ends with an error (default from the config, else 1000)")
	fs.StringVar(&f.reasoning, "reasoning", "", "how much the model thinks before it answers: low | medium | high, or N thinking tokens (default from the config, else the model's own)")
	fs.StringVar(&f.threadDir, "thread-dir", "", "where the thread's transcript is saved (default ~/.deepagents/threads)")
	fs.BoolVar(&f.quiet, "quiet", false, "no progress or notices on stderr (warnings and the notice of a non-default endpoint are still shown)")
	addMCPFlags(fs, &f.mcp)
	skillsFlags(fs, f)
	shellFlags(fs, &f.shell)
	fs.BoolVar(&f.trustProject, "trust-project", false, "trust the project's deepagents.toml to set where requests, API keys and conversations go (base_url, api_key_env, headers, a PostgreSQL db); remembered for the file as it is now")
	addBackendFlags(fs, &f.backends)
}

// check reads the flags given and checks their values.
func (f *runFlags) check(fs *flag.FlagSet) error {
	f.set = map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { f.set[fl.Name] = true })
	switch f.output {
	case "text", "json", "stream-json":
	default:
		return fmt.Errorf("--output must be text, json or stream-json, not %q", f.output)
	}
	if f.set["max-cost"] && !(f.maxCost > 0 && f.maxCost <= 1e6) {
		return fmt.Errorf("--max-cost must be a number of US dollars more than 0 (e.g. 2.50), not %v", f.maxCost)
	}
	if f.saveRetry < 0 {
		return fmt.Errorf("--save-retry must not be negative (0 tries a save once), not %s", f.saveRetry)
	}
	if f.set["reasoning"] {
		r, err := config.ParseReasoning(f.reasoning)
		if err != nil {
			return fmt.Errorf("--reasoning: %w", err)
		}
		f.reasoningCfg = r
	}
	if f.set["thread"] {
		if err := checkpoint.ValidateThreadID(f.thread); err != nil {
			return fmt.Errorf("--thread: %w", err)
		}
		if i := strings.IndexFunc(f.thread, unicode.IsControl); i >= 0 {
			return fmt.Errorf("--thread: %q holds a control character, which would garble listings", f.thread)
		}
	}
	if f.set["interrupt-on"] {
		g, err := config.ParseInterruptOnFlag(f.interruptOn)
		if err != nil {
			return fmt.Errorf("--interrupt-on: %w", err)
		}
		f.gates = g
	}
	if f.set["db"] {
		if _, err := config.ParseDatabase(f.db, ""); err != nil {
			return fmt.Errorf("--db: %w", err)
		}
	}
	return nil
}

// Exit statuses of run and resume.
const (
	exitOK          = 0
	exitFailed      = 1
	exitUsage       = 2
	exitInterrupted = 3
)

func cmdRun(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	f, code, ok := parseRunFlags(ctx, args, stdout, stderr)
	if !ok {
		return code
	}
	terminal := isTerminal(stdin) && isTerminal(stderr)
	if terminal {
		f.confirm = askOnTerminal(stdin, stderr)
	}

	setup, err := assemble(ctx, f, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "deepagents run: %v\n", err)
		return exitUsage
	}
	defer setup.close()

	interactive := f.prompt == "" && isTerminal(stdin)
	if f.prompt == "" && !interactive {
		data, err := safefile.ReadFrom(stdin, "stdin", maxStdinPrompt)
		if err != nil {
			fmt.Fprintf(stderr, "deepagents run: reading the prompt from stdin: %v\n", err)
			return exitUsage
		}
		if !utf8.Valid(data) {
			fmt.Fprintln(stderr, "deepagents run: the prompt on stdin is not UTF-8 text")
			return exitUsage
		}
		f.prompt = strings.TrimSpace(string(data))
		if f.prompt == "" {
			fmt.Fprintln(stderr, "deepagents run: no prompt: stdin is not a terminal and held no text; pass -p PROMPT or pipe the prompt on stdin")
			return exitUsage
		}
	}
	progress := !f.quiet && isTerminal(stderr)
	sess := &session{setup: setup, flags: f, stdout: stdout, stderr: stderr, progress: progress, thread: f.thread, cmd: "run", fresh: f.newThread}
	// On a terminal, with text output, calls waiting for approval are put
	// to the person at the prompt.
	askHere := terminal && f.output == "text"
	if !interactive {
		if askHere {
			sess.ask = askApprovals(newLineReader(stdin), stderr, setup.agent.CheckDecisions)
		}
		return sess.turn(ctx, f.prompt)
	}
	sess.askAtPrompt = askHere
	return sess.interactive(ctx, stdin)
}

// session keeps a conversation across turns: one thread of the database.
type session struct {
	setup    *setup
	flags    runFlags
	stdout   io.Writer
	stderr   io.Writer
	progress bool
	// cmd is the command's name in messages: "run" or "resume".
	cmd string

	// thread is the session's thread id, made by the first turn when empty.
	thread string
	// announced is set once the thread's id has been shown.
	announced bool
	// ask, when set, asks a person about calls waiting for approval and
	// returns their decisions; an error leaves the calls waiting.
	ask func(ctx context.Context, waiting []agent.Interrupt) ([]agent.Decision, error)
	// askAtPrompt makes an interactive session set ask on its own line
	// reader.
	askAtPrompt bool
	// told are the warnings and notices already shown in this session,
	// so that one repeated by every subagent run is shown once.
	told map[string]bool
	// context is what /context shows: the last request's tokens by source.
	context contextLog
	// compaction is a /compact the next turn records in the thread.
	compaction *compact.Manual
	// prompt is the message that started the turn being driven; "" when
	// it continues a turn started earlier (resume).
	prompt string
	// fresh is set while the session's thread is one it makes (no
	// --thread, or --new-thread) and no turn of it has run yet; made is
	// set when the session chose its id. discarded is set when the turn
	// being reported removed the thread (discardFailedStart).
	fresh, made, discarded bool
}

func (s *session) interactive(ctx context.Context, stdin io.Reader) int {
	model := s.setup.modelName
	if r := reasoningText(s.setup.config.Reasoning); r != "" {
		model += ", " + r
	}
	lines := newLineReader(stdin)
	if s.askAtPrompt {
		s.ask = askApprovals(lines, s.stderr, s.setup.agent.CheckDecisions)
	}
	fmt.Fprintf(s.stderr, "deepagents — %s. Type your message; an empty line does nothing, /resume continues a stopped turn, /context shows what the last model call was sent, /cost what the thread's model calls cost, /compact [focus] summarises the older messages, Ctrl-D ends the session, Ctrl-C stops the current turn.\n", model)
	code := 0
	for {
		fmt.Fprint(s.stderr, "> ")
		line, err := lines.readLine()
		if err != nil {
			fmt.Fprintln(s.stderr)
			if !errors.Is(err, io.EOF) {
				fmt.Fprintf(s.stderr, "deepagents run: reading stdin: %v\n", err)
				return exitUsage
			}
			return code
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if line == "/exit" || line == "/quit" {
			return code
		}
		if line == "/context" {
			s.context.write(s.stderr)
			continue
		}
		if s.modeCommand(line) {
			continue
		}
		if line == "/cost" {
			s.showCost(ctx)
			continue
		}
		if focus, ok := compactCommand(line); ok {
			// Ctrl-C stops the summary, not the session.
			cctx, cancel := context.WithCancelCause(ctx)
			restore := interrupts.route(func() { cancel(errInterrupted) })
			s.compactNow(cctx, focus)
			restore()
			cancel(nil)
			if ctx.Err() != nil {
				return code
			}
			continue
		}
		// Ctrl-C stops this turn only.
		tctx, cancel := context.WithCancelCause(s.withCompaction(ctx))
		restore := interrupts.route(func() { cancel(errInterrupted) })
		if line == "/resume" {
			s.context.startTurn()
			code = s.drive(tctx, agent.Input{}, nil)
		} else {
			code = s.turn(tctx, line)
		}
		restore()
		if ctx.Err() == nil && errors.Is(context.Cause(tctx), errInterrupted) {
			// The person stopped this turn: ending the session after it
			// (Ctrl-D, /exit) is no failure.
			code = exitOK
		}
		cancel(nil)
		s.settleCompaction(ctx)
		if ctx.Err() != nil {
			return code
		}
	}
}

// turn sends one user message as a new turn of the session's thread and
// prints the outcome in the chosen format.
func (s *session) turn(ctx context.Context, prompt string) int {
	in := agent.Input{Messages: []llm.Message{llm.User(prompt)}}
	s.context.startTurn()
	// A turn stopped with Ctrl-C stays unfinished in the thread; a new
	// message closes it (its finished calls keep their results) and goes
	// on in the same thread, and /resume instead continues it.
	return s.drive(ctx, in, nil)
}

// name is the command's name for messages.
func (s *session) name() string {
	if s.cmd == "" {
		return "run"
	}
	return s.cmd
}

// drive runs the thread with in (empty to resume) and decisions, asks about
// calls waiting for approval while there is someone to ask, and reports the
// outcome. It returns the exit status.
func (s *session) drive(ctx context.Context, in agent.Input, decisions []agent.Decision) int {
	if s.setup.saver == nil {
		// A setup assembled without a database (tests) keeps its threads
		// in memory.
		s.setup.saver = checkpoint.NewMemory(0)
	}
	if s.thread == "" {
		s.thread = newThreadID()
		s.fresh, s.made = true, true
		s.announceNew()
	}
	s.discarded = false
	s.startCost(ctx, len(in.Messages) == 0)
	var prog *progressPrinter
	if s.progress {
		prog = &progressPrinter{w: s.stderr, start: time.Now(), cost: s.setup.cost}
	}
	s.prompt = ""
	if len(in.Messages) > 0 {
		s.prompt = in.Messages[0].Content
	}
	enc := json.NewEncoder(s.stdout)
	// answered is set once the person at the terminal has answered calls
	// waiting for approval: the run goes on by resuming its thread, which
	// is this process's business, not news to them.
	answered := false
	for {
		watch := &runWatch{Saver: s.setup.saver, thread: s.thread}
		md, err := settingsMetadata(s.thread, s.flags.given, s.flags.notices.lines())
		if err != nil && !s.told[sigKey] {
			fmt.Fprintf(s.stderr, "deepagents %s: warning: the flags of this turn are saved unsigned (no key: %v), so a later command on thread %s will not take them\n", s.name(), err, s.thread)
			if s.told == nil {
				s.told = map[string]bool{}
			}
			s.told[sigKey] = true
		}
		opts := []agent.RunOption{runner.Checkpoints(watch, s.thread, runner.WithSaveRetry(saveRetry(s.flags.saveRetry)), runner.WithMetadata(md))}
		if len(decisions) > 0 {
			s.setup.noteDecisions(decisions)
			opts = append(opts, agent.WithDecisions(decisions...))
		}
		res, runErr := agent.Drain(s.setup.run(ctx, s.thread, in, opts...), func(ev agent.Event) {
			if prog != nil {
				prog.event(ev)
			}
			s.context.note(ev)
			if !(answered && ev.Type == agent.Notice && ev.Notice != nil && ev.Notice.Source == "resume") {
				s.tell(ev, prog)
			}
			if s.flags.output == "stream-json" {
				s.stream(enc, ev)
			}
			if ev.Type == agent.ToolEnd {
				s.tellUnguarded(ev.Agent, enc, prog)
			}
		})
		s.tellUnguarded(nil, enc, prog)
		// A run that produced a result is reported and saved whatever error
		// came with it (a non-ok status comes back as an error too); only a
		// run without a result has nothing to show.
		first := s.fresh
		s.fresh = false
		if res == nil {
			if runErr == nil {
				runErr = errors.New("the run ended without a result")
			}
			if ctx.Err() != nil {
				runErr = context.Cause(ctx)
			}
			fmt.Fprintf(s.stderr, "deepagents %s: %v\n", s.name(), runErr)
			return exitFailed
		}
		var de *agent.DecisionError
		if errors.As(runErr, &de) {
			fmt.Fprintf(s.stderr, "deepagents %s: %s; nothing ran, and thread %s is unchanged\n", s.name(), de.Msg, s.thread)
			return exitUsage
		}
		if res.Status == agent.StatusInterrupted && s.ask != nil && ctx.Err() == nil {
			ds, err := s.ask(ctx, res.Interrupts)
			if err == nil && len(ds) > 0 {
				in, decisions, answered = agent.Input{}, ds, true
				continue
			}
			if err != nil {
				fmt.Fprintf(s.stderr, "deepagents %s: %v\n", s.name(), err)
			}
		}
		if first && !answered && s.discardFailedStart(ctx, res) {
			fmt.Fprintf(s.stderr, "deepagents %s: thread %s is not kept: its first model call failed, so it held nothing but your prompt\n", s.name(), s.thread)
			s.discarded, s.fresh = true, true
			if s.made {
				s.thread, s.announced = "", false // the next turn makes another
			}
			return s.report(res, s.reason(ctx, res, runErr), "", prog)
		}
		path, saveErr := s.save(ctx, watch, res)
		if errors.Is(saveErr, errStaleTranscript) {
			fmt.Fprintf(s.stderr, "deepagents %s: thread %s: %v\n", s.name(), s.thread, saveErr)
		} else if saveErr != nil {
			fmt.Fprintf(s.stderr, "deepagents %s: could not save the transcript: %v\n", s.name(), saveErr)
		}
		return s.report(res, s.reason(ctx, res, runErr), path, prog)
	}
}

// reason says why a run did not end ok.
func (s *session) reason(ctx context.Context, res *agent.Result, runErr error) string {
	reason := res.Error
	if res.Status != agent.StatusOK && res.Status != agent.StatusInterrupted && ctx.Err() != nil {
		reason = context.Cause(ctx).Error() // "interrupted by the user (Ctrl-C)", not "context canceled"
	} else if reason == "" && runErr != nil && res.Status != agent.StatusOK {
		reason = runErr.Error()
	}
	return reason
}

// discardFailedStart removes the thread a session has just made when the
// first run in it failed before its model answered (a wrong key, an
// unknown model, an endpoint that is down): the thread holds nothing but
// the prompt, and would only stand in the list of threads as an empty
// failure. A run stopped with Ctrl-C, or one the database failed, keeps
// its thread, to be resumed. It reports whether the thread was removed.
func (s *session) discardFailedStart(ctx context.Context, res *agent.Result) bool {
	if res.Status != agent.StatusError || ctx.Err() != nil || len(res.Children) > 0 || errors.Is(res.Err(), checkpoint.ErrUnavailable) {
		return false
	}
	for _, m := range res.State.Messages {
		if m.Role != llm.RoleUser {
			return false
		}
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	holder := runner.LeaseHolder()
	if _, err := runner.TakeLease(dctx, s.setup.saver, s.thread, holder, time.Now(), time.Minute); err != nil {
		return false
	}
	if err := s.setup.saver.DeleteThread(dctx, s.thread); err != nil {
		_ = s.setup.saver.Release(dctx, s.thread, holder)
		return false
	}
	return true
}

// announceNew shows the id of a thread the session made on stderr before
// the run starts, so that the user, or a program reading --output json,
// can continue or resume it even when the run is killed before its result
// is printed. stream-json has it in its first line instead (stream).
func (s *session) announceNew() {
	if s.announced || s.flags.output == "stream-json" {
		return
	}
	s.announced = true
	fmt.Fprintf(s.stderr, "deepagents: thread %s (continue it with --thread %s)\n", s.thread, s.thread)
}

// stream writes ev as a line of stream-json. A run.start line carries the
// thread's id too, so that the first line of the output names the thread
// to resume should the run be killed.
func (s *session) stream(enc *json.Encoder, ev agent.Event) {
	if ev.Type != agent.RunStart {
		_ = enc.Encode(ev)
		return
	}
	// The event's own JSON with the thread's id after its fields (an
	// embedded Event would write only its own, by its MarshalJSON).
	b, err := json.Marshal(ev)
	if err != nil {
		return
	}
	id, _ := json.Marshal(s.thread)
	b = append(append(append(b[:len(b)-1], `,"thread_id":`...), id...), '}')
	_ = enc.Encode(json.RawMessage(b))
}

// report prints a finished turn in the chosen format and returns the exit
// status: 0 for a run that ended ok, 3 for one waiting for approval, else
// 1. A refusal is not an answer: its reason goes to stderr in every format,
// and nothing is printed as the answer.
func (s *session) report(res *agent.Result, reason, path string, prog *progressPrinter) int {
	refused := res.Status == agent.StatusRefused
	waiting := res.Status == agent.StatusInterrupted
	switch s.flags.output {
	case "text":
		if text := s.answer(res); text != "" && !refused && !waiting {
			if isTerminal(s.stdout) {
				text = termText(text) // shown, not acted on; a pipe gets it as it is
			}
			fmt.Fprintln(s.stdout, text)
		}
		if res.Status != agent.StatusOK && !refused && !waiting {
			fmt.Fprintf(s.stderr, "deepagents %s: the run ended with status %s: %s\n", s.name(), res.Status, termText(reason)) // may quote a server
			if errors.Is(res.Err(), checkpoint.ErrUnavailable) {
				s.showUnsaved()
			}
		}
		if prog != nil {
			prog.summary(res, path)
		}
		if waiting {
			s.showWaiting(res.Interrupts)
		}
	case "json", "stream-json":
		out := summarise(res, path)
		out.Result = s.answer(res)
		out.Error = reason
		if !s.discarded {
			out.ThreadID = s.thread
		}
		if s.setup != nil {
			out.UntrustedProject = s.setup.projectFiles
		}
		out.costFields = s.runCost()
		if s.flags.output == "stream-json" {
			out.Type = "result"
		}
		if refused {
			out.Result, out.Refusal = "", refusalOf(res, reason)
		}
		if waiting {
			out.Result = ""
		}
		_ = json.NewEncoder(s.stdout).Encode(out)
	}
	if refused {
		fmt.Fprintf(s.stderr, "deepagents %s: the model refused to answer: %s\n", s.name(), refusalOf(res, reason))
	}
	switch res.Status {
	case agent.StatusOK:
		return exitOK
	case agent.StatusInterrupted:
		return exitInterrupted
	}
	return exitFailed
}

// answer is the turn's own answer: the text of the last assistant message
// after the message that started the turn (s.prompt, else the person's
// last message). The thread's state holds every earlier turn too, so a
// turn stopped before its model answered (Ctrl-C) has no answer rather
// than the previous turn's.
func (s *session) answer(res *agent.Result) string {
	msgs := res.State.Messages
	start, last := -1, -1
	for i := len(msgs) - 1; i >= 0 && start < 0; i-- {
		m := msgs[i]
		if m.Role != llm.RoleUser || compact.IsSummary(m) {
			continue
		}
		if last < 0 {
			last = i
		}
		if s.prompt == "" || m.Content == s.prompt {
			start = i
		}
	}
	if start < 0 {
		start = last
	}
	return llm.LastText(msgs[start+1:])
}

// saveRetry is --save-retry as runner.WithSaveRetry takes it: 0 tries a
// save once.
func saveRetry(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// showUnsaved says, on stderr, that a run the thread database failed is
// unfinished, and how to continue it.
func (s *session) showUnsaved() {
	db, noPassword := s.resumeDB()
	fmt.Fprintf(s.stderr, "Thread %s is unfinished: the database could not take its last save. Once it is back, continue with: deepagents resume --thread %s%s\n", s.thread, shellWord(s.thread), db)
	fmt.Fprintln(s.stderr, "(A tool call whose result could not be saved runs again; every one saved before is kept.)")
	s.tellNoPassword(noPassword)
}

// resumeDB is the --db part of a resume command for this thread ("" when
// the thread is in the default database) without the password, and
// whether a password was left out.
func (s *session) resumeDB() (db string, noPassword bool) {
	if !s.flags.set["db"] {
		return "", false
	}
	// The thread is not where resume looks by default: name its database,
	// but never print its password.
	d, noPassword := dbWithoutPassword(s.flags.db)
	return " --db " + shellWord(d), noPassword
}

// tellNoPassword says how to give the password a printed --db leaves out.
func (s *session) tellNoPassword(left bool) {
	if left {
		fmt.Fprintln(s.stderr, "The --db above leaves out the database password: give it in PGPASSWORD (or ~/.pgpass), or type the URL with it as before.")
	}
}

// showWaiting lists the calls waiting for approval on stderr, with the
// commands that answer them.
func (s *session) showWaiting(waiting []agent.Interrupt) {
	fmt.Fprintf(s.stderr, "deepagents %s: thread %s is waiting for approval of %d tool call(s):\n", s.name(), s.thread, len(waiting))
	for _, in := range waiting {
		fmt.Fprintf(s.stderr, "  %s  %s %s  (agent %s; allowed: %s)\n", in.CallID, in.Tool, listedArgs(in.Args, s.thread), in.Path, decisionList(in.Allowed))
		if in.Reason != "" {
			fmt.Fprintf(s.stderr, "      why: %s\n", in.Reason)
		}
	}
	db, noPassword := s.resumeDB()
	ids := map[string]int{}
	for _, in := range waiting {
		ids[in.CallID]++
	}
	for _, in := range waiting {
		if ids[in.CallID] > 1 {
			// --approve ID cannot say which of the calls with this id it
			// answers: a decision with the call's path can.
			fmt.Fprintf(s.stderr, "Answer %s of %s (another agent's call has this id too) with: %s | deepagents resume --thread %s%s --decisions -", in.CallID, in.Path,
				pathDecision(in), shellWord(s.thread), db)
			if alt := otherDecisions(in); alt != "" {
				fmt.Fprintf(s.stderr, "  (or %s)", alt)
			}
			fmt.Fprintln(s.stderr)
			continue
		}
		answers := answerFlags(in)
		fmt.Fprintf(s.stderr, "Answer %s with: deepagents resume --thread %s%s %s", in.CallID, shellWord(s.thread), db, answers[0])
		if len(answers) > 1 {
			fmt.Fprintf(s.stderr, "  (or %s)", strings.Join(answers[1:], ", "))
		}
		fmt.Fprintln(s.stderr)
	}
	s.tellNoPassword(noPassword)
	if len(waiting) > 1 {
		fmt.Fprintln(s.stderr, "One resume may answer several calls: give their decisions together; calls left without one keep waiting.")
	}
}

// dbWithoutPassword returns a --db value with the PostgreSQL passwords
// left out (config.WithoutPassword), and whether there was one. Other
// values come back as they are.
func dbWithoutPassword(db string) (string, bool) {
	db = strings.TrimSpace(db)
	low := strings.ToLower(db)
	if !strings.HasPrefix(low, "postgres://") && !strings.HasPrefix(low, "postgresql://") {
		return db, false
	}
	out, removed, err := config.WithoutPassword(db)
	if err != nil {
		// --db was checked before the run, so this does not happen; if
		// it did, showing nothing of the URL is the safe side.
		return "POSTGRES_URL", true
	}
	return out, removed
}

// answerFlags are the resume flags that answer the waiting call in, one
// for each decision the call allows, in the order the call lists them.
func answerFlags(in agent.Interrupt) []string {
	allowed := in.Allowed
	if len(allowed) == 0 {
		allowed = agent.AllDecisions
	}
	id := shellWord(in.CallID)
	var out []string
	for _, d := range allowed {
		switch d {
		case agent.Approve:
			out = append(out, "--approve "+id)
		case agent.Edit:
			out = append(out, "--edit "+id+" --args JSON")
		case agent.Reject:
			out = append(out, "--reject "+id+" --message WHY")
		case agent.Respond:
			out = append(out, "--respond "+id+" --message ANSWER")
		default:
			out = append(out, "--"+string(d)+" "+id)
		}
	}
	return out
}

// pathDecision is an echo of a decision, the first one in allows, that
// names in by its path as well as its call id.
func pathDecision(in agent.Interrupt) string {
	allowed := in.Allowed
	if len(allowed) == 0 {
		allowed = agent.AllDecisions
	}
	d := agent.Decision{Type: allowed[0]}
	switch d.Type {
	case agent.Edit:
		d.Args = in.Args
	case agent.Reject:
		d.Message = "WHY"
	case agent.Respond:
		d.Message = "ANSWER"
	}
	return echoDecision(d, in)
}

// echoDecision is an echo of d for the call in, named by its path as well
// as its call id, to pipe into resume --decisions -.
func echoDecision(d agent.Decision, in agent.Interrupt) string {
	d.CallID, d.Path = in.CallID, in.Path
	b, _ := json.Marshal([]agent.Decision{d})
	return "echo " + shellWord(string(b))
}

// otherDecisions says how the other decisions in allows are written in a
// decision of pathDecision's form.
func otherDecisions(in agent.Interrupt) string {
	allowed := in.Allowed
	if len(allowed) == 0 {
		allowed = agent.AllDecisions
	}
	var out []string
	for _, d := range allowed[1:] {
		switch d {
		case agent.Edit:
			out = append(out, `"type": "edit" with "args": {...}`)
		case agent.Reject:
			out = append(out, `"type": "reject" with "message": "WHY"`)
		case agent.Respond:
			out = append(out, `"type": "respond" with "message": "ANSWER"`)
		default:
			out = append(out, fmt.Sprintf("%q: %q", "type", d))
		}
	}
	return strings.Join(out, ", ")
}

// shellWord is s as one word of a shell command: as it is when it holds
// only characters no shell treats specially, else in single quotes.
func shellWord(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r == '.' || r == '_' || r == '-' || r == '/' || r == ':' || r == '@' || r == '+' || r == ',' || r == '=' ||
			'0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z')
	}) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func decisionList(ds []agent.DecisionType) string {
	if len(ds) == 0 {
		ds = agent.AllDecisions
	}
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = string(d)
	}
	return strings.Join(out, ", ")
}

// compactJSON is args on one line, or as they are when they are not JSON.
func compactJSON(args json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, args); err != nil {
		return string(args)
	}
	return b.String()
}

// reasoningText says what a reasoning setting asks for, "" for none.
func reasoningText(r *llm.ReasoningConfig) string {
	switch {
	case r == nil || r.IsZero():
		return ""
	case r.Effort != "":
		return "reasoning effort " + string(r.Effort)
	}
	return fmt.Sprintf("thinking budget %d tokens", r.BudgetTokens)
}

// refusalOf is the model's own words for a refused run: the result's
// Refusal field where the agent package sets one (it is read by name, so
// that this builds with agent packages from before the field), else the
// run's error text, else a word that there was none.
func refusalOf(res *agent.Result, reason string) string {
	if text := strings.TrimSpace(res.Refusal); text != "" {
		return text
	}
	if strings.TrimSpace(reason) == "" {
		return "(the model gave no reason)"
	}
	return reason
}

// tell shows a warning or notice event on stderr, once per session: on the
// progress line when progress is shown, else as a line of its own.
// Warnings (settings a model dropped, ...) are shown even with --quiet;
// notices only without it.
func (s *session) tell(ev agent.Event, prog *progressPrinter) {
	warning := ev.Type == agent.Warning
	if !warning && ev.Type != agent.Notice {
		return
	}
	if !warning && s.flags.quiet {
		return
	}
	text := noticeText(ev)
	key := string(ev.Type) + "\x00" + text
	if onceOnly(ev) && s.told[key] {
		return
	}
	if s.told == nil {
		s.told = map[string]bool{}
	}
	s.told[key] = true
	switch {
	case prog != nil:
		prog.notice(ev, text)
	case warning:
		fmt.Fprintf(s.stderr, "deepagents: warning: %s: %s\n", ev.Agent, text)
	default:
		fmt.Fprintf(s.stderr, "deepagents: %s: %s\n", ev.Agent, text)
	}
}

// tellUnguarded warns about the protected files commands changed that
// nothing stopped since the last call (with --no-sandbox), on stderr even
// with --quiet and as a warning event in stream-json; agentPath is the
// agent whose command ended.
func (s *session) tellUnguarded(agentPath agent.Path, enc *json.Encoder, prog *progressPrinter) {
	if len(agentPath) == 0 {
		agentPath = agent.RootPath(agent.DefaultName)
	}
	for _, ev := range unguardedWarnings(agentPath, s.flags.shell.unguarded.take()) {
		// Every time, not once per session as tell shows a warning: the
		// same file changed again is news again.
		if text := noticeText(ev); prog != nil {
			prog.notice(ev, text)
		} else {
			fmt.Fprintf(s.stderr, "deepagents: warning: %s: %s\n", ev.Agent, text)
		}
		if s.flags.output == "stream-json" {
			s.stream(enc, ev)
		}
	}
}

// onceOnly says whether an event is shown once per session. Notices about
// one run's own history (where a resume took up its step, which calls a new
// message closed) are facts about that run, shown each time: every subagent
// resumed says so, with the same words when it stopped where another did.
func onceOnly(ev agent.Event) bool {
	if ev.Type != agent.Notice || ev.Notice == nil {
		return true
	}
	return ev.Notice.Source != "resume" && ev.Notice.Source != "history"
}

// runSummary is the `--output json` object (and the last line of
// stream-json, with type "result").
type runSummary struct {
	Type   string       `json:"type,omitempty"`
	Result string       `json:"result"`
	Status agent.Status `json:"status"`
	Error  string       `json:"error,omitempty"`
	// Refusal is the model's reason for declining, when the run ended
	// with status refused (Result is then empty).
	Refusal      string               `json:"refusal,omitempty"`
	Output       json.RawMessage      `json:"output,omitempty"`
	Rounds       int                  `json:"rounds"`
	Usage        llm.Usage            `json:"usage"`
	UsageByAgent map[string]llm.Usage `json:"usage_by_agent"`
	Subagents    []subagentSummary    `json:"subagents,omitempty"`
	FilesChanged []string             `json:"files_changed"`
	Transcript   string               `json:"transcript,omitempty"`
	// ThreadID is the thread the run is saved in: pass it to --thread to
	// continue the conversation, or to resume.
	ThreadID string `json:"thread_id"`
	// Interrupts are the calls waiting for approval (status interrupted),
	// and ActionRequests and ReviewConfigs the same calls in the shape of
	// LangChain's human-in-the-loop requests.
	Interrupts     []agent.Interrupt   `json:"interrupts,omitempty"`
	ActionRequests []actionRequest     `json:"action_requests,omitempty"`
	ReviewConfigs  []hitl.ReviewConfig `json:"review_configs,omitempty"`
	// Context is the context report of the agent's last model request of
	// the turn: its tokens by source and the window left; ContextByAgent
	// sums every agent path's requests (count, tokens sent, last and
	// largest request), and ContextTotal all of them together.
	Context        *tokens.Report           `json:"context,omitempty"`
	ContextByAgent map[string]tokens.Ledger `json:"context_by_agent,omitempty"`
	ContextTotal   *tokens.Ledger           `json:"context_total,omitempty"`
	// The run's cost in US dollars (cost.go): cost_usd, cost_lower_bound
	// and cost_by_agent.
	costFields
	// UntrustedProject lists the memory files and skills of a project the
	// user has not trusted, which went to the model as written (see
	// listProjectFiles); absent when trusted or there are none.
	UntrustedProject *projectFiles `json:"untrusted_project,omitempty"`
}

// actionRequest is a LangChain action request with our call_id beside its
// id, so that a client can answer it by either name.
type actionRequest struct {
	hitl.ActionRequest
	CallID string `json:"call_id"`
}

type subagentSummary struct {
	CallID string       `json:"call_id"`
	Agent  string       `json:"agent"`
	Status agent.Status `json:"status"`
	Rounds int          `json:"rounds"`
	Usage  llm.Usage    `json:"usage"`
}

func summarise(res *agent.Result, transcript string) runSummary {
	out := runSummary{Result: res.FinalText(), Status: res.Status, Error: res.Error, Output: res.Output, Rounds: res.Rounds,
		Usage: res.Usage, UsageByAgent: res.UsageByAgent, FilesChanged: res.Changed, Transcript: transcript}
	if out.FilesChanged == nil {
		out.FilesChanged = []string{}
	}
	if res.Context != nil {
		last := res.Context.Last
		out.Context = &last
	}
	out.ContextByAgent = res.ContextByAgent
	if len(res.ContextByAgent) > 0 {
		total := tokens.LedgerTree(res.Agent.String(), res.ContextByAgent)
		out.ContextTotal = &total
	}
	for id, c := range res.Children {
		out.Subagents = append(out.Subagents, subagentSummary{CallID: id, Agent: c.Agent.String(), Status: c.Status, Rounds: c.Rounds, Usage: c.Usage})
	}
	slices.SortFunc(out.Subagents, func(a, b subagentSummary) int { return strings.Compare(a.CallID, b.CallID) })
	if len(res.Interrupts) > 0 {
		out.Interrupts = res.Interrupts
		h := hitl.RequestFor(res.Interrupts)
		for _, ar := range h.ActionRequests {
			out.ActionRequests = append(out.ActionRequests, actionRequest{ar, ar.ID})
		}
		out.ReviewConfigs = h.ReviewConfigs
	}
	return out
}

// save writes the transcript of the run watch saw to the thread directory
// and returns its path: "" when the run saved nothing in the thread
// (saveTranscript says when it writes).
func (s *session) save(ctx context.Context, watch *runWatch, res *agent.Result) (string, error) {
	dir, err := transcriptDir(s.flags.threadDir)
	if err != nil {
		return "", err
	}
	return saveTranscript(ctx, watch, dir, s.setup.modelName, res)
}

// isTerminal reports whether v is a terminal: a character device that
// answers terminal requests, so /dev/null and /dev/zero are not.
func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0 && isTTY(f.Fd())
}
