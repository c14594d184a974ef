//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package osfs_test

import (
	"os"
	"testing"
)

// runUnprivileged cannot switch users here: a test run by an administrator
// is skipped, with a message, rather than passed.
func runUnprivileged(t *testing.T) bool {
	t.Helper()
	if os.Geteuid() == 0 {
		t.Skip("running as root, and this system cannot re-run the test as an unprivileged user")
	}
	return false
}
