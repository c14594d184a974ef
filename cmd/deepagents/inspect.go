package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/scenario"
	"github.com/deepagents-go/deepagents/subagent"
	"github.com/deepagents-go/deepagents/tokens"
)

// toolTable is one agent's bound tools and their cost.
type toolTable struct {
	Agent       string             `json:"agent"`
	SystemChars int                `json:"system_chars"`
	Tools       []tokens.ToolCount `json:"tools"`
	Total       tokens.ToolCount   `json:"total"`
	Subagents   []toolTable        `json:"subagents,omitempty"`
}

func tableOf(a *agent.Agent) toolTable {
	rows, total := tokens.Tools(a.ToolSpecs())
	t := toolTable{Agent: a.Name(), SystemChars: tokens.Chars(a.System()), Tools: rows, Total: total}
	for _, tl := range a.Tools() {
		task, ok := tl.(*subagent.Task)
		if !ok {
			continue
		}
		for _, name := range task.Names() {
			child, _ := task.Agent(name)
			t.Subagents = append(t.Subagents, tableOf(child))
		}
	}
	return t
}

const inspectHelp = `usage: deepagents inspect [--scenario FILE] [--json]

Lists every tool bound to the default deep agent (or, with --scenario, to that
scenario's agent) and to each of its subagents: the characters of its
description and of its JSON definition, and its token cost in o200k and
cl100k. This is what every model call pays before any message is sent.

Exit status:
  0  the table was printed
  1  the agent could not be assembled
  2  bad usage, or the scenario could not be read or is invalid
`

func cmdInspect(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	file := fs.String("scenario", "", "inspect this scenario's agent instead of the default deep agent (`FILE`)")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	operands, code, ok := parseFlags(fs, args, inspectHelp, stdout, stderr)
	if !ok {
		return code
	}
	if len(operands) > 0 {
		return usageError(stderr, "inspect", fmt.Sprintf("takes no arguments, got %q (use --scenario FILE)", operands[0]))
	}
	var a *agent.Agent
	var err error
	if *file != "" {
		sc, lerr := scenario.Load(*file)
		if lerr != nil {
			printScenarioError(stderr, "inspect", lerr)
			return 2
		}
		a, err = sc.Build(sc.Model())
	} else {
		a, err = deepagents.New(deepagents.Config{Model: scripted.New(nil, scripted.Options{})})
	}
	if err != nil {
		fmt.Fprintf(stderr, "deepagents inspect: %v\n", err)
		return 1
	}
	t := tableOf(a)
	if *asJSON {
		data, _ := json.MarshalIndent(t, "", "  ")
		fmt.Fprintf(stdout, "%s\n", data)
		return 0
	}
	printTable(stdout, t, "")
	return 0
}

func printTable(w io.Writer, t toolTable, indent string) {
	fmt.Fprintf(w, "%sagent %s — %d tools, system prompt %d chars\n", indent, t.Agent, len(t.Tools), t.SystemChars)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%stool\tdescription chars\tJSON chars\to200k\tcl100k\t\n", indent)
	for _, r := range t.Tools {
		fmt.Fprintf(tw, "%s%s\t%d\t%d\t%d\t%d\t\n", indent, r.Name, r.DescChars, r.JSONChars, r.O200k, r.Cl100k)
	}
	fmt.Fprintf(tw, "%stotal\t%d\t%d\t%d\t%d\t\n", indent, t.Total.DescChars, t.Total.JSONChars, t.Total.O200k, t.Total.Cl100k)
	tw.Flush()
	for _, s := range t.Subagents {
		fmt.Fprintln(w)
		printTable(w, s, indent+"  ")
	}
}
