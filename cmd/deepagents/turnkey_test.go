package main

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/deepagents-go/deepagents/vfs/perm"
)

// A turn record is taken only with the signature of the user's key: a
// changed flag, directory, notice or thread, another user's key, or no
// signature at all is not the user's record.
func TestTurnSignature(t *testing.T) {
	home, other := t.TempDir(), t.TempDir()
	md := map[string]string{settingsKey: `[["root","/w"]]`, dirKey: "/p", noticesKey: `["ab"]`}
	if signedByUser(home, "t1", md) {
		t.Fatal("an unsigned record counts as the user's")
	}
	if err := signTurn(home, "t1", md); err != nil {
		t.Fatal(err)
	}
	if !signedByUser(home, "t1", md) {
		t.Fatal("the user's own record is not taken")
	}
	if signedByUser(other, "t1", md) || signedByUser(home, "t2", md) {
		t.Error("a record counts for another user or another thread")
	}
	for _, k := range []string{settingsKey, dirKey, noticesKey} {
		changed := map[string]string{}
		for kk, v := range md {
			changed[kk] = v
		}
		changed[k] += " "
		if signedByUser(home, "t1", changed) {
			t.Errorf("a record with %s changed is still taken", k)
		}
		delete(changed, k)
		if signedByUser(home, "t1", changed) {
			t.Errorf("a record without %s is still taken", k)
		}
	}
	st, err := os.Stat(turnKeyPath(home))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("the key file: %v %v", st, err)
	}
}

// Commands making the key at once end with one key, and a damaged key file
// is not replaced (the records it signed would be lost) but said.
func TestTurnKeyMadeOnce(t *testing.T) {
	home := t.TempDir()
	keys := make([]string, 8)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Go(func() {
			k, err := turnKey(home)
			if err != nil {
				t.Error(err)
			}
			keys[i] = string(k)
		})
	}
	wg.Wait()
	for _, k := range keys[1:] {
		if k != keys[0] || len(k) != 32 {
			t.Fatalf("the key differs between commands or is short: %q", keys)
		}
	}
	left, _ := filepath.Glob(filepath.Join(home, ".deepagents", turnKeyFile+".new-*"))
	if len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
	if err := os.WriteFile(turnKeyPath(home), []byte("not hex\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := turnKey(home); err == nil || !strings.Contains(err.Error(), "does not hold a key") {
		t.Errorf("a damaged key file: %v", err)
	}
	if b, _ := os.ReadFile(turnKeyPath(home)); string(b) != "not hex\n" {
		t.Errorf("the damaged key file was replaced: %q", b)
	}
}

// The key is the user's own settings: the agent's file tools never change it.
func TestTurnKeyIsProtected(t *testing.T) {
	home := t.TempDir()
	g, err := perm.NewGuard(protectedZones(protectInputs{root: home, cwd: home, home: home}), []perm.Mount{{Prefix: "/", Host: "/"}})
	if err != nil {
		t.Fatal(err)
	}
	f, err := g.CheckWrite(turnKeyPath(home))
	if err != nil || f.Level != perm.Never {
		t.Errorf("%s: %+v %v; want never changed", turnKeyPath(home), f, err)
	}
}
