package config

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/deepagents-go/deepagents/approve"
	"github.com/deepagents-go/deepagents/internal/modelref"
	"github.com/deepagents-go/deepagents/internal/safefile"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/pricing"
	"github.com/deepagents-go/deepagents/subagent"
	"github.com/deepagents-go/deepagents/tokens"
	"github.com/deepagents-go/deepagents/vfs/perm"
)

// Config is the merged settings of the config files. The zero value of a
// field means "not set": the library's built-in default applies. The CLI
// applies its flags last by assigning the fields whose flags were given.
//
// The files are TOML (see example.toml in this package's directory):
//
//	model = "anthropic:claude-sonnet-4-5"
//	system_prompt = "You are terse."
//	max_steps = 40
//	max_parallel = 4
//	max_response_bytes = 33_554_432   # one model response: 32 MiB (default 16 MiB)
//	max_tool_calls = 200              # tool calls in one response (default 1,000)
//	max_cost = 5.00                   # each run's budget in US dollars
//	reasoning = "high"     # or a budget of thinking tokens: reasoning = 8000
//	db = "sqlite:.deepagents/state.db"   # or "postgres://user@host/db"
//	interrupt_on = { write_file = true, edit_file = ["approve", "reject"] }
//
//	[permissions]
//	rules = ["deny all /secrets/**", "deny write /etc/**"]
//
//	[protect]              # the user's own file only
//	allow = ["memory"]
//
//	[providers.openai]
//	api_key_env = "MY_OPENAI_KEY"
//
//	[providers.local]
//	type = "openai-compatible"
//	base_url = "http://localhost:8000/v1"
//	model = "qwen3"
//
//	[models."local:qwen3"]
//	context_window = 32768
//	max_output = 8192
//	caches = false
//
//	[prices."local:qwen3"]  # US dollars per million tokens
//	input = 0.20
//	output = 0.60
//
// Any other key is an error.
type Config struct {
	// Model is the agent's model, "provider:model" (key model). A file may
	// write just "provider" when [providers.NAME] sets a model; Load expands
	// it.
	Model string
	// SystemPrompt is the agent's own system prompt (key system_prompt).
	SystemPrompt string
	// MaxSteps bounds model calls per run, for the agent and each subagent
	// that sets none (key max_steps, at least 1).
	MaxSteps int
	// MaxParallel bounds concurrent tool calls in one step (key
	// max_parallel, at least 1).
	MaxParallel int
	// MaxResponseBytes and MaxToolCalls cap one model response (keys
	// max_response_bytes, max_tool_calls; at least 1): its text, reasoning
	// and tool-call arguments in bytes, and its tool calls. A response past
	// them ends the run with an error. Zero keeps the defaults (see
	// llm.ResponseLimits). A project file may lower them, never raise
	// them: a higher value there is ignored.
	MaxResponseBytes int64
	MaxToolCalls     int
	// Reasoning asks the agent's model to think before it answers (key
	// reasoning): an effort, reasoning = "low", "medium" or "high", or a
	// budget of thinking tokens, reasoning = 8000; or the same as a table,
	// [reasoning] with effort = "high" or budget_tokens = 8000 (one of
	// them). Nil when no file sets it. A project file's setting replaces
	// the user's whole.
	Reasoning *llm.ReasoningConfig
	// Database is where the CLI keeps its threads (key db): "sqlite:PATH",
	// a path relative to the file that sets it, or a "postgres://" URL.
	// Nil when no file sets it.
	Database *Database
	// InterruptOn names the tools whose calls wait for a person's decision
	// (key interrupt_on): a table of tool names, each true, false or a list
	// of the decisions allowed ("approve", "edit", "reject"). Nil when no
	// file sets it. A project file's table adds to the user's: it gates
	// more tools, and leaves the user's entries as they are (false or {}
	// in a project file lifts nothing).
	InterruptOn map[string]approve.Policy
	// ApprovalMode is who decides on the calls interrupt_on and the
	// sandbox settings make wait (key approval_mode): "manual" (the
	// person, the default), "accept-edits", "auto" or "yolo" (see
	// approve.Mode). Empty when no file sets it. A project file may only
	// set "manual": another mode would loosen the user's gates.
	ApprovalMode approve.Mode
	// Permissions are the rules of the [permissions] table (rules = [...],
	// see package vfs/perm): nil when no file sets it. The user's rules
	// come before the project's, so a project file cannot lift them.
	Permissions perm.Rules
	// UserInterruptOn and UserPermissions are the user's own file's
	// interrupt_on and rules alone (nil when it sets none): with the
	// command line's, the floor that no project file, and no project agent
	// file, can lower.
	UserInterruptOn map[string]approve.Policy
	UserPermissions perm.Rules
	// ProtectAllow are the kinds of protected places (ProtectGroups) whose
	// changes by the agent need no approval: the [protect] table's allow
	// list, which only the user's own file may set. Nil when it is not set.
	ProtectAllow []string
	// Background are the caps of background subagent runs and how many run
	// at once (the [background] table: max_running, max_steps, max_tokens,
	// max_cost, timeout); zero fields keep the defaults. A project file may lower
	// them, never raise them.
	Background subagent.BackgroundLimits
	// Providers are the [providers.NAME] tables by lower-case name; use
	// ProviderFor to look one up.
	Providers map[string]ProviderConfig
	// Models are the [models."provider:model"] tables, by "provider:model"
	// with the provider in lower case: a model's context window (key
	// context_window), output limit (max_output) and whether its provider
	// caches prompts (caches), over the built-in numbers or for a model
	// they do not know; use Profile to look one up. Tables merge by model,
	// field by field.
	Models map[string]tokens.Override
	// MaxCost is each run's budget in US dollars (key max_cost, more than
	// 0): a run stops cleanly once it and its subagents spent it, at the
	// Prices. 0 when no file sets it. A project file may lower it, never
	// raise it.
	MaxCost float64
	// Prices are the [prices."provider:model"] tables, by "provider:model"
	// with the provider in lower case: dollars per million input, output,
	// cache_read, cache_write and reasoning tokens, over the shipped list
	// prices or for a model they do not know; use Pricing for the table.
	// Tables merge by model, field by field; a project file may raise a
	// price, never lower one.
	Prices map[string]pricing.Override
	// Files are the config files read, lowest precedence first.
	Files []string
	// ProjectFile is the project's deepagents.toml when Load read one (an
	// absolute path), and ProjectHash the hex SHA-256 of the bytes read:
	// what a stored trust approval is checked against.
	ProjectFile string
	ProjectHash string
	// Credentials are the settings, in every file read, that decide where
	// requests and API keys go (see CredentialSetting). A project file's
	// are refused unless the user trusts it (CheckTrust).
	Credentials []CredentialSetting

	// at records where keys were set ("model", "providers.NAME", ...),
	// for errors found after merging.
	at map[string]origin
	// projectPath is the project file as named in Credentials.
	projectPath string
}

