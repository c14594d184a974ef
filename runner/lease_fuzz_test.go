package runner_test

import (
	"encoding/json"
	"testing"

	"github.com/deepagents-go/deepagents/runner"
)

// TurnRoot reads metadata other programs wrote: it never panics, and when
// the flags are a list of pairs it gives the last "root" among them.
func FuzzTurnRoot(f *testing.F) {
	f.Add(`[["root","/src/app"],["model","x"]]`, "", false)
	f.Add(`[["model","x"]]`, "/w", true)
	f.Add(`not json`, "", false)
	f.Add(`[["root"]]`, "", false)
	f.Fuzz(func(t *testing.T, flags, rootKey string, hasRootKey bool) {
		md := map[string]string{runner.FlagsKey: flags}
		if hasRootKey {
			md[runner.RootKey] = rootKey
		}
		root, known := runner.TurnRoot(md)
		if hasRootKey {
			if !known || root != rootKey {
				t.Fatalf("RootKey %q: got %q %v", rootKey, root, known)
			}
			return
		}
		var pairs [][2]string
		if json.Unmarshal([]byte(flags), &pairs) != nil {
			if known {
				t.Fatalf("unreadable flags %q are known (root %q)", flags, root)
			}
			return
		}
		want := ""
		for _, p := range pairs {
			if p[0] == "root" {
				want = p[1]
			}
		}
		if !known || root != want {
			t.Fatalf("flags %q: got %q %v, want %q", flags, root, known, want)
		}
	})
}
