package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/checkpoint/checkpointtest"
	"github.com/deepagents-go/deepagents/checkpoint/sqlite"
)

func open(t testing.TB, opts sqlite.Options) *sqlite.Saver {
	t.Helper()
	s, err := sqlite.Open(filepath.Join(t.TempDir(), "state.db"), opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	checkpointtest.Run(t, func(t *testing.T) checkpoint.Saver { return open(t, sqlite.Options{}) })
}

func TestConformanceSnapshotEvery3(t *testing.T) {
	checkpointtest.Run(t, func(t *testing.T) checkpoint.Saver { return open(t, sqlite.Options{SnapshotEvery: 3}) })
}
