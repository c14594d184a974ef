package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cgroup is a pids cgroup made for one command: pids.max bounds how many
// processes it runs, and killing everything listed in it ends a command
// whatever sessions or groups its processes moved to.
type cgroup struct {
	dir string
	v2  bool
}

// cgroupRoot is where a runner makes its commands' cgroups: this process's
// cgroup in the pids hierarchy, found once when the runner is made; dir is
// "" when the system gives none.
type cgroupRoot struct {
	dir string
	v2  bool
}

// findCgroupRoot looks for the directory below which commands get pids
// cgroups (see pidsCgroupDir).
func findCgroupRoot() cgroupRoot {
	dir, v2 := pidsCgroupDir()
	return cgroupRoot{dir: dir, v2: v2}
}

// available reports whether commands can get a pids cgroup.
func (p cgroupRoot) available() bool { return p.dir != "" }

// newCgroup makes a pids cgroup below p, limited to max processes, or
// returns nil when the system does not let it (no pids controller, cgroups
// not writable, not delegated).
func (p cgroupRoot) newCgroup(max int) *cgroup {
	if p.dir == "" {
		return nil
	}
	dir := filepath.Join(p.dir, fmt.Sprintf("deepagents-sandbox-%d-%d", os.Getpid(), seq.Add(1)))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil
	}
	cg := &cgroup{dir: dir, v2: p.v2}
	if err := os.WriteFile(filepath.Join(dir, "pids.max"), []byte(strconv.Itoa(max)), 0); err != nil {
		_ = os.Remove(dir)
		return nil
	}
	return cg
}

func (c *cgroup) procsFile() string { return filepath.Join(c.dir, "cgroup.procs") }

// kill kills every process in the cgroup until none is left (bounded: a
// process cannot escape a cgroup, and none can be added once pids.max is
// reached, so a few rounds suffice).
func (c *cgroup) kill() {
	if c.v2 {
		if os.WriteFile(filepath.Join(c.dir, "cgroup.kill"), []byte("1"), 0) == nil {
			return
		}
	}
	for range 200 {
		data, err := os.ReadFile(c.procsFile())
		if err != nil || len(strings.TrimSpace(string(data))) == 0 {
			return
		}
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// removeWait bounds how long remove waits for killed processes to leave
// their cgroup: a fork bomb's last processes can take more than a second
// to be reaped on a loaded machine.
const removeWait = 10 * time.Second

// remove kills what is left and removes the cgroup; it waits, up to
// removeWait, for the killed processes to be reaped, as a cgroup with
// members cannot go, killing again any that remain.
func (c *cgroup) remove() {
	c.kill()
	deadline := time.Now().Add(removeWait)
	for i := 0; ; i++ {
		if err := syscall.Rmdir(c.dir); err == nil || os.IsNotExist(err) || time.Now().After(deadline) {
			return
		}
		if i%20 == 19 {
			c.kill()
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// pidsCgroupDir finds the directory of this process's cgroup in the pids
// hierarchy: cgroup v1's pids controller, or the v2 unified hierarchy when
// the pids controller is available below this process's cgroup.
func pidsCgroupDir() (dir string, v2 bool) {
	cg, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", false
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", false
	}
	v1Dir, v2Dir := pidsDirs(string(cg), string(mi))
	if v1Dir != "" && writable(v1Dir) {
		return v1Dir, false
	}
	if v2Dir != "" && writable(v2Dir) {
		ctl, _ := os.ReadFile(filepath.Join(v2Dir, "cgroup.subtree_control"))
		if !hasWord(string(ctl), "pids") {
			// Enabling it fails when this cgroup has processes of its own
			// (v2's no-internal-process rule), as it usually does.
			if os.WriteFile(filepath.Join(v2Dir, "cgroup.subtree_control"), []byte("+pids"), 0) != nil {
				return "", false
			}
		}
		return v2Dir, true
	}
	return "", false
}

// pidsDirs reads /proc/self/cgroup and /proc/self/mountinfo (given as
// text) and returns this process's cgroup directory in the v1 pids
// hierarchy and in the v2 unified one; "" for one that is not mounted.
func pidsDirs(cgroups, mountinfo string) (v1Dir, v2Dir string) {
	paths := map[string]string{} // controller (or "" for v2) -> path
	for line := range strings.Lines(cgroups) {
		parts := strings.SplitN(strings.TrimRight(line, "\n"), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			paths[""] = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			paths[c] = parts[2]
		}
	}
	for line := range strings.Lines(mountinfo) {
		// id parent dev root mountpoint opts [optional...] - fstype source superopts
		pre, post, ok := strings.Cut(strings.TrimRight(line, "\n"), " - ")
		if !ok {
			continue
		}
		a, b := strings.Fields(pre), strings.Fields(post)
		if len(a) < 5 || len(b) < 3 {
			continue
		}
		root, mnt := unescape(a[3]), unescape(a[4])
		switch b[0] {
		case "cgroup":
			if p, ok := paths["pids"]; ok && v1Dir == "" && hasOpt(b[2], "pids") {
				v1Dir = under(mnt, root, p)
			}
		case "cgroup2":
			if p, ok := paths[""]; ok && v2Dir == "" {
				v2Dir = under(mnt, root, p)
			}
		}
	}
	return v1Dir, v2Dir
}

// under is the directory of cgroup path p in a hierarchy mounted at mnt
// from its directory root, or "" when p is not below root or the result
// would not be an absolute path below mnt.
func under(mnt, root, p string) string {
	if !filepath.IsAbs(mnt) || !filepath.IsAbs(root) || !filepath.IsAbs(p) {
		return ""
	}
	rel, err := filepath.Rel(filepath.Clean(root), filepath.Clean(p))
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return ""
	}
	return filepath.Join(mnt, rel)
}

func hasOpt(opts, name string) bool { return hasWord(strings.ReplaceAll(opts, ",", " "), name) }

func hasWord(s, w string) bool {
	for _, f := range strings.Fields(s) {
		if f == w {
			return true
		}
	}
	return false
}

func writable(dir string) bool { return syscall.Access(dir, 2 /* W_OK */) == nil }

// unescape decodes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
