//go:build unix

package server

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"
)

// processGone reports whether process pid has ended: it does not exist,
// or it is a zombie, dead and waiting for its parent to reap it (which
// signal 0 does not tell; /proc does, on Linux).
func processGone(pid int) bool {
	err := syscall.Kill(pid, 0)
	if errors.Is(err, syscall.ESRCH) {
		return true
	}
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	return zombie(pid)
}

// zombie reads the state of process pid from /proc/PID/stat: the field
// after the command name, which is in parentheses and may hold spaces or
// parentheses itself. False when /proc cannot tell.
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	state := b[i+2]
	return state == 'Z' || state == 'X'
}
