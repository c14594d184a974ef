//go:build unix

package main

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A FIFO given as the scenario is refused at once (exit 2), not waited on.
func TestReplayRefusesAFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "scenario.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	code, out, errs := runCLI(t, "replay", fifo)
	if code != 2 || out != "" || !strings.Contains(errs, "not a regular file (a named pipe)") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
}
