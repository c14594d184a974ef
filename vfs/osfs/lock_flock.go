//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package osfs

import (
	"errors"
	"os"
	"syscall"
)

// renameOpenFiles says whether a file may be renamed while it is open.
const renameOpenFiles = true

// tryLock takes an exclusive advisory lock (flock) on file without
// waiting. It reports false when another open file holds the lock, and an
// error when the file system cannot lock at all. Closing file releases it.
func tryLock(file *os.File) (bool, error) {
	rc, err := file.SyscallConn()
	if err != nil {
		return false, err
	}
	var lerr error
	if err := rc.Control(func(fd uintptr) {
		for {
			lerr = syscall.Flock(int(fd), syscall.LOCK_EX|syscall.LOCK_NB)
			if lerr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return false, err
	}
	switch {
	case lerr == nil:
		return true, nil
	case errors.Is(lerr, syscall.EWOULDBLOCK), errors.Is(lerr, syscall.EAGAIN):
		return false, nil
	}
	return false, lerr
}
