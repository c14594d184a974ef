package sandbox

import "syscall"

// procAttr puts the command in a process group of its own, so it can be
// killed whole, and kills it if this process dies.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
