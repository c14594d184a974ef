package config

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/deepagents-go/deepagents/internal/safefile"
)

// CredentialSetting is one setting of a config file that decides where a
// provider's requests, and the API key that goes with them, are sent: a
// base_url, an api_key_env, a header, or a type that makes a built-in
// provider speak another protocol; also a db that is a PostgreSQL server
// (Provider empty), which would receive every conversation. A project's deepagents.toml comes with
// the repository, so such settings in it are only used when the user trusts
// the project (see CheckTrust).
type CredentialSetting struct {
	Path     string // the file
	Line     int    // where the setting is
	Provider string // the provider table, lower case
	Key      string // "base_url", "api_key_env", "type" or "headers.NAME"
	Value    string
}

// Describe says in plain words what the setting does, for the user who has
// to decide whether to trust it.
func (s CredentialSetting) Describe() string {
	switch {
	case s.Key == "db" && s.Provider == "":
		return fmt.Sprintf("stores every conversation of this project (messages, files, tool results) in the database at %s", s.Value)
	case s.Key == "base_url":
		return fmt.Sprintf("sends provider %s's requests, with its API key, to %s", s.Provider, s.Value)
	case s.Key == "api_key_env":
		return fmt.Sprintf("sends the value of the environment variable %s as provider %s's API key", s.Value, s.Provider)
	case s.Key == "type":
		return fmt.Sprintf("makes the built-in provider %s speak the %s protocol, so its key goes to another service", s.Provider, s.Value)
	case strings.HasPrefix(s.Key, "headers."):
		return fmt.Sprintf("adds the header %s to every request of provider %s", strings.TrimPrefix(s.Key, "headers."), s.Provider)
	}
	return fmt.Sprintf("sets %s of provider %s", s.Key, s.Provider)
}

func (c *Config) credential(path string, line int, provider, key, value string) {
	c.Credentials = append(c.Credentials, CredentialSetting{Path: path, Line: line, Provider: provider, Key: key, Value: value})
}

// ProjectCredentials returns the credential settings of the project file
// (see CredentialSetting), in file order.
func (c *Config) ProjectCredentials() []CredentialSetting {
	var out []CredentialSetting
	for _, s := range c.Credentials {
		if c.projectPath != "" && s.Path == c.projectPath {
			out = append(out, s)
		}
	}
	slices.SortStableFunc(out, func(a, b CredentialSetting) int { return cmp.Compare(a.Line, b.Line) })
	return out
}

// UntrustedError refuses a project config file that would redirect
// credentials while the user has not trusted it. Its text lists every such
// setting with its line and what it would do.
type UntrustedError struct {
	File     string
	Settings []CredentialSetting
}

func (e *UntrustedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s is a project file you have not trusted, and it decides where requests and API keys go:", e.File)
	for _, s := range e.Settings {
		fmt.Fprintf(&b, "\n  %s:%d: %s = %q %s", s.Path, s.Line, s.Key, s.Value, s.Describe())
	}
	return b.String()
}

// CheckTrust returns an *UntrustedError when the project file sets where
// credentials go and is not trusted: trusted is the user's explicit
// approval for this run; otherwise store must hold an approval of this
// file with its current contents. Without such settings any project file
// is fine. The user's own config file is always trusted.
func (c *Config) CheckTrust(store TrustStore, trusted bool) error {
	sets := c.ProjectCredentials()
	if len(sets) == 0 || trusted {
		return nil
	}
	ok, err := store.Trusted(c.ProjectFile, c.ProjectHash)
	if err != nil {
		return err
	}
	if ok {
		return nil
	}
	return &UntrustedError{File: c.ProjectFile, Settings: sets}
}

// TrustStore is the user's record of trusted project config files: for each
// file (by absolute path) the SHA-256 of the contents that were approved,
// so that editing the file needs a new approval. It is a JSON file,
// normally ~/.deepagents/trusted.json.
type TrustStore struct {
	Path string
}

// UserTrustStore is the trust store under homeDir.
func UserTrustStore(homeDir string) TrustStore {
	return TrustStore{Path: filepath.Join(homeDir, ".deepagents", "trusted.json")}
}

type trustFile struct {
	Projects map[string]trustEntry `json:"projects"`
}

type trustEntry struct {
	SHA256    string    `json:"sha256"`
	TrustedAt time.Time `json:"trusted_at"`
}

func (s TrustStore) read() (trustFile, error) {
	var tf trustFile
	data, err := safefile.Read(s.Path, MaxFileSize)
	if errors.Is(err, fs.ErrNotExist) {
		return trustFile{Projects: map[string]trustEntry{}}, nil
	}
	if err != nil {
		return tf, &FileError{Path: s.Path, Msg: "cannot read the trusted projects: " + pathErrText(err)}
	}
	if err := json.Unmarshal(data, &tf); err != nil {
		return tf, &FileError{Path: s.Path, Msg: fmt.Sprintf("the trusted projects file is not valid JSON (%v); delete it to start afresh", err)}
	}
	if tf.Projects == nil {
		tf.Projects = map[string]trustEntry{}
	}
	return tf, nil
}

// Trusted reports whether file was approved with contents of hash hash.
func (s TrustStore) Trusted(file, hash string) (bool, error) {
	tf, err := s.read()
	if err != nil {
		return false, err
	}
	e, ok := tf.Projects[file]
	return ok && hash != "" && e.SHA256 == hash, nil
}

// Add records the approval of file with contents of hash hash, replacing
// an earlier one. The store is written whole to a temporary file and
// renamed, readable by the user only.
func (s TrustStore) Add(file, hash string) error {
	tf, err := s.read()
	if err != nil {
		return err
	}
	tf.Projects[file] = trustEntry{SHA256: hash, TrustedAt: time.Now().UTC().Truncate(time.Second)}
	data, err := json.MarshalIndent(tf, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(s.Path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(s.Path), ".trusted-*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), s.Path)
}
