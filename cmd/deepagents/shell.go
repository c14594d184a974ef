package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"strings"
	"sync"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/approve"
	"github.com/deepagents-go/deepagents/fstools"
	"github.com/deepagents-go/deepagents/sandbox"
	"github.com/deepagents-go/deepagents/subagent"
	"github.com/deepagents-go/deepagents/tool"
	"github.com/deepagents-go/deepagents/vfs"
	"github.com/deepagents-go/deepagents/vfs/osfs"
)

// shellOptions are the flags of the execute tool, shared by run and resume.
type shellOptions struct {
	// allowExecute is --allow execute: its calls run without asking.
	allowExecute bool
	// noSandbox is --no-sandbox: commands run without bubblewrap.
	noSandbox bool
	// network is --sandbox-network: commands may use the network.
	network bool
	// notices shows the line saying how commands run once per thread.
	notices *noticeLog
	// unguarded collects the protected paths commands changed that
	// nothing stopped, for the session to report (nil: not collected).
	unguarded *unguardedLog
}

// unguardedLog collects what commands did to protected paths that nothing
// stopped or put back (sandbox.Options.Unguarded), from the goroutines
// that run the commands, until the session reports it.
type unguardedLog struct {
	mu   sync.Mutex
	seen sandbox.Unguarded
}

func (l *unguardedLog) add(u sandbox.Unguarded) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen.Paths = append(l.seen.Paths, u.Paths...)
	l.seen.Unchecked = l.seen.Unchecked || u.Unchecked
}

// take returns what was collected since the last take.
func (l *unguardedLog) take() sandbox.Unguarded {
	if l == nil {
		return sandbox.Unguarded{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.seen
	l.seen = sandbox.Unguarded{}
	return out
}

// unguardedWarnings are the warning events that tell the person what
// commands did to protected paths that nothing stopped, from the agent
// whose event showed a command's end.
func unguardedWarnings(agentPath agent.Path, u sandbox.Unguarded) []agent.Event {
	var texts []string
	if len(u.Paths) > 0 {
		texts = append(texts, "a command changed protected files and nothing stopped it or put them back (check them before you run the agent again): "+strings.Join(u.Paths, ", "))
	}
	if u.Unchecked {
		texts = append(texts, "a command left too many files and directories to check what it did to protected files (settings, instructions, git's configuration); commands are refused from now on: check the directory (git status) before you run the agent again")
	}
	out := make([]agent.Event, len(texts))
	for i, text := range texts {
		out[i] = agent.Event{Type: agent.Warning, Agent: agentPath, Warning: &agent.WarningInfo{Source: "execute", Tools: []string{fstools.ExecuteName}, Text: text}}
	}
	return out
}

// shellFlags declares --allow, --no-sandbox and --sandbox-network.
func shellFlags(fs *flag.FlagSet, o *shellOptions) {
	fs.Func("allow", "TOOL[,TOOL]: let these tools' calls run without asking; only execute asks by default (--allow execute)", func(s string) error {
		for name := range strings.SplitSeq(s, ",") {
			switch name = strings.TrimSpace(name); name {
			case "":
			case fstools.ExecuteName:
				o.allowExecute = true
			default:
				return fmt.Errorf("%q cannot be allowed: --allow takes execute only (tools named by interrupt_on or --interrupt-on keep asking, and changes of protected files are let through only by [protect] allow in ~/.deepagents/config.toml)", name)
			}
		}
		return nil
	})
	fs.BoolVar(&o.noSandbox, "no-sandbox", false, "with --root, let execute run commands WITHOUT a sandbox (full access to your files and network); for machines without bubblewrap")
	fs.BoolVar(&o.network, "sandbox-network", false, "let execute's sandboxed commands use the network (off by default)")
}

// wireShell gives the agent the execute tool when it works on a real
// directory (root non-nil): it looks for a sandbox and, when there is one
// (or the user passed --no-sandbox), returns root as a backend that runs
// commands, with the tool's options; unless --allow execute, execute's calls
// wait for approval, in the agent's gates and in those of every subagent
// that has gates of its own. It says on stderr which way commands run, or
// why execute is absent. Without a root it returns a nil backend and the
// gates unchanged. protected are the places below the root that commands
// may read but not change (see protectedForExecute).
func wireShell(ctx context.Context, o shellOptions, quiet bool, root *osfs.FS, gates map[string]approve.Policy, specs []subagent.Spec, protected []string, stderr io.Writer) (vfs.Backend, map[string]approve.Policy, fstools.ExecuteOptions, error) {
	opts := fstools.ExecuteOptions{Network: o.network}
	if root == nil {
		if o.allowExecute || o.noSandbox || o.network {
			fmt.Fprintln(stderr, "deepagents: note: there is no execute tool without --root (commands need a real directory), so --allow execute, --no-sandbox and --sandbox-network do nothing")
		}
		return nil, gates, opts, nil
	}
	var runner *sandbox.Runner
	var err error
	var unguarded func(sandbox.Unguarded)
	if o.unguarded != nil {
		unguarded = o.unguarded.add
	}
	if !o.noSandbox {
		runner, err = sandbox.New(ctx, sandbox.Options{Network: o.network, Protected: protected, Unguarded: unguarded})
		if err != nil {
			fmt.Fprintf(stderr, "deepagents: execute is not available: %v. Pass --no-sandbox to run commands without a sandbox, with your full access to files and network.\n", err)
			return root, gates, opts, nil
		}
	} else {
		if runner, err = sandbox.New(ctx, sandbox.Options{Unsandboxed: true, Protected: protected, Unguarded: unguarded}); err != nil {
			return nil, nil, opts, err
		}
		opts = fstools.ExecuteOptions{Unsandboxed: true}
		fmt.Fprintf(stderr, "deepagents: WARNING: --no-sandbox: execute runs commands UNSANDBOXED in %s, with your full access to every file and to the network.\n", root.Dir())
	}
	asking := "each command waits for your approval (--allow execute to skip that)"
	if o.allowExecute {
		asking = "commands run without asking (--allow execute)"
		if !runner.Sandboxed() {
			fmt.Fprintln(stderr, "deepagents: WARNING: --allow execute with --no-sandbox: the model runs any command it likes, unsandboxed and without asking.")
		}
	} else {
		gates = withExecuteGate(gates)
		for i := range specs {
			// A subagent that names its tools without execute has no
			// execute to gate (nor a warning to give about the gate).
			if specs[i].InterruptOn != nil && !(specs[i].ExactTools && !hasTool(specs[i].Tools, fstools.ExecuteName)) {
				specs[i].InterruptOn = withExecuteGate(specs[i].InterruptOn)
			}
		}
	}
	if !quiet || !runner.Sandboxed() {
		o.notices.show(stderr, fmt.Sprintf("deepagents: execute: %s; %s.", runner.Describe(), asking))
	}
	return root.WithRunner(runner), gates, opts, nil
}

// hasTool reports whether tools holds one named name.
func hasTool(tools []tool.Tool, name string) bool {
	for _, t := range tools {
		if t != nil && t.Spec().Name == name {
			return true
		}
	}
	return false
}

// withExecuteGate returns a copy of gates in which execute waits for
// approval, keeping a policy for it that is already there.
func withExecuteGate(gates map[string]approve.Policy) map[string]approve.Policy {
	out := make(map[string]approve.Policy, len(gates)+1)
	maps.Copy(out, gates)
	if _, ok := out[fstools.ExecuteName]; !ok {
		out[fstools.ExecuteName] = approve.Policy{}
	}
	return out
}
