package checkpoint_test

import (
	"testing"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/checkpoint/checkpointtest"
)

func TestMemoryConformance(t *testing.T) {
	checkpointtest.Run(t, func(t *testing.T) checkpoint.Saver { return checkpoint.NewMemory(0) })
}

// A short snapshot interval makes every history in the suite cross many
// snapshots.
func TestMemoryConformanceSnapshotEvery3(t *testing.T) {
	checkpointtest.Run(t, func(t *testing.T) checkpoint.Saver { return checkpoint.NewMemory(3) })
}
