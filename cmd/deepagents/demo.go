package main

import (
	"context"
	_ "embed"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/scenario"
	"github.com/deepagents-go/deepagents/subagent"
	"github.com/deepagents-go/deepagents/tokens"
)

//go:embed demo.json
var demoScenario []byte

const demoHelp = `usage: deepagents demo

Shows what the harness does, with no API key and no network: it replays a
built-in scenario in which the parent agent hands one question to the
general-purpose subagent, which writes a file and reports back. Every model
reply comes from a script; everything else (prompts, tools, the task tool,
state merging, token counts) is the real harness.

It prints what each model call was sent (messages, system prompt size, tools),
the parent's final history, what the delegation cost the parent in tokens,
and the final files. 'deepagents replay' runs scenarios of your own.

Exit status:
  0  the demo ran as expected
  1  it did not (a bug in this build; please report it)
  2  bad usage
`

func cmdDemo(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	operands, code, ok := parseFlags(fs, args, demoHelp, stdout, stderr)
	if !ok {
		return code
	}
	if len(operands) > 0 {
		return usageError(stderr, "demo", fmt.Sprintf("takes no arguments, got %q", operands[0]))
	}
	sc, err := scenario.Parse(demoScenario)
	if err != nil {
		fmt.Fprintf(stderr, "deepagents demo: built-in scenario: %v\n", err)
		return 1
	}
	t, err := sc.Run(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "deepagents demo: %v\n", err)
		return 1
	}
	w := stdout
	fmt.Fprintf(w, "deepagents demo — %s\n(no API key: every reply comes from a built-in script; everything else is the real harness)\n\n", sc.Description)
	fmt.Fprintf(w, "User: %s\n\n", sc.Input[0].Content)

	fmt.Fprintln(w, "What each model call was sent:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "round\twho\tmessages\tsystem chars\ttools\ttool tokens")
	for i, r := range t.Rounds {
		who := r.Who
		if r.Instance != "" {
			who = "child (" + r.Who + ")"
		}
		task := "no task"
		if slices.Contains(r.Tools, subagent.TaskToolName) {
			task = "with task"
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%d, %s\t%d\n", i+1, who, r.MessageCount, r.SystemChars, len(r.Tools), task, r.ToolsTokens)
	}
	tw.Flush()
	fmt.Fprintln(w, "(messages do not count the system prompt; the child's first call is its system prompt plus the brief, verbatim)")

	fmt.Fprintln(w, "\nThe parent's history at the end:")
	for i, m := range t.ParentMessages {
		fmt.Fprintf(w, "  %d. %-9s %s\n", i+1, m.Role, summary(m))
	}
	var call, receipt *scenario.Message
	for i := range t.ParentMessages {
		m := &t.ParentMessages[i]
		if m.Role == "assistant" && len(m.ToolCalls) > 0 && m.ToolCalls[0].Name == subagent.TaskToolName && call == nil {
			call = m
		}
		if m.Role == "tool" && m.Name == subagent.TaskToolName && receipt == nil {
			receipt = m
		}
	}
	if call != nil && receipt != nil {
		callTok := tokens.Message(tokens.O200k, llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{Name: call.ToolCalls[0].Name, Args: call.ToolCalls[0].Args}}})
		recTok := tokens.Message(tokens.O200k, llm.Message{Role: llm.RoleTool, Name: receipt.Name, Content: receipt.Content})
		fmt.Fprintf(w, "\nOne delegation cost the parent %d tokens of context: the call (%d) and the %d-char receipt (%d).\n",
			callTok+recTok, callTok, tokens.Chars(receipt.Content), recTok)
		fmt.Fprintln(w, "Everything the child did in between stayed in the child's own transcript.")
	}
	if t.TaskTool != nil {
		fmt.Fprintf(w, "The task tool's definition costs %d o200k tokens on every parent call (description %d chars).\n", t.TaskTool.Tokens, t.TaskTool.DescriptionChars)
	}

	fmt.Fprintf(w, "\nFinal state keys: %s\n", strings.Join(t.FinalStateKeys, ", "))
	fmt.Fprintln(w, "Final files:")
	for _, p := range slices.Sorted(maps.Keys(t.Files)) {
		fmt.Fprintf(w, "  %s\n", p)
		for line := range strings.SplitSeq(strings.TrimRight(t.Files[p], "\n"), "\n") {
			fmt.Fprintf(w, "    | %s\n", line)
		}
	}
	fmt.Fprintf(w, "\nUsage (o200k, counted by the scripted model): %d in, %d out over %d model calls.\n",
		t.Usage.InputTokens, t.Usage.OutputTokens, t.Timing.ModelCalls)
	fmt.Fprintln(w, "Next: `deepagents replay FILE.json` runs your own scenario; `deepagents inspect` shows every tool's cost.")
	if t.Error != nil || t.Failed() {
		fmt.Fprintf(stderr, "deepagents demo: the built-in scenario did not go as expected: %v\n", deref(t.Error))
		return 1
	}
	return 0
}

func summary(m scenario.Message) string {
	if len(m.ToolCalls) > 0 {
		var parts []string
		for _, c := range m.ToolCalls {
			parts = append(parts, fmt.Sprintf("%s(%s)", c.Name, clip(string(c.Args), 70)))
		}
		return "calls " + strings.Join(parts, ", ")
	}
	if m.Role == "tool" {
		return fmt.Sprintf("[%s] %s", m.Name, clip(m.Content, 90))
	}
	return clip(m.Content, 100)
}

func clip(s string, n int) string {
	s = termText(strings.ReplaceAll(s, "\n", " "))
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func deref(s *string) string {
	if s == nil {
		return "a check failed"
	}
	return *s
}
