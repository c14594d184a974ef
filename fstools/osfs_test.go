package fstools

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/tool"
	"github.com/deepagents-go/deepagents/vfs"
	"github.com/deepagents-go/deepagents/vfs/osfs"
)

// grep over a real directory skips files it cannot read (here: over the
// backend's size limit) and says so, instead of failing the whole search.
func TestGrepSkipsUnreadableFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "small.txt"), []byte("needle here\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "big.log"), []byte(strings.Repeat("needle\n", 100)), 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := osfs.New(dir, osfs.MaxFileBytes(64), osfs.NoSync())
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	var grep tool.Tool
	for _, tl := range Tools() {
		if tl.Spec().Name == "grep" {
			grep = tl
		}
	}
	env := &tool.Env{Files: vfs.Track(root)}
	res, err := grep.Run(context.Background(), env, json.RawMessage(`{"pattern":"needle"}`))
	if err != nil || res.IsError {
		t.Fatalf("grep failed: %v %+v", err, res)
	}
	if !strings.HasPrefix(res.Content, "/small.txt") || !strings.Contains(res.Content, "[Note: 1 file could not be read and was skipped: /big.log.]") {
		t.Errorf("grep output:\n%s", res.Content)
	}
	res, _ = grep.Run(context.Background(), env, json.RawMessage(`{"pattern":"absent"}`))
	if !strings.Contains(res.Content, "No matches") || !strings.Contains(res.Content, "/big.log") {
		t.Errorf("no-match output: %s", res.Content)
	}
}
