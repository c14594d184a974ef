// Package providers turns a model string such as "openai:gpt-4.1",
// "anthropic:claude-sonnet-4-5", "gemini:gemini-2.5-flash" or "ollama:qwen3"
// into an llm.Model on the provider's official SDK, configured the way users
// expect: the SDKs' own environment variables, overridable per provider.
package providers

import (
	"context"
	"errors"
	"fmt"
	"github.com/deepagents-go/deepagents/internal/modelref"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/providers/anthropic"
	"github.com/deepagents-go/deepagents/providers/gemini"
	"github.com/deepagents-go/deepagents/providers/openai"
	"github.com/deepagents-go/deepagents/providers/retry"
)

// Kind is the wire protocol a provider speaks.
type Kind string

// Provider kinds.
const (
	KindOpenAI           Kind = "openai"
	KindAnthropic        Kind = "anthropic"
	KindGemini           Kind = "gemini"
	KindOpenAICompatible Kind = "openai-compatible"
)

// known lists the providers that need no configuration beyond a key (or, for
// local servers, nothing at all).
var known = map[string]struct {
	kind    Kind
	keyEnv  string // "" when no key is needed
	baseURL func() string
}{
	"openai":    {KindOpenAI, "OPENAI_API_KEY", nil},
	"anthropic": {KindAnthropic, "ANTHROPIC_API_KEY", nil},
	"gemini":    {KindGemini, "GEMINI_API_KEY", nil},
	"google":    {KindGemini, "GEMINI_API_KEY", nil},
	"ollama":    {KindOpenAICompatible, "", ollamaURL},
	"lmstudio":  {KindOpenAICompatible, "", func() string { return "http://localhost:1234/v1" }},
	"vllm":      {KindOpenAICompatible, "", func() string { return "http://localhost:8000/v1" }},
	"llamacpp":  {KindOpenAICompatible, "", func() string { return "http://localhost:8080/v1" }},
}

