package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// temporalBinary is the program that serves runs on a Temporal fleet. It
// lives in the temporal module, so that this binary links no Temporal
// code: `deepagents serve --temporal HOST:PORT` hands over to it.
const temporalBinary = "deepagents-temporal"

// temporalServeArg reports whether args ask serve for a Temporal fleet
// (--temporal, with its value as the next argument or after "="), looking
// only at flags, before any "--".
func temporalServeArg(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && name == "temporal" {
			return true
		}
	}
	return false
}

// findTemporalBinary looks for deepagents-temporal beside this executable
// first (where an install puts both), then on PATH.
func findTemporalBinary() (string, error) {
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), temporalBinary)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return exec.LookPath(temporalBinary)
}

// temporalServeArgs are serve's arguments as deepagents-temporal serve
// reads them: serve's --addr is its --listen; the other flags are passed
// as given, and a flag it does not have is its usage error.
func temporalServeArgs(args []string) []string {
	out := make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		if name, value, ok := strings.Cut(strings.TrimLeft(a, "-"), "="); strings.HasPrefix(a, "-") && name == "addr" {
			if ok {
				a = "--listen=" + value
			} else {
				a = "--listen"
			}
		}
		out = append(out, a)
	}
	return out
}

// serveOnTemporal runs `deepagents-temporal serve ARGS` (its flags are
// those of serve's agent and of the workers; see temporalServeArgs) with
// this process's input and output, and returns its exit status. Ctrl-C or SIGTERM reaching this
// process (ctx) is passed on as an interrupt, and the program is given ten
// seconds to stop.
func serveOnTemporal(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	bin, err := findTemporalBinary()
	if err != nil {
		fmt.Fprintf(stderr, "deepagents serve: --temporal serves runs on a Temporal fleet through the %s program, which was found neither beside deepagents nor on PATH; install it with\n  go install github.com/deepagents-go/deepagents/temporal/cmd/deepagents-temporal@latest\n(see docs/TEMPORAL.md, \"The server in front of a fleet\")\n", temporalBinary)
		return exitUsage
	}
	cmd := exec.CommandContext(ctx, bin, append([]string{"serve"}, temporalServeArgs(args)...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit) && exit.ExitCode() >= 0:
		return exit.ExitCode()
	case ctx.Err() != nil && (errors.As(err, &exit) || errors.Is(err, context.Canceled)):
		return 0 // stopped by the interrupt it was passed
	default:
		fmt.Fprintf(stderr, "deepagents serve: running %s: %v\n", bin, err)
		return 1
	}
}
