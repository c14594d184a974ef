//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package osfs_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/vfs"
	"github.com/deepagents-go/deepagents/vfs/osfs"
)

// Tests below re-run this test binary as a child process (the usual Go
// pattern): TestChildProcess does the child's part when childEnv says which.
const childEnv = "OSFS_TEST_CHILD"

// child starts this binary as a child doing role in dir; the child waits
// for its standard input to close before it starts its work.
func child(t *testing.T, role, dir string, env ...string) (*exec.Cmd, io.WriteCloser, *bufio.Reader) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), append([]string{childEnv + "=" + role, "OSFS_TEST_DIR=" + dir}, env...)...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return cmd, stdin, bufio.NewReader(stdout)
}

// TestChildProcess is not a test of its own: it is the child's side of the
// tests that run one, and returns at once otherwise.
func TestChildProcess(t *testing.T) {
	dir := os.Getenv("OSFS_TEST_DIR")
	switch os.Getenv(childEnv) {
	case "edit":
		childEdit(t, dir, os.Getenv("OSFS_TEST_PREFIX"))
	case "hold":
		childHold(t, dir)
	}
}

const childEdits = 120

// childEdit makes childEdits edits of /shared.txt with edit_file, four at a
// time, and prints when it started and finished.
func childEdit(t *testing.T, dir, prefix string) {
	io.Copy(io.Discard, os.Stdin) // start together with the other child
	f, err := osfs.New(dir, osfs.NoSync(), osfs.NoSweep())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	start := time.Now()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < childEdits; i += 4 {
				args := fmt.Sprintf(`{"file_path":"/shared.txt","old_string":"%s %d: todo\n","new_string":"%s %d: done\n"}`, prefix, i, prefix, i)
				res := runTool(t, vfs.Track(f), "edit_file", args)
				if res.IsError || !strings.HasPrefix(res.Content, "Replaced 1 occurrence") {
					t.Errorf("edit %s %d: %s", prefix, i, res.Content)
				}
			}
		})
	}
	wg.Wait()
	fmt.Printf("%d %d\n", start.UnixNano(), time.Now().UnixNano())
}