type origin struct {
	path string
	line int
}

// ProviderConfig is one [providers.NAME] table. Every field is optional for
// the built-in providers (anthropic, gemini, google, llamacpp, lmstudio,
// ollama, openai, vllm); any other name needs Type, and BaseURL when Type
// is "openai-compatible".
type ProviderConfig struct {
	// Type is the protocol the endpoint speaks (key type): "openai",
	// "anthropic", "gemini" or "openai-compatible". Empty for a built-in
	// provider means its own.
	Type string
	// BaseURL overrides the endpoint (key base_url), an http(s) URL.
	BaseURL string
	// APIKeyEnv names the environment variable holding the API key (key
	// api_key_env, e.g. "MY_OPENAI_KEY"); empty means the provider's
	// usual variable. Keys themselves never go in config files.
	APIKeyEnv string
	// Model is the provider's default model (key model), used when a model
	// reference names only the provider (see Config.ExpandModel).
	Model string
	// Headers are extra HTTP headers sent with every request (table
	// headers); they merge by name across files.
	Headers map[string]string
	// StreamToolCalls and ParallelToolCalls, when set to false (keys
	// stream_tool_calls, parallel_tool_calls), turn off what an
	// OpenAI-compatible server cannot do; nil leaves the default (on).
	StreamToolCalls   *bool
	ParallelToolCalls *bool
	// ReasoningBack, when set to false (key reasoning_back), leaves out of
	// requests the reasoning an OpenAI-compatible server returned in a
	// message field, which otherwise goes back with each message that
	// calls tools (DeepSeek's thinking mode needs it); nil leaves it on.
	ReasoningBack *bool
	// RequestTimeout bounds one attempt of a model call until its answer (or,
	// streaming, its first event) arrives; StreamIdleTimeout bounds the
	// silence between two events of a stream (keys request_timeout,
	// stream_idle_timeout: Go durations such as "90s" or "10m"). Zero keeps
	// the provider's default. A timeout is retried like a broken connection.
	RequestTimeout    time.Duration
	StreamIdleTimeout time.Duration
	// API picks the endpoint of an OpenAI or OpenAI-compatible provider (key
	// api): "chat" (Chat Completions, the default) or "responses" (the
	// Responses API, which OpenAI's reasoning models need to keep their
	// reasoning between tool calls).
	API string
}

