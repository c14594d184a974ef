package main

import (
	"bytes"
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
)

// FuzzParseFlags: parseFlags never panics; the operands it returns are the
// arguments that are not flags, in order; with no "--", none of them looks
// like a flag; it stops only for help (exit 0) or a bad flag (exit 2).
func FuzzParseFlags(f *testing.F) {
	for _, s := range []string{"a.json", "a.json\x00--stable", "--out\x00o.json\x00a.json", "--\x00--stable", "-h", "a\x00--frob",
		"-\x00--out=x", "--out", "a\x00b\x00-stable=false\x00c", "---x", "-stable\x00--\x00--"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, joined string) {
		var args []string
		if joined != "" {
			args = strings.Split(joined, "\x00")
		}
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.Bool("stable", false, "")
		fs.String("out", "", "")
		var stdout bytes.Buffer
		ops, code, ok := parseFlags(fs, args, "HELP\n", &stdout, io.Discard)
		if !ok {
			switch {
			case code == 0 && !strings.HasPrefix(stdout.String(), "HELP\n"):
				t.Fatalf("stopped with 0 without printing help: %q", args)
			case code != 0 && code != 2:
				t.Fatalf("exit code %d", code)
			}
			return
		}
		// Operands are a subsequence of args.
		i := 0
		for _, a := range args {
			if i < len(ops) && a == ops[i] {
				i++
			}
		}
		if i != len(ops) {
			t.Fatalf("operands %q are not a subsequence of %q", ops, args)
		}
		if !slices.Contains(args, "--") {
			for _, o := range ops {
				if len(o) > 1 && o[0] == '-' {
					t.Fatalf("operand %q looks like a flag (args %q)", o, args)
				}
			}
		}
	})
}
