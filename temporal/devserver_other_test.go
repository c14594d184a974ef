//go:build !linux

package temporal_test

import "os/exec"

// dieWithTest does nothing where the system cannot tie a child's life to
// its parent's; the test's cleanup stops the server.
func dieWithTest(*exec.Cmd) {}