// Names lists the built-in provider names.
func Names() []string {
	var out []string
	for n := range known {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// ollamaURL is Ollama's OpenAI-compatible endpoint: OLLAMA_HOST ("host",
// "host:port" or a URL) or localhost:11434.
func ollamaURL() string {
	h := strings.TrimSpace(os.Getenv("OLLAMA_HOST"))
	if h == "" {
		return "http://localhost:11434/v1"
	}
	if !strings.Contains(h, "://") {
		h = "http://" + h
	}
	h = strings.TrimRight(h, "/")
	if rest := h[strings.Index(h, "://")+3:]; !strings.Contains(rest, ":") {
		h += ":11434"
	}
	if strings.HasPrefix(h, "http://0.0.0.0") {
		h = "http://localhost" + strings.TrimPrefix(h, "http://0.0.0.0")
	}
	return h + "/v1"
}

// Spec is a parsed model string.
type Spec struct {
	Provider string
	Model    string
}

func (s Spec) String() string { return s.Provider + ":" + s.Model }

// Parse splits "provider:model". The model part may itself contain colons
// ("ollama:qwen3:8b").
func Parse(s string) (Spec, error) {
	p, m, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok || p == "" || m == "" {
		if hint := Suggest(s); hint != "" {
			return Spec{}, fmt.Errorf("model %q has no provider: write %s", s, hint)
		}
		return Spec{}, fmt.Errorf("model %q is not of the form provider:model (e.g. openai:gpt-4.1, anthropic:claude-sonnet-4-5, ollama:qwen3)", s)
	}
	return Spec{Provider: strings.ToLower(p), Model: m}, nil
}

// Suggest returns the provider:model string that a model name written
// without its provider most likely means ("gpt-4.1" is "openai:gpt-4.1",
// "claude-sonnet-4-5" "anthropic:claude-sonnet-4-5"), or "" when the name
// is of no model family it knows. It is a hint for error messages.
func Suggest(model string) string { return modelref.Suggest(model) }

// Options adjust one provider. The zero value uses the SDK's environment.
type Options struct {
	// Kind is required for providers that are not built in; it says which
	// protocol the endpoint speaks (usually KindOpenAICompatible).
	Kind Kind
	// BaseURL overrides the endpoint.
	BaseURL string
	// APIKey is the key itself; APIKeyEnv names the variable holding it
	// (default: the SDK's, e.g. OPENAI_API_KEY).
	APIKey    string
	APIKeyEnv string
	// Headers are sent with every request.
	Headers map[string]string
	// HTTPClient carries the requests.
	HTTPClient *http.Client
	// Retry bounds retries.
	Retry retry.Policy
	// RequestTimeout and StreamIdleTimeout bound each attempt of a model
	// call: the wait for an answer (or a stream's headers), and the silence
	// inside a stream. 0 means the defaults (10 minutes, 2 minutes);
	// negative means no limit.
	RequestTimeout, StreamIdleTimeout time.Duration
	// MaxTokens is the default output limit.
	MaxTokens int
	// NoStreamToolCalls and NoParallelToolCalls are the capability switches
	// of OpenAI-compatible servers (see package openai).
	NoStreamToolCalls, NoParallelToolCalls bool
	// NoReasoningBack is openai.Config.NoReasoningBack, for OpenAI and
	// OpenAI-compatible providers.
	NoReasoningBack bool
	// API picks the endpoint of OpenAI and OpenAI-compatible providers:
	// openai.APIChat (the default) or openai.APIResponses, which reasoning
	// models need to keep their reasoning between tool calls. Other kinds
	// refuse it.
	API string
}

// MissingKeyError says that a provider needs a key that is not set, and
// which variable to set.
type MissingKeyError struct {
	Provider string
	EnvVar   string
}

func (e *MissingKeyError) Error() string {
	return fmt.Sprintf("no API key for %s: set %s (or run `deepagents demo`, which needs no key)", e.Provider, e.EnvVar)
}

// resolve fills in the kind, key and base URL for spec.
func resolve(spec Spec, o Options) (Options, error) {
	k, isKnown := known[spec.Provider]
	if o.Kind == "" {
		if !isKnown {
			return o, fmt.Errorf("unknown provider %q: use one of %s, or configure it with a base URL and type = \"openai-compatible\"",
				spec.Provider, strings.Join(Names(), ", "))
		}
		o.Kind = k.kind
	}
	if o.BaseURL == "" && isKnown && k.baseURL != nil {
		o.BaseURL = k.baseURL()
	}
	if o.Kind == KindOpenAICompatible && o.BaseURL == "" {
		return o, fmt.Errorf("provider %q needs a base URL", spec.Provider)
	}
	keyEnv := o.APIKeyEnv
	if keyEnv == "" && isKnown {
		keyEnv = k.keyEnv
	}
	if o.APIKey == "" && keyEnv != "" {
		o.APIKey = os.Getenv(keyEnv)
		if o.APIKey == "" && o.Kind == KindGemini && o.APIKeyEnv == "" {
			o.APIKey = os.Getenv("GOOGLE_API_KEY")
		}
		// A provider with its own base URL (a proxy, a local server) may
		// need no key; the SDK's endpoints do.
		if o.APIKey == "" && (o.BaseURL == "" || o.APIKeyEnv != "") && o.Kind != KindOpenAICompatible {
			return o, &MissingKeyError{Provider: spec.Provider, EnvVar: keyEnv}
		}
	}
	return o, nil
}

// Check reports whether spec can be built with o, without building it: the
// error says exactly what is missing.
func Check(spec Spec, o Options) error {
	_, err := resolve(spec, o)
	return err
}

// New builds the model for spec.
func New(ctx context.Context, spec Spec, o Options) (llm.Model, error) {
	o, err := resolve(spec, o)
	if err != nil {
		return nil, err
	}
	client := o.HTTPClient
	if len(o.Headers) > 0 {
		base := http.DefaultTransport
		if client != nil && client.Transport != nil {
			base = client.Transport
		}
		c := http.Client{}
		if client != nil {
			c = *client
		}
		c.Transport = headerTransport{base: base, headers: o.Headers}
		client = &c
	}
	if o.API != "" && o.Kind != KindOpenAI && o.Kind != KindOpenAICompatible {
		return nil, fmt.Errorf("provider %q: api %q applies only to OpenAI and OpenAI-compatible providers", spec.Provider, o.API)
	}
	switch o.Kind {
	case KindOpenAI:
		return openai.New(openai.Config{Model: spec.Model, APIKey: o.APIKey, BaseURL: o.BaseURL, HTTPClient: client,
			Retry: o.Retry, Provider: spec.Provider, MaxTokens: o.MaxTokens, API: o.API,
			RequestTimeout: o.RequestTimeout, StreamIdleTimeout: o.StreamIdleTimeout, NoReasoningBack: o.NoReasoningBack})
	case KindOpenAICompatible:
		// NewCompatible never sends OPENAI_API_KEY to another server.
		return openai.NewCompatible(o.BaseURL, spec.Model, openai.Config{APIKey: o.APIKey, HTTPClient: client,
			Retry: o.Retry, Provider: spec.Provider, MaxTokens: o.MaxTokens, API: o.API,
			RequestTimeout: o.RequestTimeout, StreamIdleTimeout: o.StreamIdleTimeout,
			NoStreamToolCalls: o.NoStreamToolCalls, NoParallelToolCalls: o.NoParallelToolCalls, NoReasoningBack: o.NoReasoningBack})
	case KindAnthropic:
		return anthropic.New(anthropic.Config{Model: spec.Model, APIKey: o.APIKey, BaseURL: o.BaseURL, HTTPClient: client,
			Retry: o.Retry, MaxTokens: o.MaxTokens, RequestTimeout: o.RequestTimeout, StreamIdleTimeout: o.StreamIdleTimeout})
	case KindGemini:
		return gemini.New(ctx, gemini.Config{Model: spec.Model, APIKey: o.APIKey, BaseURL: o.BaseURL, HTTPClient: client,
			Retry: o.Retry, MaxTokens: o.MaxTokens, RequestTimeout: o.RequestTimeout, StreamIdleTimeout: o.StreamIdleTimeout})
	}
	return nil, fmt.Errorf("provider %q: unknown kind %q (want openai, anthropic, gemini or openai-compatible)", spec.Provider, o.Kind)
}

// ErrNoModel is the error Detect wraps when no model is configured and no
// provider's key is set, so that a command can add its own advice.
var ErrNoModel = errors.New("no model configured and no API key found")

// Detect picks a default model from the keys present in the environment,
// in the order OpenAI, Anthropic, Gemini; with none it returns an error
// wrapping ErrNoModel and naming all three variables.
func Detect() (Spec, error) {
	switch {
	case os.Getenv("OPENAI_API_KEY") != "":
		return Spec{"openai", "gpt-4.1"}, nil
	case os.Getenv("ANTHROPIC_API_KEY") != "":
		return Spec{"anthropic", "claude-sonnet-4-5"}, nil
	case os.Getenv("GEMINI_API_KEY") != "" || os.Getenv("GOOGLE_API_KEY") != "":
		return Spec{"gemini", "gemini-2.5-flash"}, nil
	}
	return Spec{}, fmt.Errorf("%w: set OPENAI_API_KEY, ANTHROPIC_API_KEY or GEMINI_API_KEY "+
		"(or pass --model ollama:MODEL for a local server), or run `deepagents demo`, which needs no key", ErrNoModel)
}

type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.headers {
		r.Header.Set(k, v)
	}
	return t.base.RoundTrip(r)
}
