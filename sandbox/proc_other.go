//go:build unix && !linux

package sandbox

import "syscall"

// procAttr puts the command in a process group of its own; other systems
// than Linux have no pid namespaces, so ns is not used.
func procAttr(ns pidns) *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
