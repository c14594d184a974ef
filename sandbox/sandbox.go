// Package sandbox runs the agent's shell commands in a directory without
// letting them reach the rest of the machine.
//
// On Linux a Runner starts each command under bubblewrap (the bwrap program,
// Debian's bubblewrap package): the directory is mounted read-write at its
// own path and is the working directory; /usr and the library and binary
// directories are mounted read-only with a few files of /etc the system
// needs; /tmp is a private empty tmpfs, /proc and /dev are the sandbox's own;
// nothing else of the host (home directories, other projects) is visible.
// Every namespace is unshared, so there is no network unless
// Options.Network allows it, and the command runs in a session of its own
// and dies with the runner.
//
// Every command has a timeout that kills it with every process it started;
// the number of processes it may run at once is bounded (a pids cgroup when
// the system lets the runner create one, and an RLIMIT_NPROC inside the
// sandbox, which the kernel enforces for users other than root), so a fork
// bomb fails to spread and ends with the timeout; its output is kept up to a
// cap, the start and the end, with what was left out counted.
//
// Options.Protected names paths in the directory that commands may read but
// never create, change, rename or delete (git's configuration and hooks,
// the agent's settings, instructions and skills): existing ones are
// mounted read-only in the sandbox, and what a command creates at one is
// removed when it ends, the result's Notice saying so.
//
// A Runner made with Options.Unsandboxed runs commands directly in the
// directory, with the same timeout, environment and output rules but no
// confinement at all: for machines without bubblewrap, on the user's
// explicit request.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/deepagents-go/deepagents/vfs"
)

// Defaults of Options' zero fields.
const (
	// DefaultTimeout bounds a command that asks for no timeout of its own.
	DefaultTimeout = 120 * time.Second
	// DefaultMaxTimeout is the longest timeout a command may ask for.
	DefaultMaxTimeout = 10 * time.Minute
	// DefaultMaxOutputBytes is how much output is kept: half from the
	// start, half from the end.
	DefaultMaxOutputBytes = 100_000
	// DefaultMaxProcs bounds the processes (threads included) a command
	// runs at once.
	DefaultMaxProcs = 512
)

// DefaultPath is the PATH commands run with.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Options configure a Runner. The zero value gives a sandbox without
// network and the default limits.
type Options struct {
	// Network lets commands use the host's network (the sandbox shares the
	// host's network namespace). Off by default.
	Network bool
	// Timeout is the default timeout (DefaultTimeout).
	Timeout time.Duration
	// MaxTimeout caps the timeout a request asks for (DefaultMaxTimeout, and
	// never below Timeout).
	MaxTimeout time.Duration
	// MaxOutputBytes is how many bytes of output a result keeps
	// (DefaultMaxOutputBytes).
	MaxOutputBytes int
	// MaxProcs bounds the processes a command runs at once
	// (DefaultMaxProcs).
	MaxProcs int
	// Env adds variables to the commands' environment, which otherwise
	// holds only PATH, HOME (/tmp), TMPDIR, LANG and TERM: nothing of the
	// host's environment (API keys included) is passed on.
	Env map[string]string
	// ReadOnly lists more host paths to mount read-only at their own place
	// in the sandbox (a toolchain under /opt, say). Missing ones are
	// skipped.
	ReadOnly []string
	// Unsandboxed runs commands without bubblewrap: they can read and write
	// anything the user can. Only for machines without a sandbox, when the
	// user asks for it.
	Unsandboxed bool
	// Bwrap is the bubblewrap program; empty looks for "bwrap" in PATH.
	Bwrap string
	// Protected lists paths inside the directory, relative to it, that
	// commands may read but never create, change, rename or delete. An
	// entry is a plain path or a doublestar glob ("**/AGENTS.md"); a
	// directory entry covers everything below it.
	//
	// An entry whose last component is ".git" names a git directory: what
	// configures git or makes it run programs is protected (config, hooks,
	// info, commondir, and the same in submodules' git directories), while
	// objects, refs and the index stay writable, so commands can commit. A
	// ".git" that is a file (pointing at a git directory elsewhere) is
	// protected whole.
	//
	// In the sandbox, protected paths that exist are mounted read-only, and
	// the directories above them cannot be renamed or removed; what a
	// command creates at a protected path that did not exist is removed
	// when it ends, and the result's Notice says so. Unsandboxed, only that
	// removal protects them (see docs/SANDBOX.md).
	Protected []string
	// Unguarded, when set, is told after a command what it did to
	// protected paths that nothing stopped and nothing could put back, or
	// that the check after it could not see, so that the person hears of
	// it, not only the model (the result's Notice). It is called on the
	// goroutine that ran the command, only when there is something to
	// tell.
	Unguarded func(Unguarded)
	// MaxScanEntries bounds the listing of the directory that finds the
	// protected paths before and after each command
	// (DefaultMaxScanEntries; the listing after a command may see four
	// times as many). A directory with more entries where protected paths
	// could be gets no commands: they are refused.
	MaxScanEntries int
}

