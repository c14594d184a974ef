//go:build !linux

package sandbox

// cgroup is Linux only: elsewhere there is none.
type cgroup struct{}

func cgroupsAvailable() bool      { return false }
func newCgroup(int) *cgroup       { return nil }
func (*cgroup) procsFile() string { return "" }
func (*cgroup) kill()             {}
func (*cgroup) remove()           {}
