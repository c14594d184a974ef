package sandbox_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/sandbox"
	"github.com/deepagents-go/deepagents/vfs"
)

// sandboxed returns a bubblewrap runner, skipping the test only when bwrap
// is not installed; a bwrap that is installed but fails is a failure.
func sandboxed(t *testing.T, opts sandbox.Options) *sandbox.Runner {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		if os.Getenv("DEEPAGENTS_TEST_SANDBOX_REQUIRED") != "" {
			t.Fatal("bubblewrap (bwrap) is not installed, and DEEPAGENTS_TEST_SANDBOX_REQUIRED says the sandbox must be tested")
		}
		t.Skip("bubblewrap (bwrap) is not installed, so the sandbox cannot be tested here; install Debian's bubblewrap package (CI does)")
	}
	r, err := sandbox.New(context.Background(), opts)
	if err != nil {
		t.Fatalf("bwrap is installed but the sandbox does not work: %v", err)
	}
	if !r.Sandboxed() {
		t.Fatal("New without Unsandboxed gave an unsandboxed runner")
	}
	return r
}

func unsandboxed(t *testing.T, opts sandbox.Options) *sandbox.Runner {
	t.Helper()
	opts.Unsandboxed = true
	r, err := sandbox.New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func run(t *testing.T, r *sandbox.Runner, dir, command string, timeout time.Duration) vfs.ExecResult {
	t.Helper()
	res, err := r.Run(context.Background(), dir, vfs.ExecRequest{Command: command, Timeout: timeout})
	if err != nil {
		t.Fatalf("Run(%q): %v", command, err)
	}
	return res
}

// unique is a token no other process on the machine has in its command line.
var counter atomic.Int64

func unique(prefix string) string {
	return fmt.Sprintf("%s%d%d", prefix, os.Getpid(), counter.Add(1))
}

// processesWith counts the host's live processes whose command line holds
// token (zombies have none).
func processesWith(token string) int {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	n := 0
	for _, d := range dirs {
		data, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err == nil && strings.Contains(string(data), token) {
			n++
		}
	}
	return n
}

// waitNoProcesses fails unless no process holding token is left within 10 s
// (killed processes of a dead namespace take a moment to be reaped).
func waitNoProcesses(t *testing.T, token string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := processesWith(token)
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d processes of the command are still running after it returned", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// Writing anywhere but the root fails or lands in the sandbox's own
// throwaway filesystem: the host never sees the file. The same commands
// unsandboxed do create it, which shows the test can catch an escape.
func TestEscapeWrite(t *testing.T) {
	sb := sandboxed(t, sandbox.Options{})
	free := unsandboxed(t, sandbox.Options{})
	for _, tc := range []struct {
		name   string
		target func(root, other string) (command, hostPath string)
	}{
		{"host /tmp", func(root, other string) (string, string) {
			p := filepath.Join(os.TempDir(), unique("deepagents-escape-"))
			return "echo pwned > " + p, p
		}},
		{"parent of the root", func(root, other string) (string, string) {
			name := unique("escape-")
			return "echo pwned > ../" + name, filepath.Join(filepath.Dir(root), name)
		}},
		{"absolute path of another directory", func(root, other string) (string, string) {
			p := filepath.Join(other, "escaped.txt")
			return "echo pwned > " + p, p
		}},
		{"symlink in the root pointing out", func(root, other string) (string, string) {
			if err := os.Symlink(other, filepath.Join(root, "out")); err != nil {
				t.Fatal(err)
			}
			return "echo pwned > out/escaped.txt", filepath.Join(other, "escaped.txt")
		}},
		{"symlink to a file outside", func(root, other string) (string, string) {
			p := filepath.Join(other, "victim.txt")
			if err := os.WriteFile(p, []byte("original"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(p, filepath.Join(root, "victim")); err != nil {
				t.Fatal(err)
			}
			return "echo pwned > victim", p
		}},
		{"a new file in the host's home", func(root, other string) (string, string) {
			home, err := os.UserHomeDir()
			if err != nil || home == "" || home == "/" {
				t.Skip("no home directory")
			}
			p := filepath.Join(home, unique(".deepagents-escape-"))
			return "echo pwned > " + p, p
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, r := range []*sandbox.Runner{sb, free} {
				root := filepath.Join(t.TempDir(), "root")
				if err := os.Mkdir(root, 0o755); err != nil {
					t.Fatal(err)
				}
				other := t.TempDir()
				command, hostPath := tc.target(root, other)
				t.Cleanup(func() { os.Remove(hostPath) })
				before, _ := os.ReadFile(hostPath)
				res := run(t, r, root, command, 10*time.Second)
				after, _ := os.ReadFile(hostPath)
				wrote := strings.Contains(string(after), "pwned") && !strings.Contains(string(before), "pwned")
				if r.Sandboxed() && wrote {
					t.Fatalf("the sandboxed command %q wrote %s on the host (output %q)", command, hostPath, res.Output)
				}
				if !r.Sandboxed() && !wrote {
					t.Fatalf("control: unsandboxed, %q did not write %s, so the test proves nothing (output %q)", command, hostPath, res.Output)
				}
			}
		})
	}
}

// Files outside the root cannot be read: another directory (directly and
// through a symlink in the root), the test's own source, the home.
func TestEscapeRead(t *testing.T) {
	sb := sandboxed(t, sandbox.Options{})
	free := unsandboxed(t, sandbox.Options{})
	secret := unique("TOPSECRET-")
	other := t.TempDir()
	secretPath := filepath.Join(other, "secret.txt")
	if err := os.WriteFile(secretPath, []byte(secret), 0o644); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	hostTmp, err := os.CreateTemp("", "deepagents-secret-")
	if err != nil {
		t.Fatal(err)
	}
	hostTmp.WriteString(secret)
	hostTmp.Close()
	t.Cleanup(func() { os.Remove(hostTmp.Name()) })
	cases := []struct{ name, command, marker string }{
		{"file in another directory", "cat " + secretPath, secret},
		{"through a symlink in the root", "cat out/secret.txt", secret},
		{"file in the host's /tmp", "cat " + hostTmp.Name(), secret},
		{"the test's own program", "head -c 4 " + self, "ELF"},
		{"listing the other directory", "ls " + other, "secret.txt"},
	}
	// (Not when the test's temporary directories, and so the root, are in
	// the home: the sandbox then shows the root's ancestors.)
	if home, err := os.UserHomeDir(); err == nil && home != "/" && !strings.HasPrefix(os.TempDir()+"/", home+"/") {
		if entries, err := os.ReadDir(home); err == nil && len(entries) > 0 {
			cases = append(cases, struct{ name, command, marker string }{"listing the home", "ls -a " + home, entries[0].Name()})
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, r := range []*sandbox.Runner{sb, free} {
				root := t.TempDir()
				if err := os.Symlink(other, filepath.Join(root, "out")); err != nil {
					t.Fatal(err)
				}
				res := run(t, r, root, tc.command, 10*time.Second)
				saw := strings.Contains(res.Output, tc.marker)
				if r.Sandboxed() && (saw || res.ExitCode == 0) {
					t.Fatalf("the sandboxed %q read outside the root: exit %d, output %q", tc.command, res.ExitCode, res.Output)
				}
				if !r.Sandboxed() && !saw {
					t.Fatalf("control: unsandboxed, %q did not show %q, so the test proves nothing (output %q)", tc.command, tc.marker, res.Output)
				}
			}
		})
	}
}

// A loopback port the test listens on cannot be reached without network;
// with Network it can.
func TestEscapeNetwork(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil || !strings.HasPrefix(bash, "/usr/") && !strings.HasPrefix(bash, "/bin/") {
		t.Skip("the connection test needs bash (for /dev/tcp) in /usr/bin or /bin")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	command := fmt.Sprintf(`bash -c 'exec 3<>/dev/tcp/127.0.0.1/%d && echo connected'`, port)

	res := run(t, sandboxed(t, sandbox.Options{}), t.TempDir(), command, 10*time.Second)
	if strings.Contains(res.Output, "connected") || res.ExitCode == 0 || accepted.Load() != 0 {
		t.Fatalf("the sandbox reached the host's loopback port: exit %d, output %q, %d connections", res.ExitCode, res.Output, accepted.Load())
	}
	res = run(t, sandboxed(t, sandbox.Options{Network: true}), t.TempDir(), command, 10*time.Second)
	if !strings.Contains(res.Output, "connected") || res.ExitCode != 0 {
		t.Fatalf("control: with Network the connection should work: exit %d, output %q", res.ExitCode, res.Output)
	}
}

// A command still running at its timeout is killed with everything it
// started: nothing of it is left, and a child that would write a marker
// later never does.
func TestEscapeTimeout(t *testing.T) {
	for _, r := range []*sandbox.Runner{sandboxed(t, sandbox.Options{}), unsandboxed(t, sandbox.Options{})} {
		t.Run(fmt.Sprintf("sandboxed=%v", r.Sandboxed()), func(t *testing.T) {
			root := t.TempDir()
			token := unique("100.")
			start := time.Now()
			res := run(t, r, root, "(sleep 2; touch late) & echo started; sleep "+token+"; touch never", time.Second)
			took := time.Since(start)
			if !res.TimedOut {
				t.Fatalf("sleep %s with a 1 s timeout was not reported as timed out: %+v", token, res)
			}
			if res.Timeout != time.Second {
				t.Errorf("Timeout = %v, want 1s", res.Timeout)
			}
			if !strings.Contains(res.Output, "started") {
				t.Errorf("the output before the kill is lost: %q", res.Output)
			}
			if took > 8*time.Second {
				t.Errorf("Run took %v with a 1 s timeout", took)
			}
			waitNoProcesses(t, token)
			// The background child would have written "late" 2 s after the
			// start: wait past that and check it never did.
			for time.Since(start) < 3*time.Second {
				time.Sleep(100 * time.Millisecond)
			}
			for _, name := range []string{"late", "never"} {
				if exists(filepath.Join(root, name)) {
					t.Errorf("%s was written after the timeout: a process of the command survived", name)
				}
			}
		})
	}
}

// A fork bomb is bounded by the process limit, ends with its timeout and
// leaves nothing behind; the host can still start processes.
func TestEscapeForkBomb(t *testing.T) {
	const limit = 64
	r := sandboxed(t, sandbox.Options{MaxProcs: limit})
	token := unique("bomb")
	var peak atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if n := int64(processesWith(token)); n > peak.Load() {
				peak.Store(n)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	start := time.Now()
	dir := t.TempDir()
	// Each call of the bomb's function leaves a line in forks (echo is a
	// shell builtin: no process of its own).
	res := run(t, r, dir, token+"(){ echo >> forks; "+token+" | "+token+" & }; "+token+"; sleep 100.5", 3*time.Second)
	took := time.Since(start)
	close(stop)
	<-sampled
	t.Logf("peak of %d processes, %v, timed out %v, exit %d", peak.Load(), took, res.TimedOut, res.ExitCode)
	if took > 20*time.Second {
		t.Errorf("the fork bomb held Run for %v with a 3 s timeout", took)
	}
	// bwrap's own two processes carry the command line too.
	if p := peak.Load(); p > limit+2 {
		t.Errorf("the fork bomb reached %d processes, over the limit of %d", p, limit)
	}
	// The bomb ran and kept forking: the sampler alone cannot tell, as its
	// processes live briefly, and fewer at a time where the bound is the
	// user's RLIMIT_NPROC, which this test's own threads share.
	forks, _ := os.ReadFile(filepath.Join(dir, "forks"))
	if n := bytes.Count(forks, []byte("\n")); n < 16 {
		t.Errorf("the bomb's function ran %d times: the test measured nothing", n)
	} else {
		t.Logf("the bomb's function ran %d times", n)
	}
	waitNoProcesses(t, token)
	if out, err := exec.Command("sh", "-c", "echo alive").Output(); err != nil || string(out) != "alive\n" {
		t.Fatalf("the host cannot start a process after the bomb: %v %q", err, out)
	}
	// The cgroups made for the commands are gone.
	if left, _ := filepath.Glob(fmt.Sprintf("/sys/fs/cgroup/*/deepagents-sandbox-%d-*", os.Getpid())); len(left) > 0 {
		t.Errorf("cgroups left behind: %v", left)
	}
	if left, _ := filepath.Glob(fmt.Sprintf("/sys/fs/cgroup/deepagents-sandbox-%d-*", os.Getpid())); len(left) > 0 {
		t.Errorf("cgroups left behind: %v", left)
	}
}

// What any command sees, in the sandbox and out of it.
func TestBehaviour(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-fake-host-secret-1234")
	t.Setenv("DEEPAGENTS_TEST_SECRET", "host-only-value")
	runners := []*sandbox.Runner{
		sandboxed(t, sandbox.Options{MaxOutputBytes: 1000, Env: map[string]string{"EXTRA": "given"}}),
		unsandboxed(t, sandbox.Options{MaxOutputBytes: 1000, Env: map[string]string{"EXTRA": "given"}}),
	}
	for _, r := range runners {
		t.Run(fmt.Sprintf("sandboxed=%v", r.Sandboxed()), func(t *testing.T) {
			root := t.TempDir()
			for _, tc := range []struct {
				name, command string
				code          int
				output        string
			}{
				{"exit code", "echo bye; exit 3", 3, "bye\n"},
				{"success", "true", 0, ""},
				{"killed by a signal", "kill -9 $$", 137, ""},
				{"stdout and stderr interleaved", "echo one; echo two >&2; echo three; echo four >&2", 0, "one\ntwo\nthree\nfour\n"},
				{"working directory is the root", "pwd", 0, root + "\n"},
				{"no stdin", "cat; echo end", 0, "end\n"},
				{"host secrets do not leak", `echo "[$OPENAI_API_KEY][$DEEPAGENTS_TEST_SECRET]"`, 0, "[][]\n"},
				{"options add variables", `echo "$EXTRA $HOME $PATH"`, 0, "given /tmp /usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n"},
				{"unknown command", "no-such-command-xyz", 127, ""},
			} {
				res := run(t, r, root, tc.command, 10*time.Second)
				if res.ExitCode != tc.code || res.TimedOut {
					t.Errorf("%s: %q exited %d (timed out %v), want %d; output %q", tc.name, tc.command, res.ExitCode, res.TimedOut, tc.code, res.Output)
				}
				if tc.output != "" && res.Output != tc.output || tc.code == 0 && tc.output == "" && res.Output != "" {
					t.Errorf("%s: output %q, want %q", tc.name, res.Output, tc.output)
				}
			}
			// The whole environment holds nothing of the host's.
			res := run(t, r, root, "env", 10*time.Second)
			if strings.Contains(res.Output, "sk-fake") || strings.Contains(res.Output, "host-only") {
				t.Errorf("the host's environment leaked: %q", res.Output)
			}
			// Files the command writes are real files in the root.
			run(t, r, root, "mkdir -p sub && printf 'made\\n' > sub/new.txt", 10*time.Second)
			if data, err := os.ReadFile(filepath.Join(root, "sub", "new.txt")); err != nil || string(data) != "made\n" {
				t.Errorf("the command's file: %q, %v", data, err)
			}
			// Output over the cap keeps its start and end.
			res = run(t, r, root, "printf 'START'; head -c 5000 /dev/zero | tr '\\0' a; printf 'END\\n'", 10*time.Second)
			if res.OmittedBytes != 5009-1000 {
				t.Errorf("OmittedBytes = %d, want 4009", res.OmittedBytes)
			}
			if !strings.HasPrefix(res.Output, "START"+strings.Repeat("a", 495)+"\n[... 4009 bytes of output omitted ...]\n") ||
				!strings.HasSuffix(res.Output, strings.Repeat("a", 496)+"END\n") {
				t.Errorf("capped output: %q", res.Output)
			}
		})
	}
}

// Sandbox only: the process limit is set, /tmp is empty but for the root,
// the system is read-only.
func TestSandboxLayout(t *testing.T) {
	r := sandboxed(t, sandbox.Options{MaxProcs: 77})
	root := t.TempDir()
	for _, tc := range []struct{ command, want string }{
		{"grep 'Max processes' /proc/self/limits | tr -s ' '", "Max processes 77 77 processes \n"},
		{"touch /usr/x 2>/dev/null; echo $?", "1\n"},
		{"touch /etc/x 2>/dev/null; echo $?", "1\n"},
		{"touch /x 2>/dev/null; echo $?", "1\n"},
		{"touch /tmp/x && echo $?", "0\n"},
		{"ls /", ""},
	} {
		res := run(t, r, root, tc.command, 10*time.Second)
		if tc.want != "" && res.Output != tc.want {
			t.Errorf("%q: %q, want %q", tc.command, res.Output, tc.want)
		}
		if tc.command == "ls /" {
			for _, hidden := range []string{"root", "home", "work", "opt", "var", "srv", "mnt"} {
				if strings.Contains("\n"+res.Output, "\n"+hidden+"\n") && !strings.HasPrefix(root, "/"+hidden+"/") {
					t.Errorf("/%s is visible in the sandbox: %q", hidden, res.Output)
				}
			}
		}
	}
}

func TestRunErrors(t *testing.T) {
	r := unsandboxed(t, sandbox.Options{})
	if _, err := r.Run(context.Background(), filepath.Join(t.TempDir(), "missing"), vfs.ExecRequest{Command: "true"}); err == nil {
		t.Error("a missing directory should be an error")
	}
	if _, err := r.Run(context.Background(), t.TempDir(), vfs.ExecRequest{Command: "a\x00b"}); err == nil {
		t.Error("a NUL byte should be an error")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Run(ctx, t.TempDir(), vfs.ExecRequest{Command: "true"}); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled context: %v", err)
	}
	if _, err := sandbox.New(context.Background(), sandbox.Options{Bwrap: "/nonexistent/bwrap"}); !errors.Is(err, sandbox.ErrUnavailable) {
		t.Errorf("a missing bwrap: %v, want ErrUnavailable", err)
	}
	if _, err := sandbox.New(context.Background(), sandbox.Options{Bwrap: "false"}); !errors.Is(err, sandbox.ErrUnavailable) {
		t.Errorf("a bwrap that fails its trial run: %v, want ErrUnavailable", err)
	}
}

// Cancelling the context mid-command kills it and returns the cause.
func TestCancelKills(t *testing.T) {
	r := sandboxed(t, sandbox.Options{})
	token := unique("200.")
	ctx, cancel := context.WithCancelCause(context.Background())
	root := t.TempDir()
	started := startBarrier(t, filepath.Join(root, "started"))
	done := make(chan error, 1)
	go func() {
		_, err := r.Run(ctx, root, vfs.ExecRequest{Command: "echo > started; sleep " + token})
		done <- err
	}()
	started()
	stopped := errors.New("user stopped")
	cancel(stopped)
	if err := <-done; !errors.Is(err, stopped) {
		t.Fatalf("Run returned %v, want the cause", err)
	}
	waitNoProcesses(t, token)
}

func TestTimeoutCap(t *testing.T) {
	r := unsandboxed(t, sandbox.Options{Timeout: 5 * time.Second, MaxTimeout: 30 * time.Second})
	for _, tc := range []struct{ ask, want time.Duration }{
		{0, 5 * time.Second}, {-time.Second, 5 * time.Second}, {10 * time.Second, 10 * time.Second}, {time.Hour, 30 * time.Second},
	} {
		if got := r.Timeout(tc.ask); got != tc.want {
			t.Errorf("Timeout(%v) = %v, want %v", tc.ask, got, tc.want)
		}
	}
	if got := strconv.Itoa(int(sandbox.DefaultTimeout / time.Second)); got != "120" {
		t.Errorf("the default timeout is %s s, want 120", got)
	}
}

// Starting more processes than the limit fails: the sandbox's /proc never
// counts more than the limit, however many the command asked for.
func TestProcessLimit(t *testing.T) {
	const limit = 40
	r := sandboxed(t, sandbox.Options{MaxProcs: limit})
	res := run(t, r, t.TempDir(), `(i=0; while [ $i -lt 100 ]; do sleep 5 & i=$((i+1)); done) 2>/dev/null; set -- /proc/[0-9]*; echo "procs=$#"`, 20*time.Second)
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(res.Output), "procs=")))
	if err != nil {
		t.Fatalf("output %q", res.Output)
	}
	t.Logf("%d processes in the sandbox", n)
	if n > limit || n < limit/2 {
		t.Fatalf("%d processes ran with a limit of %d (100 asked for)", n, limit)
	}
}

// A host process cannot be signalled from the sandbox (it has a pid
// namespace of its own); unsandboxed the same command kills it.
func TestEscapeSignal(t *testing.T) {
	for _, r := range []*sandbox.Runner{sandboxed(t, sandbox.Options{}), unsandboxed(t, sandbox.Options{})} {
		victim := exec.Command("sleep", "60")
		if err := victim.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- victim.Wait() }()
		res := run(t, r, t.TempDir(), fmt.Sprintf("kill -KILL %d", victim.Process.Pid), 10*time.Second)
		if r.Sandboxed() {
			if res.ExitCode == 0 {
				t.Errorf("the sandboxed kill succeeded: %q", res.Output)
			}
			// A killed child is a zombie or, once reaped, gone.
			stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", victim.Process.Pid))
			_, after, _ := strings.Cut(string(stat), ") ")
			if err != nil || strings.HasPrefix(after, "Z") {
				t.Errorf("the host process died after the sandboxed kill (%v, %q)", err, after)
			}
			victim.Process.Kill()
			<-exited
			continue
		}
		// Control: unsandboxed the victim dies of the command's kill.
		if err := <-exited; res.ExitCode != 0 || err == nil {
			t.Errorf("control: unsandboxed kill: exit %d %q, victim %v", res.ExitCode, res.Output, err)
		}
	}
}
