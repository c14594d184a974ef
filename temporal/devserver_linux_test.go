package temporal_test

import (
	"os/exec"
	"syscall"
)

// dieWithTest makes the dev server go with the test process, even when go
// test kills it (a timeout) before the test's cleanup runs.
func dieWithTest(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