// builtinProviders are the provider names that need no type; they are the
// providers package's built-in names (a test keeps them in step).
var builtinProviders = []string{"anthropic", "gemini", "google", "llamacpp", "lmstudio", "ollama", "openai", "vllm"}

// builtinKinds is the protocol each built-in provider speaks: a file that
// gives one another type sends that provider's key somewhere else.
var builtinKinds = map[string]string{
	"openai": "openai", "anthropic": "anthropic", "gemini": "gemini", "google": "gemini",
	"ollama": "openai-compatible", "lmstudio": "openai-compatible", "vllm": "openai-compatible", "llamacpp": "openai-compatible",
}

var (
	topKeys       = []string{"model", "system_prompt", "max_steps", "max_parallel", "max_response_bytes", "max_tool_calls", "reasoning", "db", "interrupt_on", "approval_mode", "permissions", "protect", "providers", "models", "max_cost", "prices", "background"}
	providerKeys  = []string{"type", "base_url", "api_key_env", "model", "headers", "stream_tool_calls", "parallel_tool_calls", "reasoning_back", "request_timeout", "stream_idle_timeout", "api"}
	providerTypes = []string{"openai", "anthropic", "gemini", "openai-compatible"}
	envNameRe     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	headerNameRe  = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
)

// ProjectFile and UserFile are the config files' places, under the project
// directory and the home directory.
const (
	ProjectFile = "deepagents.toml"
	UserFile    = ".deepagents/config.toml"
)

// MaxFileSize caps every config and agent file read: anything larger (or
// anything that is not a regular file, such as a FIFO or /dev/zero) is
// refused with a clear error instead of being read without bound.
const MaxFileSize = 1 << 20

// Load reads homeDir/.deepagents/config.toml, then projectDir/deepagents.toml,
// and merges them: a value set in the project file overrides the user's,
// field by field, and provider tables and their headers merge by name. A
// missing file is skipped; an empty homeDir skips the user file, an empty
// projectDir is the current directory. The merged config is then validated
// (Validate) and its model expanded (ExpandModel).
//
// Every problem in every file is reported, each as a *FileError with the
// file and line, joined with errors.Join.
func Load(projectDir, homeDir string) (*Config, error) {
	var paths []string
	if homeDir != "" {
		paths = append(paths, filepath.Join(homeDir, filepath.FromSlash(UserFile)))
	}
	paths = append(paths, filepath.Join(projectDir, ProjectFile))

	var files []file
	var errs []error
	projectHash := ""
	for i, path := range paths {
		data, err := safefile.Read(path, MaxFileSize)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, &FileError{Path: path, Msg: "cannot read: " + pathErrText(err)})
			continue
		}
		project := i == len(paths)-1
		if project {
			sum := sha256.Sum256(data)
			projectHash = hex.EncodeToString(sum[:])
		}
		files = append(files, file{path, data, project})
	}
	c, err := load(files)
	if len(errs) > 0 {
		return nil, errors.Join(append(errs, err)...)
	}
	if err != nil {
		return nil, err
	}
	if projectHash != "" {
		c.ProjectFile, c.ProjectHash = paths[len(paths)-1], projectHash
		c.projectPath = c.ProjectFile
		if abs, err := filepath.Abs(c.ProjectFile); err == nil {
			c.ProjectFile = abs
		}
	}
	return c, nil
}

