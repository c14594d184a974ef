package daotel

import (
	"context"
	"encoding/json"
	"iter"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/compact"
	"github.com/deepagents-go/deepagents/llm"
)

// ScopeName is the instrumentation scope of the spans this package makes.
const ScopeName = "github.com/deepagents-go/deepagents/otel"

// DefaultMaxAttributeBytes is the length at which a content attribute is
// cut when Config.MaxAttributeBytes is 0.
const DefaultMaxAttributeBytes = 16 << 10

// CaptureContentEnv is the environment variable that turns on the recording
// of message content when Config.CaptureContent is nil.
const CaptureContentEnv = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"

// Attribute keys of this package that the GenAI conventions do not define.
const (
	// PathKey is the agent path of the run a span belongs to, e.g.
	// "parent / researcher#call_1".
	PathKey = attribute.Key("deepagents.path")
	// CheckpointKey is, on the invoke_agent span of a resumed run, the
	// checkpoint the run continued from.
	CheckpointKey = attribute.Key("deepagents.checkpoint.id")
	// StatusKey is the status a run ended with (ok, error, limit, cancelled,
	// refused, interrupted) or, on a subagent's task span, the child's.
	StatusKey = attribute.Key("deepagents.run.status")
	// RoundKey is the model call's round within its run (chat spans).
	RoundKey = attribute.Key("deepagents.round")
	// InterruptedKey marks a tool span that ended because its call waits for
	// a person's decision.
	InterruptedKey = attribute.Key("deepagents.tool.interrupted")
	// SubagentKey and ModeKey name the subagent a task call started.
	SubagentKey = attribute.Key("deepagents.subagent.name")
	ModeKey     = attribute.Key("deepagents.subagent.mode")
	// LinkKindKey says why a span links to another: "resume" for the run
	// that continued an interrupted one, "previous_turn" for the next turn
	// of a thread.
	LinkKindKey = attribute.Key("deepagents.link.kind")
)

// Config says how a Recorder names and fills its spans. The zero value is
// usable: the global tracer provider, no conversation id, content capture
// from the environment.
type Config struct {
	// TracerProvider makes the spans; nil means otel.GetTracerProvider().
	TracerProvider trace.TracerProvider
	// ConversationID is the thread id; it becomes gen_ai.conversation.id on
	// every span.
	ConversationID string
	// Model is the requested model, used for chat span names
	// ("chat MODEL") and gen_ai.request.model; AgentModels overrides it by
	// agent name (a subagent on another model).
	Model       string
	AgentModels map[string]string
	// Provider is gen_ai.provider.name, e.g. "openai" or "anthropic".
	Provider string
	// CaptureContent turns content recording on or off; nil reads
	// OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT ("true" turns it on).
	CaptureContent *bool
	// MaxAttributeBytes cuts every content attribute to this many bytes (on
	// a UTF-8 boundary); 0 means DefaultMaxAttributeBytes.
	MaxAttributeBytes int
	// Redact, when set, rewrites content before it is recorded (key is the
	// attribute it goes to); it runs before the cut.
	Redact func(key attribute.Key, value string) string
	// Links are added to the top-level invoke_agent span, e.g. the spans of
	// earlier runs this one continues.
	Links []trace.Link
	// Replaying, when set, reports whether the run's code is being
	// replayed (its runtime's Replaying, see agent.Replayer: a Temporal
	// workflow's, in workflow code): a span that ends, or a model call
	// that ends, while it does is not exported, since the run's first
	// execution exported it. A span started in a replay and ended after it
	// is exported once.
	Replaying func() bool
	// MeterProvider records the GenAI client metrics (token usage,
	// operation duration, time to first chunk); nil means
	// otel.GetMeterProvider(), which records nothing until one is set.
	MeterProvider metric.MeterProvider
	// Pricer prices each model call for the deepagents.client.cost metric
	// and the span's deepagents.cost_usd attribute (a pricing.Table, say);
	// nil records no cost.
	Pricer Pricer
}

// Recorder builds the spans of one run (and of the runs of its subagents).
// The run's events make the invoke_agent, execute_tool, interrupt, resume
// and compaction parts: feed it every event of the run in order, with
// Record or by wrapping the stream with Observe. The chat spans of model
// calls come from Middleware, which sees each call's stream, not from the
// model events. It is safe for concurrent use, so that Middleware may reach
// it from the agent's goroutines.
type Recorder struct {
	cfg     Config
	tracer  trace.Tracer
	capture bool
	max     int

	metrics metrics

	mu     sync.Mutex
	parent context.Context
	agents map[string]*agentSpans
	// early are the finished model calls of agents whose run.start has not
	// been recorded yet, by agent path (see chatEnded).
	early map[string][]*chatCall
	root  trace.Span
}

