package server

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/runner"
)

// TestRunTakesLeaseOfKilledProcess: a server restarted after a crash finds
// the thread's lease held by the killed server, whose process its parent
// has not reaped yet (a zombie: signal 0 still finds it). The new run must
// take the lease at once, not fail on it; a lease of a live holder is a
// 409 before any run is stored.
func TestRunTakesLeaseOfKilledProcess(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("telling a zombie needs /proc")
	}
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Skip("cannot start a process to kill:", err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() { _ = cmd.Wait() })
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	// A real process dies in the kernel's own time: poll /proc for it, up
	// to a deadline.
	for deadline := time.Now().Add(5 * time.Second); !isZombie(pid); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d did not become a zombie", pid)
		}
	}
	ctx := context.Background()
	saver := checkpoint.NewMemory(0)
	dead := runner.LeaseHolderOf(pid)
	if _, err := saver.Acquire(ctx, "T", dead, time.Now(), time.Minute); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, Config{Saver: saver})
	h.json("POST", "/threads", map[string]any{"thread_id": "T"}, 200, nil)
	msg := map[string]any{"messages": []any{map[string]any{"role": "user", "content": "go"}}}
	_, evs := h.stream("POST", "/threads/T/runs/stream", map[string]any{"assistant_id": "researcher", "input": msg})
	for _, e := range evs {
		if e.Event == "error" {
			t.Fatalf("the run after the crash failed: %s", e.Data)
		}
	}
	var th Thread
	h.json("GET", "/threads/T", nil, 200, &th)
	if th.Status != "interrupted" {
		t.Errorf("thread status %q after the run, want interrupted (at its approval)", th.Status)
	}

	// A holder that is alive (on another host, as far as this one knows).
	if _, err := saver.Acquire(ctx, "U", "elsewhere/1/cafe", time.Now(), time.Minute); err != nil {
		t.Fatal(err)
	}
	h.json("POST", "/threads", map[string]any{"thread_id": "U"}, 200, nil)
	resp, b := h.do("POST", "/threads/U/runs/stream", map[string]any{"assistant_id": "researcher", "input": msg})
	if resp.StatusCode != 409 || !strings.Contains(string(b), "elsewhere/1/cafe") {
		t.Errorf("a run on a thread another process runs: status %d, body %s; want 409 naming the holder", resp.StatusCode, b)
	}
	var runs []Run
	h.json("GET", "/threads/U/runs", nil, 200, &runs)
	h.json("GET", "/threads/U", nil, 200, &th)
	if len(runs) != 0 || th.Status != "idle" {
		t.Errorf("the refused run left %d runs and thread status %q", len(runs), th.Status)
	}
}

// isZombie reads process pid's state from /proc (Linux).
func isZombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	i := bytes.LastIndexByte(b, ')')
	return err == nil && i >= 0 && i+2 < len(b) && b[i+2] == 'Z'
}
