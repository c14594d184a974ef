package storetest_test

import (
	"testing"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/vfs/store"
	"github.com/deepagents-go/deepagents/vfs/store/storetest"
)

func TestMemoryTable(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Table { return store.NewMemoryTable() },
		func(t *testing.T) checkpoint.Saver { return checkpoint.NewMemory(0) })
}
