package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/deepagents-go/deepagents/scenario"
)

func cmdReplay(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	stable := fs.Bool("stable", false, "zero times and put concurrent rounds in a canonical order, for diffing")
	out := fs.String("out", "", "also write the transcript to this file")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: deepagents replay [--stable] [--out FILE] SCENARIO.json\n\nExit status: 0 the run finished and every expectation held, 1 it did not, 2 the scenario is invalid.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	sc, err := scenario.Load(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(stderr, "deepagents replay: %v\n", err)
		return 2
	}
	for _, w := range sc.Warnings {
		fmt.Fprintf(stderr, "deepagents replay: warning: %s (ignored)\n", w)
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
		fmt.Fprintf(stderr, "deepagents replay: %v\n", err)
		return 1
	}
	data = append(data, '\n')
	if _, err := stdout.Write(data); err != nil {
		return 1
	}
	if *out != "" {
		if err := os.WriteFile(*out, data, 0o644); err != nil {
			fmt.Fprintf(stderr, "deepagents replay: %v\n", err)
			return 1
		}
	}
	if t.Error != nil || t.Failed() {
		return 1
	}
	return 0
}
