//go:build unix

package runner

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strconv"
	"syscall"
)

// processAlive reports whether process pid still runs. A process killed
// and not yet reaped by its parent (a zombie) answers signal 0 all the
// same, so on Linux its state in /proc says it is dead.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	return !zombie(pid)
}

// zombie reads the state of process pid from /proc/PID/stat: the field
// after the command name, which is in parentheses and may hold spaces or
// parentheses itself. False when /proc cannot tell.
func zombie(pid int) bool {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 4096)) // the line is a few hundred bytes
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
