package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/config"
	"github.com/deepagents-go/deepagents/internal/safefile"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/vfs"
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
	reasoning    string
	threadDir    string
	quiet        bool
	trustProject bool
	set          map[string]bool // flags given on the command line
	// reasoningCfg is --reasoning, parsed; nil when the flag is not given.
	reasoningCfg *llm.ReasoningConfig
	// confirm asks the user a yes/no question on the terminal; nil when
	// there is no terminal to ask on.
	confirm func(question string) bool
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

The answer goes to stdout (never the model's thinking); progress, notices
and warnings to stderr. A refusal is printed on stderr, not as an answer.

Exit status:
  0  the run ended with status ok
  1  it ended with status error, limit, cancelled or refused (the answer so
     far is printed and the transcript saved)
  2  bad usage or configuration, an untrusted project file, or no prompt
`

// parseRunFlags reads the flags of `deepagents run`, reporting a bad one on
// stderr. When the command must stop (help shown, bad flag), ok is false
// and code is its exit status.
func parseRunFlags(args []string, stdout, stderr io.Writer) (f runFlags, code int, ok bool) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.StringVar(&f.prompt, "p", "", "the prompt; without it, read it from stdin, or start an interactive session on a terminal")
	fs.StringVar(&f.model, "model", "", "provider:model, e.g. openai:gpt-4.1, anthropic:claude-sonnet-4-5, gemini:gemini-2.5-flash, ollama:qwen3")
	fs.StringVar(&f.output, "output", "text", "text | json | stream-json")
	fs.StringVar(&f.root, "root", "", "expose this real directory to the file tools (confined to it) instead of an in-memory filesystem")
	fs.StringVar(&f.system, "system", "", "the agent's system prompt (@FILE reads it from a file)")
	fs.StringVar(&f.subagents, "subagents", "", "a directory of subagent files (NAME.md), read after the user's and the project's")
	fs.IntVar(&f.maxSteps, "max-steps", 0, "model calls allowed per run (default from the config, else 500)")
	fs.IntVar(&f.maxParallel, "max-parallel", 0, "tool calls of one step that may run at once (default 16)")
	fs.StringVar(&f.reasoning, "reasoning", "", "how much the model thinks before it answers: low | medium | high, or N thinking tokens (default from the config, else the model's own)")
	fs.StringVar(&f.threadDir, "thread-dir", "", "where the thread's transcript is saved (default ~/.deepagents/threads)")
	fs.BoolVar(&f.quiet, "quiet", false, "no progress or notices on stderr (warnings and the notice of a non-default endpoint are still shown)")
	fs.BoolVar(&f.trustProject, "trust-project", false, "trust the project's deepagents.toml to set where requests and API keys go (base_url, api_key_env, headers); remembered for the file as it is now")
	operands, code, ok := parseFlags(fs, args, runHelp, stdout, stderr)
	if !ok {
		return f, code, false
	}
	if len(operands) > 0 {
		fmt.Fprintf(stderr, "deepagents run: unexpected argument %q (put the prompt after -p)\n", operands[0])
		return f, 2, false
	}
	f.set = map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { f.set[fl.Name] = true })
	switch f.output {
	case "text", "json", "stream-json":
	default:
		fmt.Fprintf(stderr, "deepagents run: --output must be text, json or stream-json, not %q\n", f.output)
		return f, 2, false
	}
	if f.set["reasoning"] {
		r, err := config.ParseReasoning(f.reasoning)
		if err != nil {
			fmt.Fprintf(stderr, "deepagents run: --reasoning: %v\n", err)
			return f, 2, false
		}
		f.reasoningCfg = r
	}
	return f, 0, true
}

func cmdRun(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	f, code, ok := parseRunFlags(args, stdout, stderr)
	if !ok {
		return code
	}
	if isTerminal(stdin) && isTerminal(stderr) {
		f.confirm = askOnTerminal(stdin, stderr)
	}

	setup, err := assemble(ctx, f, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "deepagents run: %v\n", err)
		return 2
	}
	defer setup.close()

	interactive := f.prompt == "" && isTerminal(stdin)
	if f.prompt == "" && !interactive {
		data, err := safefile.ReadFrom(stdin, "stdin", maxStdinPrompt)
		if err != nil {
			fmt.Fprintf(stderr, "deepagents run: reading the prompt from stdin: %v\n", err)
			return 2
		}
		if !utf8.Valid(data) {
			fmt.Fprintln(stderr, "deepagents run: the prompt on stdin is not UTF-8 text")
			return 2
		}
		f.prompt = strings.TrimSpace(string(data))
		if f.prompt == "" {
			fmt.Fprintln(stderr, "deepagents run: no prompt: stdin is not a terminal and held no text; pass -p PROMPT or pipe the prompt on stdin")
			return 2
		}
	}
	progress := !f.quiet && isTerminal(stderr)
	sess := &session{setup: setup, flags: f, stdout: stdout, stderr: stderr, progress: progress}
	if !interactive {
		return sess.turn(ctx, f.prompt)
	}
	return sess.interactive(ctx, stdin)
}

// session keeps a conversation across turns.
type session struct {
	setup    *setup
	flags    runFlags
	stdout   io.Writer
	stderr   io.Writer
	progress bool

	messages []llm.Message
	files    map[string]vfs.File
	thread   string
	// told are the warnings and notices already shown in this session,
	// so that one repeated by every subagent run is shown once.
	told map[string]bool
}

func (s *session) interactive(ctx context.Context, stdin io.Reader) int {
	model := s.setup.modelName
	if r := reasoningText(s.setup.config.Reasoning); r != "" {
		model += ", " + r
	}
	fmt.Fprintf(s.stderr, "deepagents — %s. Type your message; an empty line does nothing, Ctrl-D ends the session, Ctrl-C stops the current turn.\n", model)
	sc := bufio.NewScanner(stdin)
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	code := 0
	for {
		fmt.Fprint(s.stderr, "> ")
		if !sc.Scan() {
			fmt.Fprintln(s.stderr)
			if err := sc.Err(); err != nil {
				fmt.Fprintf(s.stderr, "deepagents run: reading stdin: %v (a message is at most 4 MiB)\n", err)
				return 2
			}
			return code
		}
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		if line == "/exit" || line == "/quit" {
			return code
		}
		// Ctrl-C stops this turn only.
		tctx, cancel := context.WithCancelCause(ctx)
		restore := interrupts.route(func() { cancel(errInterrupted) })
		code = s.turn(tctx, line)
		restore()
		cancel(nil)
		if ctx.Err() != nil {
			return code
		}
	}
}

// turn runs one user message and prints the outcome in the chosen format.
func (s *session) turn(ctx context.Context, prompt string) int {
	in := agent.Input{Messages: append(s.messages, llm.User(prompt)), Files: s.files}
	var prog *progressPrinter
	if s.progress {
		prog = &progressPrinter{w: s.stderr, start: time.Now()}
	}
	enc := json.NewEncoder(s.stdout)
	res, runErr := agent.Drain(s.setup.agent.Run(ctx, in), func(ev agent.Event) {
		if prog != nil {
			prog.event(ev)
		}
		s.tell(ev, prog)
		if s.flags.output == "stream-json" {
			_ = enc.Encode(ev)
		}
	})
	// A run that produced a result is reported and saved whatever error
	// came with it (a non-ok status comes back as an error too); only a
	// run without a result has nothing to show.
	if res == nil {
		if runErr == nil {
			runErr = errors.New("the run ended without a result")
		}
		if ctx.Err() != nil {
			runErr = context.Cause(ctx)
		}
		fmt.Fprintf(s.stderr, "deepagents run: %v\n", runErr)
		return 1
	}
	s.messages, s.files = res.State.Messages, res.State.Files
	path, saveErr := s.save(res)
	if saveErr != nil {
		fmt.Fprintf(s.stderr, "deepagents run: could not save the transcript: %v\n", saveErr)
	}
	reason := res.Error
	if res.Status != agent.StatusOK && ctx.Err() != nil {
		reason = context.Cause(ctx).Error() // "interrupted by the user (Ctrl-C)", not "context canceled"
	} else if reason == "" && runErr != nil && res.Status != agent.StatusOK {
		reason = runErr.Error()
	}
	return s.report(res, reason, path, prog)
}

// report prints a finished turn in the chosen format and returns the exit
// code: 0 for a run that ended ok, else 1. A refusal is not an answer: its
// reason goes to stderr in every format, and nothing is printed as the
// answer.
func (s *session) report(res *agent.Result, reason, path string, prog *progressPrinter) int {
	refused := res.Status == agent.StatusRefused
	switch s.flags.output {
	case "text":
		if text := res.FinalText(); text != "" && !refused {
			fmt.Fprintln(s.stdout, text)
		}
		if res.Status != agent.StatusOK && !refused {
			fmt.Fprintf(s.stderr, "deepagents run: the run ended with status %s: %s\n", res.Status, reason)
		}
		if prog != nil {
			prog.summary(res, path)
		}
	case "json", "stream-json":
		out := summarise(res, path)
		out.Error = reason
		if s.flags.output == "stream-json" {
			out.Type = "result"
		}
		if refused {
			out.Result, out.Refusal = "", refusalOf(res, reason)
		}
		_ = json.NewEncoder(s.stdout).Encode(out)
	}
	if refused {
		fmt.Fprintf(s.stderr, "deepagents run: the model refused to answer: %s\n", refusalOf(res, reason))
	}
	if res.Status != agent.StatusOK {
		return 1
	}
	return 0
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
	if s.told[key] {
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
	for id, c := range res.Children {
		out.Subagents = append(out.Subagents, subagentSummary{CallID: id, Agent: c.Agent, Status: c.Status, Rounds: c.Rounds, Usage: c.Usage})
	}
	slices.SortFunc(out.Subagents, func(a, b subagentSummary) int { return strings.Compare(a.CallID, b.CallID) })
	return out
}

// save writes the thread's transcript (the whole result, children included)
// and returns its path.
func (s *session) save(res *agent.Result) (string, error) {
	dir := s.flags.threadDir
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(home, ".deepagents", "threads")
	}
	if s.thread == "" {
		var b [4]byte
		_, _ = rand.Read(b[:])
		s.thread = time.Now().UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	path := filepath.Join(dir, s.thread+".json")
	data, err := json.MarshalIndent(struct {
		Thread string        `json:"thread"`
		Model  string        `json:"model"`
		Saved  time.Time     `json:"saved"`
		Result *agent.Result `json:"result"`
	}{s.thread, s.setup.modelName, time.Now().UTC(), res}, "", "  ")
	if err != nil {
		return "", err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return "", err
	}
	return path, os.Rename(tmp, path)
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