// childHold plays a writer at work: it creates a temporary file as Write
// names them, locks it, says "ready" and waits to be killed.
func childHold(t *testing.T, dir string) {
	w, err := os.OpenFile(filepath.Join(dir, ".osfs-00000000000000aa.tmp"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(w.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	w.WriteString("half a file")
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin)
}

// Two processes editing one directory at the same time, each many times,
// four edits at a time: every edit of both survives.
func TestTwoProcessesEdit(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		t.Skip("in a child")
	}
	_, dir := newFS(t, map[string]string{"/shared.txt": checklist("a", childEdits) + checklist("b", childEdits)})
	type proc struct {
		cmd   *exec.Cmd
		stdin io.WriteCloser
		out   *bufio.Reader
	}
	var procs []proc
	for _, prefix := range []string{"a", "b"} {
		cmd, in, out := child(t, "edit", dir, "OSFS_TEST_PREFIX="+prefix)
		procs = append(procs, proc{cmd, in, out})
	}
	for _, p := range procs {
		p.stdin.Close()
	}
	var spans [][2]int64
	for i, p := range procs {
		out, _ := io.ReadAll(p.out)
		if err := p.cmd.Wait(); err != nil {
			t.Fatalf("child %d: %v\n%s", i, err, out)
		}
		var s [2]int64
		if _, err := fmt.Sscan(string(out), &s[0], &s[1]); err != nil {
			t.Fatalf("child %d printed %q", i, out)
		}
		spans = append(spans, s)
	}
	overlap := min(spans[0][1], spans[1][1]) - max(spans[0][0], spans[1][0])
	t.Logf("the two processes edited at the same time for %v", time.Duration(max(overlap, 0)))
	want := strings.ReplaceAll(checklist("a", childEdits)+checklist("b", childEdits), "todo", "done")
	if got := diskRead(t, filepath.Join(dir, "shared.txt")); got != want {
		lost := strings.Count(got, "todo")
		t.Errorf("%d of %d edits lost by two processes editing one file", lost, 2*childEdits)
	}
	assertNoTemps(t, dir)
}

// A temporary file whose writer is alive stays, however old; once the
// writer's process is gone, the sweep removes it.
func TestStaleTempOfKilledWriter(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		t.Skip("in a child")
	}
	f, dir := newFS(t, nil, osfs.NoSweep())
	cmd, stdin, out := child(t, "hold", dir)
	defer stdin.Close()
	if line, err := out.ReadString('\n'); line != "ready\n" {
		t.Fatalf("child said %q, %v", line, err)
	}
	tmp := filepath.Join(dir, ".osfs-00000000000000aa.tmp")
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(tmp, old, old); err != nil {
		t.Fatal(err)
	}
	if n, err := f.RemoveStaleTemps(context.Background()); n != 0 || err != nil {
		t.Errorf("RemoveStaleTemps with the writer alive = %d, %v", n, err)
	}
	if got := listing(t, f, "/"); len(got) != 0 {
		t.Errorf("List shows %v", got)
	}
	if _, err := os.Stat(tmp); err != nil {
		t.Fatalf("a live writer's temporary file was removed: %v", err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if n, err := f.RemoveStaleTemps(context.Background()); n != 1 || err != nil {
		t.Errorf("RemoveStaleTemps after the writer died = %d, %v; want 1", n, err)
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("the dead writer's temporary file is still there: %v", err)
	}
}

// unprivilegedUID is the user permission tests run as when this process
// runs as root (which any permission check lets through): nobody.
const unprivilegedUID = 65534

// unprivilegedCopy copies this test binary to a fresh directory any user
// can read and run from (the build directory is private to root); t's
// cleanup removes it.
func unprivilegedCopy(t *testing.T) (string, error) {
	dir, err := os.MkdirTemp("", "osfs-unprivileged-")
	if err != nil {
		return "", err
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := filepath.Join(dir, "osfs.test")
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", err
	}
	src, err := os.Open(os.Args[0])
	if err != nil {
		return "", err
	}
	defer src.Close()
	dst, err := os.OpenFile(bin, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return "", err
	}
	return bin, dst.Close()
}

// runUnprivileged runs the calling test in a child process as an
// unprivileged user when this process runs as root, and reports whether it
// did (the caller then returns: the child's result is the test's). A
// child that skips the test fails it. Where the child cannot be started,
// the test is skipped with a message saying .ci/run runs it unprivileged.
func runUnprivileged(t *testing.T) bool {
	t.Helper()
	if os.Geteuid() != 0 {
		return false
	}
	if os.Getenv(childEnv) != "" {
		t.Fatal("the unprivileged child still runs as root")
	}
	bin, err := unprivilegedCopy(t)
	if err != nil {
		t.Skipf("running as root, and this test cannot re-run itself as an unprivileged user (%v); .ci/run runs it as user nobody", err)
	}
	cmd := exec.Command(bin, "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Dir = filepath.Dir(bin)
	cmd.Env = append(os.Environ(), childEnv+"=unprivileged", "TMPDIR=/tmp")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: unprivilegedUID, Gid: unprivilegedUID}}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Skipf("running as root, and this test cannot re-run itself as an unprivileged user (%v); .ci/run runs it as user nobody", err)
	}
	err = cmd.Wait()
	switch {
	case err != nil:
		t.Fatalf("as user %d: %v\n%s", unprivilegedUID, err, out.String())
	case strings.Contains(out.String(), "--- SKIP"):
		t.Fatalf("as user %d the test skipped:\n%s", unprivilegedUID, out.String())
	case !strings.Contains(out.String(), "--- PASS: "+t.Name()):
		t.Fatalf("as user %d the test did not pass:\n%s", unprivilegedUID, out.String())
	}
	t.Logf("ran as user %d:\n%s", unprivilegedUID, out.String())
	return true
}
