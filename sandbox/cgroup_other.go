//go:build !linux

package sandbox

// cgroup is Linux only: elsewhere there is none.
type cgroup struct{}

type cgroupRoot struct{}

func findCgroupRoot() cgroupRoot         { return cgroupRoot{} }
func (cgroupRoot) available() bool       { return false }
func (cgroupRoot) newCgroup(int) *cgroup { return nil }
func (*cgroup) procsFile() string        { return "" }
func (*cgroup) kill()                    {}
func (*cgroup) remove()                  {}