type agentSpans struct {
	path  string
	span  trace.Span
	ctx   context.Context
	tools map[string]trace.Span
	// waiting are the call ids waiting for a decision.
	waiting map[string]bool
}

// NewRecorder returns a Recorder whose top-level span is a child of the span
// in ctx, if any.
func NewRecorder(ctx context.Context, cfg Config) *Recorder {
	tp := cfg.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	r := &Recorder{
		cfg:    cfg,
		tracer: replayTracer(tp.Tracer(ScopeName), cfg.Replaying),
		parent: context.WithoutCancel(ctx),
		agents: map[string]*agentSpans{},
		early:  map[string][]*chatCall{},
		max:    cfg.MaxAttributeBytes,
	}
	mp := cfg.MeterProvider
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	r.metrics = newMetrics(mp)
	if r.max <= 0 {
		r.max = DefaultMaxAttributeBytes
	}
	if cfg.CaptureContent != nil {
		r.capture = *cfg.CaptureContent
	} else {
		r.capture = strings.EqualFold(strings.TrimSpace(os.Getenv(CaptureContentEnv)), "true")
	}
	return r
}

// Observe records every event of seq as it passes and yields it on
// unchanged. When the consumer stops early, the spans still open are ended.
func (r *Recorder) Observe(seq iter.Seq2[agent.Event, error]) iter.Seq2[agent.Event, error] {
	return func(yield func(agent.Event, error) bool) {
		defer r.Close()
		for ev, err := range seq {
			r.Record(ev)
			if !yield(ev, err) {
				return
			}
		}
	}
}

// SpanContext is the span context of the top-level invoke_agent span, once
// its run.start was recorded; a later run may link to it.
func (r *Recorder) SpanContext() trace.SpanContext {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.root == nil {
		return trace.SpanContext{}
	}
	return r.root.SpanContext()
}

// Close ends every span still open (a run whose stream was abandoned) at
// the current time, marked as not finished.
func (r *Recorder) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	paths := make([]string, 0, len(r.agents))
	for p := range r.agents {
		paths = append(paths, p)
	}
	// Deepest first, so children end before their parents.
	slices.SortFunc(paths, func(a, b string) int { return len(b) - len(a) })
	clear(r.early)
	for _, p := range paths {
		a := r.agents[p]
		r.closeOpen(a, now)
		a.span.SetStatus(codes.Error, "the run's events stopped before its end")
		a.span.SetAttributes(semconv.ErrorTypeKey.String("incomplete"))
		a.span.End(trace.WithTimestamp(now))
		delete(r.agents, p)
	}
}

// Record turns one event into span starts, ends and attributes. Model
// events (model.request, model.delta, model.response, model.retry) make
// nothing: the chat spans are Middleware's.
func (r *Recorder) Record(ev agent.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	at := ev.Time
	if at.IsZero() {
		at = time.Now()
	}
	switch ev.Type {
	case agent.RunStart:
		r.runStart(ev, at)
	case agent.RunEnd:
		r.runEnd(ev, at)
	case agent.ToolStart:
		r.toolStart(ev, at)
	case agent.ToolEnd:
		r.toolEnd(ev, at)
	case agent.SubagentStart:
		if a := r.agents[ev.Agent.String()]; a != nil && ev.Subagent != nil {
			if s := a.tools[ev.Subagent.CallID]; s != nil {
				s.SetAttributes(SubagentKey.String(ev.Subagent.Name), ModeKey.String(ev.Subagent.Mode))
			}
		}
	case agent.SubagentEnd:
		if a := r.agents[ev.Agent.String()]; a != nil && ev.Subagent != nil {
			if s := a.tools[ev.Subagent.CallID]; s != nil && ev.Subagent.Status != "" {
				s.SetAttributes(StatusKey.String(string(ev.Subagent.Status)))
			}
		}
	case agent.InterruptEvent:
		r.interrupt(ev, at)
	case agent.Notice:
		if a := r.agents[ev.Agent.String()]; a != nil && ev.Notice != nil && ev.Notice.Source == "resume" {
			if id := resumedFrom(ev.Notice.Text); id != "" {
				a.span.SetAttributes(CheckpointKey.String(id))
			}
			a.span.AddEvent("deepagents.resume", trace.WithTimestamp(at))
		}
	case compact.EventEnd:
		if a, info := r.agents[ev.Agent.String()], compactionOf(ev); a != nil && info != nil {
			attrs := []attribute.KeyValue{
				attribute.String("deepagents.compaction.trigger", info.Trigger),
				attribute.Int("deepagents.compaction.tokens_before", info.TokensBefore),
				attribute.Int("deepagents.compaction.tokens_after", info.TokensAfter),
			}
			a.span.AddEvent("deepagents.compaction", trace.WithTimestamp(at), trace.WithAttributes(attrs...))
		}
	}
}

