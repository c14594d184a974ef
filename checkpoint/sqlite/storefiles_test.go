package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/checkpoint/sqlite"
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
