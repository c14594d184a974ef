package fstools

import (
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/tool"
	"github.com/deepagents-go/deepagents/vfs"
	"github.com/deepagents-go/deepagents/vfs/vfstest"
)

// An image too large to show, on a backend that reads a page in one call
// (a directory of the workers), is refused by the size that call gives:
// the file is never read whole, and the note is the one in process.
func TestAnImageTooLargeIsNotReadWhole(t *testing.T) {
	files := map[string]string{"/big.png": "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + strings.Repeat("\x00", 500)}
	tools := byName(New(Options{MaxImageBytes: 64}))
	env := func(fs vfs.Backend) *tool.Env {
		return &tool.Env{CallID: "call_1", Files: fs, Capabilities: llm.Capabilities{Images: true}}
	}
	want, err := tools["read_file"].Run(t.Context(), env(vfs.NewMemory(vfstest.Files(files))), []byte(`{"file_path":"/big.png"}`))
	if err != nil {
		t.Fatal(err)
	}
	remote := &remoteFS{inner: vfs.NewMemory(vfstest.Files(files))}
	got, err := tools["read_file"].Run(t.Context(), env(vfs.Track(remote)), []byte(`{"file_path":"/big.png"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got.Content != want.Content || got.Parts != nil || !strings.Contains(got.Content, "larger than the 64 B") {
		t.Errorf("one call: %q (parts %v), in process: %q", got.Content, got.Parts, want.Content)
	}
	if n, m := remote.searches.Load(), remote.calls.Load(); n != 1 || m != 0 {
		t.Errorf("%d page reads and %d other calls, want 1 and nothing else", n, m)
	}
}
