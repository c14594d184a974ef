package agent

import (
	"fmt"
	"os"
	"os/exec"
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
	host, _ := os.Hostname()
	holder := fmt.Sprintf("%s/%d/0badf00d", host, pid)
	if !processAlive(pid) || LeaseHolderGone(holder) {
		t.Fatal("a running process is taken for gone")
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); !zombie(pid); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d did not become a zombie", pid)
		}
	}
	if processAlive(pid) || !LeaseHolderGone(holder) {
		t.Error("a zombie is taken for alive")
	}
	if LeaseHolderGone(fmt.Sprintf("%s/%d/x", host, os.Getpid())) || LeaseHolderGone("elsewhere/1/x") || LeaseHolderGone("no-slashes") {
		t.Error("this process, another host's or a malformed holder is taken for gone")
	}
}
