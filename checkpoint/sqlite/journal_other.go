//go:build !unix

package sqlite

import (
	"errors"
	"os"
)

// journalSupported says whether journals can be locked here: not on this
// system, where every put and write commits on its own.
const journalSupported = false

func lockFile(*os.File) (bool, error) { return false, errors.New("file locks are not supported here") }
