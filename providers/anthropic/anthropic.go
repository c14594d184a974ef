// Package anthropic is an llm.Model for Anthropic's Messages API, built on
// the official anthropic-sdk-go/v2 client.
//
// The adapter maps the provider-neutral llm types onto the wire format: the
// system prompt travels in the top-level system parameter, and the tool
// results answering one assistant turn are folded into the user turn that
// must follow it. Prompt-cache breakpoints go on the stable prefix (the last
// tool definition and the system prompt) and on the last two user turns, so
// repeated rounds and forks that share tools and system prompt read from the
// cache.
//
// Thinking. Request.Settings.Reasoning turns extended thinking on: on most
// models as thinking with a token budget (an effort maps to BudgetLow,
// BudgetMedium or BudgetHigh; budgets below MinThinkingBudget are raised to
// it; max_tokens is raised above the budget when it would not exceed it),
// with the interleaved-thinking beta header when tools are offered so the
// model can think between tool calls; on models that think adaptively
// (Claude Opus 4.6 and later) or with Config.AdaptiveThinking, as adaptive
// thinking with an effort (a budget maps to the nearest effort). Without the
// setting, Config.ThinkingBudget and AdaptiveThinking apply. The model's
// thinking comes back as reasoning parts of the assistant message, in order
// with its text: readable thinking with its signature, and redacted thinking
// as Reasoning.Encrypted (Reasoning.Extra records how many tool calls came
// before a thinking block). They are sent back unaltered and in place, as
// the API requires during a tool loop. Reasoning parts of other providers
// (and readable-only reasoning) are never sent, their text neither; a tool
// loop that began without thinking (on another provider, or before thinking
// was turned on) goes on without it until the next user turn, since the API
// keeps one thinking configuration per assistant turn. Message.Extra is not
// used; thinking saved in Extra["anthropic"] by earlier versions is still
// read.
//
// Images. Image parts of user messages and tool results become image blocks
// (inside the tool_result for tool results): bytes as base64 with the media
// type the bytes have, URLs as URL sources. An image the API cannot take
// (not JPEG, PNG, GIF or WebP, larger than 5 MiB, no data, a non-HTTP URL)
// becomes a short text note instead of failing the request.
//
// Refusals (stop_reason "refusal") set Response.Refusal, from the API's
// stop_details explanation, else the model's text, else a sentence of ours,
// and StopReason llm.StopRefusal. Usage counts cache reads and writes in
// InputTokens and breaks them down, reports thinking tokens as
// ReasoningTokens (part of OutputTokens), and is marked Unknown when a
// response carries no usage.
//
// Structured output (Request.Response) uses the API's native structured
// outputs (output_config.format) by default, which the SDK supports in its
// non-beta MessageNewParams; Config.StructuredOutput = StructuredTool
// switches to a forced tool call instead (not combinable with budget
// thinking, which refuses forced tool use).
//
// Request.Settings.Temperature and TopP are not sent: the API version this
// SDK speaks (2026-10-21) removed the sampling parameters. CheckSettings
// reports them as dropped, or as an error when thinking is on.
//
// Retries follow the shared policy in providers/retry (the SDK's own are
// off); a stream is never retried once it has yielded an event.
package anthropic

import (
	"context"
	"errors"
	"iter"
	"net/http"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/providers/kit"
	"github.com/deepagents-go/deepagents/providers/retry"
)

// ProviderName is the Provider of every *llm.APIError this package returns.
const ProviderName = "anthropic"

// DefaultMaxTokens is the output limit sent when neither the request's
// Settings nor Config.MaxTokens gives one; the Messages API requires it.
const DefaultMaxTokens = 8192

// StructuredOutput selects how a request's ResponseSchema is enforced.
type StructuredOutput string

// Structured-output modes.
const (
	// StructuredNative uses the API's own structured outputs
	// (output_config.format = json_schema): the answer text is the JSON.
	// The schema is adapted with the SDK's schema transformer (objects get
	// additionalProperties: false, unsupported keywords move into the
	// description). It is the default.
	StructuredNative StructuredOutput = "native"
	// StructuredTool forces a call of one extra tool whose input schema is
	// the response schema, and returns that call's input as the answer text.
	// It works on models without native structured outputs, but cannot be
	// combined with extended thinking (the API rejects forced tool use then).
	StructuredTool StructuredOutput = "tool"
)

