package sandbox

import (
	"os"
	"syscall"
)

// procAttr puts the command in a process group of its own, so it can be
// killed whole, and kills it if this process dies. With ns other than
// pidnsNone the command's first process is also pid 1 of a new pid
// namespace: when it dies, the kernel kills every process of that
// namespace, the ones bubblewrap starts in namespaces of their own
// included.
func procAttr(ns pidns) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	switch ns {
	case pidnsOwn:
		a.Cloneflags = syscall.CLONE_NEWPID
	case pidnsUser:
		// A user namespace where this user keeps its own ids: an ordinary
		// user may make a pid namespace in it.
		a.Cloneflags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Geteuid(), HostID: os.Geteuid(), Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getegid(), HostID: os.Getegid(), Size: 1}}
	}
	return a
}
