package sqlite

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/internal/testkit"
)

// opened watches a directory and reports the names of the files in it that
// are opened or read (the directory itself as "."), with inotify.
type opened struct {
	fd int
}

func watchOpens(t *testing.T, dir string) *opened {
	t.Helper()
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	if err != nil {
		t.Skipf("inotify: %v", err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if _, err := syscall.InotifyAddWatch(fd, dir, syscall.IN_OPEN|syscall.IN_ACCESS); err != nil {
		t.Fatal(err)
	}
	return &opened{fd: fd}
}

// names returns the names opened or read since the last call. The kernel
// queues an event as the call happens, so every open made before names is
// called is in it.
func (o *opened) names(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	buf := make([]byte, 64<<10)
	for {
		n, err := syscall.Read(o.fd, buf)
		if errors.Is(err, syscall.EAGAIN) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		for p := buf[:n]; len(p) >= syscall.SizeofInotifyEvent; {
			size := binary.NativeEndian.Uint32(p[12:16])
			name := strings.TrimRight(string(p[syscall.SizeofInotifyEvent:syscall.SizeofInotifyEvent+int(size)]), "\x00")
			if name == "" {
				name = "."
			}
			out[name] = true
			p = p[syscall.SizeofInotifyEvent+int(size):]
		}
	}
}

// The saver opens and reads no file but the database and SQLite's own
// beside it: not a journal an earlier release would have replayed (not
// even to refuse it), nor any other file that lies there.
func TestOpenReadsOnlyTheDatabaseFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.db")
	s := openT(t, path)
	putMsg(t, s, "c1", "", "one")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	journal := forgeOldJournal(t, path, testkit.AttackSQL(filepath.Join(dir, "pwned.db")))
	others := []string{"state.db.bak", "state.db-foo", "state.db-journal2", "notes.md"}
	for _, name := range others {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("not for the saver"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	w := watchOpens(t, dir)

	// Refused beside the journal, which is not opened.
	if s, err := Open(path, Options{}); err == nil {
		s.Close()
		t.Fatal("opened beside a journal")
	}
	got := w.names(t)
	if got[filepath.Base(journal)] {
		t.Errorf("the journal was opened or read: %v", got)
	}
	if got["state.db"] {
		t.Errorf("the database was opened before the journal was refused: %v", got)
	}

	// Without it, a whole session (open, puts, reads, a lease, close)
	// opens nothing else.
	if err := os.Remove(journal); err != nil {
		t.Fatal(err)
	}
	s = openT(t, path)
	ctx := context.Background()
	putMsg(t, s, "c2", "c1", "two")
	if _, err := s.Acquire(ctx, "th", "me", time.Now(), time.Minute); err != nil {
		t.Fatal(err)
	}
	if got := messages(t, s); got != "one,two" {
		t.Errorf("messages %q", got)
	}
	if _, err := s.Threads(ctx, checkpoint.ThreadsOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, "th", "me"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{".": true, "state.db": true, "state.db-wal": true, "state.db-shm": true}
	got = w.names(t)
	t.Logf("opened or read: %v", got)
	if !got["state.db"] {
		t.Fatalf("the watch saw no open of the database: %v", got)
	}
	for name := range got {
		if !allowed[name] {
			t.Errorf("the saver opened or read %s", name)
		}
	}
}