func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxTimeout <= 0 {
		o.MaxTimeout = DefaultMaxTimeout
	}
	if o.MaxTimeout < o.Timeout {
		o.MaxTimeout = o.Timeout
	}
	if o.MaxOutputBytes <= 0 {
		o.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if o.MaxProcs <= 0 {
		o.MaxProcs = DefaultMaxProcs
	}
	if o.MaxScanEntries <= 0 {
		o.MaxScanEntries = DefaultMaxScanEntries
	}
	o.Protected = slices.Clone(o.Protected)
	return o
}

// ErrUnavailable is the error of New when no sandbox can run here: bwrap is
// missing or fails its trial run. The error's text says which.
var ErrUnavailable = errors.New("no sandbox available")

// Runner runs commands. It is safe for concurrent use.
type Runner struct {
	opts  Options
	bwrap string // "" when unsandboxed
	// bounded: the process limit holds (a pids cgroup can be made, or the
	// sandbox's RLIMIT_NPROC applies because this is not root).
	bounded bool
	// layout is the start of the bwrap command line (see bwrapLayout).
	layout []string
	// cgroups is where each command's pids cgroup is made, found once
	// here rather than by reading /proc for every command.
	cgroups cgroupRoot
	// pidns is how each command's first process gets a pid namespace of
	// its own (see pidns), chosen by New's trial runs.
	pidns pidns
	// match finds the protected paths (nil without any).
	match *matcher
}

// pidns says whether and how the first process of a command (the host's
// shell that becomes bwrap) is made pid 1 of a new pid namespace. That
// process gets SIGKILL when this process dies (procAttr), and the kernel
// then kills every process of its namespace. bwrap's own --die-with-parent
// is not enough: bwrap starts the sandbox's first process before that
// process asks to die with bwrap, and one whose bwrap is killed in between
// runs on, orphaned, with the command.
type pidns int

const (
	// pidnsNone: no namespace of our own; only bwrap's --die-with-parent.
	pidnsNone pidns = iota
	// pidnsOwn: a new pid namespace (needs root's CAP_SYS_ADMIN).
	pidnsOwn
	// pidnsUser: a new user namespace, where this user keeps its ids,
	// holding a new pid namespace (for ordinary users).
	pidnsUser
)

// pidnsModes lists the ways to start a sandboxed command, best first: New
// keeps the first that passes the trial run.
var pidnsModes = []pidns{pidnsOwn, pidnsUser, pidnsNone}