type file struct {
	path string
	data []byte
	// project marks the project's file, which may not loosen anything;
	// the others are the user's own.
	project bool
}

// load is Load on the files' contents, lowest precedence first.
func load(files []file) (*Config, error) {
	c := &Config{}
	var errs []error
	for _, f := range files {
		fc, err := Parse(f.path, f.data)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if f.project && fc.ProtectAllow != nil {
			errs = append(errs, &FileError{Path: f.path, Line: fc.at["protect"].line,
				Msg: "[protect] can only be set in your own config file (~/.deepagents/config.toml): a project file cannot loosen what protects you from it"})
			continue
		}
		if f.project && fc.ApprovalMode != "" && fc.ApprovalMode != approve.Manual {
			errs = append(errs, &FileError{Path: f.path, Line: fc.at["approval_mode"].line,
				Msg: fmt.Sprintf("approval_mode %q can only be set in your own config file (~/.deepagents/config.toml) or with --approval-mode: a project file may only set \"manual\"", fc.ApprovalMode)})
			continue
		}
		if f.project {
			// A project may lower the caps on one response but never
			// raise them past the user's (or the defaults): a bigger cap
			// is room for an endless answer to fill memory.
			if fc.MaxResponseBytes > cmp.Or(c.MaxResponseBytes, llm.DefaultMaxResponseBytes) {
				fc.MaxResponseBytes = 0
			}
			if fc.MaxToolCalls > cmp.Or(c.MaxToolCalls, llm.DefaultMaxToolCalls) {
				fc.MaxToolCalls = 0
			}
			projectCost(c, fc)
			fc.Background = lowerBackground(c.Background, fc.Background)
		}
		if !f.project {
			if fc.InterruptOn != nil {
				c.UserInterruptOn = cloneApprovals(fc.InterruptOn)
			}
			if fc.Permissions != nil {
				c.UserPermissions = append(slices.Clip(c.UserPermissions), fc.Permissions...)
			}
		}
		c.Merge(fc)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	c.Model, _ = c.ExpandModel(c.Model) // Validate checked it
	return c, nil
}

// Parse reads one config file's settings; path names it in errors. It
// checks every key and value but not what only the merged config can tell
// (see Validate), so that files can be merged.
func Parse(path string, data []byte) (*Config, error) {
	c := &Config{Files: []string{path}}
	p := &problems{path: path}
	var raw map[string]any
	if _, err := toml.Decode(string(data), &raw); err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			p.add(pe.Position.Line, "%s", pe.Message)
		} else {
			p.add(1, "%v", err)
		}
		return nil, p.err()
	}
	lines := keyLines(data)
	at := func(path ...string) int { return lineOf(lines, path...) }
	for _, key := range slices.Sorted(maps.Keys(raw)) {
		v := raw[key]
		l := at(key)
		switch key {
		case "model":
			if s, ok := tomlString(p, key, v, l); ok {
				s = strings.TrimSpace(s)
				if msg := checkModelRef(s); msg != "" {
					p.add(l, "model %s", msg)
				}
				c.Model = s
				c.mark("model", path, l)
			}
		case "system_prompt":
			if s, ok := tomlString(p, key, v, l); ok {
				c.SystemPrompt = s
			}
		case "max_steps":
			c.MaxSteps = tomlPositiveInt(p, key, v, l)
		case "max_parallel":
			c.MaxParallel = tomlPositiveInt(p, key, v, l)
		case "max_response_bytes":
			c.MaxResponseBytes = int64(tomlPositiveInt(p, key, v, l))
		case "max_tool_calls":
			c.MaxToolCalls = tomlPositiveInt(p, key, v, l)
		case "reasoning":
			c.Reasoning = tomlReasoning(p, v, l, at)
		case "db":
			if s, ok := tomlString(p, key, v, l); ok {
				d, err := ParseDatabase(s, filepath.Dir(path))
				if err != nil {
					p.add(l, "db: %v", err)
					continue
				}
				c.Database = &d
				if d.Kind == Postgres {
					c.credential(path, l, "", "db", Redact(d.DSN))
				}
			}
		case "interrupt_on":
			c.InterruptOn = tomlInterruptOn(p, v, l, at)
		case "approval_mode":
			if s, ok := tomlString(p, key, v, l); ok {
				m, err := approve.ParseMode(s)
				if err != nil {
					p.add(l, "%v", err)
					continue
				}
				c.ApprovalMode = m
				c.mark("approval_mode", path, l)
			}
		case "permissions":
			c.Permissions = tomlPermissions(p, v, l, at)
		case "protect":
			c.ProtectAllow = tomlProtect(p, v, l, at)
			c.mark("protect", path, l)
		case "providers":
			c.Providers = parseProviders(p, v, l, at, path, c)
		case "models":
			c.Models = parseModels(p, v, l, at)
		case "max_cost":
			c.MaxCost = tomlMaxCost(p, v, l)
		case "prices":
			c.Prices = parsePrices(p, v, l, at)
		case "background":
			c.Background = tomlBackground(p, v, l, at)
		default:
			p.add(l, "%s", unknownKey(key, key, topKeys))
		}
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Config) mark(key, path string, line int) {
	if c.at == nil {
		c.at = map[string]origin{}
	}
	c.at[key] = origin{path, line}
}

