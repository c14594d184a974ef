//go:build unix

package scenario

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A FIFO given as the scenario is refused at once instead of waiting for a
// writer.
func TestLoadRefusesAFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "scenario.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	_, err := Load(fifo)
	if err == nil || !strings.Contains(err.Error(), "not a regular file (a named pipe)") {
		t.Errorf("Load(FIFO) = %v", err)
	}
}
