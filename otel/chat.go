package daotel

import (
	"cmp"
	"context"
	"errors"
	"iter"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
)

// This file is the chat span of a model call: Middleware's WrapStream sees
// the request go out, the stream's events pass and the stream end, and the
// recorder turns what it saw into the span and the call's metrics. The
// model events of the run's stream play no part in it.

// chatKey marks the context of a model call the otel wrapper already
// traces, so that a second otel middleware in one chain adds no span.
type chatKey struct{}

// errUnread is the error of a model call whose stream its reader stopped
// reading before the end (a response over the limits, a wrapper that
// dropped it).
var errUnread = errors.New("the model's stream was not read to its end")

// chatCall is one model call as the wrapper saw it: everything its chat
// span and metrics say, gathered while the stream passes.
type chatCall struct {
	path  string
	round int
	// start is when the request went out, first when the first streamed
	// event came (zero if none did), end when the stream ended.
	start, first, end time.Time
	// input and system are the request's content, when it is captured.
	input, system string
	// resp is the stream's response; err, when it has none, why.
	resp *llm.Response
	err  error

	mu      sync.Mutex // retries may be told from a provider's goroutine
	retries []retryNote
}

// retryNote is a failed attempt of the call that the provider retried.
type retryNote struct {
	at      time.Time
	attempt int
	wait    time.Duration
	kind    string
}

func (c *chatCall) retry(at time.Time, rt llm.Retry) {
	n := retryNote{at: at, attempt: rt.Attempt, wait: rt.Wait}
	var ae *llm.APIError
	if errors.As(rt.Err, &ae) {
		n.kind = string(ae.Kind)
	}
	c.mu.Lock()
	c.retries = append(c.retries, n)
	c.mu.Unlock()
}

// wrapStream traces one model call as a chat span: started when the
// request goes out, its first chunk noted on the first streamed event, and
// ended when the stream ends, with the response's usage, finish reason and
// model, or the stream's error. Provider retries of the call are events of
// the span. A call that ends while the run's runtime replays the
// run (agent.StepInfo.Replaying) makes no span and no metrics: it made
// them when it first ended. What it records is what the model's stream brought to this
// wrapper, whatever wrappers outside it do with the stream afterwards.
func wrapStream(ctx context.Context, req *llm.Request, next agent.StreamFunc) iter.Seq2[llm.StreamEvent, error] {
	r := recorderFrom(ctx)
	step, ok := agent.StepFrom(ctx)
	if r == nil || !ok || ctx.Value(chatKey{}) != nil {
		return next(ctx, req)
	}
	now := step.Now
	if now == nil {
		now = time.Now
	}
	return func(yield func(llm.StreamEvent, error) bool) {
		c := &chatCall{path: step.Path.String(), round: step.Round, start: now()}
		if r.capture {
			c.input = inputMessages(req.Messages)
			c.system = systemInstructions(req.System, req.SystemTail)
		}
		cctx := context.WithValue(ctx, chatKey{}, c)
		if ci, ok := llm.CallInfoFrom(ctx); ok {
			prev := ci.OnRetry
			ci.OnRetry = func(rt llm.Retry) {
				c.retry(now(), rt)
				if prev != nil {
					prev(rt)
				}
			}
			cctx = llm.WithCallInfo(cctx, ci)
		}
		ended := false
		end := func(resp *llm.Response, err error) {
			ended = true
			c.end, c.resp, c.err = now(), resp, err
			// A call that ends while the runtime replays the run was
			// traced when it first ended.
			if (step.Replaying != nil && step.Replaying()) || r.replaying() {
				return
			}
			r.chatEnded(c)
		}
		defer func() {
			if !ended {
				end(nil, errUnread)
			}
		}()
		for ev, err := range next(cctx, req) {
			switch {
			case err != nil:
				end(nil, err)
			case ev.Type == llm.EventDone:
				// A stream may end without a response of its own (the
				// loop builds it from the deltas): the call still ended
				// well, with no usage to report.
				resp := ev.Response
				if resp == nil {
					resp = &llm.Response{}
				}
				end(resp, nil)
			case c.first.IsZero() && step.Streaming:
				// A call that does not stream has no first chunk to
				// time: its answer comes whole.
				c.first = now()
			}
			if !yield(ev, err) || err != nil || ev.Type == llm.EventDone {
				return
			}
		}
		if !ended {
			end(nil, llm.ErrStreamIncomplete)
		}
	}
}

