package postgres

import (
	"testing"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/internal/pgtest"
	vstore "github.com/deepagents-go/deepagents/vfs/store"
	"github.com/deepagents-go/deepagents/vfs/store/storetest"
)

// Each case opens the file table and a checkpoint saver in a schema of its
// own on the test server.
func TestFileTable(t *testing.T) {
	var dsn, schema string
	storetest.Run(t, func(t *testing.T) vstore.Table {
		dsn, schema = pgtest.Schema(t)
		ft, err := OpenFiles(t.Context(), dsn, Options{Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ft.Close() })
		return ft
	}, func(t *testing.T) checkpoint.Saver {
		s, err := Open(t.Context(), dsn, Options{Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}