func parseProviders(p *problems, v any, line int, at func(...string) int, path string, c *Config) map[string]ProviderConfig {
	tables, ok := v.(map[string]any)
	if !ok {
		p.add(line, "providers must be a table of [providers.NAME] tables, got %s", tomlKind(v))
		return nil
	}
	out := map[string]ProviderConfig{}
	written := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(tables)) {
		l := at("providers", name)
		if !nameRe.MatchString(name) {
			p.add(l, `provider name %q must be letters, digits, "_" and "-" only`, name)
			continue
		}
		low := strings.ToLower(name)
		if other, dup := written[low]; dup {
			p.add(l, "providers.%s and providers.%s differ only in case; provider names are not case-sensitive", other, name)
			continue
		}
		written[low] = name
		t, ok := tables[name].(map[string]any)
		if !ok {
			p.add(l, "providers.%s must be a table, got %s", name, tomlKind(tables[name]))
			continue
		}
		c.mark("providers."+low, path, l)
		var pc ProviderConfig
		for _, key := range slices.Sorted(maps.Keys(t)) {
			v := t[key]
			kl := at("providers", name, key)
			full := "providers." + name + "." + key
			switch key {
			case "type":
				if s, ok := tomlString(p, full, v, kl); ok {
					if !slices.Contains(providerTypes, s) {
						p.add(kl, "%s must be %s, got %q", full, quoteList(providerTypes, "or"), s)
					} else {
						pc.Type = s
						c.mark("providers."+low+".type", path, kl)
						if own, builtin := builtinKinds[low]; builtin && own != s {
							c.credential(path, kl, low, "type", s)
						}
					}
				}
			case "base_url":
				if s, ok := tomlString(p, full, v, kl); ok {
					s = strings.TrimSpace(s)
					u, err := url.Parse(s)
					if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
						p.add(kl, "%s must be an http:// or https:// URL, got %q", full, s)
					} else {
						pc.BaseURL = s
						c.credential(path, kl, low, "base_url", s)
					}
				}
			case "api_key_env":
				if s, ok := tomlString(p, full, v, kl); ok {
					if !envNameRe.MatchString(s) {
						p.add(kl, `%s must name an environment variable (like "MY_OPENAI_KEY"), got %q; the key itself does not belong in a config file`, full, s)
					} else {
						pc.APIKeyEnv = s
						c.credential(path, kl, low, "api_key_env", s)
					}
				}
			case "model":
				if s, ok := tomlString(p, full, v, kl); ok {
					if s = strings.TrimSpace(s); s == "" {
						p.add(kl, "%s must not be empty", full)
					}
					pc.Model = s
				}
			case "headers":
				pc.Headers = parseHeaders(p, v, kl, at, name)
				for _, h := range slices.Sorted(maps.Keys(pc.Headers)) {
					c.credential(path, at("providers", name, "headers", h), low, "headers."+h, pc.Headers[h])
				}
			case "stream_tool_calls", "parallel_tool_calls", "reasoning_back":
				b, ok := v.(bool)
				if !ok {
					p.add(kl, "%s must be true or false, got %s", full, tomlKind(v))
					continue
				}
				switch key {
				case "stream_tool_calls":
					pc.StreamToolCalls = &b
				case "parallel_tool_calls":
					pc.ParallelToolCalls = &b
				default:
					pc.ReasoningBack = &b
				}
			case "api":
				if s, ok := tomlString(p, full, v, kl); ok {
					switch s {
					case "chat", "responses":
						pc.API = s
					default:
						p.add(kl, `%s must be "chat" (Chat Completions) or "responses" (the Responses API), got %q`, full, s)
					}
				}
			case "request_timeout", "stream_idle_timeout":
				d, ok := tomlDuration(p, full, v, kl)
				if !ok {
					continue
				}
				if key == "request_timeout" {
					pc.RequestTimeout = d
				} else {
					pc.StreamIdleTimeout = d
				}
			case "api_key", "apikey", "key", "token":
				p.add(kl, `unknown key %q: API keys do not belong in config files; put the key in an environment variable and name it with api_key_env`, full)
			default:
				p.add(kl, "%s", unknownKey(full, key, providerKeys))
			}
		}
		out[low] = pc
	}
	return out
}

