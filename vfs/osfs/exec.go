package osfs

import (
	"context"
	"errors"

	"github.com/deepagents-go/deepagents/vfs"
)

// Runner runs a shell command in a host directory; sandbox.Runner is one.
type Runner interface {
	Run(ctx context.Context, dir string, req vfs.ExecRequest) (vfs.ExecResult, error)
}

// Shell is a workspace that also runs commands in its directory: the FS's
// file operations plus vfs.Executor, through a Runner. What a command
// writes is on disk, so the next Read, List or Walk sees it; the agent loop
// does not record such writes as file changes (only the file tools' writes
// through the FS are), and a resumed run does not run a finished command
// again. The paths the runner protects (sandbox.Options.Protected) are
// relative to the workspace directory.
type Shell struct {
	*FS
	runner Runner
}

var _ vfs.Executor = (*Shell)(nil)

// WithRunner returns f as a Shell whose commands r runs in f's directory.
func (f *FS) WithRunner(r Runner) *Shell { return &Shell{FS: f, runner: r} }

// Execute runs req in the workspace directory.
func (s *Shell) Execute(ctx context.Context, req vfs.ExecRequest) (vfs.ExecResult, error) {
	if s.runner == nil {
		return vfs.ExecResult{}, errors.New("commands cannot run in this directory: it has no command runner")
	}
	if err := ctx.Err(); err != nil {
		return vfs.ExecResult{}, err
	}
	return s.runner.Run(ctx, s.dir, req)
}