// compactionOf is the payload of a compaction event, nil for another.
func compactionOf(ev agent.Event) *compact.Info {
	info, _ := compact.InfoOf(ev)
	return info
}

// resumedFrom reads the checkpoint id out of the loop's resume notice
// ("resumed from checkpoint ID of thread ...").
func resumedFrom(text string) string {
	const prefix = "resumed from checkpoint "
	rest, ok := strings.CutPrefix(text, prefix)
	if !ok {
		return ""
	}
	id, _, ok := strings.Cut(rest, " ")
	if !ok || id == "" || !utf8.ValidString(id) {
		return ""
	}
	return id
}

func (r *Recorder) common() []attribute.KeyValue {
	var kv []attribute.KeyValue
	if r.cfg.ConversationID != "" {
		kv = append(kv, semconv.GenAIConversationID(r.cfg.ConversationID))
	}
	if r.cfg.Provider != "" {
		kv = append(kv, semconv.GenAIProviderNameKey.String(r.cfg.Provider))
	}
	return kv
}

func (r *Recorder) runStart(ev agent.Event, at time.Time) {
	if old := r.agents[ev.Agent.String()]; old != nil {
		// A second start on one path without an end: close the first.
		r.closeOpen(old, at)
		old.span.End(trace.WithTimestamp(at))
	}
	path := ev.Agent
	name := path.Last().Name
	parent := r.parent
	nested := path.IsNested()
	if nested {
		parent = r.parentOf(path.Parent().String(), ev.TaskCall)
	}
	attrs := append([]attribute.KeyValue{
		semconv.GenAIOperationNameInvokeAgent,
		semconv.GenAIAgentName(name),
		PathKey.String(ev.Agent.String()),
	}, r.common()...)
	if m := r.modelFor(name); m != "" {
		attrs = append(attrs, semconv.GenAIRequestModel(m))
	}
	opts := []trace.SpanStartOption{
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithTimestamp(at),
		trace.WithAttributes(attrs...),
	}
	if !nested {
		opts = append(opts, trace.WithLinks(r.cfg.Links...))
	}
	ctx, span := r.tracer.Start(parent, "invoke_agent "+name, opts...)
	a := &agentSpans{path: ev.Agent.String(), span: span, ctx: ctx, tools: map[string]trace.Span{}, waiting: map[string]bool{}}
	r.agents[ev.Agent.String()] = a
	for _, c := range r.early[ev.Agent.String()] {
		r.chatSpan(a, c)
	}
	delete(r.early, ev.Agent.String())
	if !nested && r.root == nil {
		r.root = span
	}
}

// parentOf is the context a subagent's span starts in: its task call's
// span, else its parent agent's span, else the recorder's parent.
func (r *Recorder) parentOf(parentPath, taskCall string) context.Context {
	p := r.agents[parentPath]
	if p == nil {
		return r.parent
	}
	if s := p.tools[taskCall]; s != nil {
		return trace.ContextWithSpan(p.ctx, s)
	}
	return p.ctx
}

func (r *Recorder) modelFor(agentName string) string {
	if m, ok := r.cfg.AgentModels[agentName]; ok && m != "" {
		return m
	}
	return r.cfg.Model
}

func (r *Recorder) runEnd(ev agent.Event, at time.Time) {
	a := r.agents[ev.Agent.String()]
	if a == nil {
		return
	}
	delete(r.agents, ev.Agent.String())
	// Subagents still open under this path (their end never came) end first.
	prefix := ev.Agent.String() + " / "
	for p, c := range r.agents {
		if strings.HasPrefix(p, prefix) {
			r.closeOpen(c, at)
			c.span.End(trace.WithTimestamp(at))
			delete(r.agents, p)
		}
	}
	var status agent.Status
	if ev.Run != nil {
		status = ev.Run.Status
		u := ev.Run.Usage
		a.span.SetAttributes(StatusKey.String(string(status)))
		a.span.SetAttributes(usageAttrs(u)...)
	}
	reason := ""
	if ev.Run != nil {
		reason = ev.Run.Error
	}
	if status == agent.StatusInterrupted {
		for id := range a.tools {
			if a.waiting[id] {
				a.tools[id].SetAttributes(InterruptedKey.Bool(true))
			}
		}
	}
	r.closeOpen(a, at)
	switch status {
	case agent.StatusOK, agent.StatusInterrupted, "":
	default:
		a.span.SetAttributes(semconv.ErrorTypeKey.String(string(status)))
		a.span.SetStatus(codes.Error, reason)
	}
	a.span.End(trace.WithTimestamp(at))
}