func parseHeaders(p *problems, v any, line int, at func(...string) int, provider string) map[string]string {
	t, ok := v.(map[string]any)
	if !ok {
		p.add(line, "providers.%s.headers must be a table of header names and values, got %s", provider, tomlKind(v))
		return nil
	}
	out := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(t)) {
		l := at("providers", provider, "headers", name)
		full := fmt.Sprintf("providers.%s.headers.%s", provider, name)
		if !headerNameRe.MatchString(name) {
			p.add(l, "%q is not an HTTP header name", name)
			continue
		}
		if s, ok := tomlString(p, full, t[name], l); ok {
			if strings.ContainsAny(s, "\r\n\x00") {
				p.add(l, "%s must be one line", full)
				continue
			}
			out[name] = s
		}
	}
	return out
}

func tomlKind(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case bool:
		return "a boolean"
	case map[string]any:
		return "a table"
	case []any, []map[string]any:
		return "an array"
	}
	return "a date"
}

func tomlString(p *problems, key string, v any, line int) (string, bool) {
	s, ok := v.(string)
	if !ok {
		p.add(line, "%s must be a string, got %s", key, tomlKind(v))
	}
	return s, ok
}

// tomlDuration reads a positive Go duration given as a string ("90s").
func tomlDuration(p *problems, key string, v any, line int) (time.Duration, bool) {
	s, ok := v.(string)
	if !ok {
		hint := ""
		if _, isNum := v.(int64); isNum {
			hint = `; write it as a string with a unit, like "90s"`
		}
		p.add(line, `%s must be a duration like "90s" or "5m", got %s%s`, key, tomlKind(v), hint)
		return 0, false
	}
	d := positiveDuration(p, key, s, line)
	return d, d > 0
}

