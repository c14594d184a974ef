//go:build unix && !linux

package sandbox

import "syscall"

func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// cgroup is Linux only.
type cgroup struct{}

func newCgroup(int) *cgroup       { return nil }
func (*cgroup) procsFile() string { return "" }
func (*cgroup) kill()             {}
func (*cgroup) remove()           {}