// closeOpen ends a's tool spans that are still open.
func (r *Recorder) closeOpen(a *agentSpans, at time.Time) {
	ids := make([]string, 0, len(a.tools))
	for id := range a.tools {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		a.tools[id].End(trace.WithTimestamp(at))
		delete(a.tools, id)
	}
}

// opAttrs are the attributes of a model call's metrics.
func (r *Recorder) opAttrs(path, responseModel string) []attribute.KeyValue {
	kv := []attribute.KeyValue{semconv.GenAIOperationNameChat}
	if r.cfg.Provider != "" {
		kv = append(kv, semconv.GenAIProviderNameKey.String(r.cfg.Provider))
	}
	if m := r.modelFor(agentName(path)); m != "" {
		kv = append(kv, semconv.GenAIRequestModel(m))
	}
	if responseModel != "" {
		kv = append(kv, semconv.GenAIResponseModel(responseModel))
	}
	return kv
}

func agentName(path string) string {
	p, err := agent.ParsePath(path)
	if err != nil || len(p) == 0 {
		return path
	}
	return p.Last().Name
}

// finishReason maps a stop reason to the conventions' finish reasons.
func finishReason(s llm.StopReason) string {
	switch s {
	case llm.StopEnd:
		return "stop"
	case llm.StopToolCalls:
		return "tool_call"
	case llm.StopMaxTokens:
		return "length"
	case llm.StopFiltered:
		return "content_filter"
	}
	return string(s)
}

func usageAttrs(u llm.Usage) []attribute.KeyValue {
	if u.Unknown && u.InputTokens == 0 && u.OutputTokens == 0 {
		return nil
	}
	kv := []attribute.KeyValue{
		semconv.GenAIUsageInputTokens(u.InputTokens),
		semconv.GenAIUsageOutputTokens(u.OutputTokens),
	}
	if u.CachedInputTokens > 0 {
		kv = append(kv, semconv.GenAIUsageCacheReadInputTokens(u.CachedInputTokens))
	}
	if u.CacheWriteTokens > 0 {
		kv = append(kv, semconv.GenAIUsageCacheCreationInputTokens(u.CacheWriteTokens))
	}
	if u.ReasoningTokens > 0 {
		kv = append(kv, semconv.GenAIUsageReasoningOutputTokens(u.ReasoningTokens))
	}
	return kv
}

func (r *Recorder) toolStart(ev agent.Event, at time.Time) {
	a := r.agents[ev.Agent.String()]
	if a == nil || ev.Tool == nil {
		return
	}
	if old := a.tools[ev.Tool.CallID]; old != nil {
		old.End(trace.WithTimestamp(at))
	}
	attrs := append([]attribute.KeyValue{
		semconv.GenAIOperationNameExecuteTool,
		semconv.GenAIToolName(ev.Tool.Name),
		semconv.GenAIToolCallID(ev.Tool.CallID),
		semconv.GenAIToolType("function"),
		PathKey.String(ev.Agent.String()),
	}, r.common()...)
	if r.capture && len(ev.Tool.Args) > 0 {
		attrs = append(attrs, r.content(semconv.GenAIToolCallArgumentsKey, string(ev.Tool.Args)))
	}
	_, s := r.tracer.Start(a.ctx, "execute_tool "+ev.Tool.Name, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithTimestamp(at), trace.WithAttributes(attrs...))
	a.tools[ev.Tool.CallID] = s
}

func (r *Recorder) toolEnd(ev agent.Event, at time.Time) {
	a := r.agents[ev.Agent.String()]
	if a == nil || ev.Tool == nil {
		return
	}
	s := a.tools[ev.Tool.CallID]
	if s == nil {
		return
	}
	delete(a.tools, ev.Tool.CallID)
	delete(a.waiting, ev.Tool.CallID)
	if r.capture {
		s.SetAttributes(r.content(semconv.GenAIToolCallResultKey, ev.Tool.Result))
	}
	if ev.Tool.IsError {
		typ := "tool_error"
		if ev.Tool.Panic != "" {
			typ = "panic"
		}
		s.SetAttributes(semconv.ErrorTypeKey.String(typ))
		// The status message is the start of the result: what went wrong,
		// without the content a user did not opt in to record, and
		// redacted like the result itself.
		msg := "the tool call failed"
		if r.capture {
			msg = truncate(r.redact(semconv.GenAIToolCallResultKey, ev.Tool.Result), 256)
		}
		s.SetStatus(codes.Error, msg)
	}
	s.End(trace.WithTimestamp(at))
}

