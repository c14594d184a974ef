package sandbox_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/sandbox"
	"github.com/deepagents-go/deepagents/vfs"
)

// The variables that turn the test binary into a helper process:
// helperEnv says what it does ("run": helperCommand in the directory
// helperDirEnv names; "new": sandbox.New again and again), helperTokenEnv
// is a token the helper's runner puts in every bwrap command line (a
// missing path to mount), so the test can find the processes it left.
const (
	helperEnv      = "DEEPAGENTS_SANDBOX_TEST_HELPER"
	helperDirEnv   = "DEEPAGENTS_SANDBOX_TEST_DIR"
	helperTokenEnv = "DEEPAGENTS_SANDBOX_TEST_TOKEN"
)

// helperCommand is what the helper runs in the sandbox: a marker file
// written after a delay, long enough for the test to kill the helper first.
const helperCommand = "sleep 1; echo ran > marker"

func TestMain(m *testing.M) {
	if what := os.Getenv(helperEnv); what != "" {
		os.Exit(helper(what))
	}
	os.Exit(m.Run())
}

// helper is the helper process; the test kills it on the way.
func helper(what string) int {
	opts := sandbox.Options{ReadOnly: []string{"/" + os.Getenv(helperTokenEnv)}}
	ctx := context.Background()
	if what == "new" {
		fmt.Println("ready")
		for {
			if _, err := sandbox.New(ctx, opts); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 2
			}
		}
	}
	r, err := sandbox.New(ctx, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if _, err := r.Run(ctx, os.Getenv(helperDirEnv), vfs.ExecRequest{Command: helperCommand}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	return 0
}

// startHelper starts the helper process.
func startHelper(t *testing.T, env ...string) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, bufio.NewReader(out)
}

// kill kills the helper with SIGKILL and waits for it.
func kill(cmd *exec.Cmd) {
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
}

// requireDeathWithParent skips the test (fails it when the sandbox must be
// tested) where the runner cannot promise its commands die with it.
func requireDeathWithParent(t *testing.T, r *sandbox.Runner) {
	t.Helper()
	if strings.Contains(r.Describe(), "may outlive") {
		if os.Getenv("DEEPAGENTS_TEST_SANDBOX_REQUIRED") != "" {
			t.Fatalf("commands may outlive a killed caller here: %s", r.Describe())
		}
		t.Skipf("commands may outlive a killed caller here: %s", r.Describe())
	}
}

// descendants lists the processes below pid, read from /proc.
func descendants(pid int) []int {
	var out []int
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, task := range tasks {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, task.Name()))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(data)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
				out = append(out, descendants(c)...)
			}
		}
	}
	return out
}

// waitForSandbox waits until bubblewrap, below pid, has started the
// process that sets the sandbox up (a process with token in its command
// line whose parent has it too) and reports whether it did.
func waitForSandbox(pid int, token string) bool {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, c := range descendants(pid) {
			if hasToken(c, token) && hasToken(parent(c), token) {
				return true
			}
		}
	}
	return false
}

func hasToken(pid int, token string) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return err == nil && strings.Contains(string(data), token)
}

// parent is the parent of pid, 0 when unknown.
func parent(pid int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// pid (comm) state ppid ...: comm may hold spaces, so read after ")".
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// killAllWith kills every process whose command line holds token and
// returns how many there were.
func killAllWith(token string) int {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	n := 0
	for _, d := range dirs {
		data, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err != nil || !strings.Contains(string(data), token) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(d)); err == nil && pid != os.Getpid() {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			n++
		}
	}
	return n
}

// A process killed with SIGKILL while its command starts leaves nothing
// running: not the command (its marker file never appears, so its side
// effect is not done after the caller died), not bubblewrap. The helper is
// this test binary run again; it is killed just as its command starts,
// when bubblewrap is still setting the sandbox up.
func TestDiesWithParent(t *testing.T) {
	requireDeathWithParent(t, sandboxed(t, sandbox.Options{}))
	token := unique("deepagents-orphan-")
	base := filepath.Join(t.TempDir(), token)
	const rounds = 60
	var dirs []string
	for i := range rounds {
		dir := filepath.Join(base, strconv.Itoa(i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
		cmd, _ := startHelper(t, helperEnv+"=run", helperDirEnv+"="+dir, helperTokenEnv+"="+token)
		if !waitForSandbox(cmd.Process.Pid, dir) {
			kill(cmd)
			t.Fatalf("round %d: the helper's command did not start", i)
		}
		time.Sleep(time.Duration(rand.IntN(1000)) * time.Microsecond)
		kill(cmd)
	}
	// Long enough for a surviving command to write its marker.
	time.Sleep(1500 * time.Millisecond)
	var ran []int
	for i, dir := range dirs {
		if exists(filepath.Join(dir, "marker")) {
			ran = append(ran, i)
		}
	}
	left := killAllWith(token)
	if len(ran) > 0 {
		t.Errorf("the command ran to its end after its caller was killed, in rounds %v of %d", ran, rounds)
	}
	if left > 0 {
		t.Errorf("%d processes of killed callers' commands were still running (now killed)", left)
	}
}

// A process killed during New's trial run leaves nothing behind: no
// directory in TMPDIR, no process. The helper calls New again and again
// until it is killed, at a random moment.
func TestKilledProbeLeavesNothing(t *testing.T) {
	requireDeathWithParent(t, sandboxed(t, sandbox.Options{}))
	token := unique("deepagents-probe-")
	tmp := t.TempDir()
	for range 15 {
		cmd, out := startHelper(t, helperEnv+"=new", helperTokenEnv+"="+token, "TMPDIR="+tmp)
		if line, err := out.ReadString('\n'); err != nil || line != "ready\n" {
			kill(cmd)
			t.Fatalf("the helper did not start: %q, %v", line, err)
		}
		time.Sleep(time.Duration(20+rand.IntN(80)) * time.Millisecond)
		kill(cmd)
	}
	time.Sleep(200 * time.Millisecond)
	if left := killAllWith(token); left > 0 {
		t.Errorf("%d processes of killed trial runs were still running (now killed)", left)
	}
	entries, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("a killed trial run left %s in TMPDIR", e.Name())
	}
}

// A command is not killed when a thread of this process ends: the kernel
// sends the parent-death signal when the thread that started the child
// ends, and Go ends a thread when a goroutine locked to it returns. Such
// goroutines run on every processor while commands start and run; none may
// take the thread that started a command.
func TestThreadExitDoesNotKill(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    *sandbox.Runner
	}{
		{"sandboxed", sandboxed(t, sandbox.Options{})},
		{"unsandboxed", unsandboxed(t, sandbox.Options{})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for range runtime.GOMAXPROCS(0) {
				wg.Go(func() {
					for {
						select {
						case <-stop:
							return
						default:
						}
						ended := make(chan struct{})
						go func() {
							defer close(ended)
							runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
						}()
						<-ended
					}
				})
			}
			var cmds sync.WaitGroup
			errs := make(chan string, 20)
			for range 20 {
				cmds.Go(func() {
					res, err := tc.r.Run(context.Background(), t.TempDir(), vfs.ExecRequest{Command: "sleep 1; echo done"})
					if err != nil {
						errs <- err.Error()
					} else if res.ExitCode != 0 || res.Output != "done\n" {
						errs <- fmt.Sprintf("the command was cut: exit code %d, output %q", res.ExitCode, res.Output)
					}
				})
			}
			cmds.Wait()
			close(stop)
			wg.Wait()
			close(errs)
			for e := range errs {
				t.Error(e)
			}
		})
	}
}
