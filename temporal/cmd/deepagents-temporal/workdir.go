package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"

	"github.com/deepagents-go/deepagents/sandbox"
	"github.com/deepagents-go/deepagents/temporal"
	"github.com/deepagents-go/deepagents/vfs"
	"github.com/deepagents-go/deepagents/vfs/osfs"
)

// agentSetup is what a worker gives the project's agent beyond its
// configuration: a real directory (--root) and the MCP servers' tools.
type agentSetup struct {
	// backend is the directory the agent is built with (nil: none): each
	// operation, in workflow code, an activity on a worker with the same
	// directory; the others say how its commands run.
	backend                            vfs.Backend
	network, unsandboxed, allowExecute bool
	// mcp starts the MCP servers and returns what binds their tools,
	// registered for the agent name, into its configuration (nil: no MCP
	// servers here, or none started).
	mcp func(ctx context.Context, reg *temporal.Registry, name, project, home string, notice func(string, ...any)) (mcpFit, error)
	// closers free what the setup holds (the directory, the servers).
	closers []func()
	// root is the --root directory ("" for none); knowledge says whether
	// the agent gets skills and memory.
	root      string
	knowledge knowledge
}

func (s *agentSetup) close() {
	for _, c := range slices.Backward(s.closers) {
		c()
	}
}

// openWorkDir opens --root for the worker, with a command runner (the
// sandbox, or none with --no-sandbox), and registers it with reg.
func openWorkDir(ctx context.Context, reg *temporal.Registry, f workerFlags, d *agentSetup, stderr io.Writer) error {
	if !filepath.IsAbs(f.root) {
		return fmt.Errorf("--root %s: give an absolute path, the one \"deepagents run --root\" saved with the thread", f.root)
	}
	root := filepath.Clean(f.root)
	fs, err := osfs.New(root)
	if err != nil {
		return fmt.Errorf("--root: %w", err)
	}
	d.network, d.allowExecute = f.network, f.allowExecute
	d.closers = append(d.closers, func() { _ = fs.Close() })
	var runner *sandbox.Runner
	if f.noSandbox {
		if runner, err = sandbox.New(ctx, sandbox.Options{Unsandboxed: true}); err != nil {
			return err
		}
		d.unsandboxed = true
		fmt.Fprintf(stderr, "deepagents-temporal worker: WARNING: --no-sandbox: execute runs commands UNSANDBOXED in %s, with the worker's full access to every file and to the network.\n", root)
	} else if runner, err = sandbox.New(ctx, sandbox.Options{Network: f.network}); err != nil {
		fmt.Fprintf(stderr, "deepagents-temporal worker: execute is not available: %v. Pass --no-sandbox to run commands without a sandbox.\n", err)
		runner = nil
	}
	var b vfs.Backend = fs
	if runner != nil {
		b = fs.WithRunner(runner)
		asking := "each command waits for an approval (--allow-execute to skip that)"
		if f.allowExecute {
			asking = "commands run without asking (--allow-execute)"
		}
		fmt.Fprintf(stderr, "deepagents-temporal worker: execute: %s; %s.\n", runner.Describe(), asking)
	}
	d.backend, d.root = reg.Directory(root, b), root
	return nil
}
