package main

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// A thread remembers the flags its turns were started with (remember.go),
// and the next command on it takes them: --root, --no-sandbox, --allow
// execute, --mcp-config, the directory to work in. Those are the user's
// consent, so a command takes them only from a record the user's own
// deepagents wrote: each record is signed with a key kept in the user's
// ~/.deepagents (turnKeyFile), which no database holds. A thread database
// from elsewhere (committed to a cloned project, copied from another
// machine or user, or forged) has records no key of this user signed, and
// its flags are shown, not taken.

// turnKeyFile is the file, in ~/.deepagents, of the key that signs the
// records of how a thread's turns were started.
const turnKeyFile = "thread.key"

// sigKey is the checkpoint metadata key of a turn record's signature.
const sigKey = "deepagents.sig"

// maxTurnKeyFile caps what is read of the key file.
const maxTurnKeyFile = 1 << 10

// turnKeyPath is the key file under home ("" without a home directory).
func turnKeyPath(home string) string {
	if home == "" {
		return ""
	}
	return filepath.Join(home, deepagentsDir, turnKeyFile)
}

// errNoTurnKey says that the user has no key yet: no record was signed.
var errNoTurnKey = errors.New("no key yet")

// readTurnKey reads the user's key; errNoTurnKey when there is none.
func readTurnKey(home string) ([]byte, error) {
	p := turnKeyPath(home)
	if p == "" {
		return nil, errors.New("no home directory")
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errNoTurnKey
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return nil, err
	} else if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", p)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxTurnKeyFile))
	if err != nil {
		return nil, err
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(key) < 32 {
		return nil, fmt.Errorf("%s does not hold a key (64 hex digits); delete it to have a new one made (the flags of the threads signed with it are then no longer taken)", p)
	}
	return key, nil
}

// turnKey returns the user's key, making it when there is none: 32 random
// bytes in a file only the user can read. Two commands making it at once
// end with the same key (the file is linked into place, never replaced).
func turnKey(home string) ([]byte, error) {
	key, err := readTurnKey(home)
	if !errors.Is(err, errNoTurnKey) {
		return key, err
	}
	p := turnKeyPath(home)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return nil, err
	}
	var b [32]byte
	_, _ = rand.Read(b[:])
	tmp, err := os.CreateTemp(filepath.Dir(p), turnKeyFile+".new-*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(hex.EncodeToString(b[:]) + "\n"); err != nil {
		tmp.Close()
		return nil, err
	}
	if err := tmp.Close(); err != nil {
		return nil, err
	}
	if err := os.Link(tmp.Name(), p); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, err
	}
	return readTurnKey(home)
}

// turnSignature signs what a turn record says: its thread, flags,
// directory and notices (each absent or its value).
func turnSignature(key []byte, thread string, md map[string]string) string {
	field := func(k string) *string {
		if v, ok := md[k]; ok {
			return &v
		}
		return nil
	}
	msg, _ := json.Marshal([]any{"deepagents turn record 1", thread, field(settingsKey), field(dirKey), field(noticesKey)})
	mac := hmac.New(sha256.New, key)
	mac.Write(msg)
	return hex.EncodeToString(mac.Sum(nil))
}

// signTurn adds to md the signature of its record under the user's key
// (made when missing). It fails, leaving md unsigned, when there is no key
// to be had.
func signTurn(home, thread string, md map[string]string) error {
	key, err := turnKey(home)
	if err != nil {
		return err
	}
	md[sigKey] = turnSignature(key, thread, md)
	return nil
}

// signedByUser says whether the record md of thread was signed with the
// user's key.
func signedByUser(home, thread string, md map[string]string) bool {
	sig, ok := md[sigKey]
	if !ok {
		return false
	}
	key, err := readTurnKey(home)
	if err != nil {
		return false
	}
	want := turnSignature(key, thread, md)
	return hmac.Equal([]byte(sig), []byte(want))
}