// New returns a runner. Unless opts.Unsandboxed, it finds bwrap and makes a
// trial run of it (the first way of pidnsModes that works is kept), and
// fails with an error matching ErrUnavailable when that does not work (not
// Linux, bwrap not installed, user namespaces disabled, a container that
// forbids mounts).
func New(ctx context.Context, opts Options) (*Runner, error) {
	r := &Runner{opts: opts.withDefaults(), cgroups: findCgroupRoot()}
	if len(opts.Protected) > 0 {
		pats, err := parsePatterns(opts.Protected)
		if err != nil {
			return nil, err
		}
		r.match = &matcher{pats: pats}
	}
	if opts.Unsandboxed {
		return r, nil
	}
	path, err := findBwrap(opts.Bwrap)
	if err != nil {
		return nil, err
	}
	r.bwrap = path
	r.layout = r.bwrapLayout()
	// The error kept is that of the last mode, without a namespace of our
	// own: it is about bubblewrap alone.
	for _, ns := range pidnsModes {
		r.pidns = ns
		if err = r.probe(ctx); err == nil || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	r.bounded = os.Geteuid() != 0 || r.cgroups.available()
	return r, nil
}

func findBwrap(name string) (string, error) {
	if !supported {
		return "", fmt.Errorf("%w: bubblewrap sandboxes run on Linux only", ErrUnavailable)
	}
	if name == "" {
		name = "bwrap"
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%w: bubblewrap (bwrap) is not installed; on Debian or Ubuntu: apt-get install bubblewrap", ErrUnavailable)
	}
	return path, nil
}

// probe runs `exit 0` in a sandbox with no directory of the host: the
// working directory is the sandbox's own /tmp. So nothing is made on the
// host that a probe killed halfway would leave behind.
func (r *Runner) probe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	argv := r.sandboxArgv([]string{"--remount-ro", "/", "--chdir", "/tmp"}, "exit 0")
	res, err := r.run(ctx, "/", argv, 15*time.Second, nil)
	switch {
	case err != nil:
		return fmt.Errorf("%w: bubblewrap (%s) did not start: %v", ErrUnavailable, r.bwrap, err)
	case res.TimedOut || res.ExitCode != 0:
		msg := strings.TrimSpace(res.Output)
		if msg == "" {
			msg = fmt.Sprintf("exit code %d", res.ExitCode)
		}
		return fmt.Errorf("%w: bubblewrap (%s) failed its trial run: %s", ErrUnavailable, r.bwrap, msg)
	}
	return nil
}

// Sandboxed reports whether commands run under bubblewrap.
func (r *Runner) Sandboxed() bool { return r.bwrap != "" }

// Options returns the runner's options with the defaults filled in.
func (r *Runner) Options() Options { return r.opts }

// Describe says in a sentence how commands run, for the user.
func (r *Runner) Describe() string {
	if !r.Sandboxed() {
		d := "commands run UNSANDBOXED, with the user's full access to files and network"
		if r.match != nil {
			d += "; protected paths are NOT enforced (only what a command creates at one is removed after it)"
		}
		return d
	}
	net := "no network"
	if r.opts.Network {
		net = "network allowed"
	}
	procs := fmt.Sprintf("at most %d processes", r.opts.MaxProcs)
	if !r.bounded {
		procs = "processes NOT bounded (root without a pids cgroup: a fork bomb runs until the timeout)"
	}
	d := fmt.Sprintf("commands run in a bubblewrap sandbox (%s): writes only inside the root, %s, %s, timeout %s (max %s)",
		r.bwrap, net, procs, r.opts.Timeout, r.opts.MaxTimeout)
	if r.match != nil {
		d += "; protected paths read-only"
	}
	if r.pidns == pidnsNone {
		d += "; no pid namespace could be made around bubblewrap, so a command may outlive this process if it is killed while the command starts"
	}
	return d
}

// Timeout returns the timeout a request runs under: its own, capped at the
// maximum, or the default.
func (r *Runner) Timeout(req time.Duration) time.Duration {
	switch {
	case req <= 0:
		return r.opts.Timeout
	case req > r.opts.MaxTimeout:
		return r.opts.MaxTimeout
	}
	return req
}

// env is the commands' whole environment.
func (r *Runner) env(dir string) []string {
	m := map[string]string{
		"PATH": DefaultPath, "HOME": "/tmp", "TMPDIR": "/tmp", "LANG": "C.UTF-8", "TERM": "dumb", "PWD": dir,
	}
	maps.Copy(m, r.opts.Env)
	out := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, k+"="+m[k])
	}
	return out
}

