package sqlite_test

import (
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/checkpoint/sqlite"
	"github.com/deepagents-go/deepagents/vfs"
	"github.com/deepagents-go/deepagents/vfs/store"
	"github.com/deepagents-go/deepagents/vfs/store/storetest"
)

// The file table shares its database file with a checkpoint saver.
func TestFileTable(t *testing.T) {
	var path string
	storetest.Run(t, func(t *testing.T) store.Table {
		path = filepath.Join(t.TempDir(), "threads.db")
		ft, err := sqlite.OpenFiles(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ft.Close() })
		return ft
	}, func(t *testing.T) checkpoint.Saver {
		s, err := sqlite.Open(path, sqlite.Options{Synchronous: "OFF"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

// FuzzFileTable runs storetest.Script on a store in SQLite against
// vfs.Memory: the table's range queries (a directory's files sort between
// DIR/ and DIR0) must select exactly what the reference holds. Every input
// gets a fresh namespace of one database.
func FuzzFileTable(f *testing.F) {
	f.Add("w /a/b\nw /a-b\nw /a0\nw /a/\xff\nl /a\nd /a\nl /")
	f.Add("w /x/y/z\nw /x/y\nd /x/y/z\ns /x\nl /\nw x/y")
	ft, err := sqlite.OpenFiles(filepath.Join(f.TempDir(), "fuzz.db"))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { ft.Close() })
	var n atomic.Int64
	f.Fuzz(func(t *testing.T, script string) {
		s, err := store.New(ft, fmt.Sprintf("ns%d", n.Add(1)))
		if err != nil {
			t.Fatal(err)
		}
		storetest.Script(t, s, vfs.NewMemory(nil), script)
	})
}
