package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/deepagents-go/deepagents/sandbox"
	"github.com/deepagents-go/deepagents/temporal"
	"github.com/deepagents-go/deepagents/vfs"
	"github.com/deepagents-go/deepagents/vfs/osfs"
)

// workDir is the real directory a worker's agent works on (--root).
type workDir struct {
	// backend is what the agent is built with: each operation, in
	// workflow code, an activity on a worker with the same directory.
	backend                            vfs.Backend
	network, unsandboxed, allowExecute bool
	close                              func()
}

// openWorkDir opens --root for the worker, with a command runner (the
// sandbox, or none with --no-sandbox), and registers it with reg.
func openWorkDir(ctx context.Context, reg *temporal.Registry, f workerFlags, stderr io.Writer) (*workDir, error) {
	if !filepath.IsAbs(f.root) {
		return nil, fmt.Errorf("--root %s: give an absolute path, the one \"deepagents run --root\" saved with the thread", f.root)
	}
	root := filepath.Clean(f.root)
	fs, err := osfs.New(root)
	if err != nil {
		return nil, fmt.Errorf("--root: %w", err)
	}
	d := &workDir{network: f.network, allowExecute: f.allowExecute, close: func() { _ = fs.Close() }}
	var runner *sandbox.Runner
	if f.noSandbox {
		if runner, err = sandbox.New(ctx, sandbox.Options{Unsandboxed: true}); err != nil {
			d.close()
			return nil, err
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
	d.backend = reg.Directory(root, b)
	if d.backend == nil {
		d.close()
		return nil, errors.New("--root: the registry refused the directory")
	}
	return d, nil
}