// Run runs req.Command with sh -c in the host directory dir and waits for
// it. A command that exits non-zero or times out is a normal result; the
// error is for one that could not start, a directory the sandbox refuses,
// or ctx ending (every process of the command is killed then too).
func (r *Runner) Run(ctx context.Context, dir string, req vfs.ExecRequest) (vfs.ExecResult, error) {
	if strings.IndexByte(req.Command, 0) >= 0 {
		return vfs.ExecResult{}, errors.New("the command contains a NUL byte")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return vfs.ExecResult{}, err
	}
	if st, err := os.Stat(abs); err != nil {
		return vfs.ExecResult{}, err
	} else if !st.IsDir() {
		return vfs.ExecResult{}, fmt.Errorf("%s is not a directory", abs)
	}
	if r.Sandboxed() && abs == "/" {
		return vfs.ExecResult{}, errors.New("the sandbox cannot confine commands to /: choose a project directory as the root")
	}
	if err := ctx.Err(); err != nil {
		return vfs.ExecResult{}, context.Cause(ctx)
	}
	var g *guard
	if r.match != nil {
		if g, err = r.newGuard(abs); err != nil {
			return vfs.ExecResult{}, err
		}
		defer g.close()
	}
	res, err := r.run(ctx, abs, r.argv(abs, req.Command, g.mountArgs()), r.Timeout(req.Timeout), g.mountFiles())
	if g != nil {
		// Also when the command failed or was cancelled: it may have run.
		notice, unguarded := g.after()
		if err == nil {
			res.Notice = notice
		}
		if (len(unguarded.Paths) > 0 || unguarded.Unchecked) && r.opts.Unguarded != nil {
			r.opts.Unguarded(unguarded)
		}
	}
	return res, err
}

// seq numbers the cgroups of one process's commands.
var seq atomic.Int64

// limitScript sets the process limit inside the sandbox, then runs the
// command: dash names RLIMIT_NPROC -p, bash and busybox -u.
const limitScript = `ulimit -u "$1" 2>/dev/null || ulimit -p "$1" 2>/dev/null || { echo "sandbox: cannot limit the number of processes" >&2; exit 126; }; exec /bin/sh -c "$2"`

// argv is the program and arguments that run command in dir, with mounts
// (the protected paths', see guard.planMounts) after the directory's.
func (r *Runner) argv(dir, command string, mounts []string) []string {
	if !r.Sandboxed() {
		return []string{"/bin/sh", "-c", command}
	}
	place := append([]string{"--bind", dir, dir}, mounts...)
	return r.sandboxArgv(append(place, "--remount-ro", "/", "--chdir", dir), command)
}

// sandboxArgv is the bwrap command line that runs command: the layout,
// then place (the mounts and the working directory of this command).
func (r *Runner) sandboxArgv(place []string, command string) []string {
	args := append(slices.Clip(r.layout), place...)
	return append(args, "--", "/bin/sh", "-c", limitScript, "sh", fmt.Sprint(r.opts.MaxProcs), command)
}

// bwrapLayout is the start of every bwrap command line: the namespaces and
// the host paths mounted in the sandbox, the same for every command (the
// runner computes it once, as it looks at the host's directories).
func (r *Runner) bwrapLayout() []string {
	args := []string{r.bwrap, "--die-with-parent", "--new-session", "--unshare-all"}
	if r.opts.Network {
		args = append(args, "--share-net")
	}
	args = append(args, "--ro-bind", "/usr", "/usr")
	for _, d := range []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"} {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if target, err := os.Readlink(d); err == nil {
				args = append(args, "--symlink", target, d)
			}
		case fi.IsDir():
			args = append(args, "--ro-bind", d, d)
		}
	}
	for _, p := range etcFiles {
		args = append(args, "--ro-bind-try", p, p)
	}
	if r.opts.Network {
		for _, p := range etcNetFiles {
			args = append(args, "--ro-bind-try", p, p)
		}
	}
	for _, p := range r.opts.ReadOnly {
		if p = filepath.Clean(p); filepath.IsAbs(p) {
			args = append(args, "--ro-bind-try", p, p)
		}
	}
	return append(args, "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp")
}

// etcFiles are the parts of /etc programs need to start and to name users:
// the dynamic loader's cache, the user and group names, Debian's
// alternatives (awk, editor...), the time zone.
var etcFiles = []string{
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives",
	"/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/localtime", "/etc/mime.types",
}

// etcNetFiles are added when the network is allowed: name resolution and
// the certificate authorities.
var etcNetFiles = []string{
	"/etc/resolv.conf", "/etc/hosts", "/etc/host.conf", "/etc/gai.conf", "/etc/services", "/etc/protocols",
	"/etc/ssl", "/etc/ca-certificates", "/etc/pki",
}
