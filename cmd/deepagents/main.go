// Command deepagents runs deep agents: `demo` replays a built-in delegation
// scenario, `replay` runs a scenario file and prints its transcript,
// `inspect` shows what every bound tool costs, and `run` drives a real model.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

const usage = `deepagents — a Go deep-agent harness

Usage:
  deepagents demo                        replay the built-in delegation scenario and show each round
  deepagents replay [flags] SCENARIO     run a scenario with the scripted model; print its transcript
  deepagents inspect [flags]             list every bound tool with its size and token cost
  deepagents run [flags] -p PROMPT       run the deep agent on a real model (saved in a thread)
  deepagents resume --thread ID [flags]  continue a stopped run; answer calls waiting for approval
  deepagents threads [show ID | rm ID]   list threads, print one's transcript, or delete one
  deepagents bench [flags]               measure framework overhead per model round
  deepagents mcp list [flags]            list the MCP servers, their status, tools and token cost
  deepagents serve [flags]               serve the agent over HTTP (LangGraph API, SSE streams)
  deepagents acp [flags]                 serve the agent to an editor over the Agent Client Protocol (stdio)

Run 'deepagents COMMAND -h' (or 'deepagents help COMMAND') for what a command does, its flags and
its exit status. Flags may come before or after a command's file arguments.
`

func main() {
	os.Exit(command(os.Args[1:]))
}

// command runs the command args with the process's streams and signals:
// SIGTERM stops it, and Ctrl-C (SIGINT) stops whatever interrupts routes it
// to. It returns the exit status.
func command(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	ctx, cancel := context.WithCancelCause(ctx)
	interrupts.route(func() { cancel(errInterrupted) })
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt)
	go func() {
		for range ch {
			interrupts.fire()
		}
	}()
	defer signal.Stop(ch)
	code := run(ctx, args, os.Stdin, os.Stdout, os.Stderr)
	cancel(nil)
	stop()
	return code
}

// interrupts sends Ctrl-C to whatever should stop: the whole command, or
// only the current turn of an interactive session.
var interrupts = &interruptRouter{}

type interruptRouter struct {
	mu     sync.Mutex
	cancel context.CancelFunc
}

// route makes Ctrl-C call cancel and returns a function restoring the
// previous target.
func (r *interruptRouter) route(cancel context.CancelFunc) (restore func()) {
	r.mu.Lock()
	prev := r.cancel
	r.cancel = cancel
	r.mu.Unlock()
	return func() { r.route(prev) }
}

func (r *interruptRouter) fire() {
	r.mu.Lock()
	c := r.cancel
	r.mu.Unlock()
	if c != nil {
		c()
	}
}

// run is the whole command, with its streams injected for tests. It returns
// the exit code: 0 success, 1 the run failed, 2 bad usage or input, 3 the
// run waits for approval.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "demo":
		return cmdDemo(ctx, args[1:], stdout, stderr)
	case "replay":
		return cmdReplay(ctx, args[1:], stdin, stdout, stderr)
	case "inspect":
		return cmdInspect(args[1:], stdout, stderr)
	case "bench":
		return cmdBench(ctx, args[1:], stdout, stderr)
	case "run":
		return cmdRun(ctx, args[1:], stdin, stdout, stderr)
	case "resume":
		return cmdResume(ctx, args[1:], stdin, stdout, stderr)
	case "threads":
		return cmdThreads(ctx, args[1:], stdin, stdout, stderr)
	case "mcp":
		return cmdMCP(ctx, args[1:], stdout, stderr)
	case "serve":
		return cmdServe(ctx, args[1:], stdout, stderr)
	case "acp":
		return cmdACP(ctx, args[1:], stdin, stdout, stderr)
	case "-h", "-help", "--help", "help":
		if len(args) > 1 && args[0] == "help" {
			return run(ctx, []string{args[1], "-h"}, stdin, stdout, stderr)
		}
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "deepagents: unknown command %q\n\n%s", args[0], usage)
	return 2
}

// parseFlags parses a subcommand's flags, which may come before, between or
// after its operands ("replay FILE --stable"); a "--" ends the flags. -h
// prints help (the text, then the flags) on stdout. It returns the operands;
// when the command must stop instead (help shown, bad flag), ok is false and
// code is its exit status.
func parseFlags(fs *flag.FlagSet, args []string, help string, stdout, stderr io.Writer) (operands []string, code int, ok bool) {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, help)
			if hasFlags(fs) {
				fmt.Fprintln(stdout, "\nFlags:")
				fs.SetOutput(stdout)
				fs.PrintDefaults()
			}
			return nil, 0, false
		}
		if err != nil {
			fmt.Fprintf(stderr, "deepagents %s: %v\nRun 'deepagents %s -h' for help.\n", fs.Name(), err, fs.Name())
			return nil, 2, false
		}
		rest := fs.Args()
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(operands, rest...), 0, true
		}
		if len(rest) == 0 {
			return operands, 0, true
		}
		operands = append(operands, rest[0])
		args = rest[1:]
	}
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// usageError reports a wrong number of operands and returns exit status 2.
func usageError(stderr io.Writer, cmd, msg string) int {
	fmt.Fprintf(stderr, "deepagents %s: %s\nRun 'deepagents %s -h' for help.\n", cmd, msg, cmd)
	return 2
}
