package sandbox

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const hybridCgroups = "9:name=systemd:/\n8:pids:/\n4:memory:/process_api/55c0\n0::/\n"

const hybridMounts = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
38 31 0:35 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
39 31 0:36 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`

func TestPidsDirs(t *testing.T) {
	for _, tc := range []struct {
		name, cgroups, mounts string
		v1, v2                string
	}{
		{"hybrid", hybridCgroups, hybridMounts, "/sys/fs/cgroup/pids", "/sys/fs/cgroup/unified"},
		{"pure v2 in a slice", "0::/user.slice/user-1000.slice/session-2.scope\n",
			"30 24 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n",
			"", "/sys/fs/cgroup/user.slice/user-1000.slice/session-2.scope"},
		{"v1 mounted from a subtree (a container)", "5:cpu,pids:/docker/abc/inner\n",
			"40 31 0:40 /docker/abc /sys/fs/cgroup/pids rw - cgroup cgroup rw,cpu,pids\n",
			"/sys/fs/cgroup/pids/inner", ""},
		{"path outside the mounted subtree", "5:pids:/other\n",
			"40 31 0:40 /docker/abc /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n", "", ""},
		{"escaped space in the mount point", "0::/a\n",
			`30 24 0:26 / /sys/fs/my\040cgroup rw - cgroup2 cgroup2 rw` + "\n", "", "/sys/fs/my cgroup/a"},
		{"no pids controller", "3:cpu:/\n", "32 31 0:29 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n", "", ""},
		{"dot-dots stay below the mount", "8:pids:/../../etc\n", "38 31 0:35 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n", "/sys/fs/cgroup/pids/etc", ""},
		{"nothing", "", "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v1, v2 := pidsDirs(tc.cgroups, tc.mounts)
			if v1 != tc.v1 || v2 != tc.v2 {
				t.Errorf("pidsDirs = %q, %q; want %q, %q", v1, v2, tc.v1, tc.v2)
			}
		})
	}
}

// FuzzPidsDirs: whatever the two files hold, a directory found is an
// absolute clean path below one of the mount points they name.
func FuzzPidsDirs(f *testing.F) {
	f.Add(hybridCgroups, hybridMounts)
	f.Add("0::/a/b\n", "30 24 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n")
	f.Add("5:pids:/x/../../y\n", "40 31 0:40 /x /m rw - cgroup cgroup rw,pids\n")
	f.Add("0::/\\\n", `1 2 3 /\1 /\777\ x - cgroup2 c r`+"\n")
	f.Fuzz(func(t *testing.T, cgroups, mounts string) {
		v1, v2 := pidsDirs(cgroups, mounts)
		var mountPoints []string
		for line := range strings.Lines(mounts) {
			pre, _, _ := strings.Cut(line, " - ")
			if a := strings.Fields(pre); len(a) >= 5 {
				mountPoints = append(mountPoints, filepath.Clean(unescape(a[4])))
			}
		}
		for _, d := range []string{v1, v2} {
			if d == "" {
				continue
			}
			if !filepath.IsAbs(d) || filepath.Clean(d) != d {
				t.Fatalf("%q is not an absolute clean path", d)
			}
			if !slices.ContainsFunc(mountPoints, func(m string) bool { return d == m || strings.HasPrefix(d, strings.TrimSuffix(m, "/")+"/") }) {
				t.Fatalf("%q is not below a mount point of %q", d, mountPoints)
			}
		}
	})
}
