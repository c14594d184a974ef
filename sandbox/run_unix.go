//go:build unix

package sandbox

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"

	"github.com/deepagents-go/deepagents/vfs"
)

// drainWait bounds the wait for the last output once the command is gone.
const drainWait = 2 * time.Second

// wrapper is the script of the host's shell that starts every command
// (argv follows it; $0 is the cgroup's procs file, or empty without a
// cgroup). It waits for the go-ahead on fd 3 and exits when that pipe
// closes without it; it moves itself into the cgroup, so nothing the
// command starts is ever outside it; then it becomes the command.
const wrapper = `read -r go <&3 || exit 125; exec 3<&-; if [ -n "$0" ]; then echo $$ > "$0" || exit 125; fi; exec "$@"`

// run runs argv in the host directory dir and waits for it.
//
// Dying with this process: the host's shell gets SIGKILL when this process
// dies (procAttr's Pdeathsig; Go's fork sets it, then checks the parent is
// still there, so no death before that is missed). Inside a new pid
// namespace (r.pidns) that check cannot work, as the parent is not visible
// there: the shell does nothing until run writes the go-ahead, which run
// does only after Start returns, that is after the Pdeathsig is set, so a
// caller that died before that leaves a shell that exits at once. The
// kernel sends Pdeathsig when the thread that started the child ends, not
// the whole process: the child is started and waited for by a goroutine
// locked to its thread, which ends only when the child has been waited for.
//
// files are handed to the command from descriptor 4 on (bubblewrap's
// mounts name them); run closes its copies once the command has started.
func (r *Runner) run(ctx context.Context, dir string, argv []string, timeout time.Duration, files []*os.File) (vfs.ExecResult, error) {
	if err := ctx.Err(); err != nil {
		return vfs.ExecResult{}, context.Cause(ctx)
	}
	procs := ""
	cg := r.cgroups.newCgroup(r.opts.MaxProcs)
	if cg != nil {
		defer cg.remove()
		procs = cg.procsFile()
	}
	argv = append([]string{"/bin/sh", "-c", wrapper, procs}, argv...)
	gr, gw, err := os.Pipe()
	if err != nil {
		return vfs.ExecResult{}, err
	}
	defer gw.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		gr.Close()
		return vfs.ExecResult{}, err
	}
	cmd := &exec.Cmd{Path: argv[0], Args: argv, Dir: dir, Env: r.env(dir), Stdout: pw, Stderr: pw, ExtraFiles: append([]*os.File{gr}, files...)}
	cmd.SysProcAttr = procAttr(r.pidns)
	out := newCapped(r.opts.MaxOutputBytes)
	start := time.Now()
	started := make(chan error, 1)
	waited := make(chan struct{})
	var werr error
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		werr = cmd.Wait()
		close(waited)
	}()
	err = <-started
	gr.Close()
	pw.Close()
	for _, f := range files {
		f.Close()
	}
	if err != nil {
		pr.Close()
		return vfs.ExecResult{}, err
	}
	// The go-ahead. When it fails the shell is gone already, which Wait
	// reports.
	_, _ = gw.Write([]byte("\n"))
	gw.Close()
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		_, _ = io.Copy(out, pr)
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
