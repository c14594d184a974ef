package store_test

import (
	"testing"

	"github.com/deepagents-go/deepagents/vfs"
	"github.com/deepagents-go/deepagents/vfs/store"
	"github.com/deepagents-go/deepagents/vfs/store/storetest"
)

// FuzzStoreMatchesMemory runs one script of writes, deletes, reads,
// stats and listings (storetest.Script) on a store and on vfs.Memory, the
// reference: every operation must fail the same way or succeed alike, and
// the files must end the same.
func FuzzStoreMatchesMemory(f *testing.F) {
	f.Add("w /a/b\nw /a\nl /a\nd /a\nr /a/b\nw /a\ns /a")
	f.Add("w /x/y/z\nw /x/y\nd /x/y/z\ns /x\nl /\nw x/y")
	f.Add("w /a-b\nw /a/b\nw /a.b\nl /a\nd /a\nl /")
	f.Fuzz(func(t *testing.T, script string) {
		s, _ := store.New(store.NewMemoryTable(), "fuzz")
		storetest.Script(t, s, vfs.NewMemory(nil), script)
	})
}