func (r *Recorder) interrupt(ev agent.Event, at time.Time) {
	in := ev.Interrupt
	if in == nil {
		return
	}
	path := in.Path.String()
	if path == "" {
		path = ev.Agent.String()
	}
	attrs := []attribute.KeyValue{semconv.GenAIToolName(in.Tool), semconv.GenAIToolCallID(in.CallID), PathKey.String(path)}
	if a := r.agents[path]; a != nil {
		a.waiting[in.CallID] = true
		if s := a.tools[in.CallID]; s != nil {
			s.AddEvent("deepagents.interrupt", trace.WithTimestamp(at))
			return
		}
		a.span.AddEvent("deepagents.interrupt", trace.WithTimestamp(at), trace.WithAttributes(attrs...))
		return
	}
	if a := r.agents[ev.Agent.String()]; a != nil {
		a.span.AddEvent("deepagents.interrupt", trace.WithTimestamp(at), trace.WithAttributes(attrs...))
	}
}

// content is a content attribute, redacted and cut to the limit.
func (r *Recorder) content(key attribute.Key, v string) attribute.KeyValue {
	return key.String(truncate(r.redact(key, v), r.max))
}

// redact applies the Redact hook, if any, to content bound for key.
func (r *Recorder) redact(key attribute.Key, v string) string {
	if r.cfg.Redact != nil {
		return r.cfg.Redact(key, v)
	}
	return v
}

// truncate cuts s to at most n bytes without splitting a UTF-8 sequence.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// Message shapes of the GenAI conventions (gen_ai.input.messages,
// gen_ai.output.messages).
type part struct {
	Type      string          `json:"type"`
	Content   string          `json:"content,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Response  string          `json:"response,omitempty"`
}

type message struct {
	Role         string `json:"role"`
	Parts        []part `json:"parts"`
	FinishReason string `json:"finish_reason,omitempty"`
}

// outputMessages is gen_ai.output.messages: the response's message as the
// model sent it, with its refusal as text when it said nothing else.
func outputMessages(resp *llm.Response) string {
	m := message{Role: "assistant", FinishReason: finishReason(resp.StopReason)}
	m.Parts = parts(resp.Message)
	if resp.Refusal != "" && !resp.Message.HasText() {
		m.Parts = append(m.Parts, part{Type: "text", Content: resp.Refusal})
	}
	if m.Parts == nil {
		m.Parts = []part{}
	}
	b, _ := json.Marshal([]message{m})
	return string(b)
}

func parts(msg llm.Message) []part {
	var ps []part
	if len(msg.Parts) > 0 {
		for _, p := range msg.Parts {
			switch p.Type {
			case llm.PartText:
				ps = append(ps, part{Type: "text", Content: p.Text})
			case llm.PartReasoning:
				ps = append(ps, part{Type: "reasoning", Content: p.Text})
			default:
				ps = append(ps, part{Type: string(p.Type)})
			}
		}
	} else if msg.Content != "" {
		typ := "text"
		if msg.Role == llm.RoleTool {
			typ = "tool_call_response"
		}
		if typ == "text" {
			ps = append(ps, part{Type: typ, Content: msg.Content})
		} else {
			ps = append(ps, part{Type: typ, ID: msg.ToolCallID, Response: msg.Content})
		}
	}
	for _, c := range msg.ToolCalls {
		args := json.RawMessage(c.Args)
		if !json.Valid(args) {
			b, _ := json.Marshal(string(c.Args))
			args = b
		}
		ps = append(ps, part{Type: "tool_call", ID: c.ID, Name: c.Name, Arguments: args})
	}
	return ps
}

// systemInstructions is gen_ai.system_instructions: the system prompt's
// parts as JSON, empty when there is none.
func systemInstructions(texts ...string) string {
	var ps []part
	for _, t := range texts {
		if t != "" {
			ps = append(ps, part{Type: "text", Content: t})
		}
	}
	if ps == nil {
		return ""
	}
	b, _ := json.Marshal(ps)
	return string(b)
}

func inputMessages(msgs []llm.Message) string {
	out := make([]message, 0, len(msgs))
	for _, m := range msgs {
		ps := parts(m)
		if ps == nil {
			ps = []part{}
		}
		out = append(out, message{Role: string(m.Role), Parts: ps})
	}
	b, _ := json.Marshal(out)
	return string(b)
}

// errKind is an error.type value for a provider error kind.
func errKind(kind string) string {
	if kind == "" {
		return "_OTHER"
	}
	return kind
}
