//go:build !unix

package runner

// processAlive cannot tell here, so a lease always runs its course.
func processAlive(int) bool { return true }
