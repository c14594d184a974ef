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

// On a real directory grep streams files through the backend's Open: a file
// over the backend's read limit but under grep's own is searched, a binary
// one is told from its first bytes, and a file over grep's limit is skipped
// and named with the reason. read_file pages through a file the backend's
// Read refuses.
func TestFileToolsOnDisk(t *testing.T) {
	dir := t.TempDir()
	for name, c := range map[string]string{
		"small.txt": "needle here\n",
		"mid.txt":   strings.Repeat("hay\n", 40) + "needle in the middle\n", // 181 bytes: over the backend's 64
		"big.log":   strings.Repeat("needle\n", 100),                        // 700 bytes: over grep's 300
		"img.png":   "\x89PNG\r\n\x1a\n\x00\x00needle",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	root, err := osfs.New(dir, osfs.MaxFileBytes(64), osfs.NoSync())
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	tools := byName(New(Options{GrepMaxFileBytes: 300}))
	env := &tool.Env{Files: vfs.Track(root)}
	for _, c := range []struct{ tool, args, want string }{
		{"grep", `{"pattern":"needle"}`,
			"/mid.txt\n/small.txt\n\n[Skipped 2 files: /big.log (too large: 700 B, grep searches files up to 300 B), /img.png (binary, image/png, 16 B).]"},
		{"grep", `{"pattern":"absent","path":"/big.log"}`,
			`No matches for "absent" in /big.log. (Skipped 1 file: /big.log (too large: 700 B, grep searches files up to 300 B).)`},
		{"grep", `{"pattern":"middle","output_mode":"content","glob":"*.txt"}`,
			"/mid.txt:41: needle in the middle"},
		{"read_file", `{"file_path":"/big.log","offset":98}`,
			"    99\tneedle\n   100\tneedle"},
		{"read_file", `{"file_path":"/mid.txt","offset":39,"limit":1}`,
			"    40\thay\n\n[Lines 40-40 of 41 shown; 1 more line remains. Call read_file with offset=40 to continue.]"},
		{"read_file", `{"file_path":"img.png"}`,
			"/img.png is a binary file (image/png, 16 B), not text, so read_file does not show it."},
	} {
		res, err := tools[c.tool].Run(context.Background(), env, json.RawMessage(c.args))
		if err != nil || res.IsError || res.Content != c.want {
			t.Errorf("%s(%s) = %q (error %v, %v)\nwant %q", c.tool, c.args, res.Content, res.IsError, err, c.want)
		}
	}
}
