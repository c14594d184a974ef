package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/deepagents-go/deepagents/config"
)

// Caps on what `run` reads besides the config and agent files (which
// config.MaxFileSize caps): a system prompt file and a prompt piped on
// stdin.
const (
	maxSystemFile  = 4 << 20
	maxStdinPrompt = 16 << 20
)

// checkTrust refuses a project config file that decides where requests and
// API keys go, unless the user trusts it: with --trust-project (which also
// remembers the approval for the file's current contents), with an approval
// remembered earlier for exactly these contents, or by answering yes when
// asked on a terminal. The user's own config file needs no trust.
func checkTrust(cfg *config.Config, home string, f runFlags, stderr io.Writer) error {
	if len(cfg.ProjectCredentials()) == 0 {
		return nil
	}
	var store config.TrustStore
	if home != "" {
		store = config.UserTrustStore(home)
	}
	remember := func() error {
		if store.Path == "" {
			return nil // no home directory: trusted for this run only
		}
		if err := store.Add(cfg.ProjectFile, cfg.ProjectHash); err != nil {
			return fmt.Errorf("could not remember that you trust %s: %w", cfg.ProjectFile, err)
		}
		fmt.Fprintf(stderr, "deepagents: trusting %s as it is now (remembered in %s; after an edit it must be trusted again)\n", cfg.ProjectFile, store.Path)
		return nil
	}
	if f.trustProject {
		return remember()
	}
	err := cfg.CheckTrust(store, false)
	var ue *config.UntrustedError
	if !errors.As(err, &ue) {
		return err
	}
	if f.confirm != nil && f.confirm(termText(ue.Error())+"\nTrust this file as it is now, and use these settings? [y/N] ") {
		return remember()
	}
	return termError{fmt.Errorf("%w\nIf you trust this project, run again with --trust-project: the approval is remembered "+
		"for the file as it is now, and an edit to it needs a new one. Otherwise move these settings to ~/.deepagents/config.toml", err)}
}

// askOnTerminal asks question on w and reads a one-line answer from r, a
// byte at a time so that nothing after the line is consumed; "y" or "yes"
// is yes.
func askOnTerminal(r io.Reader, w io.Writer) func(string) bool {
	return func(question string) bool {
		fmt.Fprint(w, question)
		var line []byte
		var b [1]byte
		for len(line) < 64 {
			n, err := r.Read(b[:])
			if n == 1 {
				if b[0] == '\n' {
					break
				}
				line = append(line, b[0])
			}
			if err != nil {
				break
			}
		}
		switch strings.ToLower(strings.TrimSpace(string(line))) {
		case "y", "yes":
			return true
		}
		return false
	}
}

// endpointNotices prints, once per provider and before any call is made,
// where a provider's requests go when that is not its default endpoint or
// its key is not read from its usual variable. The line is always printed
// (even with --quiet): it is the one thing a user must see before a key
// leaves the machine.
type endpointNotices struct {
	w     io.Writer
	cfg   *config.Config
	log   *noticeLog // once per thread (notices.go)
	mu    sync.Mutex
	shown map[string]bool
}

func (n *endpointNotices) show(provider string, pc config.ProviderConfig) {
	if n == nil {
		return
	}
	line := endpointNotice(n.cfg, provider, pc, os.Getenv)
	n.mu.Lock()
	defer n.mu.Unlock()
	if line == "" || n.shown[line] {
		return
	}
	if n.shown == nil {
		n.shown = map[string]bool{}
	}
	n.shown[line] = true
	n.log.show(n.w, line)
}

// builtinKinds are the protocols of the built-in providers.
var builtinKinds = map[string]string{
	"openai": "openai", "anthropic": "anthropic", "gemini": "gemini", "google": "gemini",
	"ollama": "openai-compatible", "lmstudio": "openai-compatible", "vllm": "openai-compatible", "llamacpp": "openai-compatible",
}

// endpointNotice is the notice line for provider, or "" when its requests
// go to its default endpoint with its usual key. getenv reads the
// environment.
func endpointNotice(cfg *config.Config, provider string, pc config.ProviderConfig, getenv func(string) string) string {
	provider = strings.ToLower(provider)
	kind := pc.Type
	if kind == "" {
		kind = builtinKinds[provider]
	}
	url, from := pc.BaseURL, ""
	if url != "" {
		from = settingFile(cfg, provider, "base_url")
	} else {
		envs := map[string]string{"openai": "OPENAI_BASE_URL", "anthropic": "ANTHROPIC_BASE_URL", "gemini": "GOOGLE_GEMINI_BASE_URL"}
		env := envs[kind]
		if provider == "ollama" {
			env = "OLLAMA_HOST"
		}
		if env != "" {
			if v := strings.TrimSpace(getenv(env)); v != "" {
				url, from = v, "the environment variable "+env
			}
		}
	}
	keyEnv, keyFrom := pc.APIKeyEnv, ""
	if keyEnv != "" {
		keyFrom = settingFile(cfg, provider, "api_key_env")
	}
	if url == "" && keyEnv == "" {
		return ""
	}
	if keyEnv == "" {
		keyEnv = map[string]string{"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY", "gemini": "GEMINI_API_KEY"}[kind]
	}
	var b strings.Builder
	fmt.Fprintf(&b, "deepagents: provider %s sends its requests to ", provider)
	if url == "" {
		b.WriteString("its default endpoint")
	} else {
		fmt.Fprintf(&b, "%s (set by %s)", url, from)
	}
	if keyEnv == "" {
		b.WriteString(" with no API key")
	} else {
		fmt.Fprintf(&b, " with the API key in %s", keyEnv)
		if keyFrom != "" {
			fmt.Fprintf(&b, " (named by %s)", keyFrom)
		}
	}
	return b.String()
}

// settingFile names the file that set key of provider: the last one read,
// which is the one that won.
func settingFile(cfg *config.Config, provider, key string) string {
	file := "a config file"
	for _, s := range cfg.Credentials {
		if s.Provider == provider && s.Key == key {
			file = s.Path
		}
	}
	return file
}