// Config configures a Model. Only Model is required.
type Config struct {
	// Model is the model id, e.g. "claude-sonnet-4-5". Required.
	Model string
	// APIKey authenticates; empty uses the SDK's credential chain
	// (ANTHROPIC_API_KEY first).
	APIKey string
	// BaseURL overrides the API endpoint; empty uses ANTHROPIC_BASE_URL or
	// the production endpoint.
	BaseURL string
	// HTTPClient sends the requests; nil uses the SDK's default client.
	HTTPClient *http.Client
	// Retry is the retry policy (see providers/retry); the zero value
	// retries rate limits, server errors and broken connections 3 times.
	Retry retry.Policy
	// RequestTimeout bounds one attempt: a non-streamed call until its
	// complete answer, a stream until its response headers. 0 means 10
	// minutes; negative means no limit. A timeout is retried like a broken
	// connection.
	RequestTimeout time.Duration
	// StreamIdleTimeout bounds the silence between two pieces of a stream
	// (the API's pings count). 0 means 2 minutes; negative means no limit.
	StreamIdleTimeout time.Duration
	// MaxTokens is the output limit when a request's Settings.MaxTokens is
	// 0; DefaultMaxTokens when both are 0.
	MaxTokens int
	// NoPromptCache turns off the cache_control breakpoints. By default a
	// request has up to four: the static system prompt (which caches the
	// tools before it; without one, the last tool), the system prompt's
	// changing tail (llm.Request.SystemTail, its own block), and the last two
	// user turns.
	NoPromptCache bool
	// ThinkingBudget > 0 enables extended thinking with that many budget
	// tokens (at least MinThinkingBudget) for requests whose
	// Settings.Reasoning is not set.
	ThinkingBudget int
	// AdaptiveThinking lets the model decide when and how much to think
	// (thinking type "adaptive"): for requests without Settings.Reasoning
	// when ThinkingBudget is 0, and for every Settings.Reasoning (mapped to
	// an effort).
	AdaptiveThinking bool
	// StructuredOutput says how Request.Response is enforced
	// (StructuredNative when empty).
	StructuredOutput StructuredOutput
	// Options are extra SDK request options (headers, middleware), applied
	// after the ones derived from the fields above. Do not re-enable the
	// SDK's retries here: Retry already retries.
	Options []option.RequestOption
}

// Model is an llm.Model backed by the Anthropic Messages API. It is
// immutable and safe for concurrent use.
type Model struct {
	cfg    Config
	client anthropic.Client
}

var (
	_ llm.Model              = (*Model)(nil)
	_ llm.CapabilityReporter = (*Model)(nil)
	_ llm.SettingsChecker    = (*Model)(nil)
)

// New validates cfg and builds the client. It makes no request.
func New(cfg Config) (*Model, error) {
	if cfg.Model == "" {
		return nil, errors.New("anthropic: Config.Model is required")
	}
	if cfg.MaxTokens < 0 || cfg.ThinkingBudget < 0 {
		return nil, errors.New("anthropic: MaxTokens and ThinkingBudget must not be negative")
	}
	switch cfg.StructuredOutput {
	case "", StructuredNative, StructuredTool:
	default:
		return nil, errors.New("anthropic: unknown StructuredOutput mode " + string(cfg.StructuredOutput))
	}
	opts := []option.RequestOption{option.WithMaxRetries(0)}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	// The wrapped client lets the per-attempt timeouts see response
	// headers and body reads.
	opts = append(opts, option.WithHTTPClient(kit.Client(cfg.HTTPClient)))
	opts = append(opts, cfg.Options...)
	return &Model{cfg: cfg, client: anthropic.NewClient(opts...)}, nil
}

// Name returns the configured model id.
func (m *Model) Name() string { return m.cfg.Model }

// Generate sends one Messages request and returns the complete answer,
// retrying per Config.Retry. Requests whose output limit is too large for a
// non-streaming call (the SDK refuses those) are streamed and collected.
func (m *Model) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	b, err := m.build(req)
	if err != nil {
		return nil, err
	}
	if _, terr := anthropic.CalculateNonStreamingTimeout(int(b.params.MaxTokens), b.params.Model, m.client.Options); terr != nil {
		return llm.CollectLimited(m.stream(ctx, b), llm.ResponseLimitsFrom(ctx))
	}
	return retry.Do(ctx, m.cfg.Retry, func(ctx context.Context) (*llm.Response, error) {
		return kit.Call(ctx, m.timeouts(), ProviderName, func(ctx context.Context) (*llm.Response, error) {
			msg, err := m.client.Messages.New(ctx, b.params, b.opts...)
			if err != nil {
				return nil, toAPIError(ctx, err)
			}
			return b.response(msg, msg.JSON.Usage.Valid()), nil
		})
	})
}

// Stream sends one streaming Messages request. It yields text, reasoning and
// tool-call deltas as they arrive and then exactly one EventDone with the
// complete response. An attempt that fails before anything was yielded is
// retried per Config.Retry; a failure after that ends the stream.
func (m *Model) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.StreamEvent, error] {
	b, err := m.build(req)
	if err != nil {
		return func(yield func(llm.StreamEvent, error) bool) { yield(llm.StreamEvent{}, err) }
	}
	return m.stream(ctx, b)
}

func (m *Model) stream(ctx context.Context, b *built) iter.Seq2[llm.StreamEvent, error] {
	return retry.Stream(ctx, m.cfg.Retry, func(ctx context.Context) iter.Seq2[llm.StreamEvent, error] {
		return kit.Stream(ctx, m.timeouts(), ProviderName, func(ctx context.Context) iter.Seq2[llm.StreamEvent, error] {
			return func(yield func(llm.StreamEvent, error) bool) { m.streamOnce(ctx, b, yield) }
		})
	})
}

func (m *Model) timeouts() kit.Timeouts {
	return kit.Timeouts{Request: m.cfg.RequestTimeout, Idle: m.cfg.StreamIdleTimeout}
}
