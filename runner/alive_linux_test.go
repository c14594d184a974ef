package runner

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A process killed and not yet reaped by its parent is a zombie: signal 0
// still finds it, but it runs no more, so its lease is free to take.
func TestZombieHolderIsGone(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Skip("cannot start a process:", err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() { _ = cmd.Wait() })
	holder := LeaseHolderOf(pid)
	if !processAlive(pid) || LeaseHolderGone(holder) {
		t.Fatal("a running process is taken for gone")
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	// A real process dies in the kernel's own time: poll /proc for it, up
	// to a deadline.
	for deadline := time.Now().Add(5 * time.Second); !zombie(pid); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d did not become a zombie", pid)
		}
	}
	if processAlive(pid) || !LeaseHolderGone(holder) {
		t.Error("a zombie is taken for alive")
	}
	host, _ := os.Hostname()
	for _, h := range []string{
		LeaseHolder(),
		strings.Replace(holder, host+"/", "elsewhere/", 1),
		fmt.Sprintf("%s/%d/0badf00d", host, pid),                                     // named before holders said their namespace
		holder[:strings.LastIndexByte(holder, '/')] + "/0123456789abcdef.4026531836", // another boot
		holder + "0", // another process id namespace
		"no-slashes",
	} {
		if LeaseHolderGone(h) {
			t.Errorf("%q is taken for gone: this process, another host's, another namespace's or a malformed holder", h)
		}
	}
}

// A process in a process id namespace of its own (a container that shares
// the host's name, say) has an id there that means nothing here: its lease
// is not taken over however that id looks from here, only when it expires.
func TestHolderInAnotherPIDNamespaceIsNotGone(t *testing.T) {
	if os.Getenv("DEEPAGENTS_TEST_PRINT_HOLDER") == "1" {
		fmt.Println(LeaseHolder())
		// A real process that must stay alive while the test looks at it;
		// the test kills it long before the minute is up.
		time.Sleep(time.Minute)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestHolderInAnotherPIDNamespaceIsNotGone$")
	cmd.Env = append(os.Environ(), "DEEPAGENTS_TEST_PRINT_HOLDER=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Skipf("this test needs a new process id namespace (root or user namespaces), and starting one failed: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	holder := strings.TrimSpace(line)
	parts := strings.Split(holder, "/")
	if len(parts) != 4 || parts[1] != "1" {
		t.Fatalf("the child names itself %q; want host/1/random/space (it is process 1 of its namespace)", holder)
	}
	if parts[3] == hostSpace() {
		t.Fatalf("the child's holder %q names this process's namespace", holder)
	}
	// Process 1 here is this machine's init, alive; the child's own id as
	// seen from here is another. Neither may count: the holder's id is not
	// an id of this namespace at all.
	if LeaseHolderGone(holder) {
		t.Errorf("a live holder in another namespace (%q) is taken for gone", holder)
	}
	dead := parts[0] + "/999999999/" + parts[2] + "/" + parts[3]
	if LeaseHolderGone(dead) {
		t.Errorf("a holder in another namespace (%q) is judged by this namespace's process ids", dead)
	}
}
