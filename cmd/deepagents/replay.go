package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/deepagents-go/deepagents/internal/safefile"
	"github.com/deepagents-go/deepagents/scenario"
)

const replayHelp = `usage: deepagents replay [--check] [--stable] [--out FILE] SCENARIO.json

Runs a scenario file on the scripted model (no API key, no network) and prints
its transcript, one JSON document, on stdout. SCENARIO may be "-" to read
standard input. The format of both is described in docs/REPLAY.md.

The scenario's "expect" block may hold any JSON value; it never changes the run
or, without --check, the exit status. With --check, the expect keys this
version knows are evaluated, failures and keys it does not check ("not
checked") are listed on stderr, and a failed expectation gives exit status 1.
The transcript's "checks" list holds the same results either way.

Every scenario runs on an in-memory checkpoint saver, on thread
"replay-NAME". "turns" sends further user messages on that thread,
"decisions" answer the calls the run stops at for approval ("interrupt_on"),
and "crash_after_events" throws the run away after those events and resumes
it from its checkpoints.

Problems with the scenario file are reported on stderr as FILE:LINE:COL: reason.
Unknown keys are ignored with a warning.

Exit status:
  0  a transcript was printed, whatever the run's status (it is in the
     transcript: "status" and "error"), "interrupted" included: a run left
     waiting for a decision
  1  --check was given and an expectation failed; or the transcript could not
     be written; or the run was interrupted before it started
  2  bad usage, or the scenario could not be read or is invalid
`

func cmdReplay(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	check := fs.Bool("check", false, "evaluate the expect block; exit 1 if an expectation failed")
	stable := fs.Bool("stable", false, "zero times and put concurrent rounds and events in a canonical order, for diffing")
	out := fs.String("out", "", "also write the transcript to `FILE`")
	operands, code, ok := parseFlags(fs, args, replayHelp, stdout, stderr)
	if !ok {
		return code
	}
	if len(operands) != 1 {
		return usageError(stderr, "replay", fmt.Sprintf("expected one scenario file, got %d arguments", len(operands)))
	}
	sc, err := loadScenario(operands[0], stdin)
	if err != nil {
		printScenarioError(stderr, "replay", err)
		return 2
	}
	for _, w := range sc.Warnings {
		fmt.Fprintf(stderr, "%s\n", w)
	}
	t, err := sc.Run(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "deepagents replay: %v\n", err)
		return 1
	}
	if *stable {
		t.Normalize()
	}
	data, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		fmt.Fprintf(stderr, "deepagents replay: cannot encode the transcript: %v\n", err)
		return 1
	}
	data = append(data, '\n')
	if _, err := stdout.Write(data); err != nil {
		fmt.Fprintf(stderr, "deepagents replay: %v\n", err)
		return 1
	}
	if *out != "" {
		if err := os.WriteFile(*out, data, 0o644); err != nil {
			fmt.Fprintf(stderr, "deepagents replay: %v\n", err)
			return 1
		}
	}
	if !*check {
		return 0
	}
	for _, c := range t.Checks {
		switch {
		case c.NotChecked:
			fmt.Fprintf(stderr, "deepagents replay: not checked: %s: %s\n", c.Name, c.Note)
		case !c.Pass:
			got, _ := json.Marshal(c.Got)
			fmt.Fprintf(stderr, "deepagents replay: check failed: %s (got %s)\n", c.Name, clip(string(got), 300))
		}
	}
	if t.Failed() {
		return 1
	}
	return 0
}

// loadScenario reads a scenario file, or standard input for "-", under the
// scenario size cap.
func loadScenario(name string, stdin io.Reader) (*scenario.Scenario, error) {
	if name != "-" {
		return scenario.Load(name)
	}
	data, err := safefile.ReadFrom(stdin, "standard input", scenario.MaxFileSize)
	if err != nil {
		return nil, err
	}
	return scenario.ParseFile("-", data)
}

// printScenarioError prints a positioned scenario error as FILE:LINE:COL:
// reason, like a compiler, and any other error after the command's name.
func printScenarioError(stderr io.Writer, cmd string, err error) {
	var se *scenario.Error
	if errors.As(err, &se) && se.Line > 0 {
		fmt.Fprintln(stderr, err)
		return
	}
	fmt.Fprintf(stderr, "deepagents %s: %v\n", cmd, err)
}
