//go:build unix

package sandbox_test

import (
	"io"
	"os"
	"syscall"
	"testing"
	"time"
)

// startBarrier makes a named pipe at path and returns the wait for a
// command that writes a line to it ("echo > started"): the command's open
// blocks until the test reads and the test's until the command writes, so
// the test knows the command got there without polling for a file.
func startBarrier(t *testing.T, path string) (wait func()) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		done := make(chan error, 1)
		go func() {
			f, err := os.Open(path)
			if err == nil {
				_, err = io.ReadAll(f)
				f.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the command never started")
		}
	}
}
