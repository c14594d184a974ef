package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/deepagents-go/deepagents/agent"
)

// maxLine caps one line read from the terminal.
const maxLine = 4 << 20

// lineReader reads lines from the terminal, for the session's messages and
// the questions asked about waiting calls alike.
type lineReader struct{ sc *bufio.Scanner }

func newLineReader(r io.Reader) *lineReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), maxLine)
	return &lineReader{sc}
}

// readLine returns the next line without its end; io.EOF at the end.
func (l *lineReader) readLine() (string, error) {
	if l.sc.Scan() {
		return l.sc.Text(), nil
	}
	if err := l.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return "", fmt.Errorf("a line is at most %d MiB", maxLine>>20)
		}
		return "", err
	}
	return "", io.EOF
}

// maxTries bounds how often one question is asked again after an answer
// that is not understood.
const maxTries = 5

// askApprovals returns the function that puts each waiting call to the
// person at the terminal: the agent that asks, the tool and its arguments,
// and the decisions allowed. An edit asks for new arguments (a JSON object,
// checked before it is taken: JSON, and, when check is set, by check, which
// is given the edit and its call and refuses arguments that do not fit the
// tool), a rejection for a reason, a respond for the answer given in the
// tool's place. The end of input leaves every call
// waiting.
func askApprovals(lines *lineReader, w io.Writer, check func([]agent.Decision, []agent.Interrupt) error) func(context.Context, []agent.Interrupt) ([]agent.Decision, error) {
	return func(ctx context.Context, waiting []agent.Interrupt) ([]agent.Decision, error) {
		var ds []agent.Decision
		for i, in := range waiting {
			if ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
			d, err := askOne(lines, w, in, i+1, len(waiting), check)
			if err != nil {
				return nil, err
			}
			ds = append(ds, d)
		}
		return ds, nil
	}
}

func askOne(lines *lineReader, w io.Writer, in agent.Interrupt, n, of int, check func([]agent.Decision, []agent.Interrupt) error) (agent.Decision, error) {
	allowed := in.Allowed
	if len(allowed) == 0 {
		allowed = agent.AllDecisions
	}
	fmt.Fprintf(w, "\n⏸ Approval %d of %d: %s wants to call %s (call %s)\n", n, of, in.Path, in.Tool, in.CallID)
	showArgs(w, in.Args)
	if in.Description != "" {
		fmt.Fprintf(w, "  %s\n", in.Description)
	}
	var choices []string
	for _, d := range allowed {
		k := strings.IndexByte(string(d), decisionKey(d))
		choices = append(choices, fmt.Sprintf("%s[%c]%s", d[:k], d[k], d[k+1:]))
	}
	ask := func(q string) (string, error) {
		fmt.Fprint(w, q)
		line, err := lines.readLine()
		if errors.Is(err, io.EOF) {
			fmt.Fprintln(w)
			return "", errors.New("no answer (end of input): the calls keep waiting; answer them with 'deepagents resume'")
		}
		return strings.TrimSpace(line), err
	}
	d := agent.Decision{CallID: in.CallID, Path: in.Path}
	for try := 0; try < maxTries; try++ {
		ans, err := ask(strings.Join(choices, " / ") + "? ")
		if err != nil {
			return d, err
		}
		t, ok := pickDecision(ans, allowed)
		if !ok {
			fmt.Fprintf(w, "  answer %s\n", strings.Join(decisionWords(allowed), ", "))
			continue
		}
		d.Type = t
		switch t {
		case agent.Edit:
			for try := 0; ; try++ {
				text, err := ask("  new arguments, a JSON object on one line: ")
				if err != nil {
					return d, err
				}
				args, err := editArgs(text)
				if err == nil {
					d.Args = args
					if check == nil {
						return d, nil
					}
					// Arguments the tool would refuse are the person's to
					// fix here: taken, they would fail every decision of
					// the stop together and end the run.
					if err = check([]agent.Decision{d}, []agent.Interrupt{in}); err == nil {
						return d, nil
					}
					d.Args = nil
				}
				if try+1 >= maxTries {
					return d, fmt.Errorf("call %s: %v", in.CallID, err)
				}
				fmt.Fprintf(w, "  %v; try again\n", err)
			}
		case agent.Reject:
			msg, err := ask("  reason, told to the model (may be empty): ")
			if err != nil {
				return d, err
			}
			d.Message = msg
		case agent.Respond:
			for try := 0; ; try++ {
				msg, err := ask("  the answer, given to the model as the call's result: ")
				if err != nil {
					return d, err
				}
				if msg != "" {
					d.Message = msg
					return d, nil
				}
				if try+1 >= maxTries {
					return d, fmt.Errorf("call %s: no answer given after %d tries; the calls keep waiting", in.CallID, maxTries)
				}
				fmt.Fprintln(w, "  a respond needs an answer; try again")
			}
		}
		return d, nil
	}
	return d, fmt.Errorf("call %s: no decision understood after %d tries; the calls keep waiting", in.CallID, maxTries)
}

