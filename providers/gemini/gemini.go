// Package gemini is the llm.Model for Google's Gemini Developer API
// (generativelanguage.googleapis.com), built on google.golang.org/genai: plain
// and streamed generateContent with function calling, structured output,
// thinking, images, provider-neutral errors and the shared retry policy.
//
// The SDK's own retry layers (HTTP retry options and automatic stream
// continuation) are switched off so that retry.Policy alone decides, and a
// stream that has already produced output is never replayed.
//
// Thinking: Settings.Reasoning becomes thinkingConfig (a thinking level on
// Gemini 3 and later, a thinking budget on 2.5; see CheckSettings and
// Capabilities), with thought summaries on. Gemini's thoughts and thought
// signatures become reasoning parts of the assistant message, in order with
// its text, and go back to Gemini on the parts they came on (a signature on
// a function call goes back on that call). Reasoning parts of other
// providers are never sent, readable text included; a function call that
// has no Gemini signature (a history started on another provider) gets the
// placeholder signature the Gemini API documents for that case, since Gemini
// 3 refuses unsigned calls. Message.Extra["gemini"] keeps only what is not
// reasoning: the function-call ids Gemini gave, and server-side parts.
//
// Images in user messages go as inlineData (bytes) or fileData (URL); the
// images of a tool result go inside its function response on Gemini 3 and
// later, else in a user part right after the responses, labelled with the
// call they belong to.
//
// A blocked prompt or an answer withheld for safety, recitation and the like
// is a refusal: Response.Refusal and StopRefusal. Usage counts thought tokens
// in OutputTokens and again in ReasoningTokens; a response without usage
// metadata has Usage.Unknown set.
package gemini

import (
	"context"
	"errors"
	"iter"
	"net/http"
	"os"
	"time"

	"google.golang.org/genai"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/providers/kit"
	"github.com/deepagents-go/deepagents/providers/retry"
)

// Provider is the name used in llm.APIError.Provider, llm.Reasoning.Provider
// and as the key of llm.Message.Extra.
const Provider = "gemini"

// Config configures a Model.
type Config struct {
	// Model is the model id, e.g. "gemini-2.5-flash". Required.
	Model string
	// APIKey authenticates the requests. When empty, the GEMINI_API_KEY
	// environment variable is used, then GOOGLE_API_KEY.
	APIKey string
	// BaseURL overrides the API endpoint (tests, proxies); the SDK's default
	// is https://generativelanguage.googleapis.com/.
	BaseURL string
	// HTTPClient sends the requests (http.DefaultTransport when nil). Its
	// Transport is wrapped, never modified.
	HTTPClient *http.Client
	// Retry bounds the retries of rate limits, server errors and network
	// failures.
	Retry retry.Policy
	// RequestTimeout bounds one attempt: a non-streamed call until its
	// complete answer, a stream until its response headers. 0 means 10
	// minutes; negative means no limit. A timeout is retried like a broken
	// connection.
	RequestTimeout time.Duration
	// StreamIdleTimeout bounds the silence between two pieces of a stream.
	// 0 means 2 minutes; negative means no limit.
	StreamIdleTimeout time.Duration
	// MaxTokens is the default output limit, used when a request's
	// Settings.MaxTokens is 0 (0 leaves it to the model).
	MaxTokens int
	// IncludeThoughts asks thinking models for thought summaries; they arrive
	// as reasoning parts and EventReasoningDelta. Used when a request has no
	// Settings.Reasoning (which always asks for them).
	IncludeThoughts bool
	// ThinkingBudget, when set, caps the thinking tokens of thinking models
	// (0 turns thinking off where the model allows it, -1 lets it decide).
	// Settings.Reasoning, when set, replaces it.
	ThinkingBudget *int
}

// Model is an llm.Model backed by the Gemini Developer API. It is safe for
// concurrent use.
type Model struct {
	cfg    Config
	client *genai.Client
}

var (
	_ llm.Model              = (*Model)(nil)
	_ llm.CapabilityReporter = (*Model)(nil)
	_ llm.SettingsChecker    = (*Model)(nil)
)

// New checks cfg and creates the client. The context is handed to
// genai.NewClient, which does no I/O for an API-key client.
func New(ctx context.Context, cfg Config) (*Model, error) {
	if cfg.Model == "" {
		return nil, errors.New("gemini: Config.Model is required")
	}
	key := cfg.APIKey
	if key == "" {
		key = os.Getenv("GEMINI_API_KEY")
	}
	if key == "" {
		key = os.Getenv("GOOGLE_API_KEY")
	}
	if key == "" {
		return nil, errors.New("gemini: no API key: set Config.APIKey, GEMINI_API_KEY or GOOGLE_API_KEY")
	}
	// A copy of the client whose transport lets the per-attempt timeouts
	// and the error classifier see response headers and body reads.
	hc := kit.Client(cfg.HTTPClient)
	hc.Transport = &captureTransport{base: hc.Transport}
	client, err := genai.NewClient(ctx, &genai.ClientConfig{
		APIKey:     key,
		Backend:    genai.BackendGeminiAPI,
		HTTPClient: hc,
		// RetryOptions stays nil: the SDK then sends each request once.
		HTTPOptions: genai.HTTPOptions{BaseURL: cfg.BaseURL},
	})
	if err != nil {
		return nil, &llm.APIError{Kind: llm.ErrKindBadRequest, Provider: Provider, Message: err.Error(), Err: err}
	}
	cfg.APIKey = key
	return &Model{cfg: cfg, client: client}, nil
}

