//go:build unix

package sqlite

import (
	"errors"
	"os"
	"syscall"
)

// journalSupported says whether journals can be locked here.
const journalSupported = true

// lockFile takes f's exclusive lock without waiting: false when another
// open file holds it. The lock ends with the process, so a journal whose
// lock is free belongs to a saver that is gone.
func lockFile(f *os.File) (bool, error) {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}
