package sqlite

import (
	"os"
	"path/filepath"
	"testing"
)

// A closed saver leaves its writes in the database file, not in SQLite's
// write-ahead log, even while another saver keeps the file open.
func TestCloseEmptiesTheLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.db")
	other := openT(t, path)
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	putMsg(t, s, "1", "", "hello")
	putMsg(t, s, "2", "1", "world")
	walSize := func() int64 {
		fi, err := os.Stat(path + "-wal")
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	if n := walSize(); n == 0 {
		t.Fatal("the log is empty before Close; the test shows nothing")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := walSize(); n != 0 {
		t.Errorf("the log holds %d bytes after Close, want 0", n)
	}
	if got := messages(t, other); got != "hello,world" {
		t.Errorf("the other saver reads %q, want hello,world", got)
	}
}