func tomlPositiveInt(p *problems, key string, v any, line int) int {
	n, ok := v.(int64)
	switch {
	case !ok:
		p.add(line, "%s must be a whole number, got %s", key, tomlKind(v))
	case n < 1:
		p.add(line, "%s must be at least 1, got %d", key, n)
	case n > math.MaxInt32:
		p.add(line, "%s is too large: %d", key, n)
	default:
		return int(n)
	}
	return 0
}

// Merge applies other over c: every field other sets replaces c's, but
// rules are appended to c's and interrupt_on entries added for the tools c
// does not gate (other cannot lift or change c's); provider tables merge
// field by field and their headers by name, and other's files are appended
// to c's.
func (c *Config) Merge(other *Config) {
	if other == nil {
		return
	}
	if other.Model != "" {
		c.Model = other.Model
	}
	if other.SystemPrompt != "" {
		c.SystemPrompt = other.SystemPrompt
	}
	if other.MaxSteps != 0 {
		c.MaxSteps = other.MaxSteps
	}
	if other.MaxParallel != 0 {
		c.MaxParallel = other.MaxParallel
	}
	if other.MaxResponseBytes != 0 {
		c.MaxResponseBytes = other.MaxResponseBytes
	}
	if other.MaxToolCalls != 0 {
		c.MaxToolCalls = other.MaxToolCalls
	}
	c.Background = mergeBackground(c.Background, other.Background)
	if other.Reasoning != nil {
		r := *other.Reasoning
		c.Reasoning = &r
	}
	if other.Database != nil {
		d := *other.Database
		c.Database = &d
	}
	if other.InterruptOn != nil {
		merged := cloneApprovals(other.InterruptOn)
		for name, a := range cloneApprovals(c.InterruptOn) {
			merged[name] = a
		}
		c.InterruptOn = merged
	}
	if other.ApprovalMode != "" {
		c.ApprovalMode = other.ApprovalMode
	}
	if other.ProtectAllow != nil {
		c.ProtectAllow = slices.Clone(other.ProtectAllow)
	}
	if other.Permissions != nil {
		c.Permissions = append(slices.Clip(c.Permissions), other.Permissions...)
	}
	if other.MaxCost > 0 {
		c.MaxCost = other.MaxCost
	}
	c.mergePrices(other)
	for key, o := range other.Models {
		if c.Models == nil {
			c.Models = map[string]tokens.Override{}
		}
		cur := c.Models[key]
		if o.Window > 0 {
			cur.Window = o.Window
		}
		if o.MaxOutput > 0 {
			cur.MaxOutput = o.MaxOutput
		}
		if o.Caches != nil {
			b := *o.Caches
			cur.Caches = &b
		}
		c.Models[key] = cur
	}
	for name, o := range other.Providers {
		name = strings.ToLower(name)
		if c.Providers == nil {
			c.Providers = map[string]ProviderConfig{}
		}
		cur := c.Providers[name]
		if o.Type != "" {
			cur.Type = o.Type
		}
		if o.BaseURL != "" {
			cur.BaseURL = o.BaseURL
		}
		if o.APIKeyEnv != "" {
			cur.APIKeyEnv = o.APIKeyEnv
		}
		if o.Model != "" {
			cur.Model = o.Model
		}
		if o.StreamToolCalls != nil {
			cur.StreamToolCalls = o.StreamToolCalls
		}
		if o.ParallelToolCalls != nil {
			cur.ParallelToolCalls = o.ParallelToolCalls
		}
		if o.ReasoningBack != nil {
			cur.ReasoningBack = o.ReasoningBack
		}
		if o.API != "" {
			cur.API = o.API
		}
		if o.RequestTimeout != 0 {
			cur.RequestTimeout = o.RequestTimeout
		}
		if o.StreamIdleTimeout != 0 {
			cur.StreamIdleTimeout = o.StreamIdleTimeout
		}
		if len(o.Headers) > 0 {
			h := maps.Clone(cur.Headers)
			if h == nil {
				h = map[string]string{}
			}
			maps.Copy(h, o.Headers)
			cur.Headers = h
		}
		c.Providers[name] = cur
	}
	c.Files = append(c.Files, other.Files...)
	c.Credentials = append(c.Credentials, other.Credentials...)
	for k, o := range other.at {
		c.mark(k, o.path, o.line)
	}
}