// Name returns the configured model id.
func (m *Model) Name() string { return m.cfg.Model }

// Generate sends req with generateContent, retrying per Config.Retry.
func (m *Model) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	call, err := m.prepare(req)
	if err != nil {
		return nil, err
	}
	return retry.Do(ctx, m.cfg.Retry, func(ctx context.Context) (*llm.Response, error) {
		return kit.Call(ctx, m.timeouts(), Provider, func(ctx context.Context) (*llm.Response, error) {
			return m.generateOnce(ctx, call)
		})
	})
}

func (m *Model) generateOnce(ctx context.Context, call *prepared) (*llm.Response, error) {
	rec := &capture{}
	resp, err := m.client.Models.GenerateContent(withCapture(ctx, rec), m.cfg.Model, call.contents, call.config())
	if err != nil {
		return nil, classify(ctx, err, rec)
	}
	c := newCollector(call.ids.clone(), m.cfg.Model, llm.ResponseLimitsFrom(ctx))
	c.addResponse(resp, nil)
	if c.err != nil {
		return nil, c.err
	}
	if !c.candidate && !c.blocked {
		return nil, noCandidates(rec)
	}
	return c.response(), nil
}

func (m *Model) timeouts() kit.Timeouts {
	return kit.Timeouts{Request: m.cfg.RequestTimeout, Idle: m.cfg.StreamIdleTimeout}
}

// noCandidates is the error of an answer, streamed or not, that carries no
// candidate and no block reason: the server failed to produce one, and
// another attempt may well succeed.
func noCandidates(rec *capture) error {
	return &llm.APIError{Kind: llm.ErrKindServer, Provider: Provider, StatusCode: rec.status(),
		Message: "the response has no candidates"}
}

// Stream sends req with streamGenerateContent (SSE). Text arrives as
// EventTextDelta, thought summaries as EventReasoningDelta, and each function
// call, which Gemini sends whole, as EventToolCallStart followed by one
// EventToolCallDelta with its complete arguments; EventDone carries the full
// response and usage. An attempt that fails before yielding anything is
// retried; once output has been yielded, a failure ends the stream.
func (m *Model) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.StreamEvent, error] {
	call, err := m.prepare(req)
	if err != nil {
		return func(yield func(llm.StreamEvent, error) bool) { yield(llm.StreamEvent{}, err) }
	}
	return retry.Stream(ctx, m.cfg.Retry, func(ctx context.Context) iter.Seq2[llm.StreamEvent, error] {
		return kit.Stream(ctx, m.timeouts(), Provider, func(ctx context.Context) iter.Seq2[llm.StreamEvent, error] {
			return m.streamOnce(ctx, call)
		})
	})
}

func (m *Model) streamOnce(ctx context.Context, call *prepared) iter.Seq2[llm.StreamEvent, error] {
	return func(yield func(llm.StreamEvent, error) bool) {
		rec := &capture{}
		c := newCollector(call.ids.clone(), m.cfg.Model, llm.ResponseLimitsFrom(ctx))
		var events []llm.StreamEvent
		emit := func(ev llm.StreamEvent) { events = append(events, ev) }
		for chunk, err := range m.client.Models.GenerateContentStream(withCapture(ctx, rec), m.cfg.Model, call.contents, call.config()) {
			if err != nil {
				var ge genai.APIError
				if c.finished() && ctx.Err() == nil && !errors.As(err, &ge) {
					// The final chunk had arrived; a connection that breaks
					// after it changes nothing.
					break
				}
				yield(llm.StreamEvent{}, classify(ctx, err, rec))
				return
			}
			events = events[:0]
			c.addResponse(chunk, emit)
			if c.err != nil {
				yield(llm.StreamEvent{}, c.err)
				return
			}
			for _, ev := range events {
				if !yield(ev, nil) {
					return
				}
			}
			if ctx.Err() != nil {
				yield(llm.StreamEvent{}, context.Cause(ctx))
				return
			}
		}
		if ctx.Err() != nil {
			yield(llm.StreamEvent{}, context.Cause(ctx))
			return
		}
		if !c.candidate && !c.blocked {
			yield(llm.StreamEvent{}, noCandidates(rec))
			return
		}
		if !c.finished() {
			yield(llm.StreamEvent{}, &llm.APIError{Kind: llm.ErrKindNetwork, Provider: Provider, StatusCode: rec.status(),
				Message: "the stream ended before the final chunk", Err: llm.ErrStreamIncomplete})
			return
		}
		resp := c.response()
		yield(llm.StreamEvent{Type: llm.EventDone, Response: resp}, nil)
	}
}
