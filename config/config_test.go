package config

import (
	"errors"
	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/approve"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/pricing"
	"github.com/deepagents-go/deepagents/providers"
	"github.com/deepagents-go/deepagents/tokens"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// cmpConfig leaves out the credential bookkeeping, which trust_test.go checks.
var cmpConfig = cmp.Options{cmpopts.IgnoreUnexported(Config{}), cmpopts.IgnoreFields(Config{}, "Credentials", "ProjectFile", "ProjectHash")}

func TestExampleConfig(t *testing.T) {
	data, err := os.ReadFile("example.toml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse("example.toml", data)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	want := &Config{
		Model:        "anthropic:claude-sonnet-4-5",
		SystemPrompt: "You are working on this repository. Prefer small, reviewed changes.\n",
		MaxSteps:     40,
		MaxParallel:  4,
		Reasoning:    &llm.ReasoningConfig{Effort: llm.EffortMedium},
		Database:     &Database{Kind: "sqlite", Path: ".deepagents/state.db"},
		InterruptOn: map[string]approve.Policy{
			"write_file": {},
			"edit_file":  {Allowed: []agent.DecisionType{"approve", "reject"}},
		},
		ApprovalMode: approve.Manual,
		Providers: map[string]ProviderConfig{
			"openai":    {APIKeyEnv: "MY_OPENAI_KEY", Model: "gpt-4.1", Headers: map[string]string{"OpenAI-Organization": "org-example"}},
			"anthropic": {BaseURL: "https://llm-gateway.example.com/anthropic"},
			"ollama":    {Model: "qwen3"},
			"local": {Type: "openai-compatible", BaseURL: "http://localhost:8000/v1", APIKeyEnv: "LOCAL_LLM_KEY",
				Model: "qwen3-coder", Headers: map[string]string{"X-Team": "platform"},
				StreamToolCalls: new(false), ParallelToolCalls: new(false),
				RequestTimeout: 5 * time.Minute, StreamIdleTimeout: 90 * time.Second, API: "chat"},
		},
		Models: map[string]tokens.Override{
			"local:qwen3-coder":           {Window: 131_072, MaxOutput: 16_384, Caches: new(false)},
			"anthropic:claude-sonnet-4-5": {Window: 1_000_000},
		},
		MaxCost: 5,
		Prices:  map[string]pricing.Override{"local:qwen3-coder": {Input: new(0.20), Output: new(0.60)}},
		Files:   []string{"example.toml"},
	}
	want.MaxResponseBytes, want.MaxToolCalls = 32<<20, 200
	if diff := cmp.Diff(want, c, cmpConfig); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

// setup writes the user and project files (skipped when empty) and returns
// the project and home directories.
func setup(t *testing.T, user, project string) (string, string) {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{}
	if user != "" {
		files["home/.deepagents/config.toml"] = user
	}
	if project != "" {
		files["project/deepagents.toml"] = project
	}
	writeFiles(t, root, files)
	return filepath.Join(root, "project"), filepath.Join(root, "home")
}

func TestLoadMerge(t *testing.T) {
	projectDir, homeDir := setup(t, `
model = "openai:gpt-4.1"
system_prompt = "user prompt"
max_steps = 10
max_parallel = 2

[providers.openai]
api_key_env = "MY_OPENAI_KEY"
headers = { A = "user", B = "user" }

[providers.local]
type = "openai-compatible"
base_url = "http://user.example/v1"

[providers.userOnly]
type = "anthropic"
`, `
model = "local"
max_steps = 30

[providers.openai]
model = "gpt-5"
headers.B = "project"
headers.C = "project"

[providers.LOCAL]
base_url = "http://project.example/v1"
model = "qwen3"
`)
	c, err := Load(projectDir, homeDir)
	if err != nil {
		t.Fatal(err)
	}
	want := &Config{
		Model:        "local:qwen3", // "local" expanded with the provider's model
		SystemPrompt: "user prompt",
		MaxSteps:     30,
		MaxParallel:  2,
		Providers: map[string]ProviderConfig{
			"openai":   {APIKeyEnv: "MY_OPENAI_KEY", Model: "gpt-5", Headers: map[string]string{"A": "user", "B": "project", "C": "project"}},
			"local":    {Type: "openai-compatible", BaseURL: "http://project.example/v1", Model: "qwen3"},
			"useronly": {Type: "anthropic"},
		},
		Files: []string{filepath.Join(homeDir, ".deepagents", "config.toml"), filepath.Join(projectDir, "deepagents.toml")},
	}
	if diff := cmp.Diff(want, c, cmpConfig); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}

	// Flags are applied last by assigning fields.
	c.MaxSteps = 5
	if c.MaxSteps != 5 {
		t.Fail()
	}

	if got := c.ProviderFor("OpenAI"); got.Model != "gpt-5" || got.APIKeyEnv != "MY_OPENAI_KEY" {
		t.Errorf("ProviderFor(OpenAI) = %+v", got)
	}
	h := c.ProviderFor("openai").Headers
	h["A"] = "changed"
	if c.ProviderFor("openai").Headers["A"] != "user" {
		t.Error("ProviderFor shares its Headers map")
	}
	if got := c.ProviderFor("gemini"); !cmp.Equal(got, ProviderConfig{}) {
		t.Errorf("unconfigured provider = %+v, want zero", got)
	}
	if got := (*Config)(nil).ProviderFor("openai"); !cmp.Equal(got, ProviderConfig{}) {
		t.Errorf("nil config = %+v", got)
	}
}

func TestLoadOnlyOneFile(t *testing.T) {
	projectDir, homeDir := setup(t, "", "max_parallel = 3\n")
	c, err := Load(projectDir, homeDir)
	if err != nil || c.MaxParallel != 3 || len(c.Files) != 1 {
		t.Errorf("project only: %+v, %v", c, err)
	}
	projectDir, homeDir = setup(t, "max_parallel = 7\n", "")
	c, err = Load(projectDir, homeDir)
	if err != nil || c.MaxParallel != 7 || len(c.Files) != 1 {
		t.Errorf("user only: %+v, %v", c, err)
	}
	c, err = Load(projectDir, "")
	if err != nil || c.MaxParallel != 0 || len(c.Files) != 0 {
		t.Errorf("no home: %+v, %v", c, err)
	}
	if c.ProviderFor("openai").Type != "" {
		t.Error("empty config has providers")
	}
}

func TestParseErrors(t *testing.T) {
	const path = "deepagents.toml"
	tests := []parseErrorCase{
		{"syntax", "model = \"a:b\"\nmax_steps = \n", `:2: expected value but found '\n' instead`},
		{"duplicate key", "model = \"a:b\"\n\nmodel = \"c:d\"\n", `:3: Key 'model' has already been defined.`},
		{"unknown top-level key", "model = \"a:b\"\nmax_step = 3\n", `:2: unknown key "max_step" (did you mean "max_steps"?)`},
		{"unknown key, no suggestion", "temperature = 0.2\n",
			`:1: unknown key "temperature" (known keys: model, system_prompt, max_steps, max_parallel, max_response_bytes, max_tool_calls, reasoning, db, interrupt_on, approval_mode, permissions, protect, providers, models, max_cost, prices, background)`},
		{"unknown provider key", "[providers.openai]\napi_key_env = \"K\"\n\nbase_ulr = \"http://x\"\n",
			`:4: unknown key "providers.openai.base_ulr" (did you mean "base_url"?)`},
		{"unknown key in a dotted table", "[providers]\nopenai.modle = \"x\"\n",
			`:2: unknown key "providers.openai.modle" (did you mean "model"?)`},
		{"api key in the file", "[providers.openai]\napi_key = \"sk-123\"\n",
			`:2: unknown key "providers.openai.api_key": API keys do not belong in config files; put the key in an environment variable and name it with api_key_env`},
		{"model type", "model = 4\n", `:1: model must be a string, got an integer`},
		{"model shape", "model = \"gpt 4\"\n", `:1: model must be "provider:model" (e.g. "openai:gpt-4.1"), got "gpt 4"`},
		{"model name without its provider", "model = \"gpt-4.1\"\n", `:1: model "gpt-4.1" is a model name without its provider: write "openai:gpt-4.1"`},
		{"max_steps type", "max_steps = \"10\"\n", `:1: max_steps must be a whole number, got a string`},
		{"max_steps float", "max_steps = 1.5\n", `:1: max_steps must be a whole number, got a float`},
		{"max_parallel zero", "\nmax_parallel = 0\n", `:2: max_parallel must be at least 1, got 0`},
		{"system_prompt type", "system_prompt = [\"a\"]\n", `:1: system_prompt must be a string, got an array`},
		{"providers not a table", "providers = \"openai\"\n", `:1: providers must be a table of [providers.NAME] tables, got a string`},
		{"provider not a table", "[providers]\nopenai = true\n", `:2: providers.openai must be a table, got a boolean`},
		{"provider name", "[providers.\"my proxy\"]\ntype = \"openai\"\n", `:1: provider name "my proxy" must be letters, digits, "_" and "-" only`},
		{"provider names by case", "[providers.Local]\ntype = \"openai\"\n[providers.local]\ntype = \"openai\"\n",
			`:3: providers.Local and providers.local differ only in case; provider names are not case-sensitive`},
		{"bad type", "[providers.local]\ntype = \"openai_compatible\"\n",
			`:2: providers.local.type must be "openai", "anthropic", "gemini" or "openai-compatible", got "openai_compatible"`},
		{"bad base_url", "[providers.local]\ntype = \"openai-compatible\"\nbase_url = \"localhost:8000\"\n",
			`:3: providers.local.base_url must be an http:// or https:// URL, got "localhost:8000"`},
		{"bad api_key_env", "[providers.openai]\napi_key_env = \"sk-abc123\"\n",
			`:2: providers.openai.api_key_env must name an environment variable (like "MY_OPENAI_KEY"), got "sk-abc123"; the key itself does not belong in a config file`},
		{"empty provider model", "[providers.openai]\nmodel = \"\"\n", `:2: providers.openai.model must not be empty`},
		{"headers type", "[providers.openai]\nheaders = [\"X: y\"]\n", `:2: providers.openai.headers must be a table of header names and values, got an array`},
		{"header value type", "[providers.openai.headers]\nX-Ok = \"y\"\nX-Retries = 3\n", `:3: providers.openai.headers.X-Retries must be a string, got an integer`},
		{"header name", "[providers.openai]\nheaders = { \"X Bad\" = \"y\" }\n", `:2: "X Bad" is not an HTTP header name`},
		{"header value lines", "[providers.openai.headers]\nX = \"\"\"a\nb\"\"\"\n", `:2: providers.openai.headers.X must be one line`},
		{"several, in line order", "max_parallel = -1\n[providers.openai]\ntype = 1\nmodle = \"x\"\n",
			":1: max_parallel must be at least 1, got -1\n:3: providers.openai.type must be a string, got an integer\n" +
				`:4: unknown key "providers.openai.modle" (did you mean "model"?)`},
	}
	checkParseErrors(t, path, tests)
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name, user, project, want string
	}{
		{"custom provider without type", "", "model = \"proxy:b\"\n\n[providers.proxy]\nbase_url = \"http://x\"\n",
			`P:3: provider "proxy" is not built in, so it needs a type: "openai", "anthropic", "gemini" or "openai-compatible"`},
		{"typo of a built-in", "", "[providers.opneai]\nmodel = \"x\"\n",
			`P:1: provider "opneai" is not built in, so it needs a type: "openai", "anthropic", "gemini" or "openai-compatible" (or did you mean the built-in "openai"?)`},
		{"openai-compatible without base_url", "[providers.local]\n\ntype = \"openai-compatible\"\n", "",
			`U:3: provider "local" has type "openai-compatible" but no base_url`},
		{"bare provider without a default model", "", "max_steps = 3\nmodel = \"openai\"\n",
			`P:2: model "openai" names only a provider, and [providers.openai] sets no default model: write "openai:MODEL"`},
		{"model name of a family without its provider", "", "model = \"claude-sonnet-4-5\"\n",
			`P:1: model "claude-sonnet-4-5" is a model name without its provider: write "anthropic:claude-sonnet-4-5"`},
		{"a provider named like a model family", "", "model = \"gpt-proxy\"\n[providers.gpt-proxy]\ntype = \"openai-compatible\"\nbase_url = \"http://x\"\n",
			`P:1: model "gpt-proxy" names only a provider, and [providers.gpt-proxy] sets no default model: write "gpt-proxy:MODEL"`},
		{"unknown provider in the model", "model = \"acme:m1\"\n", "",
			`U:1: model "acme:m1" names the unknown provider "acme": use one of anthropic, gemini, google, llamacpp, lmstudio, ollama, openai, vllm, or declare it in a [providers.acme] table`},
		{"errors in both files", "max_steps = 0\n", "[providers.x]\ntype = \"y\"\n",
			"U:1: max_steps must be at least 1, got 0\n" +
				`P:2: providers.x.type must be "openai", "anthropic", "gemini" or "openai-compatible", got "y"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			projectDir, homeDir := setup(t, tt.user, tt.project)
			_, err := Load(projectDir, homeDir)
			r := strings.NewReplacer("U:", filepath.Join(homeDir, ".deepagents", "config.toml")+":",
				"P:", filepath.Join(projectDir, "deepagents.toml")+":")
			if want := r.Replace(tt.want); err == nil || err.Error() != want {
				t.Errorf("error\n got: %v\nwant: %s", err, want)
			}
		})
	}
}

// A table missing its type in one file may get it from the other.
func TestLoadValidatesTheMerge(t *testing.T) {
	projectDir, homeDir := setup(t, "[providers.local]\ntype = \"openai-compatible\"\n", "[providers.local]\nbase_url = \"http://localhost:1/v1\"\n")
	c, err := Load(projectDir, homeDir)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.ProviderFor("local"); got.Type != "openai-compatible" || got.BaseURL != "http://localhost:1/v1" {
		t.Errorf("%+v", got)
	}
}

func TestLoadUnreadable(t *testing.T) {
	projectDir, homeDir := setup(t, "", "")
	if err := os.MkdirAll(filepath.Join(projectDir, "deepagents.toml"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Load(projectDir, homeDir)
	var fe *FileError
	if !errors.As(err, &fe) || fe.Path != filepath.Join(projectDir, "deepagents.toml") || !strings.Contains(fe.Msg, "cannot read") {
		t.Errorf("err = %v", err)
	}
}

func TestExpandModel(t *testing.T) {
	c := &Config{Providers: map[string]ProviderConfig{"ollama": {Model: "qwen3"}}}
	for ref, want := range map[string]string{
		"":                 "",
		"openai:gpt-4.1":   "openai:gpt-4.1",
		"ollama":           "ollama:qwen3",
		"Ollama":           "Ollama:qwen3",
		"ollama:llama3:8b": "ollama:llama3:8b",
	} {
		if got, err := c.ExpandModel(ref); err != nil || got != want {
			t.Errorf("ExpandModel(%q) = %q, %v; want %q", ref, got, err, want)
		}
	}
	if _, err := c.ExpandModel("openai"); err == nil {
		t.Error("openai without a default model: no error")
	}
}

func TestBuiltinProvidersMatchProvidersPackage(t *testing.T) {
	if diff := cmp.Diff(providers.Names(), builtinProviders); diff != "" {
		t.Errorf("builtinProviders differ from providers.Names() (-providers +config)\n%s", diff)
	}
}

func TestKeyLines(t *testing.T) {
	src := `# comment [not.a.table]
model = "a:b" # trailing
system_prompt = """
max_steps = 99
[fake.table]
"""
'quoted key' = 1
"esc\"aped" = 2
literal = '''
x = 1
'''
arr = [
  1, # comment ]
  { inner = 1, deep = { k = 2 } },
  "]",
]
dotted.path.key = 3

[providers.local] # c
type = "x"
headers = { "X-A" = "1", B = "two" }

[[array.tables]]
item = 1

[ spaced . "quoted" ]
k = 1
`
	lines := keyLines([]byte(src))
	for key, want := range map[string]int{
		"model": 2, "system_prompt": 3, "quoted key": 7, `esc"aped`: 8, "literal": 9, "arr": 12,
		"arr\x00inner": 14, "arr\x00deep\x00k": 14, "dotted": 17, "dotted\x00path\x00key": 17,
		"providers": 19, "providers\x00local": 19, "providers\x00local\x00type": 20,
		"providers\x00local\x00headers\x00X-A": 21, "providers\x00local\x00headers\x00B": 21,
		"array\x00tables": 23, "array\x00tables\x00item": 24, "spaced\x00quoted": 26, "spaced\x00quoted\x00k": 27,
	} {
		if got := lines[key]; got != want {
			t.Errorf("line of %q = %d, want %d", key, got, want)
		}
	}
	for _, fake := range []string{"max_steps", "fake", "x"} {
		if l, ok := lines[fake]; ok {
			t.Errorf("%q (inside a string) recorded at line %d", fake, l)
		}
	}
	if got := lineOf(lines, "providers", "local", "missing"); got != 19 {
		t.Errorf("lineOf falls back to the parent: %d", got)
	}
	if got := lineOf(lines, "nothing"); got != 1 {
		t.Errorf("lineOf unknown = %d", got)
	}
}

func TestCapabilitySwitches(t *testing.T) {
	dir := t.TempDir()
	user := filepath.Join(dir, "home")
	if err := os.MkdirAll(filepath.Join(user, ".deepagents"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(user, ".deepagents", "config.toml"), []byte("[providers.ollama]\nstream_tool_calls = false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "deepagents.toml"), []byte("[providers.ollama]\nparallel_tool_calls = false\nreasoning_back = false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(dir, user)
	if err != nil {
		t.Fatal(err)
	}
	pc := c.ProviderFor("ollama")
	if pc.StreamToolCalls == nil || *pc.StreamToolCalls || pc.ParallelToolCalls == nil || *pc.ParallelToolCalls || pc.ReasoningBack == nil || *pc.ReasoningBack {
		t.Errorf("switches did not merge: %+v", pc)
	}
	if _, err := Parse("x.toml", []byte("[providers.ollama]\nstream_tool_calls = \"no\"\n")); err == nil || !strings.Contains(err.Error(), "x.toml:2: providers.ollama.stream_tool_calls must be true or false") {
		t.Errorf("bad switch: %v", err)
	}
}

func TestProviderTimeouts(t *testing.T) {
	c, err := Parse("x.toml", []byte("[providers.openai]\nrequest_timeout = \"90s\"\nstream_idle_timeout = \"2m\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if pc := c.ProviderFor("openai"); pc.RequestTimeout != 90*time.Second || pc.StreamIdleTimeout != 2*time.Minute {
		t.Errorf("timeouts = %v, %v", pc.RequestTimeout, pc.StreamIdleTimeout)
	}
	for src, want := range map[string]string{
		"request_timeout = 90":       `x.toml:2: providers.openai.request_timeout must be a duration like "90s" or "5m", got an integer; write it as a string with a unit, like "90s"`,
		`request_timeout = "soon"`:   `x.toml:2: providers.openai.request_timeout must be a duration like "90s" or "5m", got "soon"`,
		`stream_idle_timeout = "0s"`: `x.toml:2: providers.openai.stream_idle_timeout must be positive, got "0s"`,
	} {
		if _, err := Parse("x.toml", []byte("[providers.openai]\n"+src+"\n")); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", src, err, want)
		}
	}
}

// parseErrorCase is a config file that Parse must refuse, and the whole
// error it must give: "LINE: reason" lines, each prefixed with the path.
type parseErrorCase struct {
	name, src, want string
}

func checkParseErrors(t *testing.T, path string, tests []parseErrorCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse(path, []byte(tt.src))
			if err == nil {
				t.Fatalf("no error; parsed %+v", c)
			}
			want := path + strings.ReplaceAll(tt.want, "\n:", "\n"+path+":")
			if got := err.Error(); got != want {
				t.Errorf("error\n got: %s\nwant: %s", got, want)
			}
			var fe *FileError
			if !errors.As(err, &fe) || fe.Path != path || fe.Line < 1 {
				t.Errorf("errors.As: %#v", fe)
			}
		})
	}
}