// chatEnded makes the chat span of c under its agent's span, or keeps it
// until that span starts: a subagent's run.start may reach the recorder
// after its first model call, since the child's events pass through its
// parent's loop.
func (r *Recorder) chatEnded(c *chatCall) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if a := r.agents[c.path]; a != nil {
		r.chatSpan(a, c)
		return
	}
	r.early[c.path] = append(r.early[c.path], c)
}

// chatSpan records c as a chat span under a's span, and its metrics.
func (r *Recorder) chatSpan(a *agentSpans, c *chatCall) {
	model := r.modelFor(agentName(c.path))
	name := "chat"
	attrs := append([]attribute.KeyValue{semconv.GenAIOperationNameChat, PathKey.String(c.path),
		RoundKey.Int(c.round)}, r.common()...)
	if model != "" {
		name += " " + model
		attrs = append(attrs, semconv.GenAIRequestModel(model))
	}
	_, span := r.tracer.Start(a.ctx, name, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithTimestamp(c.start), trace.WithAttributes(attrs...))
	c.mu.Lock()
	retries := c.retries
	c.mu.Unlock()
	for _, n := range retries {
		span.AddEvent("deepagents.model.retry", trace.WithTimestamp(n.at), trace.WithAttributes(
			attribute.Int("deepagents.retry.attempt", n.attempt),
			attribute.Float64("deepagents.retry.wait_ms", float64(n.wait.Microseconds())/1000),
			semconv.ErrorTypeKey.String(errKind(n.kind)),
		))
	}
	if r.capture && c.input != "" {
		span.SetAttributes(r.content(semconv.GenAIInputMessagesKey, c.input))
	}
	if r.capture && c.system != "" {
		span.SetAttributes(r.content(semconv.GenAISystemInstructionsKey, c.system))
	}
	if !c.first.IsZero() {
		r.metrics.firstChunk(a.ctx, c.first.Sub(c.start), r.opAttrs(c.path, ""))
	}
	resp := c.resp
	if resp == nil {
		if c.err == nil {
			c.err = errUnread
		}
		typ := errorType(c.err)
		span.SetAttributes(semconv.ErrorTypeKey.String(typ))
		span.SetStatus(codes.Error, c.err.Error())
		r.metrics.duration(a.ctx, c.end.Sub(c.start), append(r.opAttrs(c.path, ""), semconv.ErrorTypeKey.String(typ)))
		span.End(trace.WithTimestamp(c.end))
		return
	}
	attrs = usageAttrs(resp.Usage)
	if resp.StopReason != "" {
		attrs = append(attrs, semconv.GenAIResponseFinishReasons(finishReason(resp.StopReason)))
	}
	if resp.Model != "" {
		attrs = append(attrs, semconv.GenAIResponseModel(resp.Model))
	}
	if r.capture {
		attrs = append(attrs, r.content(semconv.GenAIOutputMessagesKey, outputMessages(resp)))
	}
	span.SetAttributes(attrs...)
	mattrs := r.opAttrs(c.path, resp.Model)
	r.metrics.tokens(a.ctx, resp.Usage, mattrs)
	r.cost(a.ctx, span, c.path, cmp.Or(resp.Model, model), resp.Usage, mattrs)
	if resp.StopReason == llm.StopRefusal {
		mattrs = append(mattrs, semconv.ErrorTypeKey.String("refusal"))
		span.SetAttributes(semconv.ErrorTypeKey.String("refusal"))
		span.SetStatus(codes.Error, "the model refused to answer")
	}
	r.metrics.duration(a.ctx, c.end.Sub(c.start), mattrs)
	span.End(trace.WithTimestamp(c.end))
}

// errorType is the error.type of a failed model call.
func errorType(err error) string {
	var ae *llm.APIError
	switch {
	case errors.As(err, &ae) && ae.Kind != "":
		return string(ae.Kind)
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	return "_OTHER"
}
