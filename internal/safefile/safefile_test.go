package safefile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	if err := os.WriteFile(small, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := Read(small, 5); err != nil || string(got) != "hello" {
		t.Fatalf("Read = %q, %v", got, err)
	}
	_, err := Read(small, 4)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), small) || !strings.Contains(err.Error(), "5 B") {
		t.Errorf("over the cap: %v", err)
	}
	if _, err := Read(dir, 100); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "directory") {
		t.Errorf("directory: %v", err)
	}
	if _, err := Read(filepath.Join(dir, "missing"), 100); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
}

func TestReadRefusesDevicesAndFIFOsWithoutBlocking(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no /dev/zero or FIFOs on Windows")
	}
	if _, err := Read("/dev/zero", 1<<20); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "device") {
		t.Errorf("/dev/zero: %v", err)
	}
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := Read(fifo, 100); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "named pipe") {
			t.Errorf("fifo: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Read blocked on a FIFO with no writer")
	}
}

func TestReadFrom(t *testing.T) {
	if got, err := ReadFrom(strings.NewReader("abc"), "stdin", 3); err != nil || string(got) != "abc" {
		t.Fatalf("ReadFrom = %q, %v", got, err)
	}
	if _, err := ReadFrom(strings.NewReader("abcd"), "stdin", 3); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "stdin") {
		t.Errorf("over the cap: %v", err)
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1 KiB", 1536: "1.5 KiB", 10 << 20: "10 MiB", 3 << 30: "3 GiB"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestWithoutPath(t *testing.T) {
	_, err := os.Open("/no/such/file")
	if got := WithoutPath(err, "/no/such/file"); !errors.Is(got, fs.ErrNotExist) || strings.Contains(got.Error(), "/no/such") {
		t.Errorf("same path: %v", got)
	}
	if got := WithoutPath(err, "/other"); got != err {
		t.Errorf("another path: %v, want the error unchanged", got)
	}
	plain := errors.New("plain")
	if got := WithoutPath(plain, "/x"); got != plain {
		t.Errorf("not a path error: %v", got)
	}
}
