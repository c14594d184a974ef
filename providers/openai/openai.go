// Package openai is an llm.Model for the OpenAI Chat Completions API, the
// OpenAI Responses API, and the many servers that speak Chat Completions
// (Ollama, vLLM, llama.cpp server, LM Studio), built on the official
// openai-go SDK.
//
// The SDK does the HTTP, authentication and wire types; this package maps
// llm requests and responses onto them, turns SDK failures into
// *llm.APIError, and retries with the shared policy of package retry (the
// SDK's own retries are switched off, so Retry-After handling, jitter and the
// rule "never retry once output has been streamed" are ours and tested).
// Servers that lack a feature are handled by the capability switches of
// Config rather than by guessing from the URL.
//
// Reasoning. Settings.Reasoning is sent as the API's reasoning effort; a
// token budget is mapped to an effort (under 4,096 tokens low, under 16,384
// medium, else high). Readable reasoning that compatible servers return on
// Chat Completions (reasoning_content, reasoning) becomes a reasoning part
// marked with the provider name and the field; it goes back in that field
// with each assistant message that calls tools (DeepSeek's thinking mode
// answers 400 without it; Config.NoReasoningBack turns this off). OpenAI's reasoning
// models keep their reasoning between tool calls only on the Responses API
// (Config.API = APIResponses): it is used without server-side storage, each
// reply's reasoning items arrive with their encrypted content as reasoning
// parts (ID and Encrypted set, the summary as readable text, in order with
// the text), and go back unchanged before the turn's function calls.
// Reasoning parts of any other provider — or of ours without encrypted
// content — are left out of requests, readable text included. Message.Extra
// is not used.
//
// Images in user messages and tool results are sent as image_url parts
// (Chat Completions; a tool message holds text only, so a run of tool
// results is followed by one user message with their images, naming the
// call each belongs to) or input_image parts (Responses, also inside a
// function call's output). Capabilities tells from the model name which
// models read images and which reason.
//
// A refusal (message.refusal, or a Responses refusal part) is reported as
// Response.Refusal with StopReason llm.StopRefusal, not as answer text. An
// answer without usage has Usage.Unknown set; reasoning tokens (part of the
// output tokens) and cache reads and writes are reported. CheckSettings
// refuses settings the API would reject and names those requests leave out.
package openai

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/providers/kit"
	"github.com/deepagents-go/deepagents/providers/retry"
)

// DefaultProvider is the provider name used in errors when Config.Provider
// is empty.
const DefaultProvider = "openai"

// Config configures a Model. The zero value plus a Model name talks to
// api.openai.com with the key in OPENAI_API_KEY.
type Config struct {
	// Model is the model name sent with every request, e.g. "gpt-4.1-mini"
	// or "qwen3:8b". Required.
	Model string
	// APIKey authenticates the requests. Empty uses OPENAI_API_KEY (and sends
	// no key when that is unset too, which local servers accept).
	APIKey string
	// BaseURL is the API root, e.g. "http://localhost:11434/v1". Empty uses
	// OPENAI_BASE_URL, else https://api.openai.com/v1/.
	BaseURL string
	// HTTPClient, when set, carries the requests (proxies, TLS, timeouts).
	HTTPClient *http.Client
	// Retry bounds retries of rate limits, server errors and broken
	// connections (see package retry).
	Retry retry.Policy
	// RequestTimeout bounds one attempt: a non-streamed call until its
	// complete answer, a stream until its response headers. 0 means 10
	// minutes; negative means no limit. A timeout is retried like a broken
	// connection.
	RequestTimeout time.Duration
	// StreamIdleTimeout bounds the silence between two pieces of a stream.
	// 0 means 2 minutes; negative means no limit.
	StreamIdleTimeout time.Duration
	// Provider names the service in errors, e.g. "ollama" (DefaultProvider
	// when empty).
	Provider string
	// MaxTokens is the output limit used when a request's Settings leave
	// MaxTokens at zero; zero leaves it to the server.
	MaxTokens int
	// API picks the endpoint: APIChat (the default) or APIResponses. The
	// Responses API is the one on which OpenAI's reasoning models keep their
	// reasoning between tool calls: each reply's reasoning items come back
	// encrypted and are sent again with the next request (nothing is stored
	// on OpenAI's side).
	API string
	// Options are extra SDK request options applied after ours (headers,
	// organization, middleware).
	Options []option.RequestOption

	// Capability switches for OpenAI-compatible servers.

	// NoStreamToolCalls says the server cannot stream tool calls: Stream of a
	// request with tools makes a non-streaming call and synthesises the
	// stream events from its response.
	NoStreamToolCalls bool
	// NoParallelToolCalls sends parallel_tool_calls=false with every request
	// that has tools, whatever its Settings say.
	NoParallelToolCalls bool
	// NoStreamUsage omits stream_options.include_usage, for servers that
	// reject it; streamed responses then report no usage unless the server
	// sends it anyway.
	NoStreamUsage bool
	// NoImages says the model reads no images (a text-only local model):
	// Capabilities reports it, and a request holding an image is refused
	// before it is sent.
	NoImages bool
	// NoReasoningBack leaves out of requests the reasoning a server
	// returned in a message field (reasoning_content, reasoning), which is
	// otherwise sent back, in that field, with each assistant message that
	// calls tools: DeepSeek's thinking mode requires it there.
	NoReasoningBack bool
	// LegacyMaxTokens sends the output limit as max_tokens instead of
	// max_completion_tokens, for servers that only know the older field.
	// (OpenAI's reasoning models reject max_tokens.)
	LegacyMaxTokens bool
	// NoPromptCacheKey leaves out prompt_cache_key (a hash of the system
	// prompt and tools that keeps requests sharing a prefix on one cache),
	// for servers that reject the field.
	NoPromptCacheKey bool

	// noEnvKey keeps OPENAI_API_KEY from being sent (set by NewCompatible).
	noEnvKey bool
}

