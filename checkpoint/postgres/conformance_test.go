package postgres

import (
	"testing"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/checkpoint/checkpointtest"
)

// The saver must satisfy the checkpoint interface.
var _ checkpoint.Saver = (*Saver)(nil)

// TestConformance runs the checkpoint suite against the real server, each
// case in a schema of its own.
func TestConformance(t *testing.T) {
	checkpointtest.Run(t, func(t *testing.T) checkpoint.Saver { return openTest(t, Options{}) })
}

// TestConformanceFrequentSnapshots runs the suite with a snapshot every 3
// steps, so rebuilding from snapshots, snapshots after branches and pruning
// across snapshots are exercised in every case, not only in long histories.
func TestConformanceFrequentSnapshots(t *testing.T) {
	checkpointtest.Run(t, func(t *testing.T) checkpoint.Saver { return openTest(t, Options{SnapshotEvery: 3}) })
}
