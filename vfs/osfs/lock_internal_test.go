//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package osfs

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// While Update computes, the file is locked against every other open file
// (another process's included) and against other writers in this process.
func TestUpdateHoldsTheLocks(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.txt")
	if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := New(dir, NoSweep())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	err = f.Update(context.Background(), "/f.txt", func(s string) (string, error) {
		other, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		if free, err := tryLock(other); free || err != nil {
			t.Errorf("another open file could lock f.txt during the update (%v, %v)", free, err)
		}
		f.locks.mu.Lock()
		held := f.locks.m["f.txt"]
		f.locks.mu.Unlock()
		if held == nil || held.mu.TryLock() {
			t.Error("the in-process lock of f.txt is free during the update")
		}
		return s + "y", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	other, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if free, err := tryLock(other); !free || err != nil {
		t.Errorf("f.txt is still locked after the update (%v, %v)", free, err)
	}
	if len(f.locks.m) != 0 {
		t.Errorf("in-process locks left behind: %v", f.locks.m)
	}
}
