//go:build darwin || freebsd || netbsd || openbsd

package main

import (
	"syscall"
	"unsafe"
)

// isTTY asks the kernel for fd's terminal settings; only a terminal has
// them.
func isTTY(fd uintptr) bool {
	var t syscall.Termios
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCGETA, uintptr(unsafe.Pointer(&t)))
	return errno == 0
}
