package config

import (
	"testing"

	"github.com/deepagents-go/deepagents/tokens"
	"github.com/google/go-cmp/cmp"
)

// [models."provider:model"] tables override the built-in numbers field by
// field, give numbers to unknown models, and merge project over user.
func TestModelProfiles(t *testing.T) {
	projectDir, homeDir := setup(t, `
[models."local:qwen3"]
context_window = 32768
max_output = 4096
caches = true

[models."anthropic:claude-sonnet-4-5"]
max_output = 8000
`, `
[models."LOCAL:qwen3"]
max_output = 8192

[models."openai:gpt-4o"]
context_window = 64000
caches = false

[providers.gateway]
type = "anthropic"
base_url = "https://gw.example/v1"
`)
	c, err := Load(projectDir, homeDir)
	if err != nil {
		t.Fatal(err)
	}
	wantModels := map[string]tokens.Override{
		"local:qwen3":                 {Window: 32768, MaxOutput: 8192, Caches: new(true)},
		"anthropic:claude-sonnet-4-5": {MaxOutput: 8000},
		"openai:gpt-4o":               {Window: 64000, Caches: new(false)},
	}
	if diff := cmp.Diff(wantModels, c.Models); diff != "" {
		t.Errorf("merged models (-want +got)\n%s", diff)
	}
	tests := []struct {
		provider, model string
		want            tokens.Profile
	}{
		// Unknown to the table: the configured numbers alone.
		{"local", "qwen3", tokens.Profile{Window: 32768, MaxOutput: 8192, Caches: true}},
		{"Local", "qwen3", tokens.Profile{Window: 32768, MaxOutput: 8192, Caches: true}},
		// Known: only the fields set change.
		{"anthropic", "claude-sonnet-4-5", tokens.Profile{Window: 200_000, MaxOutput: 8000, Caches: true}},
		{"openai", "gpt-4o", tokens.Profile{Window: 64000, MaxOutput: 16_384}},
		// Not configured: the built-in numbers, also for a configured
		// provider of a known type.
		{"openai", "gpt-4.1-mini", tokens.Profile{Window: 1_047_576, MaxOutput: 32_768, Caches: true}},
		{"gateway", "claude-haiku-4-5", tokens.Profile{Window: 200_000, MaxOutput: 64_000, Caches: true}},
		// Neither: unknown.
		{"ollama", "llama3", tokens.Profile{}},
	}
	for _, tt := range tests {
		if got := c.Profile(tt.provider, tt.model); got != tt.want {
			t.Errorf("Profile(%s, %s) = %+v, want %+v", tt.provider, tt.model, got, tt.want)
		}
	}
	var none *Config
	if got := none.Profile("openai", "gpt-4o"); got.Window != 128_000 {
		t.Errorf("a nil config does not give the built-in profile: %+v", got)
	}
}

func TestModelProfileErrors(t *testing.T) {
	checkParseErrors(t, "deepagents.toml", []parseErrorCase{
		{"not a table", "models = 3\n", `:1: models must be a table of [models."provider:model"] tables, got an integer`},
		{"no provider", "[models.gpt-4o]\ncontext_window = 1000\n", `:1: models."gpt-4o" must be "provider:model" (e.g. "openai:gpt-4.1")`},
		{"no model", "[models.\"openai:\"]\ncontext_window = 1000\n", `:1: models."openai:" names no model after the ":"`},
		{"bad provider", "[models.\"my proxy:m\"]\ncontext_window = 1000\n",
			`:1: models."my proxy:m" must start with a provider name (letters, digits, "_" and "-") before the ":"`},
		{"same model twice", "[models.\"openai:m\"]\ncaches = true\n[models.\"OpenAI:m\"]\ncaches = false\n",
			`:1: models."openai:m" names the same model as another table (provider names are not case-sensitive)`},
		{"entry not a table", "[models]\n\"openai:m\" = 5\n", `:2: models."openai:m" must be a table, got an integer`},
		{"window type", "[models.\"a:b\"]\ncontext_window = \"128k\"\n", `:2: models.a:b.context_window must be a whole number of tokens, got a string`},
		{"window zero", "[models.\"a:b\"]\ncontext_window = 0\n", `:2: models.a:b.context_window must be at least 1, got 0`},
		{"window huge", "[models.\"a:b\"]\ncontext_window = 100000000000\n", `:2: models.a:b.context_window is too large: 100000000000 tokens`},
		{"caches type", "[models.\"a:b\"]\ncaches = \"yes\"\n", `:2: models.a:b.caches must be true or false, got a string`},
		{"unknown key", "[models.\"a:b\"]\ncontext_windw = 5\n", `:2: unknown key "models.a:b.context_windw" (did you mean "context_window"?)`},
		{"output beyond window", "[models.\"a:b\"]\ncontext_window = 1000\nmax_output = 1000\n",
			`:1: models."a:b": max_output (1000) must be less than context_window (1000)`},
	})
}

// An agent file's context_window is read as a number of tokens.
func TestAgentFileContextWindow(t *testing.T) {
	a, err := ParseAgentFile("agents/small.md", []byte("---\ndescription: Small jobs.\nmodel: local:qwen3\ncontext_window: 32768\n---\nBe quick.\n"))
	if err != nil {
		t.Fatal(err)
	}
	if a.ContextWindow != 32768 {
		t.Errorf("context_window %d, want 32768", a.ContextWindow)
	}
	b, err := ParseAgentFile("agents/plain.md", []byte("---\ndescription: Plain.\n---\n"))
	if err != nil || b.ContextWindow != 0 {
		t.Errorf("absent context_window: %d, %v", b.ContextWindow, err)
	}
}
