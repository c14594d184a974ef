//go:build unix

package sandbox

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/deepagents-go/deepagents/vfs"
)

// drainWait bounds the wait for the last output once the command is gone.
const drainWait = 2 * time.Second

func (r *Runner) run(ctx context.Context, dir, command string, timeout time.Duration) (vfs.ExecResult, error) {
	if err := ctx.Err(); err != nil {
		return vfs.ExecResult{}, context.Cause(ctx)
	}
	argv := r.argv(dir, command)
	cg := r.cgroups.newCgroup(r.opts.MaxProcs)
	if cg != nil {
		defer cg.remove()
		// The host's shell moves itself into the cgroup before it becomes
		// the sandbox, so nothing the command starts is ever outside it.
		argv = append([]string{"/bin/sh", "-c", `echo $$ > "$0" || exit 125; exec "$@"`, cg.procsFile()}, argv...)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return vfs.ExecResult{}, err
	}
	cmd := &exec.Cmd{Path: argv[0], Args: argv, Dir: dir, Env: r.env(dir), Stdout: pw, Stderr: pw}
	cmd.SysProcAttr = procAttr()
	out := newCapped(r.opts.MaxOutputBytes)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		pw.Close()
		pr.Close()
		return vfs.ExecResult{}, err
	}
	pw.Close()
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		_, _ = io.Copy(out, pr)
	}()
	waited := make(chan struct{})
	var werr error
	go func() {
		werr = cmd.Wait()
		close(waited)
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var timedOut bool
	var cause error
	select {
	case <-waited:
	case <-timer.C:
		timedOut = true
		killAll(cmd, cg)
		<-waited
	case <-ctx.Done():
		cause = context.Cause(ctx)
		killAll(cmd, cg)
		<-waited
	}
	dur := time.Since(start)
	// Whatever the command left running in the background (only possible
	// unsandboxed: the sandbox's processes die with it) goes too.
	killAll(cmd, cg)
	select {
	case <-readDone:
	case <-time.After(drainWait):
	}
	pr.Close()
	<-readDone
	if cause != nil {
		return vfs.ExecResult{}, cause
	}
	text, omitted := out.text()
	res := vfs.ExecResult{Output: text, OmittedBytes: omitted, TimedOut: timedOut, Timeout: timeout, Duration: dur}
	var ee *exec.ExitError
	switch {
	case werr == nil:
	case errors.As(werr, &ee):
		res.ExitCode = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.ExitCode = 128 + int(ws.Signal())
		}
	default:
		return vfs.ExecResult{}, werr
	}
	return res, nil
}

// killAll kills the command's process group and everything in its cgroup.
func killAll(cmd *exec.Cmd, cg *cgroup) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	if cg != nil {
		cg.kill()
	}
}
