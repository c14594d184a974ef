//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package osfs

import (
	"errors"
	"os"
)

var errNoLocks = errors.New("file locks are not supported on this system")

// renameOpenFiles says whether a file may be renamed while it is open: not
// on Windows, where Go opens files without FILE_SHARE_DELETE.
const renameOpenFiles = false

// tryLock cannot lock here: updates are serialised within the process and
// checked against what they read.
func tryLock(*os.File) (bool, error) { return false, errNoLocks }
