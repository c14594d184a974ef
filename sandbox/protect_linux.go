package sandbox

import (
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// oPath is O_PATH, the same on every architecture Go runs Linux on; the
// syscall package leaves it out on some.
const oPath = 0x200000

func identity(fi fs.FileInfo) fileID {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}
	}
	return fileID{dev: uint64(st.Dev), ino: st.Ino, ctime: st.Ctim.Nano()}
}

// planMounts prepares the bubblewrap arguments that make the protected
// paths found before the command read-only in its sandbox: each is mounted
// read-only over itself, and each of its ancestors below the directory is
// mounted (read-write) over itself, so that none of them can be renamed or
// removed either (the kernel refuses to rename or remove a mount point,
// and to hard-link across mounts). A protected symbolic link is not
// mounted (a mount cannot sit on a link); its target is, when it is in the
// directory, and after the command the link is made again if it changed.
//
// The mounts name open files (bubblewrap's --bind-fd and --ro-bind-fd),
// each opened one component at a time from the directory without following
// links, and checked to be the file the listing found: so no mount can
// bring a file from outside the directory into the sandbox, whatever
// changes the directory while the command starts.
func (g *guard) planMounts() error {
	ro := map[string]fileID{}
	for rel, f := range g.before.found {
		if f.mode&fs.ModeSymlink == 0 {
			ro[rel] = f.id
			continue
		}
		target, id, dir, ok := g.resolve(rel)
		switch {
		case !ok:
		case f.git && dir:
			// A link to a git directory: only its control files.
			for _, c := range []string{"config", "config.worktree", "commondir", "hooks", "info"} {
				if fi, err := g.root.Lstat(path.Join(target, c)); err == nil && fi.Mode()&fs.ModeSymlink == 0 {
					ro[path.Join(target, c)] = identity(fi)
				}
			}
		default:
			ro[target] = id
		}
	}
	// A path below another read-only one is covered by it.
	targets := slices.Sorted(maps.Keys(ro))
	g.mounted = map[string]bool{}
	for _, t := range targets {
		if !g.covered(t) {
			g.mounted[t] = true
		}
	}
	rw := map[string]bool{}
	for t := range g.mounted {
		for a := path.Dir(t); a != "."; a = path.Dir(a) {
			if !g.mounted[a] {
				rw[a] = true
			}
		}
	}
	if n := len(g.mounted) + len(rw); n > maxProtectedMounts {
		return fmt.Errorf("the directory holds %d protected paths and directories above them, more than the %d the sandbox can mount read-only, so commands are refused here", n, maxProtectedMounts)
	}
	// Shallow first: an ancestor's mount must not cover its protected
	// paths' mounts.
	all := append(slices.Collect(maps.Keys(g.mounted)), slices.Collect(maps.Keys(rw))...)
	slices.SortFunc(all, func(a, b string) int {
		if d := strings.Count(a, "/") - strings.Count(b, "/"); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	rootfd, err := syscall.Open(g.dir, oPath|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return &fs.PathError{Op: "open", Path: g.dir, Err: err}
	}
	defer syscall.Close(rootfd)
	for _, rel := range all {
		fd, err := openBeneath(rootfd, rel)
		if err != nil {
			return fmt.Errorf("the protected path %s changed while the command was being set up (%v); run the command again", rel, err)
		}
		f := os.NewFile(uintptr(fd), rel)
		g.files = append(g.files, f)
		var st syscall.Stat_t
		if err := syscall.Fstat(fd, &st); err != nil {
			return err
		}
		want, isRO := ro[rel]
		switch {
		case isRO && g.mounted[rel]:
			if uint64(st.Dev) != want.dev || st.Ino != want.ino {
				return fmt.Errorf("the protected path %s changed while the command was being set up; run the command again", rel)
			}
		case st.Mode&syscall.S_IFMT != syscall.S_IFDIR:
			return fmt.Errorf("%s changed while the command was being set up; run the command again", rel)
		}
		opt := "--bind-fd"
		if g.mounted[rel] {
			opt = "--ro-bind-fd"
		}
		// Descriptors 0-2 are the standard ones, 3 the go-ahead (see run).
		g.args = append(g.args, opt, strconv.Itoa(3+len(g.files)), filepath.Join(g.dir, filepath.FromSlash(rel)))
	}
	return nil
}

// resolve follows the protected link rel to its target, which must be in
// the directory (and not the directory itself): its path, identity and
// whether it is a directory.
func (g *guard) resolve(rel string) (target string, id fileID, dir, ok bool) {
	real, err := filepath.EvalSymlinks(filepath.Join(g.dir, filepath.FromSlash(rel)))
	if err != nil {
		return "", fileID{}, false, false
	}
	base, err := filepath.EvalSymlinks(g.dir)
	if err != nil {
		return "", fileID{}, false, false
	}
	t, err := filepath.Rel(base, real)
	if err != nil || t == "." || t == ".." || strings.HasPrefix(t, "../") || filepath.IsAbs(t) {
		return "", fileID{}, false, false
	}
	t = filepath.ToSlash(t)
	fi, err := g.root.Lstat(t)
	if err != nil || fi.Mode()&fs.ModeSymlink != 0 {
		return "", fileID{}, false, false
	}
	id = identity(fi)
	id.ctime = 0
	return t, id, fi.IsDir(), true
}

// openBeneath opens rel below the directory rootfd as an O_PATH descriptor,
// one component at a time, following no symbolic link.
func openBeneath(rootfd int, rel string) (int, error) {
	fd, err := syscall.Openat(rootfd, ".", oPath|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	parts := strings.Split(rel, "/")
	for i, p := range parts {
		flags := oPath | syscall.O_NOFOLLOW | syscall.O_CLOEXEC
		if i < len(parts)-1 {
			flags |= syscall.O_DIRECTORY
		}
		next, err := syscall.Openat(fd, p, flags, 0)
		syscall.Close(fd)
		if err != nil {
			return -1, err
		}
		fd = next
	}
	return fd, nil
}

// heldFiles returns the files this process holds open for writing (read
// from /proc/self/fdinfo): the thread database and its journals, which the
// host may create while a command runs, and which the check after the
// command must not take for the command's.
func heldFiles() map[fileID]bool {
	held := map[fileID]bool{}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return held
	}
	for _, e := range ents {
		info, err := os.ReadFile("/proc/self/fdinfo/" + e.Name())
		if err != nil {
			continue
		}
		var flags string
		for _, line := range strings.Split(string(info), "\n") {
			if v, ok := strings.CutPrefix(line, "flags:"); ok {
				flags = strings.TrimSpace(v)
			}
		}
		fl, err := strconv.ParseUint(flags, 8, 64)
		if err != nil || fl&syscall.O_ACCMODE == syscall.O_RDONLY || fl&oPath != 0 {
			continue
		}
		fi, err := os.Stat("/proc/self/fd/" + e.Name())
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		id := identity(fi)
		id.ctime = 0
		held[id] = true
	}
	return held
}

// openDir opens the directory rel below root for listing. A directory
// opened in an os.Root has every entry's information looked up as it is
// listed (an lstat each, which made listing several times slower): the
// listing goes through a copy of the descriptor, a plain file, whose
// entries carry only their type (from the directory itself).
func openDir(root *os.Root, rel string) (*os.File, error) {
	f, err := root.Open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	fd := -1
	var derr error
	if err := sc.Control(func(raw uintptr) {
		fd, derr = dupCloexec(int(raw))
	}); err != nil {
		return nil, err
	}
	if derr != nil {
		return nil, derr
	}
	return os.NewFile(uintptr(fd), f.Name()), nil
}

func dupCloexec(fd int) (int, error) {
	r, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_DUPFD_CLOEXEC, 0)
	if errno != 0 {
		return -1, errno
	}
	return int(r), nil
}
