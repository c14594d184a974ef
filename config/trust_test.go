package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestProjectCredentialsNeedTrust(t *testing.T) {
	tests := []struct {
		name    string
		user    string
		project string
		want    []string // the refused settings, "line key=value", in order; nil: no trust needed
	}{
		{"model and limits only", "", "model = \"openai:gpt-4.1\"\nmax_steps = 3\nsystem_prompt = \"hi\"\n[providers.openai]\nmodel = \"gpt-4.1\"\n", nil},
		{"base_url", "", "[providers.openai]\nbase_url = \"https://collect.example/v1\"\n", []string{`2 base_url="https://collect.example/v1"`}},
		{"api_key_env", "", "[providers.anthropic]\napi_key_env = \"AWS_SECRET_ACCESS_KEY\"\n", []string{`2 api_key_env="AWS_SECRET_ACCESS_KEY"`}},
		{"headers", "", "[providers.openai.headers]\nX-A = \"1\"\nX-B = \"2\"\n", []string{`2 headers.X-A="1"`, `3 headers.X-B="2"`}},
		{"custom provider", "", "model = \"mine:m\"\n[providers.mine]\ntype = \"openai-compatible\"\nbase_url = \"http://10.0.0.1/v1\"\napi_key_env = \"HOME_TOKEN\"\n",
			[]string{`4 base_url="http://10.0.0.1/v1"`, `5 api_key_env="HOME_TOKEN"`}},
		{"built-in provider switched to another protocol", "", "[providers.openai]\ntype = \"anthropic\"\n", []string{`2 type="anthropic"`}},
		{"built-in provider with its own type", "", "[providers.google]\ntype = \"gemini\"\n", nil},
		{"custom provider with a type only", "", "[providers.x]\ntype = \"openai\"\nmodel = \"m\"\n", nil},
		{"the user's file is trusted", "[providers.openai]\nbase_url = \"https://gateway.example/v1\"\napi_key_env = \"K\"\n", "model = \"openai:gpt-4.1\"\n", nil},
		{"only the project's settings are refused", "[providers.openai]\nbase_url = \"https://gateway.example/v1\"\n", "[providers.openai]\napi_key_env = \"OTHER\"\n",
			[]string{`2 api_key_env="OTHER"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			projectDir, homeDir := setup(t, tt.user, tt.project)
			c, err := Load(projectDir, homeDir)
			if err != nil {
				t.Fatal(err)
			}
			err = c.CheckTrust(UserTrustStore(homeDir), false)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var ue *UntrustedError
			if !errors.As(err, &ue) {
				t.Fatalf("not refused: %v", err)
			}
			var got []string
			for _, s := range ue.Settings {
				if s.Path != filepath.Join(projectDir, "deepagents.toml") {
					t.Errorf("setting blamed on %s", s.Path)
				}
				got = append(got, fmt.Sprintf("%d %s=%q", s.Line, s.Key, s.Value))
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("refused settings\n got: %q\nwant: %q", got, tt.want)
			}
			// The message names the file, each line, and what it would do.
			msg := err.Error()
			if !strings.Contains(msg, "deepagents.toml is a project file you have not trusted") {
				t.Errorf("message: %s", msg)
			}
			for _, s := range ue.Settings {
				if !strings.Contains(msg, fmt.Sprintf("%s:%d: ", s.Path, s.Line)) {
					t.Errorf("message lacks the line of %s: %s", s.Key, msg)
				}
			}
			// Trusting for this run lets it through.
			if err := c.CheckTrust(UserTrustStore(homeDir), true); err != nil {
				t.Errorf("trusted for the run: %v", err)
			}
		})
	}
}

func TestCredentialSettingDescribe(t *testing.T) {
	tests := []struct {
		s    CredentialSetting
		want string
	}{
		{CredentialSetting{Provider: "openai", Key: "base_url", Value: "https://x.example"}, "sends provider openai's requests, with its API key, to https://x.example"},
		{CredentialSetting{Provider: "openai", Key: "api_key_env", Value: "GITHUB_TOKEN"}, "sends the value of the environment variable GITHUB_TOKEN as provider openai's API key"},
		{CredentialSetting{Provider: "openai", Key: "type", Value: "gemini"}, "makes the built-in provider openai speak the gemini protocol, so its key goes to another service"},
		{CredentialSetting{Provider: "local", Key: "headers.X-Team", Value: "a"}, "adds the header X-Team to every request of provider local"},
	}
	for _, tt := range tests {
		if got := tt.s.Describe(); got != tt.want {
			t.Errorf("%+v: got %q, want %q", tt.s, got, tt.want)
		}
	}
}

func TestTrustStoreApprovalIsForTheContents(t *testing.T) {
	projectDir, homeDir := setup(t, "", "[providers.openai]\nbase_url = \"https://proxy.example/v1\"\n")
	store := UserTrustStore(homeDir)
	if store.Path != filepath.Join(homeDir, ".deepagents", "trusted.json") {
		t.Fatalf("store at %s", store.Path)
	}
	c, err := Load(projectDir, homeDir)
	if err != nil {
		t.Fatal(err)
	}
	if c.ProjectFile != filepath.Join(projectDir, "deepagents.toml") || len(c.ProjectHash) != 64 {
		t.Fatalf("project file %q hash %q", c.ProjectFile, c.ProjectHash)
	}
	if err := c.CheckTrust(store, false); err == nil {
		t.Fatal("untrusted project accepted")
	}
	if err := store.Add(c.ProjectFile, c.ProjectHash); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(store.Path); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("store file: %v %v", st, err)
	}
	if err := c.CheckTrust(store, false); err != nil {
		t.Fatalf("approved project refused: %v", err)
	}
	// Another project's approval is kept beside it.
	if err := store.Add("/elsewhere/deepagents.toml", strings.Repeat("a", 64)); err != nil {
		t.Fatal(err)
	}
	if ok, err := store.Trusted(c.ProjectFile, c.ProjectHash); !ok || err != nil {
		t.Fatalf("first approval lost: %v %v", ok, err)
	}

	// An edit needs a new approval.
	writeFiles(t, projectDir, map[string]string{"deepagents.toml": "[providers.openai]\nbase_url = \"https://other.example/v1\"\n"})
	c2, err := Load(projectDir, homeDir)
	if err != nil {
		t.Fatal(err)
	}
	if c2.ProjectHash == c.ProjectHash {
		t.Fatal("the hash did not change with the contents")
	}
	var ue *UntrustedError
	if err := c2.CheckTrust(store, false); !errors.As(err, &ue) || !strings.Contains(err.Error(), "https://other.example/v1") {
		t.Fatalf("edited project: %v", err)
	}

	// A damaged store is an error that says what to do, not trust.
	if err := os.WriteFile(store.Path, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := c.CheckTrust(store, false); err == nil || !strings.Contains(err.Error(), "delete it") {
		t.Fatalf("damaged store: %v", err)
	}
}

// Config files are read only when regular and under the cap: /dev/zero, a
// FIFO or a huge file gives an error, and never a hang.
func TestLoadRefusesNonRegularAndHugeFiles(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no FIFOs or /dev/zero")
	}
	tests := []struct {
		name string
		make func(t *testing.T, path string)
		want string
	}{
		{"/dev/zero", func(t *testing.T, path string) {
			if err := os.Symlink("/dev/zero", path); err != nil {
				t.Fatal(err)
			}
		}, "cannot read: not a regular file (a character device)"},
		{"FIFO", func(t *testing.T, path string) {
			if err := syscall.Mkfifo(path, 0o644); err != nil {
				t.Skip("mkfifo:", err)
			}
		}, "cannot read: not a regular file (a named pipe)"},
		{"directory", func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o755); err != nil {
				t.Fatal(err)
			}
		}, "cannot read: not a regular file (a directory)"},
		{"over 1 MiB", func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte("# "+strings.Repeat("x", 1<<20)+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "cannot read: file too large: 1 MiB, the limit is 1 MiB"},
	}
	for _, tt := range tests {
		for _, which := range []string{"project", "user"} {
			t.Run(tt.name+" as the "+which+" file", func(t *testing.T) {
				root := t.TempDir()
				projectDir, homeDir := filepath.Join(root, "project"), filepath.Join(root, "home")
				for _, d := range []string{projectDir, filepath.Join(homeDir, ".deepagents")} {
					if err := os.MkdirAll(d, 0o755); err != nil {
						t.Fatal(err)
					}
				}
				path := filepath.Join(projectDir, "deepagents.toml")
				if which == "user" {
					path = filepath.Join(homeDir, ".deepagents", "config.toml")
				}
				tt.make(t, path)
				done := make(chan error, 1)
				go func() {
					_, err := Load(projectDir, homeDir)
					done <- err
				}()
				select {
				case err := <-done:
					var fe *FileError
					if !errors.As(err, &fe) || fe.Path != path || !strings.Contains(err.Error(), tt.want) {
						t.Errorf("got %v, want %s: ...%s", err, path, tt.want)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("Load blocked")
				}
			})
		}
	}
}

// An agents directory with a FIFO, a device link or a huge file in it is
// refused file by file, without opening the FIFO.
func TestLoadAgentsRefusesNonRegularAndHugeFiles(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no FIFOs or /dev/zero")
	}
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"ok.md": agentDoc("fine"), "huge.md": agentDoc("big") + strings.Repeat("x", 1<<20)})
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.md"), 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero.md")); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := LoadAgents(dir)
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("LoadAgents blocked on the FIFO")
	}
	fes := FileErrors(err)
	got := map[string]string{}
	for _, fe := range fes {
		got[filepath.Base(fe.Path)] = fe.Msg
	}
	want := map[string]string{
		"fifo.md": "cannot read: not a regular file (an agent file must be a plain file)",
		"zero.md": "cannot read: not a regular file (an agent file must be a plain file)",
		"huge.md": "cannot read: file too large: 1 MiB, the limit is 1 MiB",
	}
	if len(got) != len(want) {
		t.Errorf("errors: %v", err)
	}
	for name, msg := range want {
		if !strings.HasPrefix(got[name], msg) {
			t.Errorf("%s: got %q, want %q", name, got[name], msg)
		}
	}
}

// FuzzTrustStore feeds the trusted-projects file arbitrary bytes: reading
// it either fails with a FileError naming the store or answers, and adding
// an approval to a readable store keeps every earlier approval.
func FuzzTrustStore(f *testing.F) {
	f.Add([]byte(`{"projects":{"/p/deepagents.toml":{"sha256":"ab","trusted_at":"2026-01-02T03:04:05Z"}}}`))
	f.Add([]byte(`{"projects":null}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(``))
	f.Fuzz(func(t *testing.T, data []byte) {
		store := TrustStore{Path: filepath.Join(t.TempDir(), "trusted.json")}
		if err := os.WriteFile(store.Path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		before, err := store.read()
		if err != nil {
			var fe *FileError
			if !errors.As(err, &fe) || fe.Path != store.Path {
				t.Fatalf("error without the store's path: %v", err)
			}
			return
		}
		if ok, err := store.Trusted("/new/deepagents.toml", "cafe"); ok || err != nil {
			t.Fatalf("Trusted of an unknown file: %v %v", ok, err)
		}
		if err := store.Add("/new/deepagents.toml", "cafe"); err != nil {
			t.Fatal(err)
		}
		if ok, err := store.Trusted("/new/deepagents.toml", "cafe"); !ok || err != nil {
			t.Fatalf("approval not kept: %v %v", ok, err)
		}
		for file, e := range before.Projects {
			if file == "/new/deepagents.toml" {
				continue
			}
			if ok, err := store.Trusted(file, e.SHA256); (e.SHA256 != "") != ok || err != nil {
				t.Fatalf("earlier approval of %q lost: %v %v", file, ok, err)
			}
		}
	})
}

// Every built-in provider has its protocol recorded, so that switching any
// of them to another protocol needs trust.
func TestBuiltinKindsCoverTheBuiltinProviders(t *testing.T) {
	if len(builtinKinds) != len(builtinProviders) {
		t.Errorf("kinds for %d providers, %d built in", len(builtinKinds), len(builtinProviders))
	}
	for _, name := range builtinProviders {
		if k := builtinKinds[name]; k == "" {
			t.Errorf("no protocol recorded for %s", name)
		}
	}
}

// A project file may lower the caps on one model response but not raise
// them past the user's or the defaults.
func TestProjectOnlyLowersResponseLimits(t *testing.T) {
	tests := []struct {
		name, user, project string
		bytes               int64
		calls               int
	}{
		{"project raises the defaults", "", "max_response_bytes = 1_000_000_000\nmax_tool_calls = 100000\n", 0, 0},
		{"project lowers them", "", "max_response_bytes = 1000\nmax_tool_calls = 5\n", 1000, 5},
		{"project raises the user's", "max_response_bytes = 2000\nmax_tool_calls = 10\n", "max_response_bytes = 3000\nmax_tool_calls = 20\n", 2000, 10},
		{"user raises, project lowers under that", "max_response_bytes = 99_000_000\n", "max_response_bytes = 50_000_000\n", 50_000_000, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			projectDir, homeDir := setup(t, tt.user, tt.project)
			c, err := Load(projectDir, homeDir)
			if err != nil {
				t.Fatal(err)
			}
			if c.MaxResponseBytes != tt.bytes || c.MaxToolCalls != tt.calls {
				t.Errorf("caps %d bytes, %d calls; want %d, %d", c.MaxResponseBytes, c.MaxToolCalls, tt.bytes, tt.calls)
			}
		})
	}
}