// pickDecision reads an answer: a decision's name or its letter (see
// decisionKey), among those allowed.
func pickDecision(ans string, allowed []agent.DecisionType) (agent.DecisionType, bool) {
	ans = strings.ToLower(strings.TrimSpace(ans))
	if ans == "" {
		return "", false
	}
	for _, d := range allowed {
		if ans == string(d) || len(ans) == 1 && ans[0] == decisionKey(d) {
			return d, true
		}
	}
	return "", false
}

// decisionKey is the letter that picks d at the prompt: its first, but s
// for respond, whose first letter is reject's.
func decisionKey(d agent.DecisionType) byte {
	if d == agent.Respond {
		return 's'
	}
	return d[0]
}

func decisionWords(ds []agent.DecisionType) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = fmt.Sprintf("%s (%c)", d, decisionKey(d))
	}
	return out
}

// editArgs checks new arguments for an edit: a JSON object.
func editArgs(text string) (json.RawMessage, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return nil, errors.New("no arguments given")
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(text), &obj); err != nil {
		return nil, fmt.Errorf("not JSON: %v", err)
	}
	if obj == nil {
		return nil, errors.New("the arguments must be a JSON object, {...}")
	}
	var b bytes.Buffer
	_ = json.Compact(&b, []byte(text))
	return b.Bytes(), nil
}

// indentJSON shows arguments readably, or as they are when not JSON.
// maxShownArgs bounds the arguments an approval prompt prints. Longer ones
// are written whole to a file the prompt names: the person approves what
// they can read in full, never a clipped command.
const maxShownArgs = 16 << 10

// showArgs prints a waiting call's arguments for the person deciding on it:
// indented, with invisible format characters (bidirectional overrides,
// zero-width marks) spelled as escapes so that the text shown is the text
// that runs.
func showArgs(w io.Writer, args json.RawMessage) {
	text := visible(indentJSON(args))
	if len(text) <= maxShownArgs {
		fmt.Fprintf(w, "  arguments: %s\n", text)
		return
	}
	f, err := os.CreateTemp("", "deepagents-approval-*.json")
	if err == nil {
		_, err = f.WriteString(text + "\n")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		// Nowhere to put them: all of them here rather than a part.
		fmt.Fprintf(w, "  arguments: %s\n", text)
		return
	}
	head := text[:maxShownArgs]
	for !utf8.ValidString(head) {
		head = head[:len(head)-1]
	}
	fmt.Fprintf(w, "  arguments (the first %d of %d bytes): %s\n  … not all shown: the whole arguments are in %s; read them before you approve.\n",
		len(head), len(text), head, f.Name())
}

// visible spells the characters of Unicode's format category (Cf: text
// direction overrides, zero-width spaces and joiners) and C1 controls as
// JSON escapes, which mean the same inside the JSON strings they sit in.
func visible(s string) string { return spellOut(s, hidden) }

func hidden(r rune) bool {
	return unicode.Is(unicode.Cf, r) || 0x80 <= r && r <= 0x9f
}

// listedArgs is a waiting call's arguments in a one-line listing: clipped
// at 200 characters, saying so and where to read them whole (thread "":
// the listing itself, with --json).
func listedArgs(args json.RawMessage, thread string) string {
	text := visible(compactJSON(args))
	if utf8.RuneCountInString(text) <= 200 {
		return text
	}
	where := "--json shows them whole"
	if thread != "" {
		where = fmt.Sprintf("'deepagents threads show %s --json' has them whole", thread)
	}
	return fmt.Sprintf("%s (clipped from %d bytes; %s)", clip(text, 200), len(text), where)
}

func indentJSON(args json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Indent(&b, args, "  ", "  "); err != nil {
		return string(args)
	}
	return b.String()
}