// Validate checks what only the merged config can tell: that every provider
// not built in has a type, that an "openai-compatible" one has a base_url,
// that the model's provider is built in or declared, and that a model
// naming only a provider has that provider's default model. Its errors are *FileErrors where the offending table or key was
// written.
func (c *Config) Validate() error {
	var fes []*FileError
	add := func(key, format string, args ...any) {
		o := c.at[key]
		if o.path == "" {
			o = origin{path: "config", line: 0}
		}
		fes = append(fes, &FileError{Path: o.path, Line: o.line, Msg: fmt.Sprintf(format, args...)})
	}
	for _, name := range slices.Sorted(maps.Keys(c.Providers)) {
		pc := c.Providers[name]
		builtin := slices.Contains(builtinProviders, name)
		switch {
		case pc.Type == "" && !builtin:
			msg := fmt.Sprintf(`provider %q is not built in, so it needs a type: %s`, name, quoteList(providerTypes, "or"))
			if s := suggest(name, builtinProviders); s != "" {
				msg += fmt.Sprintf(` (or did you mean the built-in %q?)`, s)
			}
			add("providers."+name, "%s", msg)
		case pc.Type == "openai-compatible" && pc.BaseURL == "" && !builtin:
			k := "providers." + name + ".type"
			if _, ok := c.at[k]; !ok {
				k = "providers." + name
			}
			add(k, `provider %q has type "openai-compatible" but no base_url`, name)
		}
	}
	if _, err := c.ExpandModel(c.Model); err != nil {
		add("model", "%v", err)
	} else if provider, _, _ := strings.Cut(c.Model, ":"); c.Model != "" {
		low := strings.ToLower(provider)
		if _, ok := c.Providers[low]; !ok && !slices.Contains(builtinProviders, low) {
			add("model", `model %q names the unknown provider %q: use one of %s, or declare it in a [providers.%s] table`,
				c.Model, provider, strings.Join(builtinProviders, ", "), low)
		}
	}
	return joinByFile(fes)
}

// joinByFile joins FileErrors ordered by file, then line.
func joinByFile(fes []*FileError) error {
	if len(fes) == 0 {
		return nil
	}
	slices.SortStableFunc(fes, func(a, b *FileError) int {
		if a.Path != b.Path {
			return strings.Compare(a.Path, b.Path)
		}
		return a.Line - b.Line
	})
	errs := make([]error, len(fes))
	for i, fe := range fes {
		errs[i] = fe
	}
	if len(errs) == 1 {
		return errs[0]
	}
	return errors.Join(errs...)
}

// ProviderFor returns the merged settings of the provider called name (not
// case-sensitive), the zero value when it is not configured. The Headers
// map is the caller's.
func (c *Config) ProviderFor(name string) ProviderConfig {
	if c == nil {
		return ProviderConfig{}
	}
	pc := c.Providers[strings.ToLower(name)]
	pc.Headers = maps.Clone(pc.Headers)
	return pc
}

// ExpandModel completes a model reference: "provider:model" and "" are
// returned as they are; a bare "provider" becomes "provider:MODEL" with
// the model of its [providers.NAME] table, and is an error when that sets
// none.
func (c *Config) ExpandModel(ref string) (string, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" || strings.Contains(ref, ":") {
		return ref, nil
	}
	if m := c.ProviderFor(ref).Model; m != "" {
		return ref + ":" + m, nil
	}
	if _, ok := c.Providers[strings.ToLower(ref)]; !ok {
		if hint := modelref.Suggest(ref); hint != "" {
			return "", fmt.Errorf("model %q is a model name without its provider: write %q", ref, hint)
		}
	}
	return "", fmt.Errorf(`model %q names only a provider, and [providers.%s] sets no default model: write "%s:MODEL"`,
		ref, strings.ToLower(ref), ref)
}
