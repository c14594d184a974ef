package providers

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/llm"
	ot "github.com/deepagents-go/deepagents/providers/openai/openaitest"
)

func clearKeys(t *testing.T) {
	for _, k := range []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "OLLAMA_HOST", "OPENAI_BASE_URL"} {
		t.Setenv(k, "")
	}
}

func TestParse(t *testing.T) {
	for in, want := range map[string]Spec{
		"openai:gpt-4.1":              {"openai", "gpt-4.1"},
		"Anthropic:claude-sonnet-4-5": {"anthropic", "claude-sonnet-4-5"},
		"ollama:qwen3:8b":             {"ollama", "qwen3:8b"},
	} {
		if got, err := Parse(in); err != nil || got != want {
			t.Errorf("Parse(%q) = %v, %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "gpt-4", ":x", "openai:"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}

// A model name without its provider is refused with the provider:model
// string it most likely means, for the built-in providers' families.
func TestSuggest(t *testing.T) {
	for in, want := range map[string]string{
		"gpt-4.1":           "openai:gpt-4.1",
		" gpt-4o-mini ":     "openai:gpt-4o-mini",
		"o3":                "openai:o3",
		"o4-mini":           "openai:o4-mini",
		"chatgpt-4o-latest": "openai:chatgpt-4o-latest",
		"claude-sonnet-4-5": "anthropic:claude-sonnet-4-5",
		"Claude-Opus-4-1":   "anthropic:Claude-Opus-4-1",
		"gemini-2.5-flash":  "gemini:gemini-2.5-flash",
		"o3x":               "",
		"gpt-":              "",
		"qwen3":             "",
		"openai:gpt-4.1":    "",
		"":                  "",
	} {
		if got := Suggest(in); got != want {
			t.Errorf("Suggest(%q) = %q, want %q", in, got, want)
		}
	}
	if _, err := Parse("gpt-4.1"); err == nil || !strings.Contains(err.Error(), `model "gpt-4.1" has no provider: write openai:gpt-4.1`) {
		t.Errorf("Parse(gpt-4.1): %v", err)
	}
}

func TestOllamaURL(t *testing.T) {
	for host, want := range map[string]string{
		"":                      "http://localhost:11434/v1",
		"0.0.0.0":               "http://localhost:11434/v1",
		"gpu-box":               "http://gpu-box:11434/v1",
		"gpu-box:9999":          "http://gpu-box:9999/v1",
		"https://ollama.local/": "https://ollama.local:11434/v1",
	} {
		t.Setenv("OLLAMA_HOST", host)
		if got := ollamaURL(); got != want {
			t.Errorf("OLLAMA_HOST=%q: %s, want %s", host, got, want)
		}
	}
}

func TestMissingKeysAreNamed(t *testing.T) {
	clearKeys(t)
	cases := map[string]string{"openai:x": "OPENAI_API_KEY", "anthropic:x": "ANTHROPIC_API_KEY", "gemini:x": "GEMINI_API_KEY"}
	for s, env := range cases {
		spec, _ := Parse(s)
		var mk *MissingKeyError
		if err := Check(spec, Options{}); !errors.As(err, &mk) || mk.EnvVar != env || !strings.Contains(err.Error(), "deepagents demo") {
			t.Errorf("%s: %v", s, err)
		}
	}
	spec, _ := Parse("openai:x")
	if err := Check(spec, Options{APIKeyEnv: "MY_KEY"}); err == nil || !strings.Contains(err.Error(), "MY_KEY") {
		t.Errorf("custom key variable: %v", err)
	}
	t.Setenv("MY_KEY", "k")
	if err := Check(spec, Options{APIKeyEnv: "MY_KEY"}); err != nil {
		t.Errorf("key from a custom variable: %v", err)
	}
	if err := Check(Spec{"ollama", "qwen3"}, Options{}); err != nil {
		t.Errorf("local servers need no key: %v", err)
	}
	if err := Check(Spec{"mystery", "m"}, Options{}); err == nil || !strings.Contains(err.Error(), "unknown provider") {
		t.Errorf("unknown provider: %v", err)
	}
	if err := Check(Spec{"mine", "m"}, Options{Kind: KindOpenAICompatible}); err == nil || !strings.Contains(err.Error(), "base URL") {
		t.Errorf("custom compatible provider without a URL: %v", err)
	}
	if _, err := Detect(); err == nil || !strings.Contains(err.Error(), "GEMINI_API_KEY") {
		t.Errorf("Detect with no keys: %v", err)
	}
	t.Setenv("ANTHROPIC_API_KEY", "k")
	if s, err := Detect(); err != nil || s.Provider != "anthropic" {
		t.Errorf("Detect = %v %v", s, err)
	}
}

// A compatible server gets the configured headers, and never the OpenAI key.
func TestCompatibleProviderHeadersAndNoKeyLeak(t *testing.T) {
	clearKeys(t)
	t.Setenv("OPENAI_API_KEY", "sk-secret")
	srv := ot.NewServer(t, func(*ot.Request) ot.Reply { return ot.Text("hi") })
	m, err := New(context.Background(), Spec{"local", "qwen3"}, Options{Kind: KindOpenAICompatible, BaseURL: srv.URL, Headers: map[string]string{"X-Team": "blue"}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := m.Generate(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("hello")}})
	if err != nil || resp.Message.Content != "hi" {
		t.Fatalf("%v %+v", err, resp)
	}
	r := srv.Requests()[0]
	if r.Header.Get("X-Team") != "blue" || strings.Contains(r.Header.Get("Authorization"), "sk-secret") {
		t.Errorf("headers %v", r.Header)
	}
	for _, spec := range []Spec{{"openai", "m"}, {"anthropic", "m"}, {"gemini", "m"}} {
		if _, err := New(context.Background(), spec, Options{APIKey: "k"}); err != nil {
			t.Errorf("New(%s): %v", spec, err)
		}
	}
}

func TestAPIOptionOnlyForOpenAIKinds(t *testing.T) {
	_, err := New(t.Context(), Spec{Provider: "anthropic", Model: "claude-sonnet-4-5"}, Options{APIKey: "k", API: "responses"})
	if err == nil || !strings.Contains(err.Error(), `api "responses" applies only to OpenAI and OpenAI-compatible providers`) {
		t.Errorf("anthropic with api: %v", err)
	}
	if _, err := New(t.Context(), Spec{Provider: "openai", Model: "gpt-5"}, Options{APIKey: "k", API: "responses"}); err != nil {
		t.Errorf("openai with api responses: %v", err)
	}
	if _, err := New(t.Context(), Spec{Provider: "openai", Model: "gpt-5"}, Options{APIKey: "k", API: "assistants"}); err == nil {
		t.Error("an unknown api was accepted")
	}
}