// The APIs a Model can speak.
const (
	// APIChat is the Chat Completions API (/chat/completions).
	APIChat = "chat"
	// APIResponses is the Responses API (/responses), used statelessly.
	APIResponses = "responses"
)

// Model is an llm.Model on the Chat Completions or the Responses API. It is safe for
// concurrent use.
type Model struct {
	cfg      Config
	provider string
	client   sdk.Client
}

var _ llm.Model = (*Model)(nil)

// New validates cfg and returns a Model.
func New(cfg Config) (*Model, error) {
	if cfg.Model == "" {
		return nil, errors.New("openai: Config.Model is required")
	}
	switch cfg.API {
	case "", APIChat, APIResponses:
	default:
		return nil, fmt.Errorf("openai: unknown Config.API %q (use %q or %q)", cfg.API, APIChat, APIResponses)
	}
	opts := []option.RequestOption{option.WithMaxRetries(0)}
	if cfg.APIKey != "" || cfg.noEnvKey {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	// The wrapped client lets the per-attempt timeouts see response
	// headers and body reads.
	opts = append(opts, option.WithHTTPClient(kit.Client(cfg.HTTPClient)))
	opts = append(opts, cfg.Options...)
	m := &Model{cfg: cfg, provider: cfg.Provider, client: sdk.NewClient(opts...)}
	if m.provider == "" {
		m.provider = DefaultProvider
	}
	return m, nil
}

// NewCompatible returns a Model for an OpenAI-compatible server at baseURL
// (e.g. "http://localhost:11434/v1" for Ollama) serving model. cfg supplies
// everything else; its Model and BaseURL are replaced, and Provider defaults
// to "openai-compatible". Only cfg.APIKey is sent: an OpenAI key in
// OPENAI_API_KEY is not handed to another server.
func NewCompatible(baseURL, model string, cfg Config) (*Model, error) {
	if baseURL == "" {
		return nil, errors.New("openai: NewCompatible needs a base URL")
	}
	cfg.BaseURL = baseURL
	cfg.Model = model
	cfg.noEnvKey = true
	if cfg.Provider == "" {
		cfg.Provider = "openai-compatible"
	}
	return New(cfg)
}

// Name returns the model name requests are sent with.
func (m *Model) Name() string { return m.cfg.Model }

// Provider returns the provider name used in errors.
func (m *Model) Provider() string { return m.provider }

// Generate sends req as one non-streaming request, retrying per
// Config.Retry, and returns the complete response.
func (m *Model) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	if m.responsesAPI() {
		body, err := m.responsesParams(req, false)
		if err != nil {
			return nil, err
		}
		return retry.Do(ctx, m.cfg.Retry, func(ctx context.Context) (*llm.Response, error) {
			return kit.Call(ctx, m.timeouts(), m.provider, func(ctx context.Context) (*llm.Response, error) {
				return m.generateResponses(ctx, body)
			})
		})
	}
	params, err := m.params(req, false)
	if err != nil {
		return nil, err
	}
	return retry.Do(ctx, m.cfg.Retry, func(ctx context.Context) (*llm.Response, error) {
		return kit.Call(ctx, m.timeouts(), m.provider, func(ctx context.Context) (*llm.Response, error) {
			return m.generateOnce(ctx, params)
		})
	})
}

func (m *Model) generateOnce(ctx context.Context, params sdk.ChatCompletionNewParams) (*llm.Response, error) {
	var raw *http.Response
	c, err := m.client.Chat.Completions.New(ctx, params, option.WithResponseInto(&raw))
	if err != nil {
		return nil, m.mapError(ctx, err, raw)
	}
	return m.response(c)
}

// Stream sends req as a streaming request and yields text and tool-call
// deltas as they arrive, then one EventDone with the complete response. An
// attempt that fails before yielding anything is retried per Config.Retry;
// once an event has been yielded a failure ends the stream with an error.
func (m *Model) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.StreamEvent, error] {
	if m.cfg.NoStreamToolCalls && len(req.Tools) > 0 {
		return llm.StreamOf(ctx, req, m.Generate)
	}
	if m.responsesAPI() {
		body, err := m.responsesParams(req, true)
		if err != nil {
			return func(yield func(llm.StreamEvent, error) bool) { yield(llm.StreamEvent{}, err) }
		}
		return retry.Stream(ctx, m.cfg.Retry, func(ctx context.Context) iter.Seq2[llm.StreamEvent, error] {
			return kit.Stream(ctx, m.timeouts(), m.provider, func(ctx context.Context) iter.Seq2[llm.StreamEvent, error] {
				return m.streamResponses(ctx, body)
			})
		})
	}
	params, err := m.params(req, true)
	if err != nil {
		return func(yield func(llm.StreamEvent, error) bool) { yield(llm.StreamEvent{}, err) }
	}
	return retry.Stream(ctx, m.cfg.Retry, func(ctx context.Context) iter.Seq2[llm.StreamEvent, error] {
		return kit.Stream(ctx, m.timeouts(), m.provider, func(ctx context.Context) iter.Seq2[llm.StreamEvent, error] {
			return m.streamOnce(ctx, params)
		})
	})
}

func (m *Model) timeouts() kit.Timeouts {
	return kit.Timeouts{Request: m.cfg.RequestTimeout, Idle: m.cfg.StreamIdleTimeout}
}
